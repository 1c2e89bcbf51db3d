"""The batch's own files while it runs: ops_status.csv and summary.csv are rewritten
atomically (a reader polling them always parses a whole file), per-op result files and
``.complete`` markers, and one op at a time per device with the device made visible."""

from __future__ import annotations

import pytest
import csv
import json
import threading
from collections import defaultdict
from pathlib import Path

from tests.batch.fake_ops import fake_command, write_suite
from tritongate.batch import BatchRequest, OpStatus, run_batch
from tritongate.batch.status import STATUS_COLUMNS, SUMMARY_COLUMNS, read_csv, read_op_result

OPS = {f"ok_{i}": ["float32", "float16"] for i in range(8)} | {"flaky_x": ["float32"], "skip_y": ["float32"],
                                                                 "fail_z": ["float32"]}


def _poll(root: Path, stop: threading.Event, seen: dict[str, list]) -> None:
    """Read every status file as fast as possible; each read must parse whole."""
    while not stop.is_set():
        for name, columns in (("ops_status.csv", STATUS_COLUMNS), ("summary.csv", SUMMARY_COLUMNS)):
            for path in root.glob(f"*/{name}"):
                with open(path, encoding="utf-8", newline="") as f:
                    text = f.read()
                lines = list(csv.reader(text.splitlines()))
                assert text.endswith("\n") and tuple(lines[0]) == columns, text[:200]
                assert all(len(line) == len(columns) for line in lines[1:]), text
                if name == "ops_status.csv":
                    assert [line[0] for line in lines[1:]] == list(OPS)  # every op, always, in plan order
                    assert {line[1] for line in lines[1:]} <= {s.value for s in OpStatus}
                seen[name].append(len(lines) - 1)


@pytest.mark.slow
def test_status_files_are_whole_at_every_read_and_devices_run_one_op_each(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "fake.yaml", OPS)
    stop = threading.Event()
    seen: dict[str, list] = defaultdict(list)
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            _poll(tmp_path / "out", stop, seen)
        except BaseException as exc:  # noqa: BLE001 - reported by the test thread
            errors.append(exc)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        outcome = run_batch(BatchRequest(suite=str(suite), out=tmp_path / "out", devices=("0", "1", "2"),
                                         command=fake_command(tmp_path / "state")))
    finally:
        stop.set()
        thread.join()
    assert not errors, errors[0]
    assert len(seen["ops_status.csv"]) > 5 and len(set(seen["ops_status.csv"])) == 1  # read while it ran
    assert len(set(seen["summary.csv"])) > 1  # grew as ops finished
    assert len(read_csv(outcome.path / "summary.csv")) == 8 * 4 + 2
    assert not list(outcome.path.glob("**/.*.tmp"))  # no temp file left behind
    assert outcome.exit_code == 1 and outcome.count(OpStatus.PASS) == 9

    # one op at a time per device, each op seeing only its device
    spans = [json.loads(line) for line in (tmp_path / "state" / "spans.jsonl").read_text().splitlines()]
    by_device = defaultdict(list)
    for s in spans:
        by_device[s["device"]].append((s["start"], s["end"]))
    assert set(by_device) <= {"0", "1", "2"} and len(by_device) >= 2
    for intervals in by_device.values():
        intervals.sort()
        assert all(a[1] <= b[0] for a, b in zip(intervals, intervals[1:]))
    status = {line["op"]: line for line in read_csv(outcome.path / "ops_status.csv")}
    for s in spans:
        assert status[s["op"]]["device"] == s["device"]


def test_per_op_results_and_complete_markers(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "fake.yaml", {"ok_a": ["float32"], "skip_b": ["float32"], "fail_c": ["float32"]})
    outcome = run_batch(BatchRequest(suite=str(suite), out=tmp_path / "out", command=fake_command(tmp_path / "s"),
                                     retries=0))
    ops = outcome.path / "ops"
    assert {p.parent.name for p in ops.glob("*/.complete")} == {"ok_a", "skip_b"}
    assert {p.parent.name for p in ops.glob("*/result.json")} == {"ok_a", "skip_b", "fail_c"}
    failed = read_op_result(ops / "fail_c", complete_only=False)
    assert failed is not None and failed.status is OpStatus.FAIL and failed.attempts[0].rc == 1
    assert read_op_result(ops / "fail_c", complete_only=True) is None
    line = {row["op"]: row for row in read_csv(outcome.path / "ops_status.csv")}["fail_c"]
    assert line["log"] == "ops/fail_c/logs/attempt-01.stderr.log" and line["rc"] == "1"
    argv = (ops / "fail_c" / "logs" / "attempt-01.argv").read_text()
    assert "--ops fail_c" in argv and f"--out {ops / 'fail_c'}" in argv
    manifest = json.loads((outcome.path / "batch.json").read_text())
    assert manifest["finished"] is True and manifest["counts"] == {"PASS": 1, "FAIL": 1, "SKIP": 1}
    assert manifest["plan"]["ops"] == ["ok_a", "skip_b", "fail_c"] and manifest["run"] == "run"


def test_an_op_result_is_read_back_as_written_and_a_damaged_one_reads_as_none(tmp_path: Path) -> None:
    """result.json is one type (``OpResult``): written field by field, read strictly; a file
    that is not what a batch writes is no result (``--resume`` reruns the op), never a crash."""
    from tritongate.batch.status import Attempt, OpResult, write_op_result

    attempt = Attempt(number=1, dtypes=("float32",), outcome=OpStatus.PASS, signature="", reason="ok", rc=0,
                      wall_s=1.23456, run="ops/a/run", stdout_log="o", stderr_log="e")
    result = OpResult(op="a", status=OpStatus.PASS, attempts=(attempt,), runs=("ops/a/run",), rows=2, ok_rows=2,
                      marker_counts={"NO_CUDAGRAPH": 1}, wall_s=2.34567)
    write_op_result(tmp_path / "a", result)
    doc = json.loads((tmp_path / "a" / "result.json").read_text())
    assert doc["schema_version"] == 1 and doc["wall_s"] == 2.346 and doc["attempts"][0]["outcome"] == "PASS"
    back = read_op_result(tmp_path / "a", complete_only=True)
    assert back is not None and back.attempts == (attempt,) and back.marker_counts == {"NO_CUDAGRAPH": 1}
    for damage in ({"schema_version": 2}, {"rows": "2"}, {"status": "BLUE"}, {"attempts": [{"number": 1}]},
                   {"op": ""}, {"rows": -1}):
        (tmp_path / "a" / "result.json").write_text(json.dumps(doc | damage))
        assert read_op_result(tmp_path / "a", complete_only=False) is None, damage
    (tmp_path / "a" / "result.json").write_text(json.dumps(doc)[:-10])
    assert read_op_result(tmp_path / "a", complete_only=False) is None
