"""pr-gate with compiler-mode auto, replayed: the base is the source build of the merge
commit's first parent (a trusted venv of the shared cache, reused after its manifest check),
the PR build is an overlay of that base with the merge commit's diff, really built from this
machine's Triton with a real pass-pipeline patch; the runner class is the owner's by default.
Stage prescreen-cand (the PR build's half of the pre-screen: in mode auto it builds the base
too, to overlay it) with no store yet: the job stops after the builds and the baseline lookup."""

from __future__ import annotations

import pytest
import subprocess
import sys
from pathlib import Path

from tests.workflows.build_fixtures import (ACTION_DIR, NVIDIA, action_env, clone_checkout, compiler_repo, git)
from tests.workflows.payloads import github_context
from tests.workflows.replay import JobRun

REPO = Path(__file__).resolve().parents[2]
PR_GATE_DIR = REPO / ".github" / "actions" / "pr-gate"


class HoldingRun(JobRun):
    """A JobRun whose handler for remote actions can read the steps context as it grows."""

    live_steps: dict = {}

    def run_steps(self, steps, contexts, env, shell, action_path=None, prefix=""):
        self.live_steps = contexts.setdefault("steps", {})
        return super().run_steps(steps, contexts, env, shell, action_path, prefix)


def _pipeline_of(python: str) -> str:
    probe = "import os, triton; print(os.path.dirname(triton.__file__))"
    where = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    return (Path(where) / "backends" / "nvidia" / "compiler.py").read_text()


def _trusted_base(tmp: Path, commit: str) -> Path:
    """The nightly's build of main at ``commit``: here this interpreter, with its manifest."""
    env = {**action_env(tmp, tmp, tmp), "TG_PYTHON": sys.executable}
    key = subprocess.run(["bash", str(ACTION_DIR / "build.sh"), "key"], env=env, capture_output=True, text=True,
                         check=True).stdout.strip()
    venv = tmp / "home" / ".cache" / "tritongate-builds" / "acme__triton" / f"{commit}-{key}" / "venv"
    # a real venv seeing this interpreter's packages (torch, triton, tritongate's deps), as a
    # build venv made with --system-site-packages from the runner's interpreter does
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    here = [p for p in sys.path if p.endswith("site-packages")]
    Path(site, "_base.pth").write_text("import site; " + "; ".join(f"site.addsitedir({p!r})" for p in here) + "\n")
    subprocess.run([sys.executable, str(ACTION_DIR / "venv_manifest.py"), "write", str(venv)], check=True,
                   capture_output=True)
    (venv / ".tritongate-complete").write_text("by the nightly\n")
    return venv


@pytest.mark.slow
def test_auto_mode_gates_an_overlay_of_the_pr_against_the_base_build(tmp_path: Path) -> None:
    repo = compiler_repo(tmp_path, {NVIDIA: "drop-hopper-pipeline.patch"})
    base_venv = _trusted_base(tmp_path, repo.base)
    server = tmp_path / "server"
    git("init", "-q", "--bare", str(server / "acme" / "triton.git"), cwd=tmp_path)  # no data branch yet
    workspace, runner_temp = tmp_path / "ws", tmp_path / "runner" / "temp"
    workspace.mkdir()
    runner_temp.mkdir(parents=True)
    github = github_context("pull_request", "pull_request.synchronize", server_url=server.as_uri(),
                            token="ghs_test", sha=repo.merge)
    event_path = tmp_path / "event.json"
    event_path.write_text(__import__("json").dumps(github["event"]))
    seen: list[dict] = []
    held: dict[str, str] = {}

    def uses(run: JobRun, step: dict, with_values: dict):
        if step["uses"].startswith("actions/checkout@"):
            return clone_checkout(run, repo.path, with_values, seen)
        if step["uses"].startswith("actions/upload-artifact@"):
            # the last step before the job removes its PR builds: read the overlay while it exists
            cand = run.live_steps.get("cand", {}).get("outputs", {})
            if cand.get("python") and "pipeline" not in held:
                held["pipeline"] = _pipeline_of(cand["python"])
            return None
        raise AssertionError(step["uses"])

    env = {**action_env(tmp_path, workspace, runner_temp), "GITHUB_SERVER_URL": server.as_uri(),
           "GITHUB_EVENT_PATH": str(event_path), "GITHUB_SHA": repo.merge, "GITHUB_EVENT_NAME": "pull_request"}
    run = HoldingRun(workspace, runner_temp, {"github": github, "runner": {"temp": str(runner_temp)}, "vars": {}},
                 env, uses)
    status, outputs = run.run_composite(PR_GATE_DIR, {"stage": "prescreen-cand", "suite": "smoke", "backend": "cpu",
                                                      "compiler-mode": "auto", "python": sys.executable}, {})
    steps, log = run.inner_steps, run.log()
    assert status == "success", log
    # the default runner class is the owner's, and keys the artifacts
    assert steps["class"]["outputs"]["runner-class"] == "acme-h200"
    assert outputs["key"] == "acme-h200-smoke"
    assert steps["refs"]["outputs"]["base"] == repo.base and steps["refs"]["outputs"]["cand"] == repo.merge
    # the base: the trusted source build, reused without a checkout
    assert steps["base"]["outputs"] == {**steps["base"]["outputs"], "python": str(base_venv / "bin" / "python"),
                                        "built": "source", "commit": repo.base}
    assert [c["path"] for c in seen if c["path"].startswith(".tritongate-src")] == [steps["cand-plan"]["outputs"]["src"]]
    # the PR build: an overlay of the base with the merge commit's diff
    cand = steps["cand"]["outputs"]
    assert cand["built"] == "overlay" and cand["commit"] == repo.merge and len(cand["patch-sha256"]) == 64
    assert "build mode auto: overlay; the PR changes only the package's Python sources (1 file(s): " + NVIDIA in log
    assert held["pipeline"].count("add_pipeline(pm, opt.num_stages, dump_enabled)") == 1  # one of two dropped
    assert _pipeline_of(sys.executable).count("add_pipeline(pm, opt.num_stages, dump_enabled)") == 2
    assert not Path(cand["python"]).exists()  # removed with the job's other PR builds
    assert steps["baseline"]["outputs"]["state"] == "missing"
