"""Resume: a batch killed with ``kill -9`` (or stopped with SIGTERM) mid-op continues where it
stopped: PASS and SKIP ops are reused, the interrupted op (and any FAIL/TIMEOUT) runs again,
an orphan left running is ended first, and the result is the one an uninterrupted batch
gives. A resume must keep the batch's plan."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from tests.batch.fake_ops import DRIVE, call_count, calls, fake_command, write_suite
from tests.batch.fake_ops.fake_run import samples
from tritongate.batch import BatchRequest, OpStatus, run_batch
from tritongate.batch.plan import request_from_manifest
from tritongate.batch.lane import group_members
from tritongate.batch.scheduler import _locked
from tritongate.batch.status import read_csv
from tritongate.errors import UsageError
from tritongate.rundir import load_run

OPS = {"ok_a": ["float32", "float16"], "skip_b": ["float32"], "slow_c": ["float32"], "ok_d": ["float32"]}


def _drive(spec: dict) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(DRIVE), json.dumps(spec)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_for(batch_root: Path, want: dict[str, str], timeout: float = 20.0) -> Path:
    """Poll the batch's ops_status.csv until the ops have the statuses in ``want``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for status_file in batch_root.glob("*/ops_status.csv"):
            status = {line["op"]: line["status"] for line in read_csv(status_file)}
            if all(status.get(op) == s for op, s in want.items()):
                return status_file.parent
        time.sleep(0.05)
    raise AssertionError(f"the batch never reached {want}")


def _slow_pgid(state: Path) -> int:
    return next(c["pgid"] for c in calls(state) if c["op"] == "slow_c")


@pytest.mark.slow
def test_resume_after_kill_9_reuses_pass_and_skip_and_reruns_the_interrupted_op(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "fake.yaml", OPS)
    state = tmp_path / "state"
    proc = _drive({"state": str(state), "suite": str(suite), "out": str(tmp_path / "out")})
    try:
        batch = _wait_for(tmp_path / "out", {"ok_a": "PASS", "skip_b": "SKIP", "slow_c": "RUNNING"})
        while not any(c["op"] == "slow_c" for c in calls(state)):
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)  # the batch itself, not the op
        proc.wait(timeout=10)
    finally:
        proc.kill()
    orphan = _slow_pgid(state)
    deadline = time.monotonic() + 15  # the op dies with the batch (die_with_parent) ...
    while group_members(orphan) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not group_members(orphan)
    assert (batch / "ops" / "slow_c" / ".running").is_file()  # ... and resume still checks its group
    assert json.loads((batch / "batch.json").read_text())["finished"] is False

    resumed = _drive({"state": str(state), "resume": str(batch)})
    out, err = resumed.communicate(timeout=60)
    assert resumed.returncode == 0, err
    assert out.splitlines()[-1] == str(batch)
    assert "(reused)" in err
    assert not (batch / "ops" / "slow_c" / ".running").exists()
    assert {op: call_count(state, op) for op in OPS} == {"ok_a": 1, "skip_b": 1, "slow_c": 2, "ok_d": 1}
    status = {line["op"]: line["status"] for line in read_csv(batch / "ops_status.csv")}
    assert status == {"ok_a": "PASS", "skip_b": "SKIP", "slow_c": "PASS", "ok_d": "PASS"}
    assert json.loads((batch / "batch.json").read_text())["finished"] is True

    # the same rows an uninterrupted batch gives (the fake's samples are deterministic)
    fresh = run_batch(BatchRequest(suite=str(suite), out=tmp_path / "fresh", command=fake_command(state)))
    got, want = load_run(batch / "run"), load_run(fresh.path / "run")
    assert got.complete and {r.key: r.samples for r in got.rows} == {r.key: r.samples for r in want.rows}
    assert {r.key for r in got.rows} == {(op, case, d) for op in ("ok_a", "slow_c", "ok_d") for case in ("64", "128")
                                         for d in OPS[op]}
    assert all(r.samples == tuple(samples(*r.key)) for r in got.rows)
    assert [s["status"] for s in read_csv(fresh.path / "ops_status.csv")] == list(status.values())


@pytest.mark.slow
def test_sigterm_stops_the_batch_with_130_and_kills_the_running_op(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "fake.yaml", {"ok_a": ["float32"], "slow_c": ["float32"]})
    state = tmp_path / "state"
    proc = _drive({"state": str(state), "suite": str(suite), "out": str(tmp_path / "out"), "kill_grace_s": 1.0})
    try:
        batch = _wait_for(tmp_path / "out", {"slow_c": "RUNNING"})
        while not any(c["op"] == "slow_c" for c in calls(state)):
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 130
    assert "interrupted" in err and f"tritongate batch --resume {batch}" in err
    assert not group_members(_slow_pgid(state))
    status = {line["op"]: line["status"] for line in read_csv(batch / "ops_status.csv")}
    assert status == {"ok_a": "PASS", "slow_c": "INTERRUPTED"}
    assert not (batch / "ops" / "slow_c" / ".complete").exists()

    resumed = _drive({"state": str(state), "resume": str(batch)})
    _, err = resumed.communicate(timeout=60)
    assert resumed.returncode == 0, err
    assert call_count(state, "ok_a") == 1 and call_count(state, "slow_c") == 2


@pytest.mark.slow
def test_resume_reruns_fail_and_timeout_only(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "fake.yaml", {"ok_a": ["float32"], "skip_b": ["float32"],
                                                 "fail_c": ["float32"], "hang_d": ["float32"]})
    state = tmp_path / "state"
    first = run_batch(BatchRequest(suite=str(suite), out=tmp_path / "out", command=fake_command(state),
                                   op_timeout_s=1.0, kill_grace_s=0.2, retries=0))
    assert first.exit_code == 1
    again = run_batch(request_from_manifest(first.path, command=fake_command(state)))
    assert again.path == first.path and again.exit_code == 1
    assert {op: call_count(state, op) for op in ("ok_a", "skip_b", "fail_c", "hang_d")} == \
        {"ok_a": 1, "skip_b": 1, "fail_c": 2, "hang_d": 2}
    assert [r.status for r in again.results] == [OpStatus.PASS, OpStatus.SKIP, OpStatus.FAIL, OpStatus.TIMEOUT]
    logs = sorted(p.name for p in (first.path / "ops" / "fail_c" / "logs").glob("*.stderr.log"))
    assert logs == ["attempt-01.stderr.log", "attempt-02.stderr.log"]  # numbering continues, nothing overwritten
    table = {line["op"]: line for line in read_csv(first.path / "ops_status.csv")}
    assert (table["fail_c"]["attempts"], table["fail_c"]["log"]) == ("2", "ops/fail_c/logs/attempt-02.stderr.log")
    assert table["ok_a"]["attempts"] == "1"


def test_a_resume_must_keep_the_plan_and_one_process_at_a_time(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "fake.yaml", {"ok_a": ["float32", "float16"]})
    first = run_batch(BatchRequest(suite=str(suite), out=tmp_path / "out", command=fake_command(tmp_path / "s")))
    request = request_from_manifest(first.path, command=fake_command(tmp_path / "s"))
    with pytest.raises(UsageError, match="planned differently.*dtypes"):
        run_batch(replace(request, dtypes=("float16",)))
    # a changed option is named by its key, not printed as the two whole option dictionaries
    with pytest.raises(UsageError, match=r"planned differently \(options\.rounds: batch None, now 7\); resume"):
        run_batch(replace(request, options=replace(request.options, rounds=7)))
    with _locked(first.path), pytest.raises(UsageError, match="another tritongate batch process is running"):
        run_batch(request)
    assert run_batch(request).exit_code == 0


@pytest.mark.slow
def test_orphans_are_checked_by_start_time_not_pid_alone(tmp_path: Path) -> None:
    """A ``.running`` file naming a pid that now belongs to someone else is removed, never acted on."""
    from tritongate.batch.lane import reap_orphan

    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True)
    try:
        running = tmp_path / ".running"
        running.write_text(json.dumps({"pid": sleeper.pid, "pgid": sleeper.pid, "start_ticks": "1"}))
        assert reap_orphan(running, 0.1) is None and not running.exists()
        assert sleeper.poll() is None
        from tritongate.batch.lane import _start_ticks

        running.write_text(json.dumps({"pid": sleeper.pid, "pgid": sleeper.pid,
                                       "start_ticks": _start_ticks(sleeper.pid)}))
        assert "ended process group" in reap_orphan(running, 1.0)
        assert sleeper.wait(timeout=5) == -signal.SIGTERM
    finally:
        sleeper.kill()
        sleeper.wait()


def _edit_manifest(batch: Path, edit) -> None:
    path = batch / "batch.json"
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc, indent=2))


def test_a_resume_refuses_a_plan_edited_after_the_batch_planned_it(tmp_path: Path) -> None:
    """Editing batch.json's plan (here: more rounds) must not resume a different plan: the ops
    reused were measured under the old one. Execution settings may change; the file is named."""
    suite = write_suite(tmp_path / "fake.yaml", {"ok_a": ["float32"], "fail_b": ["float32"]})
    state = tmp_path / "state"
    first = run_batch(BatchRequest(suite=str(suite), out=tmp_path / "out", command=fake_command(state), retries=0))
    assert first.exit_code == 1 and len(json.loads((first.path / "batch.json").read_text())["plan_sha256"]) == 64

    _edit_manifest(first.path, lambda d: d["execution"].update(retries=1))  # not the plan: a resume still works
    again = run_batch(request_from_manifest(first.path, command=fake_command(state)))
    assert again.path == first.path and {op: call_count(state, op) for op in ("ok_a", "fail_b")} == \
        {"ok_a": 1, "fail_b": 3}

    _edit_manifest(first.path, lambda d: d["plan"]["options"].update(rounds=20))
    with pytest.raises(UsageError, match=r"batch\.json: its plan was changed after the batch planned it \(plan "
                                         r"sha256 \w{12}, recorded \w{12}\): edited by hand or rewritten by another "
                                         r"tritongate .*put the file back as the batch wrote it, or start a new batch"):
        request_from_manifest(first.path, command=fake_command(state))
    assert call_count(state, "fail_b") == 3  # nothing ran

    _edit_manifest(first.path, lambda d: d.pop("plan_sha256"))  # as a batch.json of a tritongate without the hash
    with pytest.raises(UsageError, match=r"batch\.json records no plan_sha256 \(written by tritongate '[\d.]+' or "
                                         r"edited\)"):
        request_from_manifest(first.path, command=fake_command(state))


def test_a_merge_refuses_a_shard_whose_plan_was_edited(tmp_path: Path) -> None:
    from tritongate.batch.shards import merge_batches

    suite = write_suite(tmp_path / "fake.yaml", {"ok_a": ["float32"], "ok_b": ["float32"]})
    shards = [run_batch(BatchRequest(suite=str(suite), out=tmp_path / f"s{i}", command=fake_command(tmp_path / "st"),
                                     shard=(i, 2))).path for i in (1, 2)]
    _edit_manifest(shards[1], lambda d: d["plan"]["options"].update(l2="cold"))
    with pytest.raises(UsageError, match=r"s2/.*batch\.json: its plan was changed after the batch planned it"):
        merge_batches(shards, tmp_path / "merged")


def test_ctrl_c_during_the_final_merge_names_the_resume_and_the_resume_merges(tmp_path: Path, monkeypatch) -> None:
    import tritongate.batch.scheduler as scheduler

    suite = write_suite(tmp_path / "fake.yaml", {"ok_a": ["float32"]})
    request = BatchRequest(suite=str(suite), out=tmp_path / "out", command=fake_command(tmp_path / "s"))
    merge = scheduler._merge

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(scheduler, "_merge", interrupted)
    with pytest.raises(KeyboardInterrupt) as caught:
        run_batch(request)
    (batch,) = (tmp_path / "out").iterdir()
    assert caught.value.__notes__ == [f"the batch is resumable: tritongate batch --resume {batch}"]
    monkeypatch.setattr(scheduler, "_merge", merge)
    again = run_batch(request_from_manifest(batch, command=fake_command(tmp_path / "s")))
    assert again.exit_code == 0 and again.run is not None and call_count(tmp_path / "s", "ok_a") == 1
