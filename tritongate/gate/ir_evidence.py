"""The IR behind a verdict: the two runs' captured TTGIR compared, per verdict row.

``gate.output.write_verdict_files`` calls ``collect`` with both run directories: it writes ``ir-diff/``
next to ``verdict.md`` (the same folder ``tritongate ir-diff`` writes) and returns, for
each (op, case, dtype) row, how many of the kernels it launched changed their IR, the path
of its smallest diff inside the verdict folder and that diff's first lines. A reviewer who
sees "matmul +90 %" then has the code change to look at.

When the diff folder holds a ``blame.json`` (``tritongate ir-diff --blame``), its first differing
compiler pass per changed kernel comes along (``gate.ir_blame``); without one, nothing is said.

Fail soft: runs without IR (the interpreter compiles nothing; runs from before capture)
give no evidence and, where only one side has IR or it is damaged, a note; a verdict is
never lost to its IR.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from tritongate.ir.diff import (BASE_ONLY, CAND_ONLY, CHANGED, IDENTICAL, STATUSES, VariantDiff, diff_paths,
                                diff_trees, split_row, ttgir_root, variant_order)
from tritongate.ir.diff_dir import write_diff_dir
from tritongate.ir.diff_read import copy_folder, read_variants
from tritongate.gate.ir_blame import read_blame
from tritongate.ir.index import INDEX

IR_DIFF_DIR = "ir-diff"
HEAD_LINES = 40  # of the smallest diff, shown inline in verdict.md
HEAD_CHARS = 3000

RowKey = tuple[str, str, str]


@dataclass(frozen=True)
class RowIR:
    """One verdict row's kernels, base against candidate.

    ``kernels``: the distinct kernels it launched on either side; ``changed``: those with
    a variant whose IR differs or that only one side launched; ``diff``: the smallest
    changed variant's diff, relative to the verdict folder; ``head``: its first lines."""

    kernels: int
    changed: int
    diff: str = ""
    head: str = ""
    head_cut: bool = False
    only_one_side: int = 0  # variants launched by one build only (no diff to show)

    def to_dict(self) -> dict[str, Any]:
        return {"kernels": self.kernels, "changed": self.changed, "diff": self.diff or None,
                "only_one_side": self.only_one_side}


@dataclass
class IREvidence:
    """Per-row IR comparison, the folder's counts, and why there is none (``note``)."""

    rows: dict[RowKey, RowIR] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    folder: str = ""  # "ir-diff" when written
    note: str = ""
    blame: dict[str, Any] | None = None  # verdict.json's ``ir.blame``: only where the folder has a blame.json

    def for_row(self, key: RowKey) -> RowIR | None:
        return self.rows.get(key)

    def to_dict(self) -> dict[str, Any]:
        out = {"folder": self.folder or None, "variants": dict(self.counts), "note": self.note or None}
        return out if self.blame is None else {**out, "blame": self.blame}


def _has_ir(run_path: Path) -> bool:
    try:
        return (ttgir_root(run_path) / INDEX).is_file()
    except OSError:  # a ttgir/ linked out of the run: diff_trees refuses it again, as a note
        return True


def _head(text: str) -> tuple[str, bool]:
    """The first lines of a diff (after its two file headers, which only repeat the path)."""
    lines = text.splitlines()
    body = lines[2:] if len(lines) > 2 and lines[0].startswith("--- ") else lines
    head = body[:HEAD_LINES]
    out = "\n".join(head)
    cut = len(body) > HEAD_LINES
    if len(out) > HEAD_CHARS:
        out = out[:HEAD_CHARS]
        out = out[: out.rfind("\n")] if "\n" in out else out
        cut = True
    return out, cut


def _rows(diffs: list[VariantDiff], paths: dict[int, PurePosixPath]) -> dict[RowKey, RowIR]:
    launched: dict[RowKey, set[str]] = defaultdict(set)
    changed: dict[RowKey, set[str]] = defaultdict(set)
    one_side: dict[RowKey, int] = defaultdict(int)
    smallest: dict[RowKey, int] = {}
    for i, d in enumerate(diffs):
        for row in d.rows:
            op, dtype = split_row(row)
            key = (op, d.case, dtype)
            launched[key].add(d.kernel)
            if d.status == IDENTICAL:
                continue
            changed[key].add(d.kernel)
            if d.status in (BASE_ONLY, CAND_ONLY):
                one_side[key] += 1
            if d.status == CHANGED and i in paths:
                j = smallest.get(key)
                if j is None or (d.size, str(paths[i])) < (diffs[j].size, str(paths[j])):
                    smallest[key] = i
    out: dict[RowKey, RowIR] = {}
    for key, kernels in launched.items():
        j = smallest.get(key)
        head, cut = _head(diffs[j].diff_text) if j is not None else ("", False)
        out[key] = RowIR(kernels=len(kernels), changed=len(changed.get(key, ())),
                         diff=f"{IR_DIFF_DIR}/{paths[j]}" if j is not None else "", head=head, head_cut=cut,
                         only_one_side=one_side.get(key, 0))
    return out


def collect(base_run: Path, cand_run: Path, verdict_dir: Path, ahead_of_time: Path | None = None) -> IREvidence:
    """Compare the runs' TTGIR, write ``verdict_dir/ir-diff/``, and map it onto verdict rows;
    ``ahead_of_time``: the ir-diff folder the runs were paired with (``pair --changed-from``),
    the evidence where neither run kept IR."""
    base_has, cand_has = _has_ir(Path(base_run)), _has_ir(Path(cand_run))
    if not base_has and not cand_has:
        if ahead_of_time is not None:
            return _from_folder(Path(ahead_of_time), Path(verdict_dir))
        return IREvidence()  # interpreter or pre-capture runs on both sides: nothing to compare
    if not (base_has and cand_has):
        missing = "base" if not base_has else "candidate"
        return IREvidence(note=f"no IR comparison: the {missing} run kept no TTGIR "
                               f"({Path(base_run if not base_has else cand_run) / 'ttgir'} is absent)")
    try:
        diffs = sorted(diff_trees(Path(base_run), Path(cand_run)), key=variant_order)
        if not diffs:  # indexes without TTGIR (CPU runs index launches, compile nothing): no evidence
            return IREvidence()
        out = write_diff_dir(diffs, Path(verdict_dir) / IR_DIFF_DIR)
    except (OSError, ValueError) as exc:  # a damaged index or an unwritable folder: the verdict stands
        return IREvidence(note=f"no IR comparison: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}")
    return _evidence(diffs, diff_paths(diffs), out)


def _evidence(diffs: list[VariantDiff], paths: dict[int, PurePosixPath], out: Path, note: str = "") -> IREvidence:
    counts = {s: 0 for s in STATUSES}
    for d in diffs:
        counts[d.status] = counts.get(d.status, 0) + 1
    return IREvidence(rows=_rows(diffs, paths), counts=counts, folder=out.name, note=note,
                      blame=read_blame(out, diffs, IR_DIFF_DIR))


def _from_folder(source: Path, verdict_dir: Path) -> IREvidence:
    """The ahead-of-time diff ``source`` copied into the verdict's ``ir-diff/`` and read as the
    runs' own diff would be (the runs ran on the interpreter: it compiles nothing)."""
    out = verdict_dir / IR_DIFF_DIR
    try:
        copy_folder(source, out)
        diffs, paths = read_variants(out)
    except (OSError, ValueError) as exc:
        return IREvidence(note=f"no IR comparison: the runs kept no TTGIR and the ahead-of-time diff {source} "
                               f"could not be read ({type(exc).__name__}: {' '.join(str(exc).split())[:300]})")
    return _evidence(diffs, paths, out, note=f"IR compared ahead of time ({source}, pair --changed-from): "
                                             "the runs themselves kept no TTGIR")

