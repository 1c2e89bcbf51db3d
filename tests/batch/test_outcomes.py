"""Each op in its device lane's worker process (a new one after an attempt that did not exit 0),
and what a misbehaving op amounts to: a crash, a hang killed at the timeout (its whole process
group), a flake retried into a PASS, a deterministic failure that stops once it repeats, a
declared "not supported" (SKIP), and the dtype rescue and fallback that keep the dtypes that
work. One batch of fake ops serves every test here."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.batch.fake_ops import call_count, calls, fake_command, write_suite
from tritongate.batch import BatchRequest, OpStatus, run_batch
from tritongate.batch.plan import WORKER_ATTEMPTS
from tritongate.batch.lane import group_members
from tritongate.batch.status import read_csv
from tritongate.rundir import load_run

OPS = {
    "ok_a": ["float32", "float16"],
    "crash_b": ["float32"],
    "segv_c": ["float32"],
    "flaky_d": ["float32"],
    "fail_e": ["float32"],
    "skip_f": ["float32"],
    "dtcrash_g": ["float32", "float16"],
    "hang_h": ["float32"],
    "nodtype_i": ["float32", "bfloat16"],
}
TIMEOUT_S, GRACE_S = 2.0, 0.3


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("outcomes")
    suite = write_suite(tmp / "fake.yaml", OPS)
    events = []
    t0 = time.monotonic()
    outcome = run_batch(BatchRequest(suite=str(suite), out=tmp / "out", command=fake_command(tmp / "state"),
                                     op_timeout_s=TIMEOUT_S, kill_grace_s=GRACE_S,
                                     worker_attempts=WORKER_ATTEMPTS), events.append)
    return {"outcome": outcome, "state": tmp / "state", "events": events, "wall": time.monotonic() - t0,
            "by_op": {r.op: r for r in outcome.results}}


@pytest.mark.slow
def test_the_batch_completes_with_exit_1_and_one_line_per_op(batch) -> None:
    outcome = batch["outcome"]
    assert outcome.exit_code == 1  # crash_b, fail_e failed, hang_h timed out
    status = {line["op"]: line["status"] for line in read_csv(outcome.path / "ops_status.csv")}
    assert status == {"ok_a": "PASS", "crash_b": "FAIL", "segv_c": "PASS", "flaky_d": "PASS", "fail_e": "FAIL",
                      "skip_f": "SKIP", "dtcrash_g": "PASS", "hang_h": "TIMEOUT", "nodtype_i": "PASS"}
    done = [e for e in batch["events"] if e.kind == "op_done"]
    assert [e.op for e in done] == list(OPS) and done[-1].done == done[-1].total == len(OPS)


def test_ops_share_their_lanes_worker_until_an_attempt_does_not_exit_0(batch) -> None:
    first = calls(batch["state"])[:3]
    assert [c["op"] for c in first] == ["ok_a", "crash_b", "crash_b"]
    assert first[0]["pid"] == first[1]["pid"] != first[2]["pid"]  # ok_a's worker ran crash_b; the crash: a new one
    assert first[1]["pgid"] == first[1]["pid"]  # the worker leads its own process group


def test_a_crash_loses_one_op_and_is_retried_until_it_repeats(batch) -> None:
    r = batch["by_op"]["crash_b"]
    assert r.status is OpStatus.FAIL and [a.signature for a in r.attempts] == ["signal=SIGABRT"] * 2
    assert call_count(batch["state"], "crash_b") == 2  # same failure twice: deterministic, no third try
    assert r.rc == -6 and any("deterministic" in n for n in r.notes)
    assert r.attempts[0].run is not None  # the partial run directory it left is named, never kept
    assert not load_run(batch["outcome"].path / r.attempts[0].run, allow_incomplete=True).complete
    assert r.runs == ()


def test_a_segfault_once_is_retried_into_a_pass(batch) -> None:
    r = batch["by_op"]["segv_c"]
    assert r.status is OpStatus.PASS and [a.outcome for a in r.attempts] == [OpStatus.FAIL, OpStatus.PASS]
    assert r.attempts[0].signature == "signal=SIGSEGV" and r.rows == 2
    assert any(n.startswith("flaky: passed on attempt 2") for n in r.notes)


def test_an_rc_1_flake_is_retried_and_passes(batch) -> None:
    r = batch["by_op"]["flaky_d"]
    assert r.status is OpStatus.PASS and call_count(batch["state"], "flaky_d") == 2
    assert [a.signature for a in r.attempts] == ["rc=1", ""] and r.rc == 0
    assert len(r.runs) == 1 and r.runs[0] == r.attempts[1].run


def test_a_deterministic_failure_stops_when_the_same_rc_repeats(batch) -> None:
    r = batch["by_op"]["fail_e"]
    assert r.status is OpStatus.FAIL and call_count(batch["state"], "fail_e") == 2  # retries=2 allow 3
    assert r.rc == 1 and "a deterministic failure" in "; ".join(r.notes)
    log = batch["outcome"].path / r.attempts[-1].stderr_log
    assert "a deterministic failure" in log.read_text()


def test_a_hang_is_killed_at_the_timeout_with_its_process_group_and_not_retried(batch) -> None:
    r = batch["by_op"]["hang_h"]
    assert r.status is OpStatus.TIMEOUT and call_count(batch["state"], "hang_h") == 1
    assert r.rc == -9  # it ignores SIGTERM: SIGKILL after the grace period
    assert TIMEOUT_S <= r.attempts[0].wall_s < TIMEOUT_S + GRACE_S + 3
    pids = json.loads((batch["state"] / "hang_h.pids").read_text())
    assert not group_members(pids["pgid"])
    assert not _alive(pids["pid"]) and not _alive(pids["child"])  # the grandchild it started is gone too
    assert not (batch["outcome"].path / "ops" / "hang_h" / ".running").exists()


def _alive(pid: int) -> bool:
    """``pid`` runs (a zombie nobody reaped does not count)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_declared_not_supported_is_skip_not_failure(batch) -> None:
    r = batch["by_op"]["skip_f"]
    assert r.status is OpStatus.SKIP and r.runs == () and call_count(batch["state"], "skip_f") == 1
    assert any("not supported" in n for n in r.notes)
    op_dir = batch["outcome"].path / "ops" / "skip_f"
    assert (op_dir / ".complete").is_file()  # resume reuses SKIP


def test_dtype_rescue_keeps_the_dtype_that_works(batch) -> None:
    r = batch["by_op"]["dtcrash_g"]
    assert r.status is OpStatus.PASS and r.dtypes == ("float32",) and r.rows == 2
    asked = [tuple(c["dtypes"]) for c in calls(batch["state"]) if c["op"] == "dtcrash_g"]
    assert asked == [("float32", "float16")] * 2 + [("float32",)] + [("float16",)] * 2
    note = next(n for n in r.notes if n.startswith("dtype_rescue"))
    assert "float32 PASS" in note and "float16 FAIL (signal=SIGABRT)" in note
    rows = load_run(batch["outcome"].path / r.runs[0]).rows
    assert {row.dtype for row in rows} == {"float32"}


def test_a_dtype_the_backend_cannot_run_is_skipped_the_others_kept(batch) -> None:
    r = batch["by_op"]["nodtype_i"]
    assert r.status is OpStatus.PASS and r.dtypes == ("float32",)
    assert [a.outcome for a in r.attempts] == [OpStatus.FAIL, OpStatus.PASS, OpStatus.SKIP]
    assert r.attempts[0].signature == "preflight=dtype"  # not retried: a preflight is deterministic


def test_the_merged_run_holds_every_passing_op(batch) -> None:
    run = load_run(batch["outcome"].path / "run")
    assert run.complete
    assert {r.op for r in run.rows} == {"ok_a", "segv_c", "flaky_d", "dtcrash_g", "nodtype_i"}
    assert len(run.rows) == 4 + 2 + 2 + 2 + 2
    summary = read_csv(batch["outcome"].path / "summary.csv")
    assert len(summary) == len(run.rows) and {s["timer"] for s in summary} == {"host-wall"}
    assert all(float(s["latency_us"]) > 0 and s["backend"] == "cpu" for s in summary)


@pytest.mark.slow
def test_dtype_fallback_when_dtypes_name_none_of_an_ops(tmp_path: Path) -> None:
    """The seed's fallback: --dtypes the op cannot do -> its own dtypes, noted; and a
    restricted dtype the backend refuses -> the op's other dtypes, each alone."""
    suite = write_suite(tmp_path / "fake.yaml", {"ok_a": ["float32"], "nodtype_b": ["float32", "bfloat16"],
                                                 "ok_c": ["float16", "bfloat16"]})
    outcome = run_batch(BatchRequest(suite=str(suite), out=tmp_path / "out", dtypes=("bfloat16",),
                                     command=fake_command(tmp_path / "state")))
    by = {r.op: r for r in outcome.results}
    assert outcome.exit_code == 0
    assert by["ok_a"].dtypes == ("float32",) and by["ok_a"].notes[0].startswith("dtype_fallback")
    assert by["ok_c"].dtypes == ("bfloat16",) and not by["ok_c"].notes  # the restriction applied
    b = by["nodtype_b"]
    assert b.status is OpStatus.PASS and b.dtypes == ("float32",)
    assert [a.dtypes for a in b.attempts] == [("bfloat16",), ("float32",)]
    assert any(n.startswith("dtype_fallback: --dtypes bfloat16 gave no rows") for n in b.notes)


def test_a_command_that_cannot_start_fails_its_op_not_the_batch(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "fake.yaml", {"ok_a": ["float32"], "ok_b": ["float32"]})
    real = fake_command(tmp_path / "state")

    def command(inv):
        return ["/no/such/binary"] if inv.op == "ok_a" else real(inv)

    outcome = run_batch(BatchRequest(suite=str(suite), out=tmp_path / "out", command=command))
    a, b = outcome.results
    assert outcome.exit_code == 1 and b.status is OpStatus.PASS
    assert a.status is OpStatus.FAIL and len(a.attempts) == 1 and a.attempts[0].signature == "not_started"
    assert "could not start /no/such/binary" in a.notes[-1]
