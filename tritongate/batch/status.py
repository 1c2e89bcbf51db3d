"""What a batch knows about each op, and the files that say it.

``ops/<op>/result.json`` (and ``.complete``, the same, for the PASS and SKIP that ``--resume``
reuses), ``ops_status.csv`` and ``summary.csv``, rewritten atomically: a reader polling them
always parses a whole file.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from dataclasses import field
from enum import Enum
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping, Optional, Sequence

from pydantic import TypeAdapter, ValidationError, field_serializer
from pydantic.dataclasses import dataclass

from tritongate.atomicio import write_json_atomic, write_text_atomic
from tritongate.errors import GateError
from tritongate.markers import parse_marker
from tritongate.report.untrusted import csv_cell
from tritongate.rundir import load_run
from tritongate.schema import VALUES, Row, RowStatus, _Stored
from tritongate.validation.fields import Name, NonNegInt, Text

RESULT = "result.json"
COMPLETE = ".complete"
OPS_STATUS = "ops_status.csv"
SUMMARY = "summary.csv"
RESULT_VERSION = 1  # of result.json


class OpStatus(str, Enum):
    PENDING = "PENDING"  # planned, not started (or not reached before an interruption)
    RUNNING = "RUNNING"
    PASS = "PASS"  # rows measured (some may be error rows: those are data, the gate sees them)
    FAIL = "FAIL"  # no usable run after retries and dtype rescue
    SKIP = "SKIP"  # the op declared it cannot run here (not supported): no signal, not a failure
    TIMEOUT = "TIMEOUT"  # killed at --op-timeout; never retried
    INTERRUPTED = "INTERRUPTED"  # the batch was stopped while the op ran; --resume reruns it
    MISSING = "MISSING"  # batch-merge --allow-partial: the op's shard was not given

    @property
    def failed(self) -> bool:
        return self in (OpStatus.FAIL, OpStatus.TIMEOUT)


@dataclass(frozen=True, config=VALUES)
class Attempt(_Stored):
    """One subprocess of one op."""

    number: NonNegInt
    dtypes: Optional[tuple[str, ...]]  # None: the suite's dtypes for the op
    outcome: OpStatus  # PASS | FAIL | SKIP | TIMEOUT | INTERRUPTED
    signature: Text  # what failed, compared between retries: "rc=1", "signal=SIGABRT", "no_ok_rows" ...
    reason: Text  # one line for people
    rc: Optional[int]
    wall_s: float
    run: Optional[Text]  # the run directory it wrote, relative to the batch directory
    stdout_log: Text
    stderr_log: Text


@dataclass(frozen=True, config=VALUES)
class OpResult(_Stored):
    """An op's ``result.json``: one type for the value, its check and its JSON form."""

    op: Name
    status: OpStatus
    device: Text = ""  # the batch's device id ("" without --devices)
    attempts: tuple[Attempt, ...] = ()
    runs: tuple[Text, ...] = ()  # run directories whose rows the batch keeps (relative to the batch dir)
    dtypes: tuple[str, ...] = ()  # dtypes that were measured
    rows: NonNegInt = 0
    ok_rows: NonNegInt = 0
    error_rows: NonNegInt = 0
    flagged_rows: NonNegInt = 0  # rows with markers
    marker_counts: dict[str, int] = field(default_factory=dict)
    notes: tuple[Text, ...] = ()
    backend: Text = ""
    device_name: Text = ""
    timer: Text = ""
    wall_s: float = 0.0
    started_utc: Text = ""
    finished_utc: Text = ""
    replay_from: Text = ""  # the record the op replayed (absolute), "" in a record batch
    schema_version: Literal[1] = RESULT_VERSION

    @field_serializer("wall_s")
    def _wall_s(self, value: float) -> float:
        return round(value, 3)

    @property
    def rc(self) -> int | None:
        """The exit status that decided the op: the passing run's, else the last attempt's."""
        if self.status is OpStatus.PASS:
            return 0
        return self.attempts[-1].rc if self.attempts else None


def _marker_kinds(row: Row) -> list[str]:
    def kind(line: str) -> str:
        try:
            return parse_marker(line).kind
        except ValueError:
            return line.split(" ", 1)[0] or "MARKER"
    return sorted({kind(m) for m in row.markers})


def row_counts(rows: Sequence[Row]) -> dict[str, Any]:
    """Row tallies of an op's kept runs, and how many rows carry each kind of marker (the
    seed's no_cudagraph_rows / replay_fallback notes: read these before the numbers)."""
    ok = sum(r.status is RowStatus.OK for r in rows)
    return {"rows": len(rows), "ok_rows": ok, "error_rows": len(rows) - ok,
            "flagged_rows": sum(bool(r.markers) for r in rows),
            "marker_counts": dict(Counter(k for row in rows for k in _marker_kinds(row)))}


def write_op_result(op_dir: Path, result: OpResult) -> None:
    """``result.json`` always; ``.complete`` only for what ``--resume`` may reuse."""
    op_dir.mkdir(parents=True, exist_ok=True)
    doc = result.to_dict()
    write_json_atomic(op_dir / RESULT, doc)
    if result.status in (OpStatus.PASS, OpStatus.SKIP):
        write_json_atomic(op_dir / COMPLETE, doc)
    else:
        (op_dir / COMPLETE).unlink(missing_ok=True)


_OP_RESULT = TypeAdapter(OpResult)


def read_op_result(op_dir: Path, *, complete_only: bool) -> OpResult | None:
    """The op's recorded result, or None when there is none (or it is damaged: rerun it)."""
    try:
        return _OP_RESULT.validate_json((op_dir / (COMPLETE if complete_only else RESULT)).read_bytes(), strict=True)
    except (OSError, ValidationError):
        return None


def csv_text(columns: Sequence[str], lines: Iterable[Mapping[str, Any]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([_cell(line.get(k, "")) for k in columns] for line in lines)
    return buf.getvalue()


def _cell(value: Any) -> Any:
    """One physical line per record: a newline from an error text would split it."""
    return csv_cell(" ".join(value.split())) if isinstance(value, str) else value


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


STATUS_COLUMNS = ("op", "status", "attempts", "rc", "wall_s", "rows", "ok_rows", "error_rows",
                  "flagged_rows", "dtypes", "backend", "device", "device_name", "timer", "notes",
                  "run", "log")
SUMMARY_COLUMNS = ("op", "case", "dtype", "status", "backend", "device", "device_name", "timer",
                   "latency_us", "q1_us", "q3_us", "n", "speedup", "markers", "marker_kinds",
                   "error", "run")


def write_ops_status(path: Path, results: Iterable[OpResult]) -> None:
    def line(r: OpResult) -> dict[str, Any]:
        markers = " ".join(f"{k}={v}" for k, v in sorted(r.marker_counts.items()))
        # the last attempt's number: attempts of an interrupted process count too, as the logs do
        return {"op": r.op, "status": r.status.value, "attempts": r.attempts[-1].number if r.attempts else 0, "rc": "" if r.rc is None else r.rc,
                "wall_s": f"{r.wall_s:.1f}", "rows": r.rows, "ok_rows": r.ok_rows, "error_rows": r.error_rows,
                "flagged_rows": r.flagged_rows, "dtypes": ",".join(r.dtypes), "backend": r.backend,
                "device": r.device, "device_name": r.device_name, "timer": r.timer,
                "notes": "; ".join([*r.notes, *([f"marker rows: {markers}"] if markers else [])]),
                "run": " ".join(r.runs), "log": r.attempts[-1].stderr_log if r.attempts else ""}
    write_text_atomic(path, csv_text(STATUS_COLUMNS, map(line, results)))


def summary_lines(result: OpResult, rows_by_run: Mapping[str, Sequence[Row]],
                  records: dict[str, dict[tuple[str, str, str], float]]) -> list[dict[str, Any]]:
    """One line per measured row of the op's kept runs. ``speedup`` is the replayed record's
    median over this row's (> 1: faster than the record); empty without a record to compare.
    ``records`` caches each record's medians (read once)."""
    record = result.replay_from
    if record and result.runs and record not in records:
        try:
            records[record] = {r.key: r.summary.median for r in load_run(Path(record)).rows if r.summary}
        except GateError:
            records[record] = {}
    reference = records.get(record, {})
    out = []
    for run in result.runs:
        for row in rows_by_run.get(run, ()):
            s, base = row.summary, reference.get(row.key)
            out.append({
                "op": row.op, "case": row.case, "dtype": row.dtype, "status": row.status.value,
                "backend": result.backend, "device": result.device, "device_name": result.device_name,
                "timer": row.timer, "latency_us": f"{s.median:.6g}" if s else "",
                "q1_us": f"{s.q1:.6g}" if s else "", "q3_us": f"{s.q3:.6g}" if s else "",
                "n": len(row.samples), "speedup": f"{base / s.median:.4f}" if s and base else "",
                "markers": len(row.markers), "marker_kinds": " ".join(_marker_kinds(row)),
                "error": row.error[:300], "run": run})
    return out


def write_tables(batch_dir: Path, results: Iterable[OpResult], summary: Iterable[Mapping[str, Any]]) -> None:
    """``ops_status.csv`` and ``summary.csv``."""
    write_ops_status(batch_dir / OPS_STATUS, results)
    write_text_atomic(batch_dir / SUMMARY, csv_text(SUMMARY_COLUMNS, summary))
