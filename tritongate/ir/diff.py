"""Normalized IR diffs between two ``ttgir/`` trees (a base and a candidate compiler build).

Each launched variant's TTGIR is compared after ``ir.normalize`` removed what only says where
it was compiled, so a non-empty diff means the compiler emitted different code.

```
<out>/<case_dir>/<kernel_dir>/<name>.diff   one per changed variant (the ttgir file's folder)
<out>/index.tsv                             every compared variant: status, sizes, diff path, rows
<out>/summary.md                            counts per status, changed variants by size
```
"""

from __future__ import annotations

import csv
import difflib
import io
import itertools
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Iterable

from tritongate import safefs
from tritongate.atomicio import write_text_atomic
from tritongate.ir.index import INDEX, CompiledVariant, read_index
from tritongate.ir.normalize import normalize_ttgir
from tritongate.report.untrusted import markdown_cell as _md_cell  # names come from the run

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

MAX_DIFF_BYTES = 2 * 1024 * 1024  # IR of huge kernels: keep the diff folder reviewable
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


def _safe_rel(rel: str) -> PurePosixPath | None:
    """``rel`` as a path inside its tree, or None when it is absolute or climbs out (an index is input)."""
    p = PurePosixPath(rel.replace("\\", "/"))
    if not p.parts or p.is_absolute() or ".." in p.parts or ":" in p.parts[0]:
        return None
    return p


def _read_ir(root: Path, rel: str) -> tuple[str | None, str]:
    safe = _safe_rel(rel)
    if safe is None:
        return None, f"{rel!r}: path outside the ttgir folder"
    path = root / safe
    try:  # never through a link: its target's text would be inlined into the diff and the verdict
        return normalize_ttgir(safefs.read_text(root, safe)), ""
    except FileNotFoundError:
        return None, f"{path}: listed in {INDEX} but not on disk"
    except safefs.LinkError as exc:
        return None, str(exc)
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"{path}: unreadable ({type(exc).__name__}: {exc})"


def unified_diff(base_text: str, cand_text: str, base_rel: str, cand_rel: str) -> tuple[str, int, int]:
    """(diff text, added lines, removed lines) of two normalized texts; ("", 0, 0) if equal."""
    if base_text == cand_text:
        return "", 0, 0
    lines = list(difflib.unified_diff(base_text.splitlines(), cand_text.splitlines(),
                                      fromfile=f"a/{base_rel}", tofile=f"b/{cand_rel}", n=3, lineterm=""))
    body = lines[2:]  # after the ---/+++ headers, which a content line could mimic
    added = sum(1 for line in body if line.startswith("+"))
    removed = sum(1 for line in body if line.startswith("-"))
    return "\n".join(lines) + "\n", added, removed


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
    text, added, removed = unified_diff(base_text, cand_text, base.file, cand.file)
    if not text:
        if base.binary_hash and cand.binary_hash and base.binary_hash != cand.binary_hash:
            return replace(pair, status=BINARY_CHANGED,
                           reason=f"TTGIR identical; cubin {base.binary_hash} -> {cand.binary_hash}")
        return pair
    return replace(pair, status=CHANGED, added=added, removed=removed, diff_text=cut_diff(text))


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


def diff_paths(diffs: list[VariantDiff]) -> dict[int, PurePosixPath]:
    """Position in ``diffs`` -> .diff path of each changed variant: the ttgir file's folder
    (candidate side, else base) and ``<name>.diff``, clashes getting ``~2``, ``~3``."""
    taken: set[PurePosixPath] = set()
    out: dict[int, PurePosixPath] = {}
    for i, d in enumerate(diffs):
        if d.status != CHANGED:
            continue
        folder = _safe_rel(d.cand_file or d.base_file)
        stem = re.sub(r"[/\\\x00]", "_", d.name) or "variant"
        stem = "_" + stem if stem.startswith(".") else stem
        parent = folder.parent if folder is not None else PurePosixPath("_unsafe")
        rel, k = parent / f"{stem}.diff", 1
        while rel in taken:
            k += 1
            rel = parent / f"{stem}~{k}.diff"
        taken.add(rel)
        out[i] = rel
    return out


def _tsv(rows: list[tuple[object, ...]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, delimiter="\t", lineterminator="\n")
    w.writerow(DIFF_COLUMNS)
    w.writerows(rows)
    return buf.getvalue()


def summary_markdown(diffs: list[VariantDiff], paths: dict[int, PurePosixPath]) -> str:
    """Counts per status, then the changed variants largest first (and why files were missing)."""
    counts = {s: 0 for s in STATUSES} | Counter(d.status for d in diffs)
    lines = ["# TTGIR diff", "", "| status | variants |", "|---|---:|"]
    lines += [f"| {_md_cell(s)} | {n} |" for s, n in counts.items()]
    changed = sorted((i for i, d in enumerate(diffs) if d.status == CHANGED),
                     key=lambda i: (-diffs[i].size, variant_order(diffs[i])))
    if changed:
        lines += ["", "## Changed variants, largest first", "",
                  "| case | kernel | variant | +lines | -lines | diff | rows |", "|---|---|---|---:|---:|---|---|"]
        for i in changed[:SUMMARY_MAX_ROWS]:
            d = diffs[i]
            lines.append(f"| {_md_cell(d.case)} | {_md_cell(d.kernel)} | {_md_cell(d.name)} | {d.added} | "
                         f"{d.removed} | {_md_cell(paths[i])} | {_md_cell(', '.join(d.rows))} |")
        if len(changed) > SUMMARY_MAX_ROWS:
            lines.append(f"\n{len(changed) - SUMMARY_MAX_ROWS} more changed variants: see {INDEX}.")
    missing = [d for d in diffs if d.status == MISSING_FILE]
    if missing:
        lines += ["", "## Not compared (missing files)", ""]
        lines += [f"- {_md_cell(d.case)} / {_md_cell(d.kernel)} / {_md_cell(d.name)}: {_md_cell(d.reason)}"
                  for d in missing[:SUMMARY_MAX_ROWS]]
    return "\n".join(lines) + "\n"


def _remove_stale(out: Path, keep: set[PurePosixPath]) -> None:
    """Delete the .diff files a previous write listed and this one does not (only those: ``out``
    may be a busy folder)."""
    try:
        with open(out / INDEX, encoding="utf-8", newline="") as f:
            old = [rec.get("diff") or "" for rec in csv.DictReader(f, delimiter="\t")]
    except (OSError, UnicodeDecodeError, csv.Error):
        return
    for rel in old:
        safe = _safe_rel(rel)
        if safe is not None and safe.suffix == ".diff" and safe not in keep:
            (out / safe).unlink(missing_ok=True)


def write_diff_dir(diffs: Iterable[VariantDiff], out: Path) -> Path:
    """Write the diff folder with atomic writes; returns ``out``. The same diffs give the same bytes."""
    out = Path(out)
    ordered = sorted(diffs, key=variant_order)
    paths = diff_paths(ordered)
    out.mkdir(parents=True, exist_ok=True)
    _remove_stale(out, set(paths.values()))
    for i, rel in paths.items():
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(target, cut_diff(ordered[i].diff_text))
    rows = [(d.case, d.kernel, d.name, d.status, d.added, d.removed, str(paths.get(i, "")),
             ",".join(d.rows), d.reason) for i, d in enumerate(ordered)]
    write_text_atomic(out / INDEX, _tsv(rows))
    write_text_atomic(out / "summary.md", summary_markdown(ordered, paths))
    return out
