"""Which rows a compiler change can touch, known before any GPU is spent.

``tritongate pair --changed-from DIR`` reads the ``index.tsv`` of an ir-diff folder: a row
whose every variant is ``identical`` (same normalized TTGIR and, where hashed, cubin) cannot
differ in time, so it is not run on the GPU; every other row, and every row the folder does
not know, is measured. The folder must prove where it came from (``provenance``).
"""

from __future__ import annotations

import csv
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from tritongate.errors import UsageError
from tritongate.ir.diff import DIFF_COLUMNS, IDENTICAL, STATUSES, split_row
from tritongate.ir.index import INDEX
from tritongate.ir.provenance import Build, check_diff_provenance

RowKey = tuple[str, str, str]
_MAKE = ("make it with `tritongate ir --from BASELINE_RECORD --out BASE_IR` under the base compiler and "
         "again under the candidate's, then `tritongate ir-diff BASE_IR CAND_IR --out DIR`")


@dataclass(frozen=True)
class ChangedRows:
    """The rows of an ir-diff folder, split by whether any of their kernels changed."""
    source: Path
    unchanged: frozenset[RowKey]
    changed: frozenset[RowKey]

    def is_unchanged(self, key: RowKey) -> bool:
        return key in self.unchanged

    def to_dict(self) -> dict[str, object]:
        return {"source": str(self.source), "unchanged_rows": len(self.unchanged), "changed_rows": len(self.changed)}


def load_changed_rows(folder: Path, *, record: Path, base_build: Build = None,
                      cand_build: Build = None) -> ChangedRows:
    """Read ``folder/index.tsv`` (from ``tritongate ir-diff``); ``UsageError`` saying how to make it
    when it is absent, damaged, or not proven to come from ``record`` and the two builds."""
    folder = Path(folder)
    index = folder / INDEX
    if index.is_symlink():
        raise UsageError(f"--changed-from {folder}: {index} is a link (never followed); {_MAKE}")
    try:
        with open(index, encoding="utf-8", newline="") as f:
            reader = csv.DictReader(f, delimiter="\t")
            if tuple(reader.fieldnames or ()) != DIFF_COLUMNS:
                raise UsageError(f"--changed-from {folder}: {index} is not an ir-diff index (columns "
                                 f"{', '.join(DIFF_COLUMNS)} expected); {_MAKE}")
            records = list(reader)
    except FileNotFoundError:
        raise UsageError(f"--changed-from {folder}: no {INDEX} there; {_MAKE}") from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise UsageError(f"--changed-from {folder}: {index} unreadable ({type(exc).__name__}: {exc}); {_MAKE}") from None
    statuses: dict[RowKey, set[str]] = defaultdict(set)
    for line, rec in enumerate(records, start=2):
        status, case, rows = rec.get("status") or "", rec.get("case") or "", rec.get("rows") or ""
        if status not in STATUSES or not case or None in rec or None in rec.values():
            raise UsageError(f"--changed-from {folder}: {index} line {line}: a status among "
                             f"{', '.join(STATUSES)}, a case and the row list expected; {_MAKE}")
        for row in filter(None, rows.split(",")):
            op, dtype = split_row(row)
            statuses[(op, case, dtype)].add(status)
    check_diff_provenance(folder, record, base_build, cand_build)
    unchanged = frozenset(k for k, s in statuses.items() if s == {IDENTICAL})
    return ChangedRows(source=folder, unchanged=unchanged, changed=frozenset(statuses) - unchanged)
