"""The CPU pre-screen wired into pr-gate.yml and the pr-gate action as three jobs, replayed
with a stand-in ci/prescreen.py that does what its interface promises: `--side base|cand`
writes one build's half (side-SIDE.json, ir-SIDE/, capture-SIDE/) and no step output;
`--judge` reads both halves from its --out folder and writes prescreen.json, ir-diff/,
rows_changed/rows_total on $GITHUB_OUTPUT, and a verdict folder when no row changed.

Each stage runs in a job of its own (its own workspace and runner temp folder) from a copy of
this repository's action and ci/ folders with the stand-in beside them; the artifacts the side
jobs upload go to a local artifact store and the judge job downloads them from there, as
upload-artifact and download-artifact would. The GPU job's `if:` and the result job's
decision are then evaluated over the judge's outputs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.workflows.payloads import github_context
from tests.workflows.replay import Evaluator, JobRun, condition, load_yaml
from tests.workflows.test_gate_action import publish_store, server_with_store
from tests.workflows.test_pr_gate_steps import REPO, WORKFLOWS, clean_env

KEY = "cpu-ci-smoke"

FAKE_PRESCREEN = '''
import argparse, json, os, sys
from pathlib import Path
p = argparse.ArgumentParser()
for opt in ("--baseline", "--out", "--suite"):
    p.add_argument(opt, required=True)
p.add_argument("--base-python")
p.add_argument("--cand-python")
p.add_argument("--side", choices=("base", "cand"))
p.add_argument("--judge", action="store_true")
a = p.parse_args()
out = Path(a.out)
if a.side:  # one build's half: its files, no step output
    assert not a.judge and getattr(a, f"{a.side}_python"), "a side needs its own build's interpreter"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"side-{a.side}.json").write_text(json.dumps({"side": a.side, "baseline": a.baseline}))
    (out / f"ir-{a.side}" / "ttgir").mkdir(parents=True)
    (out / f"ir-{a.side}" / "ttgir" / "index.tsv").write_text("kernel\\n")
    (out / f"capture-{a.side}" / "run").mkdir(parents=True)
    (out / f"ir-{a.side}.triton-cache").mkdir()  # the build's kernel cache: not part of the half
    print(out / f"side-{a.side}.json")
    sys.exit(0)
assert a.judge and not a.base_python and not a.cand_python, "the judge holds no build"
for side in ("base", "cand"):
    if not (out / f"side-{side}.json").is_file() or not (out / f"ir-{side}" / "ttgir").is_dir():
        print(f"error: no {side} half in {out}", file=sys.stderr)
        sys.exit(2)
changed, total = int(os.environ["FAKE_CHANGED"]), 5
(out / "ir-diff").mkdir()
(out / "ir-diff" / "changed_rows.json").write_text(json.dumps({"rows": changed}))
(out / "prescreen.json").write_text(json.dumps({"rows_changed": changed, "rows_total": total,
                                                "baseline": a.baseline}))
if changed == 0:
    (out / "verdict").mkdir()
    (out / "verdict" / "verdict.json").write_text(json.dumps({"passed": True}))
    (out / "verdict" / "verdict.md").write_text(f"0 of {total} rows' kernels changed between the two builds; no GPU time used\\n")
with open(os.environ["GITHUB_OUTPUT"], "a") as f:
    f.write(f"rows_changed={changed}\\nrows_total={total}\\n")
print("judged", a.baseline, "suite", a.suite)
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


class Artifacts:
    """upload-artifact and download-artifact of one workflow run, on a local folder: an upload
    keeps its paths relative to their least common ancestor (one folder: its contents); a
    download of a name puts that artifact's files straight into `path`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.uploaded: dict[str, dict] = {}
        self.downloaded: list[str] = []

    def upload(self, with_values: dict) -> None:
        name = with_values["name"]
        assert name not in self.uploaded, f"{name}: uploaded twice in one run (409)"
        self.uploaded[name] = with_values
        paths = [Path(line.strip()) for line in str(with_values["path"]).splitlines() if line.strip()]
        found = [p for p in paths if p.exists()]
        if not found:
            return
        if len(found) == 1:
            base = found[0] if found[0].is_dir() else found[0].parent
        else:
            base = Path(os.path.commonpath([str(p) for p in found]))
        for p in found:
            dest = self.root / name / p.relative_to(base) if p != base else self.root / name
            if p.is_dir():
                shutil.copytree(p, dest, dirs_exist_ok=True)
            else:
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(p, dest)

    def download(self, with_values: dict) -> tuple[str, dict]:
        src = self.root / with_values["name"]
        if not src.is_dir():
            return "failure", {}  # "Unable to download artifact(s): Artifact not found"
        self.downloaded.append(with_values["name"])
        shutil.copytree(src, Path(with_values["path"]), dirs_exist_ok=True)
        return "success", {}


@dataclass
class Runner:
    """One job's runner for a pull_request event: the action tree, workspace, RUNNER_TEMP, the
    github context (its event file written) and the job's environment."""
    action_dir: Path
    workspace: Path
    runner_temp: Path
    github: dict
    env: dict


def pr_runner(tmp: Path, server: Path, changed: int) -> Runner:
    action_dir = action_tree(tmp)
    workspace, runner_temp = tmp / "ws", tmp / "temp"
    workspace.mkdir()
    runner_temp.mkdir()
    github = github_context("pull_request", "pull_request.synchronize", server_url=server.as_uri(), token="t")
    (tmp / "event.json").write_text(json.dumps(github["event"]))
    env = {**clean_env(tmp, workspace, runner_temp), "GITHUB_SERVER_URL": server.as_uri(),
           "GITHUB_EVENT_PATH": str(tmp / "event.json"), "FAKE_CHANGED": str(changed)}
    return Runner(action_dir, workspace, runner_temp, github, env)


@dataclass
class Stage:
    run: JobRun
    status: str
    outputs: dict
    checkouts: list[dict]


def run_stage(tmp: Path, stage: str, server: Path, artifacts: Artifacts, changed: int,
              python: str = sys.executable, **inputs: str) -> Stage:
    """One job: the pr-gate action at ``stage`` on a runner of its own."""
    tmp.mkdir(parents=True)
    r = pr_runner(tmp, server, changed)
    contexts = {"github": r.github, "vars": {}, "runner": {"temp": str(r.runner_temp), "os": "Linux"}}
    checkouts: list[dict] = []

    def uses(run: JobRun, step: dict, with_values: dict):
        ref = step["uses"]
        if ref.startswith("actions/upload-artifact@"):
            artifacts.upload(with_values)
            return None
        if ref.startswith("actions/download-artifact@"):
            return artifacts.download(with_values)
        if ref.startswith("actions/setup-python@"):  # the judge's interpreter: here, this one
            return "success", {"python-path": sys.executable, "python-version": "3.12"}
        if ref.startswith("actions/checkout@"):
            checkouts.append(with_values)
            return None
        raise AssertionError(ref)

    run = JobRun(r.workspace, r.runner_temp, contexts, r.env, uses)
    run.fakes["judge-deps"] = {}  # pip install from PyPI: the judge's interpreter here has them
    values = {"stage": stage, "runner-class": "cpu-ci", "suite": "smoke", "backend": "cpu",
              "compiler-mode": "installed", "python": python, **inputs}
    status, outputs = run.run_composite(r.action_dir, values, r.env)
    return Stage(run, status, outputs, checkouts)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return publish_store(tmp_path_factory.mktemp("store"))


def gate_runs(outputs: dict, judge_result: str = "success", labels: tuple[str, ...] = (),
              full_run: bool = False) -> bool:
    doc = load_yaml(WORKFLOWS / "pr-gate.yml")
    github = github_context("pull_request", "pull_request.synchronize")
    github["event"]["pull_request"]["labels"] = [{"name": name} for name in labels]
    opt_in = {"run": "true", "full": "true" if "perf-full" in labels else "false"}  # the opt-in job's answer
    ctx = {"github": github, "vars": {}, "inputs": {"full-run": full_run},
           "needs": {"judge": {"result": judge_result, "outputs": outputs},
                     "opt-in": {"result": "success", "outputs": opt_in}}}
    return condition(doc["jobs"]["gate"]["if"], Evaluator(ctx))


def result(tmp: Path, judge: str, gate: str, outputs: dict) -> subprocess.CompletedProcess:
    step = load_yaml(WORKFLOWS / "pr-gate.yml")["jobs"]["result"]["steps"][0]
    env = {"PATH": os.environ["PATH"], "JUDGE": judge, "GATE": gate, "OPTED_IN": "true",
           "ROWS_CHANGED": outputs.get("rows-changed", ""), "ROWS_TOTAL": outputs.get("rows-total", ""),
           "JUDGE_VERDICT": outputs.get("verdict", ""), "GITHUB_STEP_SUMMARY": str(tmp / "summary.md")}
    (tmp / "result.sh").write_text(step["run"])
    return subprocess.run(["bash", "-eo", "pipefail", str(tmp / "result.sh")], env=env, capture_output=True, text=True)


def _sides(tmp: Path, server: Path, artifacts: Artifacts, changed: int) -> None:
    for side in ("base", "cand"):
        st = run_stage(tmp / side, f"prescreen-{side}", server, artifacts, changed)
        assert st.status == "success", st.run.log()
        # a half decides nothing: no rows-changed, no verdict, no IR diff
        assert st.outputs["rows-changed"] == "unknown" and st.outputs["verdict-dir"] == "", st.outputs
        assert st.outputs["ir-diff"] == "" and st.outputs["exit-code"] == "0", st.outputs
        half = artifacts.root / f"tritongate-half-{side}-{KEY}"
        assert sorted(p.name for p in half.iterdir()) == [f"capture-{side}", f"ir-{side}", f"side-{side}.json"]
        built = {sid for sid in ("base", "cand") if st.run.inner_steps[sid]["outcome"] == "success"}
        assert built == {side}, f"the {side} half built {built}"  # mode installed: no overlay of the base


@pytest.mark.slow
def test_no_kernel_changed_the_judge_uploads_the_verdict_and_the_gpu_is_skipped(tmp_path: Path, store: Path) -> None:
    server, artifacts = server_with_store(tmp_path, store), Artifacts(tmp_path / "artifacts")
    _sides(tmp_path, server, artifacts, 0)
    judge = run_stage(tmp_path / "judge", "judge", server, artifacts, 0)
    assert judge.status == "success", judge.run.log()
    assert judge.outputs["rows-changed"] == "0" and judge.outputs["rows-total"] == "5", judge.outputs
    assert artifacts.downloaded == [f"tritongate-half-base-{KEY}", f"tritongate-half-cand-{KEY}"]
    # the judge checks out nothing and builds nothing
    assert judge.checkouts == []
    assert all(judge.run.inner_steps[sid]["outcome"] == "skipped" for sid in ("base-plan", "base", "cand-plan", "cand"))
    assert f"tritongate-verdict-{KEY}" in artifacts.uploaded and f"tritongate-prescreen-{KEY}" in artifacts.uploaded
    verdict = artifacts.root / f"tritongate-verdict-{KEY}"
    assert "no GPU time used" in (verdict / "verdict.md").read_text()
    assert json.loads((verdict / "pr.json").read_text())["pr"] == 42
    job_outputs = {"rows-changed": "0", "rows-total": "5", "verdict": "true", "key": judge.outputs["key"]}
    assert gate_runs(job_outputs) is False
    assert gate_runs(job_outputs, labels=("perf-full",)) is True
    assert gate_runs(job_outputs, full_run=True) is True
    decided = result(tmp_path, "success", "skipped", job_outputs)
    assert decided.returncode == 0 and "0 of 5 rows" in (tmp_path / "summary.md").read_text()


@pytest.mark.slow
def test_changed_rows_run_the_gpu_job_on_them_only(tmp_path: Path, store: Path) -> None:
    server, artifacts = server_with_store(tmp_path, store), Artifacts(tmp_path / "artifacts")
    _sides(tmp_path, server, artifacts, 2)
    judge = run_stage(tmp_path / "judge", "judge", server, artifacts, 2)
    assert judge.status == "success", judge.run.log()
    assert judge.outputs["rows-changed"] == "2" and f"tritongate-verdict-{KEY}" not in artifacts.uploaded
    assert gate_runs({"rows-changed": "2", "verdict": "false"}) is True
    # the GPU job: the judge's ir-diff, downloaded, goes to the paired check as --changed-from
    ir_diff = tmp_path / "gpu-download" / "ir-diff"
    assert artifacts.download({"name": f"tritongate-prescreen-{KEY}", "path": str(ir_diff)})[0] == "success"
    assert (ir_diff / "changed_rows.json").is_file()
    gate = run_stage(tmp_path / "gate", "gate", server, artifacts, 2, **{"changed-from": str(ir_diff)})
    assert gate.status == "success", gate.run.log()
    args = (tmp_path / "gate" / "temp" / "pair-args.txt").read_text().splitlines()
    assert args[args.index("--changed-from") + 1] == str(ir_diff)
    assert result(tmp_path, "success", "success", {"rows-changed": "2"}).returncode == 0


@pytest.mark.slow
def test_a_missing_half_fails_the_judge_and_the_gpu_times_every_row(tmp_path: Path, store: Path) -> None:
    server, artifacts = server_with_store(tmp_path, store), Artifacts(tmp_path / "artifacts")
    base = run_stage(tmp_path / "base", "prescreen-base", server, artifacts, 0)
    assert base.status == "success", base.run.log()
    judge = run_stage(tmp_path / "judge", "judge", server, artifacts, 0)
    assert judge.status == "failure" and judge.outputs["rows-changed"] == "unknown", judge.run.log()
    assert f"tritongate-verdict-{KEY}" not in artifacts.uploaded
    assert gate_runs({"rows-changed": "unknown"}, judge_result="failure") is True


EVIL_PYTHON = '''#!/usr/bin/env bash
# A PR build whose code tries to steer the job it runs in: what it sees, then the file commands.
{ printf 'HOME=%s\\n' "$HOME"
  for v in GITHUB_ENV GITHUB_OUTPUT GITHUB_PATH GITHUB_STEP_SUMMARY GITHUB_STATE GITHUB_TOKEN; do
    printf '%s=%s\\n' "$v" "${!v-<unset>}"; done; echo --; } >> "$EVIL_LOG"
if [[ -n "${GITHUB_ENV:-}" ]]; then echo "BASH_ENV=$EVIL_LOG.sh" >> "$GITHUB_ENV"; fi
if [[ -n "${GITHUB_OUTPUT:-}" ]]; then
  printf 'rows_changed=0\\nrows_total=5\\nverdict-dir=/tmp/forged\\nside-dir=/tmp/forged\\nexit-code=0\\n' >> "$GITHUB_OUTPUT"
fi
if [[ -n "${GITHUB_PATH:-}" ]]; then echo /tmp/forged >> "$GITHUB_PATH"; fi
if [[ -n "${GITHUB_STEP_SUMMARY:-}" ]]; then echo "forged summary" >> "$GITHUB_STEP_SUMMARY"; fi
exec "$REAL_PYTHON" "$@"
'''


@pytest.mark.slow
def test_the_pr_build_and_its_half_run_without_the_jobs_file_commands(tmp_path: Path, store: Path) -> None:
    """The PR side's build, its baseline lookup and its half run the PR build's interpreter:
    here one that appends BASH_ENV to $GITHUB_ENV, rows_changed=0 and a verdict folder to
    $GITHUB_OUTPUT, a folder to $GITHUB_PATH and a line to the summary, wherever it can. It
    must find none of the job's files, run in a throwaway HOME, and set no output."""
    evil = tmp_path / "bin" / "python-pr"
    evil.parent.mkdir()
    evil.write_text(EVIL_PYTHON)
    evil.chmod(0o755)
    log = tmp_path / "evil.log"
    server, artifacts = server_with_store(tmp_path, store), Artifacts(tmp_path / "artifacts")
    os.environ["EVIL_LOG"], os.environ["REAL_PYTHON"] = str(log), sys.executable
    try:
        st = run_stage(tmp_path / "cand", "prescreen-cand", server, artifacts, 0, python=str(evil))
    finally:
        del os.environ["EVIL_LOG"], os.environ["REAL_PYTHON"]
    assert st.status == "success", st.run.log()  # the harness also checks that no step's $GITHUB_ENV was written
    seen = [dict(line.split("=", 1) for line in block.strip().splitlines())
            for block in log.read_text().split("--\n") if block.strip()]
    assert len(seen) >= 3, seen  # the build, the baseline lookup, the half
    steps_root = str(tmp_path / "cand" / "steps")  # where the replay keeps each step's real files
    for env in seen:
        for name in ("GITHUB_ENV", "GITHUB_PATH", "GITHUB_STEP_SUMMARY", "GITHUB_STATE", "GITHUB_TOKEN"):
            assert env[name] == "<unset>", (name, env)
        assert not env["GITHUB_OUTPUT"].startswith(steps_root), env  # a file of the wrapper's own, or none
        assert "/tritongate-pr/home-" in env["HOME"], env
    assert st.run.inner_steps["cand"]["outputs"]["python"] == str(evil)  # the build's own outputs still pass
    for sid, step in st.run.inner_steps.items():
        assert "rows_changed" not in step["outputs"] and step["outputs"].get("verdict-dir", "") == "", sid
        assert step["outputs"].get("side-dir", "") in ("", str(tmp_path / "cand" / "temp" / "tritongate" /
                                                            "prescreen-cand")), sid
    assert st.outputs["rows-changed"] == "unknown" and st.outputs["verdict-dir"] == ""
    assert not any("forged" in s for s in st.run.summaries)
    assert set(artifacts.uploaded) == {f"tritongate-half-cand-{KEY}", f"tritongate-runs-prescreen-cand-{KEY}"}


def test_the_judge_refuses_halves_holding_a_link(tmp_path: Path) -> None:
    temp = tmp_path / "temp"
    halves = temp / "tritongate" / "prescreen"
    (halves / "ir-cand").mkdir(parents=True)
    (halves / "ir-cand" / "ttgir").symlink_to("/etc")
    marker = tmp_path / "judged"
    judge_py = tmp_path / "judge-py"
    judge_py.write_text(f"#!/bin/sh\ntouch {marker}\n")
    judge_py.chmod(0o755)
    env = {"PATH": os.environ["PATH"], "RUNNER_TEMP": str(temp), "GITHUB_OUTPUT": str(tmp_path / "out"),
           "JUDGE_PY": str(judge_py), "RECORD": str(tmp_path), "TG_SUITE": "smoke"}
    proc = subprocess.run(["bash", str(REPO / "ci" / "gate_steps.sh"), "judge"], env=env, capture_output=True,
                          text=True)
    assert proc.returncode == 0 and "hold a link (ir-cand/ttgir): refused" in proc.stdout, proc.stdout + proc.stderr
    assert (tmp_path / "out").read_text() == "exit-code=2\n" and not marker.exists()


@pytest.mark.parametrize("stage, ok", [("gate", True), ("prescreen-base", True), ("prescreen-cand", True),
                                       ("judge", True), ("prescreen", False), ("", False)])
def test_the_action_names_its_stages_and_refuses_the_old_one(tmp_path: Path, stage: str, ok: bool) -> None:
    proc = subprocess.run(["bash", str(REPO / "ci" / "gate_steps.sh"), "check-stage"],
                          env={"PATH": os.environ["PATH"], "RUNNER_TEMP": str(tmp_path), "TG_STAGE": stage},
                          capture_output=True, text=True)
    assert (proc.returncode == 0) is ok, proc.stdout
    if stage == "prescreen":
        assert "split" in proc.stdout and "judge" in proc.stdout


@pytest.mark.parametrize("judge, gate, outputs, passes", [
    ("failure", "success", {}, True),                                   # the GPU ran every row: its verdict counts
    ("failure", "skipped", {}, False),                                  # nothing ran: never a pass by skipping
    ("success", "failure", {"rows-changed": "2"}, False),
    ("success", "skipped", {"rows-changed": "0", "verdict": "false"}, False),  # 0 changed but no verdict
    ("skipped", "skipped", {}, False),                                  # a fork PR refused, a side failed, cancelled
])
def test_the_result_job_passes_only_on_a_verdict(tmp_path: Path, judge: str, gate: str, outputs: dict,
                                                passes: bool) -> None:
    assert (result(tmp_path, judge, gate, outputs).returncode == 0) is passes


def test_a_failed_or_unknown_judge_times_every_row() -> None:
    assert gate_runs({}, judge_result="failure") is True
    assert gate_runs({}, judge_result="skipped") is True  # a side failed: no judge
    assert gate_runs({"rows-changed": "unknown"}) is True
    doc = load_yaml(WORKFLOWS / "pr-gate.yml")
    changed = next(s for s in doc["jobs"]["gate"]["steps"] if s.get("id") == "changed")
    ctx = {"github": github_context("pull_request", "pull_request.synchronize"), "inputs": {},
           "needs": {"judge": {"result": "success", "outputs": {"rows-changed": "unknown"}},
                     "opt-in": {"result": "success", "outputs": {"run": "true", "full": "false"}}}}
    assert condition(changed["if"], Evaluator(ctx)) is False  # no ir-diff to download: every row is timed


def test_a_judge_that_made_no_ir_diff_leaves_the_gpu_job_nothing_to_download() -> None:
    """A baseline of no CUDA target (ROCm, another FlagTree backend) is screened to "every row
    timed" without an ir-diff/, so nothing is uploaded; the GPU job's download by name used to
    run anyway on rows-changed, fail ("Artifact not found"), and fail every such PR."""
    for name in ("pr-gate.yml", "../../examples/cross-org/perf-gate.yml"):  # same-org calls pr-gate.yml
        doc = load_yaml(WORKFLOWS / name)
        judge = doc["jobs"]["judge"]
        assert judge["outputs"]["ir-diff"].startswith("${{ steps.judge.outputs.ir-diff != '' }}"), name
        changed = next(s for s in doc["jobs"]["gate"]["steps"] if s.get("id") == "changed")
        for made, downloads in (("false", False), ("true", True)):
            ctx = {"github": github_context("pull_request", "pull_request.synchronize"), "inputs": {},
                   "needs": {"judge": {"result": "success", "outputs": {"rows-changed": "34", "ir-diff": made}},
                             "opt-in": {"result": "success", "outputs": {"run": "true", "full": "false"}}}}
            assert condition(changed["if"], Evaluator(ctx)) is downloads, (name, made)


def test_a_full_run_skips_the_pre_screen_so_one_job_uploads_the_verdict() -> None:
    """full-run: true on a PR whose kernels are unchanged used to run both: the pre-screen's zero
    verdict and the gate's verdict were two artifacts of one name, and the second upload failed."""
    jobs = load_yaml(REPO / ".github" / "workflows" / "pr-gate.yml")["jobs"]
    needs = {"opt-in": {"result": "success", "outputs": {"run": "true", "full": "false"}},
             "prescreen": {"result": "skipped", "outputs": {}}, "judge": {"result": "skipped", "outputs": {}}}
    for full_run, screened in ((True, False), (False, True)):
        ctx = {"github": github_context("pull_request", "pull_request.synchronize"), "vars": {}, "needs": needs,
               "inputs": {"compiler-mode": "source", "prescreen": True, "full-run": full_run}}
        for job in ("prescreen", "judge"):
            assert condition(jobs[job]["if"], Evaluator(ctx, lambda: "success")) is screened, job
        assert condition(jobs["gate"]["if"], Evaluator(ctx)) is True  # judge skipped: the gate times every row


def test_wheel_mode_on_a_pull_request_finds_its_base_from_the_merge_commit() -> None:
    """compiler-mode wheel without base-ref used to skip the merge checkout and then stop with
    'a pull_request needs --merge-checkout', naming no input. The judge checks out nothing."""
    steps = load_yaml(REPO / ".github" / "actions" / "pr-gate" / "action.yml")["runs"]["steps"]
    checkout = next(s for s in steps if s.get("name", "").startswith("Check out the merge commit"))
    for stage in ("gate", "prescreen-base", "prescreen-cand", "judge"):
        for mode, checks_out in (("wheel", True), ("source", True), ("installed", False)):
            ctx = {"github": github_context("pull_request", "pull_request.synchronize"),
                   "inputs": {"stage": stage, "compiler-mode": mode, "base-ref": ""}}
            assert condition(checkout["if"], Evaluator(ctx)) is (checks_out and stage != "judge"), (stage, mode)
