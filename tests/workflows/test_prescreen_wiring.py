"""The CPU pre-screen wired into pr-gate.yml and the pr-gate action, replayed with a stand-in
ci/prescreen.py that writes what its interface promises (prescreen.json, ir-diff/,
rows_changed/rows_total on $GITHUB_OUTPUT, and a verdict folder when no row changed).

The action runs from a copy of this repository's action and ci/ folders with the stand-in
beside them (the real ci/prescreen.py is not needed for the wiring); the GPU job's `if:` and
the result job's decision are then evaluated over the pre-screen's outputs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.workflows.payloads import github_context
from tests.workflows.replay import Evaluator, JobRun, condition, load_yaml
from tests.workflows.test_gate_action import publish_store, server_with_store
from tests.workflows.test_pr_gate_steps import REPO, WORKFLOWS, clean_env

FAKE_PRESCREEN = '''
import argparse, json, os, sys
from pathlib import Path
p = argparse.ArgumentParser()
for opt in ("--baseline", "--base-python", "--cand-python", "--out", "--suite"):
    p.add_argument(opt, required=True)
a = p.parse_args()
changed, total = int(os.environ["FAKE_CHANGED"]), 5
out = Path(a.out)
(out / "ir-diff").mkdir(parents=True)
(out / "ir-diff" / "changed_rows.json").write_text(json.dumps({"rows": changed}))
(out / "prescreen.json").write_text(json.dumps({"rows_changed": changed, "rows_total": total,
                                                "baseline": a.baseline}))
if changed == 0:
    (out / "verdict").mkdir()
    (out / "verdict" / "verdict.json").write_text(json.dumps({"passed": True}))
    (out / "verdict" / "verdict.md").write_text(f"0 of {total} rows' kernels changed under this PR; no GPU time used\\n")
with open(os.environ["GITHUB_OUTPUT"], "a") as f:
    f.write(f"rows_changed={changed}\\nrows_total={total}\\n")
print("prescreen", a.base_python, a.cand_python, "suite", a.suite)
'''

FAKE_PAIR = '''
import os, sys
from pathlib import Path
out = Path(sys.argv[sys.argv.index("--out") + 1]) / "pair" / "verdict"
out.mkdir(parents=True)
(out / "verdict.md").write_text("v\\n")
(out / "verdict.json").write_text("{}")
Path(os.environ["RUNNER_TEMP"], "pair-args.txt").write_text("\\n".join(sys.argv[1:]))
print("verdict:", out / "verdict.md")
'''


def action_tree(tmp: Path) -> Path:
    """A copy of the actions and ci/, with the stand-ins; the package is linked."""
    root = tmp / "tg"
    for name in ("pr-gate", "build-compiler"):
        shutil.copytree(REPO / ".github" / "actions" / name, root / ".github" / "actions" / name)
    shutil.copytree(REPO / "ci", root / "ci")
    (root / "ci" / "prescreen.py").write_text(FAKE_PRESCREEN)
    (root / "ci" / "replay_candidate.py").write_text(FAKE_PAIR)
    (root / "tritongate").symlink_to(REPO / "tritongate", target_is_directory=True)
    return root / ".github" / "actions" / "pr-gate"


def run_stage(tmp: Path, stage: str, changed: int, store: Path, **inputs: str) -> tuple[JobRun, str, dict, dict]:
    action_dir = action_tree(tmp)
    workspace, runner_temp = tmp / "ws", tmp / "temp"
    workspace.mkdir()
    runner_temp.mkdir()
    server = server_with_store(tmp, store)
    github = github_context("pull_request", "pull_request.synchronize", server_url=server.as_uri(), token="t")
    (tmp / "event.json").write_text(json.dumps(github["event"]))
    contexts = {"github": github, "vars": {}, "runner": {"temp": str(runner_temp), "os": "Linux"}}
    uploads: dict[str, dict] = {}

    def uses(run: JobRun, step: dict, with_values: dict):
        if step["uses"].startswith("actions/upload-artifact@"):
            uploads[with_values["name"]] = with_values
            return None
        raise AssertionError(step["uses"])

    env = {**clean_env(tmp, workspace, runner_temp), "GITHUB_SERVER_URL": server.as_uri(),
           "GITHUB_EVENT_PATH": str(tmp / "event.json"), "FAKE_CHANGED": str(changed)}
    run = JobRun(workspace, runner_temp, contexts, env, uses)
    values = {"stage": stage, "runner-class": "cpu-ci", "suite": "smoke", "backend": "cpu",
              "compiler-mode": "installed", "python": sys.executable, **inputs}
    status, outputs = run.run_composite(action_dir, values, env)
    return run, status, outputs, uploads


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return publish_store(tmp_path_factory.mktemp("store"))


def gate_runs(outputs: dict, prescreen_result: str = "success", labels: tuple[str, ...] = (),
              full_run: bool = False) -> bool:
    doc = load_yaml(WORKFLOWS / "pr-gate.yml")
    github = github_context("pull_request", "pull_request.synchronize")
    github["event"]["pull_request"]["labels"] = [{"name": name} for name in labels]
    opt_in = {"run": "true", "full": "true" if "perf-full" in labels else "false"}  # the opt-in job's answer
    ctx = {"github": github, "vars": {}, "inputs": {"full-run": full_run},
           "needs": {"prescreen": {"result": prescreen_result, "outputs": outputs},
                     "opt-in": {"result": "success", "outputs": opt_in}}}
    return condition(doc["jobs"]["gate"]["if"], Evaluator(ctx))


def result(tmp: Path, prescreen: str, gate: str, outputs: dict) -> subprocess.CompletedProcess:
    step = load_yaml(WORKFLOWS / "pr-gate.yml")["jobs"]["result"]["steps"][0]
    env = {"PATH": os.environ["PATH"], "PRESCREEN": prescreen, "GATE": gate, "OPTED_IN": "true",
           "ROWS_CHANGED": outputs.get("rows-changed", ""), "ROWS_TOTAL": outputs.get("rows-total", ""),
           "PRESCREEN_VERDICT": outputs.get("verdict", ""), "GITHUB_STEP_SUMMARY": str(tmp / "summary.md")}
    (tmp / "result.sh").write_text(step["run"])
    return subprocess.run(["bash", "-eo", "pipefail", str(tmp / "result.sh")], env=env, capture_output=True, text=True)


@pytest.mark.slow
def test_no_kernel_changed_uploads_the_prescreen_verdict_and_skips_the_gpu(tmp_path: Path, store: Path) -> None:
    run, status, outputs, uploads = run_stage(tmp_path, "prescreen", 0, store)
    assert status == "success", run.log()
    assert outputs["rows-changed"] == "0" and outputs["rows-total"] == "5", outputs
    assert set(uploads) == {"tritongate-verdict-cpu-ci-smoke", "tritongate-prescreen-cpu-ci-smoke",
                            "tritongate-runs-prescreen-cpu-ci-smoke"}
    verdict = Path(uploads["tritongate-verdict-cpu-ci-smoke"]["path"])
    assert "no GPU time used" in (verdict / "verdict.md").read_text()
    assert json.loads((verdict / "pr.json").read_text())["pr"] == 42
    job_outputs = {"rows-changed": "0", "rows-total": "5", "verdict": "true", "key": outputs["key"]}
    assert gate_runs(job_outputs) is False
    assert gate_runs(job_outputs, labels=("perf-full",)) is True
    assert gate_runs(job_outputs, full_run=True) is True
    decided = result(tmp_path, "success", "skipped", job_outputs)
    assert decided.returncode == 0 and "0 of 5 rows" in (tmp_path / "summary.md").read_text()


@pytest.mark.slow
def test_changed_rows_run_the_gpu_job_on_them_only(tmp_path: Path, store: Path) -> None:
    run, status, outputs, uploads = run_stage(tmp_path, "prescreen", 2, store)
    assert status == "success", run.log()
    assert outputs["rows-changed"] == "2" and "tritongate-verdict-cpu-ci-smoke" not in uploads
    ir_diff = Path(uploads["tritongate-prescreen-cpu-ci-smoke"]["path"])
    assert (ir_diff / "changed_rows.json").is_file()
    assert gate_runs({"rows-changed": "2", "verdict": "false"}) is True
    # the GPU job: the downloaded ir-diff goes to the paired check as --changed-from
    gate_tmp = tmp_path / "gate"
    gate_tmp.mkdir()
    run, status, gate_out, _ = run_stage(gate_tmp, "gate", 2, store, **{"changed-from": str(ir_diff)})
    assert status == "success", run.log()
    args = (gate_tmp / "temp" / "pair-args.txt").read_text().splitlines()
    assert args[args.index("--changed-from") + 1] == str(ir_diff)
    assert result(tmp_path, "success", "success", {"rows-changed": "2"}).returncode == 0


@pytest.mark.parametrize("prescreen, gate, outputs, passes", [
    ("failure", "success", {}, True),                                   # the GPU ran every row: its verdict counts
    ("failure", "skipped", {}, False),                                  # nothing ran: never a pass by skipping
    ("success", "failure", {"rows-changed": "2"}, False),
    ("success", "skipped", {"rows-changed": "0", "verdict": "false"}, False),  # 0 changed but no verdict
    ("skipped", "skipped", {}, False),                                  # a fork PR refused, or cancelled
])
def test_the_result_job_passes_only_on_a_verdict(tmp_path: Path, prescreen: str, gate: str, outputs: dict,
                                                passes: bool) -> None:
    assert (result(tmp_path, prescreen, gate, outputs).returncode == 0) is passes


def test_a_failed_or_unknown_prescreen_times_every_row() -> None:
    assert gate_runs({}, prescreen_result="failure") is True
    assert gate_runs({"rows-changed": "unknown"}) is True
    doc = load_yaml(WORKFLOWS / "pr-gate.yml")
    changed = next(s for s in doc["jobs"]["gate"]["steps"] if s.get("id") == "changed")
    ctx = {"github": github_context("pull_request", "pull_request.synchronize"), "inputs": {},
           "needs": {"prescreen": {"result": "success", "outputs": {"rows-changed": "unknown"}},
                     "opt-in": {"result": "success", "outputs": {"run": "true", "full": "false"}}}}
    assert condition(changed["if"], Evaluator(ctx)) is False  # no ir-diff to download: every row is timed


def test_a_full_run_skips_the_pre_screen_so_one_job_uploads_the_verdict() -> None:
    """full-run: true on a PR whose kernels are unchanged used to run both: the pre-screen's zero
    verdict and the gate's verdict were two artifacts of one name, and the second upload failed."""
    from tests.workflows.payloads import github_context
    from tests.workflows.replay import Evaluator, condition, load_yaml

    jobs = load_yaml(REPO / ".github" / "workflows" / "pr-gate.yml")["jobs"]
    needs = {"opt-in": {"result": "success", "outputs": {"run": "true", "full": "false"}},
             "prescreen": {"result": "skipped", "outputs": {}}}
    for full_run, screened in ((True, False), (False, True)):
        ctx = {"github": github_context("pull_request", "pull_request.synchronize"), "vars": {}, "needs": needs,
               "inputs": {"compiler-mode": "source", "prescreen": True, "full-run": full_run}}
        assert condition(jobs["prescreen"]["if"], Evaluator(ctx)) is screened
        assert condition(jobs["gate"]["if"], Evaluator(ctx)) is True  # prescreen skipped: the gate times every row


def test_wheel_mode_on_a_pull_request_finds_its_base_from_the_merge_commit() -> None:
    """compiler-mode wheel without base-ref used to skip the merge checkout and then stop with
    'a pull_request needs --merge-checkout', naming no input."""
    from tests.workflows.payloads import github_context
    from tests.workflows.replay import Evaluator, condition, load_yaml

    steps = load_yaml(REPO / ".github" / "actions" / "pr-gate" / "action.yml")["runs"]["steps"]
    checkout = next(s for s in steps if s.get("name", "").startswith("Check out the merge commit"))
    for mode, checks_out in (("wheel", True), ("source", True), ("installed", False)):
        ctx = {"github": github_context("pull_request", "pull_request.synchronize"),
               "inputs": {"compiler-mode": mode, "base-ref": ""}}
        assert condition(checkout["if"], Evaluator(ctx)) is checks_out, mode
