"""The changed rows of a pre-screen and why each is timed, read from its ``prescreen.json``.

A row is timed for one or more of these (``kind`` of a ``ChangedRow`` reason):

- ``kernels``: a kernel it launches compiled differently (TTGIR, or only the cubin), or
  compiled under one build only;
- ``launch_path``: the PR changes Triton's launch path, so every row is timed;
- ``variant_set``: the builds (or the base build and the record) launch different variants;
- ``not_compared``: nothing compared shows it unchanged (a kernel compiled on neither side,
  a record the pre-screen cannot compile for, a row the diff does not hold).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Mapping

KERNELS = "kernels"
LAUNCH_PATH = "launch_path"
VARIANT_SET = "variant_set"
NOT_COMPARED = "not_compared"
LABELS = {KERNELS: "kernels changed", LAUNCH_PATH: "launch path", VARIANT_SET: "variant set",
          NOT_COMPARED: "not compared"}
# ir-diff statuses, as a row's reason says them
_STATUS_TEXT = {"changed": "TTGIR", "binary_changed": "below TTGIR", "base_only": "compiled by the base only",
                "cand_only": "compiled by the candidate only", "missing_file": "IR file missing"}

RowKey = tuple[str, str, str]


@dataclass(frozen=True)
class ChangedRow:
    op: str
    case: str
    dtype: str
    reasons: tuple[tuple[str, str], ...]  # (kind, detail), kernels first

    @property
    def key(self) -> RowKey:
        return (self.op, self.case, self.dtype)

    @property
    def why(self) -> str:
        """``kernels changed: mm_kernel (TTGIR +4 -2); variant set: ...``: one line."""
        return "; ".join(f"{LABELS.get(kind, kind)}: {detail}" for kind, detail in self.reasons)


def _short(kernel: str) -> str:
    return kernel.rsplit(".", 1)[-1] or kernel


def _kernel_text(k: Mapping[str, Any]) -> str:
    status = str(k.get("status"))
    what = _STATUS_TEXT.get(status, status)
    if status == "changed":
        what += f" +{k.get('added', 0)} -{k.get('removed', 0)}"
    elif status == "binary_changed" and isinstance(k.get("first_level"), str) and k["first_level"]:
        what += f": {k['first_level']}"  # where the lower levels first differ, when the diff says
    return f"{_short(str(k.get('kernel', '?')))} ({what})"


def _kernel_reasons(doc: Mapping[str, Any]) -> dict[RowKey, list[str]]:
    out: dict[RowKey, list[str]] = defaultdict(list)
    for k in doc.get("kernels") or ():
        if not isinstance(k, Mapping) or k.get("status") == "identical":
            continue
        for row in k.get("rows") or ():
            op, _, dtype = str(row).rpartition("/")
            text = _kernel_text(k)
            key = (op, str(k.get("case")), dtype)
            if text not in out[key]:  # one line per kernel, though it has several variants
                out[key].append(text)
    return out


def changed_rows(doc: Mapping[str, Any]) -> list[ChangedRow]:
    """Every row of ``doc["rows_changed"]``, in its order, with why it is timed."""
    timed = doc.get("timed_without_ir_change") or {}
    whole = timed.get("why") if isinstance(timed, Mapping) else None  # no target: nothing compiled
    kernels = _kernel_reasons(doc)
    per_row: dict[RowKey, tuple[str, str]] = {}
    for entry in doc.get("rows_timed") or ():
        op, case, dtype, kind, why = (str(v) for v in entry)
        # every row has the same: its files once, in ``notes``
        per_row[(op, case, dtype)] = (kind, "Triton's launch path changed" if kind == LAUNCH_PATH else why)
    rows = []
    for raw in doc.get("rows_changed") or ():
        key: RowKey = (str(raw[0]), str(raw[1]), str(raw[2]))
        reasons: list[tuple[str, str]] = []
        if kernels.get(key):
            reasons.append((KERNELS, ", ".join(kernels[key])))
        if key in per_row:
            reasons.append(per_row[key])
        if isinstance(whole, str):
            reasons.append((NOT_COMPARED, whole))
        if not reasons:  # listed by no entry of the diff: nothing vouches for it
            reasons.append((NOT_COMPARED, "no kernel of this row was compared"))
        rows.append(ChangedRow(*key, reasons=tuple(reasons)))
    return rows


def notes(doc: Mapping[str, Any]) -> list[str]:
    """What holds for every row, said once below the table (the launch-path files)."""
    timed = doc.get("timed_without_ir_change") or {}
    files = timed.get("launch_path") if isinstance(timed, Mapping) else None
    if files:
        return [f"the PR changes Triton's launch path ({', '.join(map(str, files))}), so every row is timed"]
    return []


def count_line(doc: Mapping[str, Any], ir_diff: str) -> str:
    """The pre-screen's one-line result (``ci/prescreen.py`` has printed it since the start)."""
    n, total = len(doc.get("rows_changed") or ()), doc.get("rows_total", 0)
    timed = doc.get("timed_without_ir_change") or {}
    if isinstance(timed, Mapping) and isinstance(timed.get("why"), str):
        return f"{n} of {total} rows timed: {timed['why']}"
    return (f"{n} of {total} rows can change between the two builds"
            + ("; no GPU time needed" if n == 0 else f"; pair them with --changed-from {ir_diff}"))
