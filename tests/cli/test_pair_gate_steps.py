"""The pr-gate action's paired-check step (`ci/gate_steps.sh pair`) and its "Gate result" step,
run on the CPU: `ci/replay_candidate.py` is replaced by one that runs the real `tritongate pair`
CLI on the scripted device in its own process (tests/pair/fakes), with the arguments the step
gives it.

What is pinned here: the step passes `--strict`, so a row the PR's build leaves unjudged fails
the PR instead of passing unmeasured; a paired check that judged no row fails the job (exit 2)
with its verdict still handed on for upload; a PR whose every kernel compiled byte-identical
ahead of time (`changed-from` naming no changed row) passes with exit 0."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]

FAKE_REPLAY = '''
import os, sys
sys.path.insert(0, {repo!r})
from dataclasses import replace
from pathlib import Path

from tritongate.cli import main
from tritongate.ir.changed import ChangedRows
from tritongate.pair import orchestrator

from tests.pair.fakes import InProcessWorker, ScriptedExecutor, World

real = orchestrator.run_pair


def spawn(spec):
    return InProcessWorker(spec.side, lambda settings, spec=spec: ScriptedExecutor(
        settings, world=World(), env=spec.env, side=spec.side))


def run_pair(request, progress=None, **_):
    request = replace(request, executor="tests.pair.fakes:ScriptedExecutor")
    if os.environ.get("FAKE_ALL_UNCHANGED"):  # what --changed-from gives when the pre-screen found no change
        keys = frozenset((op, "x".join(map(str, shape)), dt) for op, shape, dt in
                         __import__("tests.pair.fakes", fromlist=["ROWS"]).ROWS)
        request = replace(request, changed_from=ChangedRows(Path("ir-diff"), keys, frozenset()))
    return real(request, progress, spawn=spawn)


orchestrator.run_pair = run_pair
args = sys.argv[1:]
Path(os.environ["RUNNER_TEMP"], "pair-args.txt").write_text("\\n".join(args))
del args[args.index("--baseline-state"):args.index("--baseline-state") + 2]  # the store lookup is not tested here
sys.exit(main(["pair", *args, *os.environ.get("FAKE_EXTRA", "").split()]))
'''


def _step_tree(tmp: Path) -> Path:
    root = tmp / "tg"
    (root / "ci").mkdir(parents=True)
    shutil.copy(REPO / "ci" / "gate_steps.sh", root / "ci" / "gate_steps.sh")
    shutil.copy(REPO / "ci" / "outputs.sh", root / "ci" / "outputs.sh")  # what the step scripts source
    (root / "ci" / "replay_candidate.py").write_text(FAKE_REPLAY.format(repo=str(REPO)))
    return root / "ci" / "gate_steps.sh"


def _pair_step(tmp: Path, **env: str) -> tuple[subprocess.CompletedProcess, dict[str, str]]:
    runner_temp, output = tmp / "temp", tmp / "github_output"
    runner_temp.mkdir()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_", "TRITONGATE_"))}
    base.update({"RUNNER_TEMP": str(runner_temp), "GITHUB_OUTPUT": str(output),
                 "GITHUB_STEP_SUMMARY": str(tmp / "summary.md"), "BASE_PY": sys.executable,
                 "CAND_PY": sys.executable, "RECORD": str(tmp / "record"), "TG_SUITE": "smoke",
                 "TG_BACKEND": "auto", "TRITONGATE_LOG_DIR": str(tmp / "logs"), "NO_COLOR": "1", **env})
    proc = subprocess.run(["bash", str(_step_tree(tmp)), "pair"], env=base, capture_output=True, text=True,
                          timeout=120)
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines()) if output.exists() else {}
    return proc, outputs


def _gate_result(exit_code: str) -> subprocess.CompletedProcess:
    action = yaml.safe_load((REPO / ".github" / "actions" / "pr-gate" / "action.yml").read_text())
    step = next(s for s in action["runs"]["steps"] if s.get("name") == "Gate result")
    return subprocess.run(["bash", "-eo", "pipefail", "-c", step["run"]], capture_output=True, text=True,
                          env={"PATH": os.environ["PATH"], "GATE_EXIT": exit_code})


def _verdict(outputs: dict[str, str]) -> dict:
    return json.loads((Path(outputs["verdict-dir"]) / "verdict.json").read_text())


def test_the_pr_gate_passes_strict_so_a_row_it_could_not_judge_fails_the_pr(tmp_path: Path) -> None:
    # the PR build's graph capture fails: its rows fall back to event timing (REJECTED, not judged)
    proc, outputs = _pair_step(tmp_path, FAKE_EXTRA="--cand-env TG_BINARY=new --cand-env TG_CAPTURE_FAIL_AT=1")
    assert "--strict" in (tmp_path / "temp" / "pair-args.txt").read_text().splitlines(), proc.stderr
    assert outputs["exit-code"] == "1", proc.stdout + proc.stderr
    verdict = _verdict(outputs)
    assert verdict["policy"]["strict"] is True and verdict["state"] == "fail"
    assert any("timer fallback on candidate only" in " ".join(r["reasons"]) for r in verdict["rows"])
    assert any("under --strict" in f for f in verdict["failures"]), verdict["failures"]
    result = _gate_result(outputs["exit-code"])
    assert result.returncode == 1 and "a row it could not judge" in result.stdout


def test_a_paired_check_that_judged_no_row_fails_the_job_with_its_verdict_uploaded(tmp_path: Path) -> None:
    proc, outputs = _pair_step(tmp_path, FAKE_EXTRA="--shard 4/4")  # three rows: the fourth shard has none
    assert proc.returncode == 0, proc.stderr  # the step hands the code on; the "Gate result" step fails the job
    assert outputs["exit-code"] == "2", proc.stdout + proc.stderr
    assert "error: nothing was measured: no row was planned" in proc.stderr
    assert _verdict(outputs)["headline"] == "⚠️ Nothing was measured: there is no row to judge"
    assert Path(outputs["pair-dir"]).name.startswith("pair-smoke_")
    result = _gate_result(outputs["exit-code"])
    assert result.returncode == 2 and "a paired check that judged no row" in result.stdout


def test_a_pr_that_changed_no_kernel_still_passes(tmp_path: Path) -> None:
    proc, outputs = _pair_step(tmp_path, FAKE_ALL_UNCHANGED="1")
    assert outputs["exit-code"] == "0", proc.stdout + proc.stderr
    verdict = _verdict(outputs)
    assert verdict["headline"] == "✅ 0 of 3 rows' kernels changed between the two builds; no GPU time used"
    assert _gate_result(outputs["exit-code"]).returncode == 0
