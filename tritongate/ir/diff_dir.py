"""Writing a diff folder (``ir.diff`` computes the diffs): the ``.diff`` files, ``index.tsv``,
``levels.tsv`` and ``summary.md`` (counts per status and per first differing level, the changed
variants largest first, the variants whose TTGIR is equal but whose code is not)."""

from __future__ import annotations

import csv
import shutil
from collections import Counter
from pathlib import Path, PurePosixPath
from typing import Iterable

from tritongate.atomicio import write_text_atomic
from tritongate.ir.diff import (BLAME_DIR, BLAME_JSON, CHANGED, DIFF_COLUMNS, IDENTICAL, MISSING_FILE, STATUSES,
                                SUMMARY_MAX_ROWS, VariantDiff, safe_rel, cut_diff, diff_paths, level_diff_paths,
                                variant_order)
from tritongate.ir.index import INDEX, tsv_text
from tritongate.ir.levels import LEVEL_COLUMNS, LEVELS, LEVELS_FILE, label, listed_diffs, title
from tritongate.report.untrusted import markdown_cell as _md_cell  # names come from the run


def summary_markdown(diffs: list[VariantDiff], paths: dict[int, PurePosixPath],
                     level_paths: dict[int, dict[str, PurePosixPath]] | None = None) -> str:
    """Counts per status and per first differing level, the changed variants largest first,
    the variants whose TTGIR is equal but whose code is not (and why files were missing)."""
    counts = {s: 0 for s in STATUSES} | Counter(d.status for d in diffs)
    lines = ["# TTGIR diff", "", "| status | variants |", "|---|---:|"]
    lines += [f"| {_md_cell(s)} | {n} |" for s, n in counts.items()]
    lines += _levels_markdown(diffs, level_paths or {})
    changed = sorted((i for i, d in enumerate(diffs) if d.status == CHANGED),
                     key=lambda i: (-diffs[i].size, variant_order(diffs[i])))
    if changed:
        lines += ["", "## Changed variants, largest first", "",
                  "| case | kernel | variant | +lines | -lines | diff | first differs at | rows |",
                  "|---|---|---|---:|---:|---|---|---|"]
        for i in changed[:SUMMARY_MAX_ROWS]:
            d = diffs[i]
            lines.append(f"| {_md_cell(d.case)} | {_md_cell(d.kernel)} | {_md_cell(d.name)} | {d.added} | "
                         f"{d.removed} | {_md_cell(paths[i])} | {title(d.first_level or 'ttgir')} | "
                         f"{_md_cell(', '.join(d.rows))} |")
        if len(changed) > SUMMARY_MAX_ROWS:
            lines.append(f"\n{len(changed) - SUMMARY_MAX_ROWS} more changed variants: see {INDEX}.")
    missing = [d for d in diffs if d.status == MISSING_FILE]
    if missing:
        lines += ["", "## Not compared (missing files)", ""]
        lines += [f"- {_md_cell(d.case)} / {_md_cell(d.kernel)} / {_md_cell(d.name)}: {_md_cell(d.reason)}"
                  for d in missing[:SUMMARY_MAX_ROWS]]
    return "\n".join(lines) + "\n"


def _levels_markdown(diffs: list[VariantDiff], level_paths: dict[int, dict[str, PurePosixPath]]) -> list[str]:
    """Counts per first differing level, then the variants whose TTGIR is equal but whose code
    (a lower text or the cubin) is not, with their lower-level diffs."""
    compared = [d for d in diffs if d.levels]
    if not compared:
        return []
    counts = Counter((d.first_level, d.status == IDENTICAL) for d in compared)
    lines = ["", "## Where the code first differs", "", "| first differs at | variants |", "|---|---:|"]
    lines += [f"| {label(*key)} | {n} |" for key, n in sorted(counts.items(), key=lambda kv: (_level_rank(kv[0][0]), kv[0][1]))]
    below = [i for i, d in enumerate(diffs) if d.levels and d.first_level and d.first_level != "ttgir"]
    if below:
        lines += ["", "## TTGIR identical, lower levels not", "",
                  "| case | kernel | variant | status | first differs at | diffs | rows |", "|---|---|---|---|---|---|---|"]
        for i in sorted(below, key=lambda i: (_level_rank(diffs[i].first_level), diffs[i].status == IDENTICAL,
                                                 variant_order(diffs[i])))[:SUMMARY_MAX_ROWS]:
            d = diffs[i]
            shown = ", ".join(f"{_md_cell(rel)} (+{a} -{r})" for (level, _, a, r) in d.level_diffs
                              if (rel := level_paths.get(i, {}).get(level)) is not None)
            lines.append(f"| {_md_cell(d.case)} | {_md_cell(d.kernel)} | {_md_cell(d.name)} | {d.status} | "
                         f"{label(d.first_level, d.status == IDENTICAL)} | {shown or '(no text diff)'} | "
                         f"{_md_cell(', '.join(d.rows))} |")
    return lines


def _level_rank(level: str) -> tuple[int, str]:
    """Top down: ttgir ... cubin, then below_<level>, then identical ("")."""
    return (LEVELS.index(level), level) if level in LEVELS else (len(LEVELS) + (not level), level)


def _remove_stale(out: Path, keep: set[PurePosixPath]) -> None:
    """Delete the .diff files a previous write listed and this one does not (only those: ``out``
    may be a busy folder)."""
    try:
        with open(out / INDEX, encoding="utf-8", newline="") as f:
            old = [rec.get("diff") or "" for rec in csv.DictReader(f, delimiter="\t")]
        old += listed_diffs((out / LEVELS_FILE).read_text(encoding="utf-8")) if (out / LEVELS_FILE).is_file() else []
    except (OSError, UnicodeDecodeError, csv.Error):
        return
    for rel in old:
        safe = safe_rel(rel)
        if safe is not None and safe.suffix == ".diff" and safe not in keep:
            (out / safe).unlink(missing_ok=True)


def drop_blame(out: Path) -> None:
    """Remove an earlier diff's pass blame from the diff folder ``out`` (a command that writes a
    new diff there; not the gate's writer, which carries the pre-screen's blame in first)."""
    (out / BLAME_JSON).unlink(missing_ok=True)
    if (out / BLAME_DIR).is_dir() and not (out / BLAME_DIR).is_symlink():
        shutil.rmtree(out / BLAME_DIR)


def write_diff_dir(diffs: Iterable[VariantDiff], out: Path) -> Path:
    """Write the diff folder with atomic writes; returns ``out``. The same diffs give the same bytes."""
    out = Path(out)
    ordered = sorted(diffs, key=variant_order)
    paths = diff_paths(ordered)
    level_paths = level_diff_paths(ordered, paths)
    out.mkdir(parents=True, exist_ok=True)
    _remove_stale(out, set(paths.values()) | {p for m in level_paths.values() for p in m.values()})
    files = [(rel, cut_diff(ordered[i].diff_text)) for i, rel in paths.items()]
    files += [(level_paths[i][level], text) for i, d in enumerate(ordered) if i in level_paths
              for level, text, _, _ in d.level_diffs]
    for rel, text in files:
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(out / rel, text)
    rows = [(d.case, d.kernel, d.name, d.status, d.added, d.removed, str(paths.get(i, "")),
             ",".join(d.rows), d.reason) for i, d in enumerate(ordered)]
    write_text_atomic(out / INDEX, tsv_text(DIFF_COLUMNS, rows))
    states = [dict(d.levels) for d in ordered]
    write_text_atomic(out / LEVELS_FILE, tsv_text(LEVEL_COLUMNS, [
        (d.case, d.kernel, d.name, d.status, d.first_level, *(states[i].get(level, "") for level in LEVELS),
         ",".join(str(p) for p in level_paths.get(i, {}).values())) for i, d in enumerate(ordered)]))
    write_text_atomic(out / "summary.md", summary_markdown(ordered, paths, level_paths))
    return out

