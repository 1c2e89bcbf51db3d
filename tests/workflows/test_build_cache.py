"""The compiler build cache (issue #37, item 4: ccache across PRs): a source build compiles
through ccache where the runner has it and the job names its folder (CCACHE_DIR), with the
checkout's throwaway folder name kept out of the hashes; the pre-screen on a GitHub-hosted
runner restores the cache a nightly on the default branch saved, and no PR job ever saves one
(a cache a PR's code wrote would feed the next base build of that PR).

build.sh is run with stand-in interpreters and a stand-in `ccache` (tests/workflows/
test_one_build.py's); the workflows are walked step by step with their `if:` evaluated."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.workflows.payloads import github_context
from tests.workflows.replay import Evaluator, condition, interpolate, load_yaml
from tests.workflows.test_one_build import VENV_PY, _build, _checkout, _stand_ins, _walk

REPO = Path(__file__).resolve().parents[2]
CACHE_SHA = "55cc8345863c7cc4c66a329aec7e433d2d1c52a9"  # actions/cache v6.1.0
# the venv's interpreter, which also notes what a `pip wheel` (the compile) sees of ccache
VENV_PY_ENV = VENV_PY.replace(
    'if [[ "$1" == -m && "$2" == pip && "$3" == wheel ]]; then',
    'if [[ "$1" == -m && "$2" == pip && "$3" == wheel ]]; then\n'
    '  echo "CCACHE=${TRITON_BUILD_WITH_CCACHE:-} BASEDIR=${CCACHE_BASEDIR:-} NOHASHDIR=${CCACHE_NOHASHDIR:-}" '
    '>> "$FAKE_LOG"', 1)


def _tools(tmp: Path, with_ccache: bool) -> dict:
    env = _stand_ins(tmp)
    Path(env["FAKE_VENV_PY"]).write_text(VENV_PY_ENV)
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    if with_ccache:
        (bin_dir / "ccache").write_text('#!/bin/bash\necho "ccache $*" >> "$FAKE_LOG"\necho "Hits: 9 / 10"\n')
        (bin_dir / "ccache").chmod(0o755)
    import os

    return {**env, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


@pytest.mark.parametrize(("with_ccache", "ccache_dir", "used"), [(True, True, True), (False, True, False),
                                                                   (True, False, False)])
def test_a_source_build_compiles_through_ccache_where_the_job_has_one(tmp_path: Path, with_ccache: bool,
                                                                      ccache_dir: bool, used: bool) -> None:
    (tmp_path / "home").mkdir()
    _checkout(tmp_path / "ws")
    extra = _tools(tmp_path, with_ccache)
    if ccache_dir:
        extra["CCACHE_DIR"] = str(tmp_path / "ccache")
    proc, outputs = _build(tmp_path, TG_CACHE_WRITE="false", **extra)
    assert proc.returncode == 0, proc.stderr
    log = (tmp_path / "venv-calls.log").read_text()
    src = tmp_path / "ws" / ".tritongate-src" / "acme__triton-1"
    if used:
        assert f"CCACHE=true BASEDIR={src} NOHASHDIR=true" in log, log
        assert "ccache --show-stats" in log and "Hits: 9 / 10" in proc.stderr
        assert f"ccache: {tmp_path / 'ccache'}" in proc.stderr
    else:
        assert "CCACHE= BASEDIR= NOHASHDIR=" in log and "ccache --show-stats" not in log, log
    if ccache_dir and not with_ccache:
        assert "no ccache on this runner: the compiler is built without it" in proc.stderr


def test_the_build_key_does_not_depend_on_ccache(tmp_path: Path) -> None:
    """A venv the nightly built with ccache is the one a PR job without it reuses."""
    import os
    import subprocess

    with_tools = _tools(tmp_path, True)
    keys = []
    for path in (with_tools["PATH"], os.environ["PATH"]):  # ccache found, and not
        env = {**with_tools, "PATH": path, "HOME": str(tmp_path / "home"), "TG_MODE": "source",
               "CCACHE_DIR": str(tmp_path / "ccache")}
        keys.append(subprocess.run(["bash", str(REPO / ".github/actions/build-compiler/build.sh"), "key"], env=env,
                                   capture_output=True, text=True, check=True).stdout.strip())
    assert keys[0] == keys[1] and len(keys[0]) == 16


def _cache_steps(ran: list[dict]) -> list[dict]:
    return [s for s in ran if s.get("uses", "").startswith("actions/cache")]


@pytest.mark.parametrize("stage", ["prescreen-base", "prescreen-cand", "gate", "judge"])
@pytest.mark.parametrize("hosted", [True, False])
def test_a_pr_job_only_restores_the_build_cache_on_a_github_hosted_pre_screen(stage: str, hosted: bool) -> None:
    ran, _ = _walk(stage, "source", {}, runner={"environment": "github-hosted" if hosted else "self-hosted",
                                               "os": "Linux", "arch": "X64"})
    steps = _cache_steps(ran)
    if not (hosted and stage.startswith("prescreen")):
        assert steps == [], (stage, hosted)
        return
    (restore,) = steps
    assert restore["uses"].split()[0] == f"actions/cache/restore@{CACHE_SHA}"
    assert restore["with"]["path"].split() == ["/rt/tritongate-pr/ccache", "/rt/tritongate-pr/triton-home"]
    prefix = "tritongate-ccache-Linux-X64-"
    assert restore["with"]["restore-keys"].strip() == prefix and restore["with"]["key"].startswith(prefix)
    names = [s["name"] for s in ran]
    assert names.index(restore["name"]) < names.index("Build the base compiler" if stage == "prescreen-base"
                                                     else "Build the PR compiler")


def test_no_pr_workflow_or_action_ever_saves_a_cache() -> None:
    """actions/cache (restore and save) and actions/cache/save appear only in the nightly's job."""
    for path in [*(REPO / ".github" / "actions").glob("*/action.yml"), *(REPO / ".github" / "workflows").glob("*.yml"),
                 *(REPO / "examples").rglob("*.yml")]:
        text = path.read_text()
        saves = text.count("actions/cache@") + text.count("actions/cache/save@")
        if path.name in ("nightly-baseline.yml", "perf-nightly.yml"):  # the nightly and its recipes
            # once: in the nightly's build-cache job (a same-org recipe calls the nightly for it)
            assert text.count("actions/cache/save@") == (0 if "same-org" in path.parts else 1), path
            assert "actions/cache@" not in text, path
        else:
            assert saves == 0, path


def test_the_nightly_saves_the_cache_from_the_default_branch_only() -> None:
    doc = load_yaml(REPO / ".github" / "workflows" / "nightly-baseline.yml")
    job = doc["jobs"]["build-cache"]
    assert job["permissions"] == {"contents": "read"}
    for event, ref, runs in [("schedule", "refs/heads/main", True), ("workflow_dispatch", "refs/heads/main", True),
                             ("workflow_dispatch", "refs/heads/topic", False)]:
        github = github_context("schedule" if event == "schedule" else "workflow_dispatch",
                                "schedule" if event == "schedule" else "workflow_dispatch")
        github.update(event_name=event, ref=ref)
        github["event"].setdefault("repository", {})["default_branch"] = "main"
        ctx = {"github": github, "inputs": {"build-cache": True}, "vars": {}}
        assert condition(job["if"], Evaluator(ctx)) is runs, (event, ref)
    ctx = {"github": github_context("schedule", "schedule"), "inputs": {"build-cache": False}, "vars": {}}
    assert condition(job["if"], Evaluator(ctx)) is False
    steps = job["steps"]
    save = next(s for s in steps if s.get("uses", "").startswith("actions/cache/save@"))
    restore = next(s for s in steps if s.get("uses", "").startswith("actions/cache/restore@"))
    ev = Evaluator({"runner": {"os": "Linux", "arch": "X64", "temp": "/rt"}, "inputs": {"flagtree-backend": ""}, "vars": {},
                    "github": {"run_id": "77"}})
    assert interpolate(save["with"]["path"], ev).split() == interpolate(restore["with"]["path"], ev).split() == [
        "/rt/tritongate-pr/ccache", "/rt/tritongate-pr/triton-home"]
    assert interpolate(save["with"]["key"], ev) == "tritongate-ccache-Linux-X64-nightly-77"
    assert interpolate(restore["with"]["restore-keys"], ev).strip() == "tritongate-ccache-Linux-X64-"
    build = next(s for s in steps if s.get("uses") == "./tritongate/.github/actions/build-compiler")
    assert build["with"]["mode"] == "source" and steps.index(build) < steps.index(save)
    assert build["env"]["CCACHE_DIR"] == "${{ runner.temp }}/tritongate-pr/ccache"  # where build.sh finds it
    # where Triton's setup.py puts its LLVM and NVIDIA tool downloads (TRITON_HOME/.triton)
    assert build["env"]["TRITON_HOME"] == "${{ runner.temp }}/tritongate-pr/triton-home"


def test_every_restore_and_save_of_the_build_cache_names_the_same_folders() -> None:
    """actions/cache matches a restore to a save only when both list the same paths (they are part
    of the cache's version), and each folder is only worth caching where a build writes it: the
    PR builds' CCACHE_DIR and TRITON_HOME are the folders the nightly saves."""
    expected = ["${{ runner.temp }}/tritongate-pr/ccache", "${{ runner.temp }}/tritongate-pr/triton-home"]
    files = [REPO / ".github" / "actions" / "pr-gate" / "action.yml", REPO / ".github" / "workflows" / "nightly-baseline.yml",
             *(REPO / "examples").rglob("perf-nightly.yml")]
    seen = 0
    for path in files:
        doc = load_yaml(path)
        jobs = [doc["runs"]["steps"]] if "runs" in doc else [j.get("steps") or [] for j in doc["jobs"].values()]
        for steps in jobs:
            for step in steps:
                if step.get("uses", "").startswith(("actions/cache/restore@", "actions/cache/save@")):
                    assert step["with"]["path"].splitlines() == expected, (path, step.get("name"))
                    seen += 1
    assert seen >= 4  # the PR action's restore, the nightly's restore and save, a recipe's
    gate = load_yaml(REPO / ".github" / "actions" / "pr-gate" / "action.yml")["runs"]["steps"]
    for sid in ("base-plan", "base", "cand-plan", "cand"):
        env = next(s for s in gate if s.get("id") == sid)["env"]
        assert [env["CCACHE_DIR"], env["TRITON_HOME"]] == expected, sid
