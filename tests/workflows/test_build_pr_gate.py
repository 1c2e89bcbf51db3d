"""pr-gate with compiler-mode auto, replayed: the base is the source build of the merge
commit's first parent (a trusted venv of the shared cache, reused after its manifest check);
the runner class is the owner's by default. Stage prescreen-base (the base build's half, which
in mode auto also makes the PR's overlay once its own half is uploaded) with no store yet: the
job stops after the builds and the baseline lookup, with no half, so no overlay is made
(tests/workflows/test_overlay_once.py has the run with a store)."""

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

    def uses(run: JobRun, step: dict, with_values: dict):
        if step["uses"].startswith("actions/checkout@"):
            return clone_checkout(run, repo.path, with_values, seen)
        if step["uses"].startswith("actions/upload-artifact@"):
            return None
        raise AssertionError(step["uses"])

    env = {**action_env(tmp_path, workspace, runner_temp), "GITHUB_SERVER_URL": server.as_uri(),
           "GITHUB_EVENT_PATH": str(event_path), "GITHUB_SHA": repo.merge, "GITHUB_EVENT_NAME": "pull_request"}
    run = HoldingRun(workspace, runner_temp, {"github": github, "runner": {"temp": str(runner_temp)}, "vars": {}},
                 env, uses)
    status, outputs = run.run_composite(PR_GATE_DIR, {"stage": "prescreen-base", "suite": "smoke", "backend": "cpu",
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
    # the PR's merge commit is checked out for the overlay, but nothing of the PR is built
    # before this half's own results exist, and with no baseline there are none
    assert [c["path"] for c in seen if c["path"].startswith(".tritongate-src")] == [steps["cand-plan"]["outputs"]["src"]]
    assert steps["cand"]["outcome"] == "skipped" and steps["cand-overlay"]["outcome"] == "skipped"
    assert not (workspace / ".tritongate-src").exists() or not any((workspace / ".tritongate-src").iterdir())
    assert steps["baseline"]["outputs"]["state"] == "missing"
