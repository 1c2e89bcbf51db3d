"""Progress events a long run reports to its caller (the library never prints), and the
one-line text of a finished row for logs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from tritongate.preflight import PlannedRow
from tritongate.report.units import format_time, format_time_range
from tritongate.schema import Row, RowStatus


@dataclass(frozen=True)
class Progress:
    """One event for the caller's progress display."""

    kind: str  # "start" | "row_start" | "row_done" | "finish" | "note"
    index: int = 0
    total: int = 0
    planned: PlannedRow | None = None
    row: Row | None = None  # the (candidate) row just finished
    message: str = ""


ProgressFn = Callable[[Progress], None]


def row_line(row: Row) -> str:
    """SUCCESS / FLAGGED / FAILED / SKIPPED, the row's key and its timing, for run.log."""
    s = row.summary
    if row.skipped is not None:
        state = "SKIPPED"
    elif row.status is RowStatus.OK:
        state = "FLAGGED" if row.markers else "SUCCESS"
    else:
        state = "FAILED"
    if s:
        timing = f"median {format_time(s.median)} IQR {format_time_range(s.q1, s.q3)} n={s.n}"
    else:
        timing = f"not timed ({row.skipped.value})" if row.skipped else row.error
    return f"{state} {row.op} case={row.case} dtype={row.dtype} timer={row.timer} {timing}"
