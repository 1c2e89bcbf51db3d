"""Normalized IR diffs between two ``ttgir/`` trees (a base and a candidate compiler build).

Each launched variant's TTGIR is compared in canonical form (``ir.canonical``: locations and
paths removed, SSA values and blocks renumbered by first appearance), so a non-empty diff
means the compiler emitted different code. Where both sides kept the levels below TTGIR
(``tritongate ir``: LLVM IR, PTX, SASS), those are compared too (``ir.levels``) and each
variant says at which level it first differs. The diff texts and counts set renumbering aside
(``ir.align``): a line shifted by an op added earlier is context, a rewired operand a change.

```
<out>/<case_dir>/<kernel_dir>/<name>.diff          one per changed variant (the ttgir file's folder)
<out>/<case_dir>/<kernel_dir>/<name>.<level>.diff  TTGIR equal: each lower level that differs
<out>/index.tsv                                    every compared variant: status, sizes, diff path, rows
<out>/levels.tsv                                   every compared variant: each level's state, the first
                                                   that differs, the lower levels' diffs
<out>/summary.md                                   counts per status and first level, changed variants
```
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Iterable

from tritongate import safefs
from tritongate.ir.align import unified_diff
from tritongate.ir.canonical import canonical_ttgir, renumbered_names
from tritongate.ir.index import INDEX, CompiledVariant, level_file, read_index
from tritongate.ir.levels import (LevelCompare, compare_levels, title)

IDENTICAL = "identical"
CHANGED = "changed"
BASE_ONLY = "base_only"
CAND_ONLY = "cand_only"
MISSING_FILE = "missing_file"
# TTGIR identical, cubin not: the change is below TTGIR (LLVM lowering, ptxas); only
# when both sides hashed their binary (a GPU run or an AOT compile; line info off on both)
BINARY_CHANGED = "binary_changed"
# the code may be the same, but the builds launch the row differently (the pre-screen's: the
# launch path, the variants each build's binder picks); ``reason`` says which
LAUNCH_CHANGED = "launch_changed"
STATUSES = (CHANGED, BINARY_CHANGED, LAUNCH_CHANGED, BASE_ONLY, CAND_ONLY, MISSING_FILE, IDENTICAL)  # summary order
NOT_IDENTICAL = frozenset(STATUSES) - {IDENTICAL}

# a diff folder's pass blame (``ir-diff --blame``, the pre-screen's --blame; a verdict's carried copy)
BLAME_JSON = "blame.json"
BLAME_DIR = "blame"  # ir-diff's pass dumps, beside blame.json
MAX_DIFF_BYTES = 2 * 1024 * 1024  # IR of huge kernels: keep the diff folder reviewable
LOWER_DIFF_BYTES = 512 * 1024  # a level below TTGIR (LLVM IR of a big kernel is MBs)
SUMMARY_MAX_ROWS = 200  # changed variants listed in summary.md (index.tsv lists all)
TTGIR_DIR = "ttgir"  # a run directory's IR folder (tritongate.ir.store names it too)
DIFF_COLUMNS = ("case", "kernel", "name", "status", "added", "removed", "diff", "rows", "reason")


@dataclass(frozen=True)
class VariantDiff:
    """One launched variant compared across the two trees. ``*_file`` are relative to each
    ``ttgir/`` ("" on a side that lacks it); ``added``/``removed`` count the whole diff even
    when ``diff_text`` was cut; ``rows`` are both sides' "op/dtype" rows."""

    case: str
    kernel: str
    name: str
    status: str
    base_file: str = ""
    cand_file: str = ""
    added: int = 0
    removed: int = 0
    diff_text: str = ""
    rows: tuple[str, ...] = ()
    reason: str = ""
    # where the code first differs (``ir.levels``: ttgir, llir, ptx, sass, cubin, below_<level>;
    # "" when the same as far as kept or not compared), each level's state, and (TTGIR equal)
    # the diffs of the lower levels that differ: (level, diff text, added, removed)
    first_level: str = ""
    levels: tuple[tuple[str, str], ...] = ()
    level_diffs: tuple[tuple[str, str, int, int], ...] = ()

    @property
    def size(self) -> int:
        return self.added + self.removed


def ttgir_root(path: Path) -> Path:
    """The folder holding ``index.tsv``: ``path`` itself, or a run directory's ``ttgir/``."""
    path = Path(path)
    if not (path / INDEX).is_file() and (path / TTGIR_DIR / INDEX).is_file():
        return safefs.check_inside(path, path / TTGIR_DIR)  # a ttgir/ linked out of the run is refused
    return path


def _launched(root: Path) -> dict[tuple[str, str, str], list[CompiledVariant]]:
    """The launched variants of a tree (those with a file) by (case, kernel, name)."""
    index = root / INDEX
    if not index.is_file():
        raise FileNotFoundError(f"{index}: no IR index (is this a run's ttgir/ folder?)")
    by_key: dict[tuple[str, str, str], list[CompiledVariant]] = defaultdict(list)
    for v in read_index(index):
        if v.file:
            by_key[(v.case, v.kernel, v.name or PurePosixPath(v.file).stem)].append(v)
    for members in by_key.values():
        members.sort(key=lambda v: (v.file, v.compile_hash))
    return by_key


def safe_rel(rel: str) -> PurePosixPath | None:
    """``rel`` as a path inside its tree, or None when it is absolute or climbs out (an index is input)."""
    p = PurePosixPath(rel.replace("\\", "/"))
    if not p.parts or p.is_absolute() or ".." in p.parts or ":" in p.parts[0]:
        return None
    return p


def _read_ir(root: Path, rel: str) -> tuple[str | None, str]:
    safe = safe_rel(rel)
    if safe is None:
        return None, f"{rel!r}: path outside the ttgir folder"
    path = root / safe
    try:  # never through a link: its target's text would be inlined into the diff and the verdict
        return canonical_ttgir(safefs.read_text(root, safe)), ""
    except FileNotFoundError:
        return None, f"{path}: listed in {INDEX} but not on disk"
    except safefs.LinkError as exc:
        return None, str(exc)
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"{path}: unreadable ({type(exc).__name__}: {exc})"


def cut_diff(text: str, limit: int = MAX_DIFF_BYTES) -> str:
    """``text`` cut at a line boundary to at most ``limit`` UTF-8 bytes, with a note."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    # room for the note keeps the result within the limit, so cutting twice changes nothing
    head = data[: max(limit - 100, 0)].decode("utf-8", errors="ignore")
    head = head[: head.rfind("\n") + 1] if "\n" in head else ""
    return head + f"... diff cut: {len(head.encode('utf-8'))} of {len(data)} bytes shown\n"


def _compare(key: tuple[str, str, str], base: CompiledVariant | None, cand: CompiledVariant | None,
             base_root: Path, cand_root: Path) -> VariantDiff:
    case, kernel, name = key
    rows = tuple(sorted(set(base.rows if base else ()) | set(cand.rows if cand else ())))
    pair = VariantDiff(case, kernel, name, IDENTICAL, base.file if base else "", cand.file if cand else "", rows=rows)
    if base is None or cand is None:
        return replace(pair, status=CAND_ONLY if base is None else BASE_ONLY)
    (base_text, base_why), (cand_text, cand_why) = _read_ir(base_root, base.file), _read_ir(cand_root, cand.file)
    if base_text is None or cand_text is None:
        reason = "; ".join(f"{side}: {why}" for side, why in (("base", base_why), ("candidate", cand_why)) if why)
        return replace(pair, status=MISSING_FILE, reason=reason)
    text, added, removed = unified_diff(base_text, cand_text, base.file, cand.file,
                                        renumbered_names("ttgir", base_text, cand_text))
    roots = {"base": (base_root, base.file), "cand": (cand_root, cand.file)}
    lv = compare_levels(not text, lambda side, level: _read_lower(*roots[side], level),
                        base.binary_hash, cand.binary_hash)
    pair = replace(pair, first_level=lv.first_level, levels=lv.states, level_diffs=_level_diffs(lv, base, cand))
    if text:
        return replace(pair, status=CHANGED, added=added, removed=removed, diff_text=cut_diff(text))
    hashed = bool(base.binary_hash and cand.binary_hash)
    where = f"first differs at {title(lv.first_level)}"
    if hashed and base.binary_hash != cand.binary_hash:
        return replace(pair, status=BINARY_CHANGED,
                       reason=f"TTGIR identical; {where}; cubin {base.binary_hash} -> {cand.binary_hash}")
    if lv.first_level and not hashed:  # a lower text differs: different code, no cubin to say so
        return replace(pair, status=BINARY_CHANGED, reason=f"TTGIR identical; {where}; cubin not hashed")
    if lv.first_level:  # same cubin: what runs is the same
        return replace(pair, reason=f"{title(lv.first_level)} text differs; cubin identical")
    return pair


def _read_lower(root: Path, ttgir_file: str, level: str) -> str | None:
    """A variant's raw IR at a level below TTGIR, kept beside its ``.ttgir``; None when absent,
    unreadable or a link (never followed)."""
    safe = safe_rel(level_file(ttgir_file, level))
    if safe is None:
        return None
    try:
        return safefs.read_text(root, safe)
    except (OSError, UnicodeDecodeError, safefs.LinkError):
        return None


def _level_diffs(lv: LevelCompare, base: CompiledVariant, cand: CompiledVariant) -> tuple[tuple[str, str, int, int], ...]:
    out = []
    for level, b, c in lv.differing:
        text, added, removed = unified_diff(b, c, level_file(base.file, level), level_file(cand.file, level),
                                            renumbered_names(level, b, c))
        out.append((level, cut_diff(text, LOWER_DIFF_BYTES), added, removed))
    return tuple(out)


def diff_trees(base: Path, cand: Path) -> list[VariantDiff]:
    """Every launched variant of either tree (``ttgir/`` folders or run directories), joined on
    (case, kernel, name) and compared as normalized TTGIR; an absent or damaged ``index.tsv``
    raises ``FileNotFoundError``/``ValueError``."""
    base_root, cand_root = ttgir_root(base), ttgir_root(cand)
    base_by, cand_by = _launched(base_root), _launched(cand_root)
    out: list[VariantDiff] = []
    for key in sorted(set(base_by) | set(cand_by)):
        b, c = base_by.get(key, []), cand_by.get(key, [])
        # one variant per key on each side normally; duplicates pair up in file order
        out += [_compare(key, bv, cv, base_root, cand_root) for bv, cv in itertools.zip_longest(b, c)]
    return out


def split_row(row: str) -> tuple[str, str]:
    """"op/dtype" -> (op, dtype); the dtype never holds a slash, an op may."""
    op, sep, dtype = row.rpartition("/")
    return (op, dtype) if sep else (row, "")


def rows_changed(diffs: Iterable[VariantDiff],
                 statuses: frozenset[str] = NOT_IDENTICAL) -> dict[tuple[str, str, str], list[VariantDiff]]:
    """Verdict row (op, case, dtype) -> its variants whose status is in ``statuses`` (by
    default every status but ``identical``: a variant only one build launched is a change too)."""
    out: dict[tuple[str, str, str], list[VariantDiff]] = defaultdict(list)
    for d in (d for d in diffs if d.status in statuses):
        for op, dtype in map(split_row, d.rows):
            out[(op, d.case, dtype)].append(d)
    return {key: sorted(out[key], key=variant_order) for key in sorted(out)}


def variant_order(d: VariantDiff) -> tuple[str, ...]:
    """A total order, so any input order writes the same bytes."""
    return (d.case, d.kernel, d.name, d.base_file, d.cand_file, d.status, d.reason, d.diff_text)


def _diff_place(d: VariantDiff) -> tuple[PurePosixPath, str]:
    """The folder (the ttgir file's: candidate side, else base) and file stem of a variant's diffs."""
    folder = safe_rel(d.cand_file or d.base_file)
    stem = re.sub(r"[/\\\x00]", "_", d.name) or "variant"
    stem = "_" + stem if stem.startswith(".") else stem
    return (folder.parent if folder is not None else PurePosixPath("_unsafe")), stem


def diff_paths(diffs: list[VariantDiff]) -> dict[int, PurePosixPath]:
    """Position in ``diffs`` -> .diff path of each changed variant: the ttgir file's folder
    (candidate side, else base) and ``<name>.diff``, clashes getting ``~2``, ``~3``."""
    taken: set[PurePosixPath] = set()
    return {i: _claim(taken, *_diff_place(d), ".diff") for i, d in enumerate(diffs) if d.status == CHANGED}


def level_diff_paths(diffs: list[VariantDiff],
                     paths: dict[int, PurePosixPath]) -> dict[int, dict[str, PurePosixPath]]:
    """Position in ``diffs`` -> level -> path of each lower-level diff: ``<name>.<level>.diff``
    beside where the variant's TTGIR diff would go, clashes (with any diff) getting ``~2``, ..."""
    taken = set(paths.values())
    return {i: {level: _claim(taken, *_diff_place(d), f".{level}.diff") for level, *_ in d.level_diffs}
            for i, d in enumerate(diffs) if d.level_diffs}


def _claim(taken: set[PurePosixPath], parent: PurePosixPath, stem: str, suffix: str) -> PurePosixPath:
    """``parent/<stem><suffix>``, or ``<stem>~2<suffix>``, ... when taken; marked taken."""
    rel, k = parent / f"{stem}{suffix}", 1
    while rel in taken:
        k += 1
        rel = parent / f"{stem}~{k}{suffix}"
    taken.add(rel)
    return rel
