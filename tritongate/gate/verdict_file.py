"""Reading a written verdict back (``verdict.json``): for dashboards, history and scripts."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tritongate import __version__
from tritongate.errors import RunDirError, SchemaVersionError
from tritongate.gate.verdict import VERDICT_SCHEMA_VERSION
from tritongate.validation import validate
from tritongate.model.verdict import VerdictDoc, VerdictRowDoc

if TYPE_CHECKING:
    import pandas

VERDICT_JSON = "verdict.json"
MIN_READABLE_VERDICT_VERSION = 2  # version 1 had no "why"/"timed" per row: read through ``upgrade_v1``


@dataclass(frozen=True)
class VerdictFile:
    path: Path
    doc: VerdictDoc

    @property
    def rows(self) -> list[VerdictRowDoc]:
        return self.doc.rows

    @property
    def passed(self) -> bool:
        return self.doc.passed

    def to_pandas(self) -> "pandas.DataFrame":
        """One row per (op, case, dtype) with its verdict, timings and why."""
        from tritongate.report.export import verdict_frame

        return verdict_frame(self.doc.model_dump())


def load_verdict(path: str | Path) -> VerdictFile:
    """A verdict directory (or its ``verdict.json``), validated; ``RunDirError`` /
    ``SchemaVersionError`` with one line otherwise."""
    from tritongate.rundir import read_json_object

    path = Path(path)
    file = path / VERDICT_JSON if path.is_dir() else path
    raw = read_json_object(file, VERDICT_JSON)
    version = raw.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise SchemaVersionError(f"{file} has no integer schema_version; it was not written by tritongate gate")
    if version == 1:  # the H200 verdicts of 2026-11-29 (bench/results/): readable, upgraded
        raw = upgrade_v1(raw)
    elif not MIN_READABLE_VERDICT_VERSION <= version <= VERDICT_SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{file} is verdict schema {version}; this tritongate {__version__} reads "
            f"1-{VERDICT_SCHEMA_VERSION}: "
            + ("upgrade tritongate" if version > VERDICT_SCHEMA_VERSION else "re-run the gate with this version"))
    return VerdictFile(path=file, doc=validate(VerdictDoc, raw, source=file, error=RunDirError))


def upgrade_v1(raw: dict[str, Any]) -> dict[str, Any]:
    """A version-1 verdict in the fields later readers expect: version 1 wrote no ``timed``
    per row (a row was timed when it has medians) and judged only unpaired runs."""
    rows = []
    for row in raw.get("rows") or []:
        if isinstance(row, dict):
            row = {**row, "timed": row.get("base_median_us") is not None, "paired": False}
            if row.get("pairs") is None:
                row["pairs"] = 0
        rows.append(row)
    return {**raw, "rows": rows}
