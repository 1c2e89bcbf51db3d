"""Results as data: a run, or a verdict.json document, as a pandas DataFrame; and a run as
csv, json or a Markdown table (``tritongate show --format``).

Machine-readable outputs (the frames, csv, json) keep times as raw microseconds; only the
Markdown table formats them for people (``report.units``), and every one of its cells passes
through ``markdown_cell``: op and case names come from the code under test.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence

import pandas as pd

from tritongate import __version__
from tritongate.report.table import COLUMNS, NUMERIC_COLUMNS, row_cells, throughput
from tritongate.report.untrusted import csv_cell, markdown_cell
from tritongate.schema import SCHEMA_VERSION, Row, RunStatus

FORMATS = ("csv", "json", "md")


class Run(Protocol):
    """What this module reads of a run: ``tritongate.rundir.Run`` is one. A protocol, not that
    class, because ``rundir`` imports this module (``Run.to_pandas``) and the two must not
    import each other."""

    @property
    def name(self) -> str: ...
    @property
    def status(self) -> RunStatus: ...
    @property
    def mode(self) -> str: ...
    @property
    def rows(self) -> Sequence[Row]: ...

# run_frame's columns, in order, with their dtypes. The nullable dtypes ("string", "Int64",
# "boolean") hold pd.NA where a row has no value, so a missing count is not a float NaN.
RUN_COLUMNS: dict[str, str] = {
    "op": "string", "case": "string", "dtype": "string", "status": "string", "timer": "string",
    "n": "int64", "median_us": "float64", "q1_us": "float64", "q3_us": "float64", "rel_iqr": "float64",
    "min_us": "float64", "mean_us": "float64", "launches_per_sample": "Int64", "markers": "string",
    "skipped": "string", "error": "string", "bytes": "float64", "flops": "float64", "tb_s": "float64",
    "tflop_s": "float64", "paired": "bool", "pairs": "int64", "detectable_effect": "float64",
    "target_reached": "boolean", "samples_us": "object",
}

# verdict_frame's known columns (RowVerdict.to_dict, verdict schema 2), in order. Fields a
# row does not have (an untimed row has no medians) are NA; list fields are joined by "; ".
VERDICT_COLUMNS: dict[str, str] = {
    "op": "string", "case": "string", "dtype": "string", "verdict": "string", "timed": "boolean",
    "timing_change": "string", "why": "string", "effect": "float64", "effect_low": "float64",
    "effect_high": "float64", "speedup": "float64",
    "base_median_us": "float64", "base_q1_us": "float64", "base_q3_us": "float64", "base_n": "Int64",
    "cand_median_us": "float64", "cand_q1_us": "float64", "cand_q3_us": "float64", "cand_n": "Int64",
    "iqrs_overlap": "boolean", "noise_floor": "float64", "detectable_effect": "float64",
    "min_effect": "float64", "paired": "boolean", "pairs": "Int64", "rounds": "Int64", "max_rounds": "Int64",
    "target_effect": "float64", "target_reached": "boolean", "reached_target": "boolean",
    "stopped_by": "string", "worker_pairs": "Int64", "order_effect": "float64", "fails_policy": "boolean",
    "reasons": "string", "base_markers": "string", "cand_markers": "string",
    "ir.kernels": "Int64", "ir.changed": "Int64", "ir.diff": "string", "ir.only_one_side": "Int64",
}

LIST_SEPARATOR = "; "


# Row fields the columns above stand for (or that are not one value): every other field of a
# stored row is a column of its own, so a new scalar field reaches the CSV with no edit here.
_ROW_FIELDS_SHOWN = frozenset({"op", "case", "dtype", "timer", "samples", "status", "params", "markers",
                               "measurement", "correctness", "variants", "error", "flops", "bytes", "autotune",
                               "skipped", "stored_summary"})


def _row_record(row: Row) -> dict[str, Any]:
    extra = {f.name: value for f in dataclasses.fields(row) if f.name not in _ROW_FIELDS_SHOWN
             and isinstance(value := getattr(row, f.name), (str, int, float, bool, type(None)))}
    return extra | _known_record(row)


def _known_record(row: Row) -> dict[str, Any]:
    s = row.summary
    m = row.measurement
    pairing = m.pairing if m else None
    tb_s, tflop_s = throughput(row)
    # a paired row's rounds each pair with one of the other side's (as the gate counts them)
    pairs = len(row.samples) // m.samples_per_round if pairing is not None and m is not None else 0
    return {
        "op": row.op, "case": row.case, "dtype": row.dtype, "status": row.status.value, "timer": row.timer,
        "n": len(row.samples),
        "median_us": s.median if s else None, "q1_us": s.q1 if s else None, "q3_us": s.q3 if s else None,
        "rel_iqr": s.rel_iqr if s else None, "min_us": s.min if s else None, "mean_us": s.mean if s else None,
        "launches_per_sample": m.launches_per_sample if m else None,
        "markers": LIST_SEPARATOR.join(row.markers),
        "skipped": row.skipped.value if row.skipped else None, "error": row.error,
        "bytes": row.bytes, "flops": row.flops, "tb_s": tb_s, "tflop_s": tflop_s,
        "paired": pairing is not None, "pairs": pairs,
        "detectable_effect": pairing.detectable_effect if pairing else None,
        "target_reached": pairing.target_reached if pairing else None,
        "samples_us": tuple(row.samples),
    }


def _frame(records: list[dict[str, Any]], columns: Mapping[str, str]) -> pd.DataFrame:
    """A frame with exactly ``columns`` (missing values NA), each cast to its dtype; further
    keys the records hold come after, in sorted order, as pandas infers them."""
    extra = sorted({k for rec in records for k in rec} - set(columns))
    frame = pd.DataFrame({c: pd.Series([rec.get(c) for rec in records], dtype="object")
                          for c in (*columns, *extra)}, index=pd.RangeIndex(len(records)))
    for c, dtype in columns.items():
        if dtype == "object":
            continue
        if dtype == "float64":  # None -> NaN
            frame[c] = pd.to_numeric(frame[c], errors="raise").astype("float64")
        else:
            frame[c] = frame[c].astype(dtype)
    for c in extra:
        frame[c] = frame[c].infer_objects()
    return frame


def run_frame(run: Run) -> pd.DataFrame:
    """One row per Row of ``run``, columns (and dtypes) as ``RUN_COLUMNS``; times in µs.
    ``samples_us`` holds each row's raw samples as a tuple, in measurement order."""
    return _frame([_row_record(r) for r in run.rows], RUN_COLUMNS)


def _flat(value: Any, key: str) -> Iterable[tuple[str, Any]]:
    """A verdict field as flat columns: nested mappings as ``key.sub``, lists joined; the
    effect's interval as its two ends; an inline diff's text is left to verdict.md."""
    if key == "effect_interval":
        low, high = value if isinstance(value, (list, tuple)) and len(value) == 2 else (None, None)
        yield "effect_low", low
        yield "effect_high", high
    elif key in ("ir.head", "ir.head_cut"):
        return
    elif isinstance(value, Mapping):
        for sub, v in value.items():
            yield from _flat(v, f"{key}.{sub}")
    elif isinstance(value, (list, tuple)):
        yield key, LIST_SEPARATOR.join(str(v) for v in value)
    else:
        yield key, value


def verdict_frame(doc: Mapping[str, Any]) -> pd.DataFrame:
    """One row per row result of a verdict.json document (``gate.output.verdict_document``),
    columns (and dtypes) as ``VERDICT_COLUMNS`` then, sorted, any others a newer document
    carries. Older documents lack some fields: those columns are NA."""
    rows = doc.get("rows") if isinstance(doc, Mapping) else None
    if not isinstance(rows, list) or not all(isinstance(r, Mapping) for r in rows):
        raise ValueError("not a verdict document: it needs a 'rows' list of objects "
                         "(pass the parsed verdict.json)")
    # a null object (a row without IR) adds no column of its own: its fields are NA
    records = [dict(kv for key, value in r.items() for kv in _flat(value, key)
                    if not (kv[1] is None and kv[0] not in VERDICT_COLUMNS)) for r in rows]
    return _frame(records, VERDICT_COLUMNS)


def verdict_csv(doc: Mapping[str, Any]) -> str:
    """``verdict_frame(doc)`` as CSV (``tritongate show --format csv`` of a verdict): its text cells
    (op and case names, reasons, markers) pass through ``csv_cell`` as a run's do."""
    frame = verdict_frame(doc)
    for column in frame.columns:
        frame[column] = frame[column].map(csv_cell, na_action="ignore")
    return str(frame.to_csv(index=False, lineterminator="\n"))


def _csv(run: Run) -> str:
    frame = run_frame(run)
    if run.status is not RunStatus.COMPLETE:  # rows so far: each says so, never read as a whole run
        frame.insert(0, "run_status", run.status.value)
    # one cell per row: the samples space-separated, each as the shortest text that reads back exact
    frame["samples_us"] = frame["samples_us"].map(lambda xs: " ".join(repr(x) for x in xs))
    for column in frame.columns:  # text from the run: never a spreadsheet formula, never a line break
        frame[column] = frame[column].map(csv_cell, na_action="ignore")
    return str(frame.to_csv(index=False, lineterminator="\n"))


def _json(run: Run) -> str:
    doc = {"schema_version": SCHEMA_VERSION, "tool_version": __version__, "run": run.name,
           "status": run.status.value, "mode": run.mode, "rows": [r.to_dict() for r in run.rows]}
    # ASCII only: a hostile name's control or bidi characters stay \u escapes, inert on a terminal
    return json.dumps(doc, indent=1, allow_nan=False) + "\n"


def _md(run: Run) -> str:
    records = [row_cells(r) for r in run.rows]
    columns = list(COLUMNS) + [c for c in ("TB/s", "TFLOP/s") if any(c in rec for rec in records)]
    lines = ["| " + " | ".join(markdown_cell(c) for c in columns) + " |",
             "|" + "|".join("---:" if c in NUMERIC_COLUMNS else "---" for c in columns) + "|"]
    lines += ["| " + " | ".join(markdown_cell(rec.get(c, "")) for c in columns) + " |" for rec in records]
    if run.status is not RunStatus.COMPLETE:  # rows so far: never read as a whole run
        lines += ["", f"**Incomplete run ({run.status.value}): {len(records)} rows so far, not the whole suite.**"]
    return "\n".join(lines) + "\n"


_RENDERERS: dict[str, Callable[[Run], str]] = {"csv": _csv, "json": _json, "md": _md}


def render_run(run: Run, fmt: str) -> str:
    """``run`` as csv (one line per row, times in µs), json (a versioned document of the rows
    as results.json stores them) or md (a GitHub Markdown table, times formatted). A run that
    did not complete says so in each: csv in a first column ``run_status``, md below the table."""
    try:
        render = _RENDERERS[fmt]
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}") from None
    return render(run)
