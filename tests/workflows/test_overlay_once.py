"""One build per compiler in compiler modes overlay and auto (issue #37, item 4): where the PR
build is an overlay of the base, the base half makes it, and only once its own half and its
base build are uploaded (the overlay is the PR's code: nothing it runs can reach them); it runs
the PR build's half too. The PR half builds no base: in mode auto it builds the PR from source
when the PR changes compiled code, and otherwise says the base half makes it and stops.

Replayed with the pr-gate action on a local compiler repository (tests/workflows/build_fixtures:
the installed NVIDIA backend, a real pass-pipeline patch as the PR), the base a trusted build of
the shared cache (this interpreter), a baseline store with the smoke suite, and the stand-in
ci/prescreen.py of test_prescreen_wiring (a half's files, the judge's answer), each stage in a
job of its own sharing one artifact store."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.workflows.build_fixtures import NVIDIA, action_env, clone_checkout, compiler_repo, run_build_action
from tests.workflows.payloads import github_context
from tests.workflows.test_build_pr_gate import HoldingRun, _pipeline_of, _trusted_base
from tests.workflows.test_gate_action import publish_store, server_with_store
from tests.workflows.test_prescreen_wiring import FAKE_PRESCREEN, Artifacts
from tests.workflows.replay import Evaluator, interpolate, load_yaml

REPO = Path(__file__).resolve().parents[2]
KEY = "cpu-ci-smoke"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return publish_store(tmp_path_factory.mktemp("store"))


def _action_tree(tmp: Path) -> Path:
    """The actions and ci/ with the stand-in pre-screen; pyproject.toml too (it keys the builds)."""
    root = tmp / "tg"
    for name in ("pr-gate", "build-compiler"):
        shutil.copytree(REPO / ".github" / "actions" / name, root / ".github" / "actions" / name)
    shutil.copytree(REPO / "ci", root / "ci")
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    (root / "ci" / "prescreen.py").write_text(FAKE_PRESCREEN)
    (root / "tritongate").symlink_to(REPO / "tritongate", target_is_directory=True)
    return root / ".github" / "actions" / "pr-gate"


def _job(tmp: Path, stage: str, repo, server: Path, artifacts: Artifacts, events: list,
         held: dict | None = None) -> HoldingRun:
    """One job of the PR's run: the pr-gate action at ``stage``, mode auto, on a runner of its own."""
    tmp.mkdir(exist_ok=True)
    action_dir = _action_tree(tmp)
    workspace, runner_temp = tmp / "ws", tmp / "temp"
    workspace.mkdir()
    runner_temp.mkdir()
    github = github_context("pull_request", "pull_request.synchronize", server_url=server.as_uri(), token="t",
                            sha=repo.merge)
    (tmp / "event.json").write_text(json.dumps(github["event"]))
    env = {**action_env(tmp, workspace, runner_temp), "GITHUB_SERVER_URL": server.as_uri(),
           "GITHUB_EVENT_PATH": str(tmp / "event.json"), "GITHUB_SHA": repo.merge, "GITHUB_EVENT_NAME": "pull_request",
           "GITHUB_RUN_ID": "1234", "TRITONGATE_LOG_DIR": str(tmp / "logs"), "NO_COLOR": "1", "FAKE_CHANGED": "0"}
    seen: list[dict] = []
    held = {} if held is None else held

    def uses(run: HoldingRun, step: dict, with_values: dict):
        ref = step["uses"]
        if ref.startswith("actions/checkout@"):
            return clone_checkout(run, repo.path, with_values, seen)
        if ref.startswith("actions/upload-artifact@"):
            # what had run when this upload was made: the overlay must not have been made yet
            # for the base half's own uploads
            made = run.live_steps.get("cand-overlay", {}).get("outputs", {}).get("python", "")
            events.append((stage, with_values["name"], bool(made) and Path(made).exists()))
            if made and Path(made).exists():
                held.setdefault("pipeline", _pipeline_of(made))  # read it while it exists
            artifacts.upload(with_values)
            return None
        if ref.startswith("actions/download-artifact@"):
            return artifacts.download(with_values)
        if ref.startswith("actions/setup-python@"):
            return "success", {"python-path": sys.executable, "python-version": "3.12"}
        raise AssertionError(ref)

    run = HoldingRun(workspace, runner_temp, {"github": github, "runner": {"temp": str(runner_temp), "os": "Linux"},
                                              "vars": {}}, env, uses)
    run.fakes["judge-deps"] = {}
    run.status, run.outputs = run.run_composite(action_dir, {"stage": stage, "runner-class": "cpu-ci", "suite": "smoke",
                                                             "backend": "cpu", "compiler-mode": "auto",
                                                             "python": sys.executable}, env)
    return run


def test_a_python_only_pr_is_built_once_by_the_base_half_after_its_own_uploads(tmp_path: Path, store: Path) -> None:
    repo = compiler_repo(tmp_path, {NVIDIA: "drop-hopper-pipeline.patch"})
    server, artifacts, events = server_with_store(tmp_path, store), Artifacts(tmp_path / "artifacts"), []

    (tmp_path / "base").mkdir()
    _trusted_base(tmp_path / "base", repo.base)
    held: dict[str, str] = {}
    base = _job(tmp_path / "base", "prescreen-base", repo, server, artifacts, events, held)
    steps, log = base.inner_steps, base.log()
    assert base.status == "success", log
    assert steps["base"]["outputs"]["built"] == "source" and steps["base"]["outcome"] == "success"
    assert steps["cand"]["outcome"] == "skipped", "the base half builds no PR compiler before its own half"
    overlay = steps["cand-overlay"]["outputs"]
    assert overlay["built"] == "overlay" and overlay["commit"] == repo.merge and len(overlay["patch-sha256"]) == 64
    assert "build mode auto: overlay; the PR changes only the package's Python sources (1 file(s): " + NVIDIA in log
    assert steps["side-cand"]["outputs"]["side-dir"].endswith("prescreen-cand")
    # a real overlay: the PR's pipeline (one of the two Hopper pipelines dropped) over the base
    assert held["pipeline"].count("add_pipeline(pm, opt.num_stages, dump_enabled)") == 1
    assert _pipeline_of(sys.executable).count("add_pipeline(pm, opt.num_stages, dump_enabled)") == 2
    assert not Path(overlay["python"]).exists()  # removed with the job's other PR builds
    # both halves, the base half's own first and before any PR code ran; the PR checkout is gone
    halves = [e for e in events if e[1].startswith("tritongate-half-")]
    assert halves == [("prescreen-base", f"tritongate-half-base-{KEY}", False),
                      ("prescreen-base", f"tritongate-half-cand-{KEY}", True)], events
    assert not (tmp_path / "base" / "ws" / ".tritongate-src").exists()

    cand = _job(tmp_path / "cand", "prescreen-cand", repo, server, artifacts, events)
    steps, log = cand.inner_steps, cand.log()
    assert cand.status == "success", log
    assert steps["base-plan"]["outcome"] == "skipped" and steps["base"]["outcome"] == "skipped", "no base build here"
    assert steps["cand"]["outputs"]["built"] == "elsewhere" and steps["cand"]["outputs"]["python"] == ""
    assert ("the PR build is an overlay of the base build: the base half makes it after its own half "
            "(this job makes the PR build only from source)") in log
    assert steps["baseline"]["outcome"] == "skipped" and steps["side"]["outcome"] == "skipped"
    assert [e for e in events if e[0] == "prescreen-cand" and not e[1].startswith("tritongate-runs-")] == [], \
        "the PR half uploads no half and no build"

    judge = _job(tmp_path / "judge", "judge", repo, server, artifacts, events)
    assert judge.status == "success", judge.log()
    assert judge.outputs["rows-changed"] == "0" and artifacts.downloaded == [f"tritongate-half-base-{KEY}",
                                                                           f"tritongate-half-cand-{KEY}"]


def test_auto_with_compiled_changes_is_the_pr_halfs_source_build_never_the_base_halfs(tmp_path: Path) -> None:
    """TG_ONLY=overlay (the base half) on a PR that changes C++: no build, and it says who builds it."""
    repo = compiler_repo(tmp_path, {NVIDIA: "drop-coalesce.patch", "lib/Coalesce.cpp": None})
    run, status, outputs, _ = run_build_action(tmp_path, repo.path, cache_write="false", mode="auto",
                                               repo="acme/triton", ref=repo.merge, extra_env={"TG_ONLY": "overlay"})
    assert status == "success", run.log()
    assert outputs["built"] == "elsewhere" and outputs["python"] == "" and outputs["commit"] == repo.merge
    assert "the PR build is a source build: the PR half makes it (this job makes the PR build only as an overlay)" \
        in run.log()
    assert "building acme/triton" not in run.log()


def test_an_unknown_only_value_is_refused(tmp_path: Path) -> None:
    run, status, _, _ = run_build_action(tmp_path, tmp_path, mode="auto", repo="acme/triton", ref="c" * 40,
                                         extra_env={"TG_ONLY": "both"})
    assert status == "failure" and "TG_ONLY must be overlay, source or empty, got 'both'" in run.log()


@pytest.mark.parametrize(("mode", "sides"), [("overlay", ["base"]), ("auto", ["base", "cand"]),
                                             ("source", ["base", "cand"]), ("wheel", ["base", "cand"])])
def test_mode_overlay_runs_no_pr_half(mode: str, sides: list[str]) -> None:
    job = load_yaml(REPO / ".github" / "workflows" / "pr-gate.yml")["jobs"]["prescreen"]
    expr = job["strategy"]["matrix"]["side"]
    assert interpolate(expr, Evaluator({"inputs": {"compiler-mode": mode}})) == sides


def _walked(mode: str, outputs: dict) -> tuple[list[str], dict]:
    from tests.workflows.test_one_build import _walk

    ran, by_id = _walk("prescreen-base", mode, outputs)
    return [s["name"] for s in ran], by_id


BASE_JOB = {"base": {"built": "source", "commit": "b" * 40, "wheel": "/rt/w/triton-b.whl", "python": "/venv-b/bin/python"},
            "cand-plan": {"src": ".tritongate-src/c", "cached": "false"}, "side": {"side-dir": "/rt/p/prescreen-base",
                                                                                "side": "base", "exit-code": "0"},
            "cand-overlay": {"built": "overlay", "python": "/rt/overlays/x/bin/python"},
            "side-cand": {"side-dir": "/rt/p/prescreen-cand", "side": "cand", "exit-code": "0"}}


@pytest.mark.parametrize("mode", ["overlay", "auto"])
def test_the_base_job_uploads_its_wheel_and_half_before_the_overlay_is_made(mode: str) -> None:
    names, by_id = _walked(mode, BASE_JOB)
    overlay = names.index("Make the PR build's overlay (after this half is uploaded)")
    assert names.index("Upload this half's compiler build (for the GPU job)") < overlay
    assert names.index("Upload this build's half (for the judge)") < overlay
    assert names.index("Upload the PR build's half (for the judge)") > names.index(
        "Pre-screen, the PR build's half (the overlay the base half made)") > overlay
    env = by_id["cand-overlay"]["env"]
    assert env["TG_ONLY"] == "overlay" and env["TG_OVERLAY_BASE"] == "/venv-b/bin/python" and env["TG_PATCH_FROM"] == "pr"
    assert by_id["side-cand"]["env"]["CAND_PY"] == "/rt/overlays/x/bin/python"
    # the base checkout goes before the halves; the PR's is kept for the overlay, then removed
    assert by_id.get("cand-plan") and names.index("Remove the compiler checkouts") < overlay
    assert names[-1] == "Gate result" and "Remove the PR checkout (the base half of an overlay)" in names


@pytest.mark.parametrize(("cand_exit", "job_exit"), [("0", "0"), ("4", "4"), (None, "0")])
def test_the_base_job_fails_when_its_pr_half_does(cand_exit: str | None, job_exit: str) -> None:
    """So the failing job is the one a re-run re-runs, not the judge that lacks its half."""
    outputs = {**BASE_JOB, "side-cand": {**BASE_JOB["side-cand"], "exit-code": cand_exit}} if cand_exit else \
        {k: v for k, v in BASE_JOB.items() if k not in ("cand-overlay", "side-cand")}
    from tests.workflows.test_one_build import _walk

    ran, _ = _walk("prescreen-base", "auto", outputs)
    gate = next(s for s in ran if s["name"] == "Gate result")
    assert gate["env"]["GATE_EXIT"].strip() == job_exit
