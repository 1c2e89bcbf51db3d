"""Readable results tables for terminals and logs, rendered with rich.

Columns identical across every row are folded into a legend line above the table, so each
row shows only what varies (the seed's pretty report).
"""

from __future__ import annotations

import io
from typing import Sequence

from rich.console import Console
from rich.table import Table

from tritongate.report.units import format_time, format_time_range
from tritongate.report.untrusted import terminal_text
from tritongate.schema import Row, RowStatus, SkipReason

# What a row that was deliberately not timed shows where its median would be.
NOT_TIMED = {
    SkipReason.IDENTICAL_BINARY: "not timed (identical binary)",
    SkipReason.OTHER_SIDE_FAILED: "not timed (other side failed)",
}

# What every row of an IR index capture (TRITONGATE_CAPTURE_ONLY=1) shows as its median: its
# launches were indexed, not executed, so its samples time no kernel
CAPTURED = "not executed (IR capture)"

# Every row has these cells, in this order; throughput cells follow where they apply.
COLUMNS = ("op", "case", "dtype", "timer", "status", "median", "IQR", "rel IQR", "n", "k", "markers")
NUMERIC_COLUMNS = frozenset({"median", "IQR", "rel IQR", "n", "k", "TB/s", "TFLOP/s"})  # right-justified
# the two one-letter columns, said in words where the table shows them
KEY = {"n": "samples", "k": "kernel launches a sample (its time is per launch)"}


def throughput(row: Row) -> tuple[float | None, float | None]:
    """(TB/s, TFLOP/s) at the row's median, None where unknown. Only device time gives a
    throughput: the interpreter's wall time ("host-wall") would make a meaningless one."""
    s = row.summary
    if s is None or row.timer == "host-wall":
        return None, None
    seconds = s.median * 1e-6
    return (row.bytes / seconds / 1e12 if row.bytes else None,
            row.flops / seconds / 1e12 if row.flops else None)


def row_cells(row: Row, *, capture_only: bool = False) -> dict[str, str]:
    """One row's cells. A row without samples (an error, or a row deliberately not timed in
    a paired run) shows why in place of its median; its other timing cells are "-", as are
    those of a row of an IR index capture (``capture_only``)."""
    s = None if capture_only else row.summary
    if capture_only and row.status is not RowStatus.ERROR:  # a row whose capture failed says so
        median = CAPTURED
    elif s:
        median = format_time(s.median)
    elif row.skipped is not None:
        median = NOT_TIMED.get(row.skipped, f"not timed ({row.skipped.value.replace('_', ' ')})")
    else:
        median = "-"
    cells = {
        "op": row.op, "case": row.case, "dtype": row.dtype, "timer": row.timer,
        "status": row.status.value,
        "median": median,
        "IQR": format_time_range(s.q1, s.q3) if s else "-",
        "rel IQR": f"{s.rel_iqr:.2%}" if s else "-",
        "n": str(s.n) if s else "0",
        "k": str(row.measurement.launches_per_sample) if row.measurement else "-",
        "markers": "; ".join(row.markers) if row.markers else "",
    }
    tb_s, tflop_s = throughput(row) if s else (None, None)
    if tb_s is not None:
        cells["TB/s"] = f"{tb_s:.2f}"
    if tflop_s is not None:
        cells["TFLOP/s"] = f"{tflop_s:.1f}"
    return cells


def fold_constant_columns(records: Sequence[dict[str, str]],
                          keep: Sequence[str] = ("op", "median")) -> tuple[list[str], dict[str, str]]:
    """Split columns into those that vary (shown) and those constant across rows (legend)."""
    columns: list[str] = []
    for rec in records:
        for c in rec:
            if c not in columns:
                columns.append(c)
    legend: dict[str, str] = {}
    shown = []
    for c in columns:
        values = {rec.get(c, "") for rec in records}
        if len(records) > 1 and len(values) == 1 and c not in keep:
            value = values.pop()
            if value:
                legend[c] = value
        else:
            shown.append(c)
    return shown, legend


def render_rows(rows: Sequence[Row], *, color: bool, width: int = 160, title: str = "",
                capture_only: bool = False) -> str:
    """The rows as a table; ``capture_only``: the run is an IR index capture (no time shown)."""
    records = [row_cells(r, capture_only=capture_only) for r in rows]
    columns, legend = fold_constant_columns(records)
    table = Table(title=terminal_text(title) if title else None, show_lines=False,
                  header_style="bold" if color else "")
    for c in columns:
        table.add_column(c, justify="right" if c in NUMERIC_COLUMNS else "left", overflow="fold")
    for rec, row in zip(records, rows):
        if not color:
            style = ""
        elif row.status.value != "ok" or row.markers:
            style = "red"
        else:  # an untimed row is fine, but it is not a measurement either
            style = "green" if row.summary else "yellow"
        table.add_row(*[terminal_text(rec.get(c, "")) for c in columns], style=style)
    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=color, color_system="standard" if color else None,
                      highlight=False, emoji=False)
    if legend:
        console.print(terminal_text("every row: " + "; ".join(f"{k}: {v}" for k, v in legend.items())))
    console.print(table)
    said = [f"{c}: {KEY[c]}" for c in (*legend, *columns) if c in KEY]
    if said:
        console.print("; ".join(said))
    return buf.getvalue()
