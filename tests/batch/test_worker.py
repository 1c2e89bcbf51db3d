"""The device lane's persistent worker: attempts one after another in one process, each with its
own logs (descriptor level), an attempt that dies or fails classified as a fresh process's and
the next one in a new worker, a stop or timeout that kills the worker's group, and the
``--fresh-process`` path. Pids, never timings, say which process ran what."""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.batch.fake_ops import calls, fake_command, write_suite
from tritongate.batch import BatchRequest, OpStatus, run_batch
from tritongate.cli.batch import add_batch_parser, request_from_args
from tritongate.batch.opflow import classify
from tritongate.batch.plan import request_from_manifest
from tritongate.batch.lane import Lane, ProcResult, group_members, own_helpers, run_attempt, worker_call
from tritongate.rundir import load_run

TINY = Path(__file__).with_name("fake_ops") / "tiny_op.py"
PY = sys.executable
ENV = {k: v for k, v in os.environ.items() if k != "TINY_LEFTOVER"} | {"PYTHONUNBUFFERED": "1"}


@pytest.fixture
def lane():
    lane = Lane((PY,), max_attempts=32)
    yield lane
    lane.close(0.2)


def _attempt(launch, tmp: Path, n: int, mode: str, *extra: str, timeout: float | None = 60.0,
             stop: threading.Event | None = None, running: Path | None = None) -> tuple[ProcResult, str, str]:
    out, err = tmp / f"attempt-{n}.stdout.log", tmp / f"attempt-{n}.stderr.log"
    res = launch([PY, str(TINY), mode, *extra], env=ENV, stdout=out, stderr=err, timeout_s=timeout, grace_s=0.2,
                 stop=stop or threading.Event(), running_file=running)
    return res, out.read_text(), err.read_text()


def _pid(stdout: str) -> int:
    return int(stdout.splitlines()[0].split()[1])


def _signature(res: ProcResult, stderr: str) -> str:
    return classify(res, None, stderr, ("float32",), 60.0).signature


def test_a_worker_runs_attempts_one_after_another_with_their_own_logs(tmp_path: Path, lane: Lane) -> None:
    fresh, fresh_out, _ = _attempt(run_attempt, tmp_path, 0, "ok")
    first, out1, err1 = _attempt(lane.run_attempt, tmp_path, 1, "ok")
    second, out2, err2 = _attempt(lane.run_attempt, tmp_path, 2, "ok")
    assert fresh.rc == first.rc == second.rc == 0
    assert _pid(out1) == _pid(out2) == first.pgid == second.pgid and lane.started == 1  # no new process
    for out, err in ((out1, err1), (out2, err2)):  # Python, the descriptors and a child: all in the attempt's logs
        assert out.count("pid ") == 1 and "fd stdout" in out and "child stdout" in out
        assert "python stderr" in err and "fd stderr" in err and "child stderr" in err
    # what the first op changed (env, cwd, sys.path, SIGTERM) was put back: the second sees what a fresh process sees
    assert json.loads(out2.splitlines()[1]) == json.loads(fresh_out.splitlines()[1])


@pytest.mark.parametrize("mode, rc", [("sigkill", -9), ("segv", -11), ("os_exit", 7), ("exit3", 3), ("raise", 1)])
def test_a_failing_attempt_is_classified_as_a_fresh_process_and_the_next_gets_a_new_worker(
        tmp_path: Path, lane: Lane, mode: str, rc: int) -> None:
    fresh, _, fresh_err = _attempt(run_attempt, tmp_path, 0, mode)
    _, out1, _ = _attempt(lane.run_attempt, tmp_path, 1, "ok")
    failed, out2, err2 = _attempt(lane.run_attempt, tmp_path, 2, mode)
    after, out3, _ = _attempt(lane.run_attempt, tmp_path, 3, "ok")
    assert failed.rc == fresh.rc == rc and _signature(failed, err2) == _signature(fresh, fresh_err)
    assert _pid(out1) == _pid(out2) != _pid(out3) and lane.started == 2
    assert after.rc == 0 and not group_members(failed.pgid)
    if mode == "raise":
        assert "Traceback" in err2 and err2.rstrip().endswith("RuntimeError: boom")


def test_a_worker_is_replaced_after_its_attempts(tmp_path: Path) -> None:
    lane = Lane((PY,), max_attempts=2)
    try:
        pids = [_pid(_attempt(lane.run_attempt, tmp_path, n, "ok")[1]) for n in range(3)]
    finally:
        lane.close(0.2)
    assert pids[0] == pids[1] != pids[2] and lane.started == 2


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _said(stdout: str, word: str) -> int:
    return int(next(line for line in stdout.splitlines() if line.startswith(word + " ")).split()[1])


def test_a_worker_keeps_its_gpu_turn_partner_from_attempt_to_attempt(tmp_path: Path) -> None:
    lane = Lane((PY,), max_attempts=32)
    try:
        runs = [_attempt(lane.run_attempt, tmp_path, n, "partner") for n in range(3)]
        assert [r.rc for r, _, _ in runs] == [0, 0, 0]
        assert len({_pid(out) for _, out, _ in runs}) == 1 and lane.started == 1  # not taken for a leftover
        partner = {_said(out, "partner") for _, out, _ in runs}
        assert len(partner) == 1 and _alive(*partner)  # one partner, started once, still there
    finally:
        lane.close(0.2)
    deadline = time.monotonic() + 10
    while _alive(*partner) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(*partner)  # it ends with its worker


def test_a_process_an_op_leaves_behind_still_replaces_the_worker(tmp_path: Path, lane: Lane) -> None:
    _, out1, _ = _attempt(lane.run_attempt, tmp_path, 1, "stray")
    _, out2, _ = _attempt(lane.run_attempt, tmp_path, 2, "ok")
    assert _pid(out1) != _pid(out2) and lane.started == 2
    assert not _alive(_said(out1, "stray"))


def test_a_worker_s_claim_of_a_helper_is_believed_only_for_its_own_children() -> None:
    import subprocess

    child = subprocess.Popen([PY, "-c", "import time; time.sleep(30)"])
    try:
        assert own_helpers(os.getpid(), [child.pid]) == {child.pid}
        assert own_helpers(child.pid, [os.getpid(), 1]) == set()  # not its children
        assert own_helpers(os.getpid(), "1,2") == set() and own_helpers(os.getpid(), [str(child.pid)]) == set()
    finally:
        child.kill()
        child.wait()


@pytest.mark.slow
def test_a_stop_or_a_timeout_kills_the_workers_group(tmp_path: Path, lane: Lane) -> None:
    info, running, stop = tmp_path / "hang.json", tmp_path / ".running", threading.Event()

    def stop_when_hanging() -> None:  # the op is hanging once it wrote its file: no timing involved
        deadline = time.monotonic() + 60
        while not info.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        stop.set()

    threading.Thread(target=stop_when_hanging, daemon=True).start()
    stopped, _, _ = _attempt(lane.run_attempt, tmp_path, 1, "hang", str(info), str(running), timeout=None,
                             stop=stop, running=running)
    doc = json.loads(info.read_text())
    assert stopped.interrupted and stopped.rc == -9  # it ignores SIGTERM: SIGKILL after the grace
    assert doc["running"]["pgid"] == doc["pgid"] == doc["pid"] == stopped.pgid  # .running named the worker's group
    assert not group_members(stopped.pgid) and not _alive(doc["child"]) and not running.exists()

    timed, _, err = _attempt(lane.run_attempt, tmp_path, 2, "hang", str(tmp_path / "h2.json"), str(running),
                             timeout=0.3, running=running)
    assert timed.timed_out and timed.rc in (-15, -9) and not group_members(timed.pgid)
    assert classify(timed, None, err, ("float32",), 0.3).outcome is OpStatus.TIMEOUT
    assert lane.started == 2 and not running.exists()


def test_only_commands_of_the_batch_python_run_in_a_worker() -> None:
    assert worker_call([PY, "-m", "tritongate", "run", "--suite", "s"], (PY,)) == \
        {"module": "tritongate", "args": ["run", "--suite", "s"]}
    assert worker_call([PY, "/x/op.py", "a"], (PY,)) == {"path": "/x/op.py", "args": ["a"]}
    for argv in (["sh", "-c", "true"], ["/another/python", "-m", "x"], [PY, "-c", "pass"], [PY]):
        assert worker_call(argv, (PY,)) is None


def test_fresh_process_and_worker_batches_give_the_same_results(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "fake.yaml", {"ok_a": ["float32"], "ok_b": ["float32", "float16"]})
    seen = {}
    for attempts in (0, 32):
        state = tmp_path / f"state{attempts}"
        outcome = run_batch(BatchRequest(suite=str(suite), out=tmp_path / f"out{attempts}",
                                         command=fake_command(state), worker_attempts=attempts))
        execution = json.loads((outcome.path / "batch.json").read_text())["execution"]
        assert execution["process"] == ("worker" if attempts else "fresh") and execution["worker_attempts"] == attempts
        assert request_from_manifest(outcome.path).worker_attempts == attempts  # a resume keeps the mode
        log = outcome.path / outcome.results[1].attempts[0].stdout_log
        assert log.read_text().splitlines()[-1] == str(outcome.path / outcome.results[1].runs[0])
        rows = [(r.key, r.samples) for r in load_run(outcome.path / "run").rows]
        seen[attempts] = ([(r.op, r.status, r.rows) for r in outcome.results], rows, [c["pid"] for c in calls(state)])
    assert seen[0][:2] == seen[32][:2]
    assert len(set(seen[0][2])) == 2 and len(set(seen[32][2])) == 1  # fresh: a process per op; worker: one


def test_the_cli_picks_the_mode(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    add_batch_parser(parser.add_subparsers())
    base = ["batch", "--suite", "smoke", "--out", str(tmp_path)]
    # the reused worker unless asked: it measures like fresh processes once every CUDA process
    # settles its graph state (bench/results/2026-12-05_h100_two_speeds.md)
    assert request_from_args(parser.parse_args(base)).worker_attempts == 32
    assert request_from_args(parser.parse_args([*base, "--fresh-process"])).worker_attempts == 0
    assert request_from_args(parser.parse_args([*base, "--reuse-worker"])).worker_attempts == 32
    assert request_from_args(parser.parse_args([*base, "--worker-attempts", "5"])).worker_attempts == 5
    for both in (["--fresh-process", "--worker-attempts", "5"], ["--fresh-process", "--reuse-worker"],
                 ["--reuse-worker", "--worker-attempts", "5"]):
        with pytest.raises(SystemExit):
            parser.parse_args([*base, *both])


TUNER_OP = Path(__file__).with_name("fake_ops") / "tuner_op.py"


def test_isolated_ops_in_one_worker_share_its_private_tuner_db_until_it_ends(tmp_path: Path, lane: Lane) -> None:
    """flag_gems reads its DB's location once per process: a per-run DB would be the first
    op's, deleted under the next one. The worker owns one instead, deleted when it ends."""
    env = {k: v for k, v in ENV.items() if k not in ("FLAGGEMS_DB_URL", "TRITONGATE_WORKER_TUNER_DB",
                                                     "TRITONGATE_ISOLATE_TUNER_CACHE", "ZL_ISOLATE_TUNER_CACHE")}
    docs = []
    for n, launch in enumerate((run_attempt, lane.run_attempt, lane.run_attempt, lane.run_attempt)):
        out, err = tmp_path / f"a{n}.out", tmp_path / f"a{n}.err"
        res = launch([PY, str(TUNER_OP), "--isolate-tuner-cache"], env=env, stdout=out, stderr=err, timeout_s=60.0,
                     grace_s=0.2, stop=threading.Event())
        assert res.rc == 0, err.read_text()
        docs.append(json.loads(out.read_text()))
    fresh, *in_worker = docs
    assert fresh["wrote"] == fresh["recorded"] and not os.path.exists(fresh["wrote"][len("sqlite:///"):])
    assert len({d["pid"] for d in in_worker}) == 1 and lane.started == 1
    assert {d["wrote"] for d in in_worker} == {d["recorded"] for d in in_worker} == {in_worker[0]["wrote"]}
    assert "private to the batch worker" in in_worker[0]["notes"][0]
    db = Path(in_worker[0]["wrote"][len("sqlite:///"):])
    assert db.is_file() and db.parent != Path(fresh["wrote"][len("sqlite:///"):]).parent
    # a shared-cache op does not run in the isolated worker, and the isolated worker's DB goes with it
    out, err = tmp_path / "shared.out", tmp_path / "shared.err"
    shared_env = env | {"FLAGGEMS_DB_URL": f"sqlite:///{tmp_path}/shared.db"}
    res = lane.run_attempt([PY, str(TUNER_OP)], env=shared_env, stdout=out, stderr=err, timeout_s=60.0, grace_s=0.2,
                           stop=threading.Event())
    assert res.rc == 0 and json.loads(out.read_text())["wrote"] == f"sqlite:///{tmp_path}/shared.db"
    assert lane.started == 2 and not db.parent.exists()


@pytest.mark.parametrize("path", ["worker", "fresh"])
def test_kill_9_of_the_batch_parent_ends_the_op_it_was_running(tmp_path: Path, path: str) -> None:
    """A batch killed with SIGKILL leaves no op running on its device: the worker (or the fresh
    process) is killed with its parent, so a resumed batch never overlaps an orphan."""
    import signal
    import subprocess
    import textwrap

    state = tmp_path / "hang.json"
    launch = "Lane((sys.executable,), max_attempts=4).run_attempt" if path == "worker" else "run_attempt"
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent(f"""
        import sys, threading
        from pathlib import Path
        from tritongate.batch.lane import Lane, run_attempt
        tmp = Path({str(tmp_path)!r})
        (tmp / "op.running").write_text("{{}}")  # a fresh process may read it before its parent writes it
        {launch}([sys.executable, {str(TINY)!r}, "hang", {str(state)!r}, str(tmp / "op.running")],
                 env={dict(ENV)!r}, stdout=tmp / "a.out", stderr=tmp / "a.err", timeout_s=120.0, grace_s=0.2,
                 stop=threading.Event(), running_file=tmp / "op.running")
    """))
    root = Path(__file__).resolve().parents[2]
    parent = subprocess.Popen([PY, str(script)], env={**ENV, "PYTHONPATH": str(root)})
    try:
        deadline = time.monotonic() + 60
        while not state.is_file() or not state.read_text().strip():
            assert parent.poll() is None, "the parent ended before it could be killed"
            assert time.monotonic() < deadline, "the op never started"
            time.sleep(0.05)
        op_pid = json.loads(state.read_text())["pid"]
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
    finally:
        if parent.poll() is None:
            parent.kill()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            if "\nState:\tZ" in Path(f"/proc/{op_pid}/status").read_text():
                break
        except FileNotFoundError:
            break
        time.sleep(0.05)
    else:
        os.kill(op_pid, signal.SIGKILL)
        pytest.fail(f"the {path} process {op_pid} outlived its killed parent")
