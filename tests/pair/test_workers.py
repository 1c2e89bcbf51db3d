"""Real worker processes (``python -m tritongate.pair.worker``) running the scripted executor:
crashes, hangs and fatal device errors cost one row and a restart; overlays reach only their
side; an interrupted or killed parent leaves incomplete, loadable run directories."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tritongate.errors import IncompleteRunError
from tritongate.gate.verdict import Verdict
from tritongate.pair.build import CompilerBuild
from tritongate.pair.orchestrator import PairRequest, run_pair
from tritongate.rundir import load_run
from tritongate.schema import RowStatus, RunStatus

ROOT = Path(__file__).resolve().parents[2]
EXECUTOR = "tests.pair.fakes:ScriptedExecutor"


@pytest.fixture(autouse=True)
def _importable(monkeypatch):
    """Workers import the scripted executor from this checkout."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))


def _request(tmp_path: Path, cand_env=None, **kw) -> PairRequest:
    # real worker processes: a pool of 3 pairs (not a GPU run's 8) keeps the tests' process
    # starts few, and the rows after a failure rotate back onto the failed worker's pair
    kw.setdefault("worker_pool", 3)
    return PairRequest(baseline=tmp_path / "baseline", suite="scripted", out=tmp_path / "out",
                       base=CompilerBuild("base", env={"TG_SIDE": "base"}),
                       cand=CompilerBuild("candidate", env={"TG_SIDE": "candidate", "TG_BINARY": "new",
                                                            **(cand_env or {})}),
                       executor=EXECUTOR, **kw)


def _gone(pid: int, wait_s: float = 15.0) -> bool:
    """The process has exited (a zombie waiting for a reaper counts as exited)."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/status").read_text()
        except FileNotFoundError:
            return True
        if "\nState:\tZ" in state:
            return True
        time.sleep(0.1)
    return False


def _by_op(outcome):
    return {r.op: r for r in outcome.result.rows}


@pytest.mark.slow
def test_a_crashing_worker_costs_one_row_and_is_restarted(tmp_path):
    outcome = run_pair(_request(tmp_path, cand_env={"TG_CRASH": "softmax"}, worker_pool=1))
    rows = _by_op(outcome)
    assert rows["softmax"].verdict is Verdict.REJECTED
    reasons = "; ".join(rows["softmax"].reasons)
    assert "candidate worker died (SIGSEGV)" in reasons
    assert rows["add"].verdict is rows["matmul"].verdict is Verdict.UNCHANGED  # before and after the crash
    assert outcome.restarts == {"base": 0, "candidate": 1}
    cand = load_run(outcome.cand_path)
    assert cand.complete and cand.row_map()[("softmax", "64x512", "float16")].status is RowStatus.ERROR
    log = (outcome.cand_path / "run.log").read_text()
    assert "WORKER_RESTART side=candidate" in log
    # one start, one restart after the crash, and one per fresh worker pair a row moved to
    fresh = log.count("WORKER_PAIR_FRESH side=candidate")
    assert fresh >= 2  # the rows timed before and after the crash each got a second worker pair
    assert (outcome.path / "workers" / "candidate.log").read_text().count("--- worker start") == 2 + fresh


@pytest.mark.slow
def test_a_hanging_worker_is_killed_at_the_row_timeout(tmp_path):
    t0 = time.monotonic()
    outcome = run_pair(_request(tmp_path, cand_env={"TG_HANG": "add"}, row_timeout_s=2.0))
    assert time.monotonic() - t0 < 60
    rows = _by_op(outcome)
    assert rows["add"].verdict is Verdict.REJECTED and "timeout on candidate" in "; ".join(rows["add"].reasons)
    cand_row = load_run(outcome.cand_path).row_map()[("add", "4096", "float16")]
    assert cand_row.status is RowStatus.TIMEOUT and cand_row.markers[0].startswith("ROW_TIMEOUT side=candidate")
    assert rows["softmax"].verdict is rows["matmul"].verdict is Verdict.UNCHANGED
    assert outcome.restarts["candidate"] == 1


def test_a_fatal_device_error_restarts_the_worker(tmp_path):
    outcome = run_pair(_request(tmp_path, cand_env={"TG_FATAL": "add"}))
    rows = _by_op(outcome)
    assert rows["add"].verdict is Verdict.REJECTED
    assert "fatal device error" in "; ".join(rows["add"].reasons)
    assert "illegal memory access" in "; ".join(rows["add"].reasons)
    assert outcome.restarts["candidate"] == 1  # the device context is gone: a fresh worker
    assert rows["softmax"].verdict is rows["matmul"].verdict is Verdict.UNCHANGED


def test_an_overlay_reaches_only_its_side(tmp_path):
    outcome = run_pair(_request(tmp_path, cand_env={"TG_PROBE": "only-candidate"}))
    base, cand = load_run(outcome.base_path), load_run(outcome.cand_path)
    assert all(r.params.get("probe") == "only-candidate" for r in cand.rows)
    assert all("probe" not in r.params for r in base.rows)
    assert cand.identity["pair"]["build"]["env_overlay"]["TG_PROBE"] == "only-candidate"
    assert "TG_PROBE" not in base.identity["pair"]["build"]["env_overlay"]
    # each side compiles into its own cache
    assert base.identity["codegen_env"] == cand.identity["codegen_env"] == {}
    ran = next(line for line in outcome.verdict_md.read_text().splitlines() if line.startswith("Ran on "))
    assert "candidate:" in ran and "TG_PROBE=only-candidate" in ran.split("candidate:")[1]  # the overlay, its side's


def test_ctrl_c_stops_the_workers_and_leaves_incomplete_run_dirs(tmp_path):
    from tritongate.progress import Progress

    def interrupt(ev: Progress) -> None:
        if ev.kind == "row_done" and ev.index == 0:
            raise KeyboardInterrupt

    req = _request(tmp_path)
    with pytest.raises(KeyboardInterrupt) as stopped:
        run_pair(req, interrupt)
    (pair_dir,) = (tmp_path / "out").glob("pair-*")
    assert str(pair_dir / "base") in stopped.value.__notes__[0]  # the CLI prints where they are
    for side in ("base", "candidate"):
        with pytest.raises(IncompleteRunError):
            load_run(pair_dir / side)
        run = load_run(pair_dir / side, allow_incomplete=True)
        assert run.status is RunStatus.FAILED and len(run.rows) == 1
        assert _gone(run.identity["pair"]["worker_pid"])


@pytest.mark.slow
def test_kill_9_of_the_parent_leaves_incomplete_loadable_run_dirs(tmp_path):
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from tritongate.pair.build import CompilerBuild
        from tritongate.pair.orchestrator import PairRequest, run_pair
        out = Path({str(tmp_path / 'out')!r})
        run_pair(PairRequest(baseline=out / "b", suite="scripted", out=out, executor={EXECUTOR!r},
                             base=CompilerBuild("base", env={{"TG_SIDE": "base", "TG_SLEEP": "0.2"}}),
                             cand=CompilerBuild("candidate", env={{"TG_SIDE": "candidate", "TG_SLEEP": "0.2",
                                                                  "TG_BINARY": "new"}})))
    """))
    parent = subprocess.Popen([sys.executable, str(script)], env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        deadline = time.monotonic() + 60
        results = None
        while time.monotonic() < deadline:
            found = list((tmp_path / "out").glob("pair-*/base/results.json"))
            if found and '"op"' in found[0].read_text():
                results = found[0]
                break
            assert parent.poll() is None, "the parent finished before it could be killed"
            time.sleep(0.05)
        assert results is not None, "no row was written within 60 s"
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
    finally:
        if parent.poll() is None:
            parent.kill()
    pair_dir = results.parent.parent
    for side in ("base", "candidate"):
        with pytest.raises(IncompleteRunError):
            load_run(pair_dir / side)
        run = load_run(pair_dir / side, allow_incomplete=True)
        assert run.status is RunStatus.RUNNING  # the writer never got to say anything else
        assert len(run.rows) >= (1 if side == "base" else 0)
        assert _gone(run.identity["pair"]["worker_pid"])  # stdin closed: the worker exits


def test_a_side_that_keeps_crashing_gives_up_and_the_gate_still_runs(tmp_path, monkeypatch):
    from tritongate.pair import pool

    monkeypatch.setattr(pool, "MAX_RESTARTS", 1)
    outcome = run_pair(_request(tmp_path, cand_env={"TG_CRASH": "add,softmax,matmul"}, worker_pool=1))
    assert [r.verdict for r in outcome.result.rows] == [Verdict.REJECTED] * 3
    assert "gave up" in "; ".join(outcome.result.rows[2].reasons) or \
        "failed 1 times" in "; ".join(outcome.result.rows[2].reasons)
    assert outcome.result.exit_code == 1  # the candidate fails rows the base runs
    assert "WORKER_GAVE_UP side=candidate" in (outcome.cand_path / "run.log").read_text()


def test_an_interpreter_that_prints_at_start_up_is_a_named_error(tmp_path):
    from tritongate.errors import MeasurementError

    chatty = tmp_path / "python"
    chatty.write_text(f"#!/bin/sh\necho 'hello from sitecustomize'\nexec {sys.executable} \"$@\"\n")
    chatty.chmod(0o755)
    req = _request(tmp_path)
    req = PairRequest(**{**req.__dict__, "cand": CompilerBuild("candidate", python=str(chatty),
                                                                 env={"TG_SIDE": "candidate"})})
    with pytest.raises(MeasurementError, match="not a protocol message"):
        run_pair(req)


def test_a_worker_answers_only_the_protocols_commands():
    """An attribute of the executor that is not a command (close, a private one) is refused by
    name, and the worker goes on answering."""
    import io

    from tritongate.pair.protocol import decode, encode
    from tritongate.pair.worker import serve

    requests = io.BytesIO(b"".join(encode(m) for m in (
        {"seq": 1, "cmd": "init", "args": {"settings": {}}},
        {"seq": 2, "cmd": "close"},
        {"seq": 3, "cmd": "_op"},
        {"seq": 4, "cmd": "unshare"},
        {"seq": 5, "cmd": "shutdown"})))
    answers = io.BytesIO()
    assert serve(requests, answers, "tests.pair.fakes:ScriptedExecutor") == 0
    got = {m["seq"]: m for m in map(decode, answers.getvalue().splitlines())}
    assert got[1]["ok"] and got[4]["ok"] and got[5]["ok"]
    for seq, cmd in ((2, "close"), (3, "_op")):
        assert not got[seq]["ok"] and f"unknown command {cmd!r}" in got[seq]["error"]
