"""Reading a written diff folder back (``ir.diff_dir`` writes it): its variants from
``index.tsv``, each changed one's diff text, and a copy of its files into another folder.

A verdict whose runs kept no IR (both sides on the interpreter) takes its IR evidence from the
ahead-of-time diff it was paired with (``pair --changed-from``): that folder is copied into the
verdict's and read as the runs' own diff would be. The folder may come from a job that ran a
PR's compiler: paths stay inside it, links are never followed, and sizes are bounded.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path, PurePosixPath

from tritongate import safefs
from tritongate.atomicio import write_bytes_atomic
from tritongate.ir.diff import (DIFF_COLUMNS, LOWER_DIFF_BYTES, MAX_DIFF_BYTES, STATUSES, VariantDiff,
                                safe_rel)
from tritongate.ir.index import INDEX
from tritongate.ir.levels import LEVELS_FILE, listed_diffs

MAX_INDEX_BYTES = 16 * 2**20  # an index line per variant: a deep scan's is well under this
MAX_FILES = 20_000  # diff files copied from one folder
MAX_TOTAL_BYTES = 256 * 2**20  # all of them: the copy lands in the verdict's artifact


def _tsv(folder: Path, name: str) -> str:
    raw = safefs.read_bytes(folder, name, limit=MAX_INDEX_BYTES)
    if len(raw) > MAX_INDEX_BYTES:
        raise ValueError(f"{folder / name}: over {MAX_INDEX_BYTES} bytes")
    return raw.decode("utf-8")


def _inside(rel: str) -> PurePosixPath:
    safe = safe_rel(rel)
    if safe is None:
        raise ValueError(f"{rel!r}: a path outside the diff folder")
    return safe


def _records(folder: Path) -> list[dict[str, str]]:
    """``folder``'s index lines, each checked to be an ir-diff's; ``ValueError`` otherwise."""
    try:
        reader = csv.DictReader(io.StringIO(_tsv(folder, INDEX), newline=""), delimiter="\t")
        if tuple(reader.fieldnames or ()) != DIFF_COLUMNS:
            raise ValueError(f"{folder / INDEX}: not an ir-diff index (columns {', '.join(DIFF_COLUMNS)} expected)")
        records = list(reader)
    except csv.Error as exc:  # a field past csv's own limit, a stray quote
        raise ValueError(f"{folder / INDEX}: {exc}") from None
    for line, rec in enumerate(records, start=2):
        if None in rec or None in rec.values() or rec["status"] not in STATUSES:
            raise ValueError(f"{folder / INDEX} line {line}: not a line of an ir-diff index")
    return records


def read_variants(folder: Path) -> tuple[list[VariantDiff], dict[int, PurePosixPath]]:
    """The folder's variants in its index's order (each changed one with its diff text) and,
    by position, the path of each variant's diff inside the folder. ``ValueError`` or
    ``OSError`` (a link included) when the index is not an ir-diff's or a listed file is unreadable."""
    folder = Path(folder)
    diffs: list[VariantDiff] = []
    paths: dict[int, PurePosixPath] = {}
    for rec in _records(folder):
        text = ""
        if rec["diff"]:
            paths[len(diffs)] = rel = _inside(rec["diff"])
            raw = safefs.read_bytes(folder, rel, limit=MAX_DIFF_BYTES)
            text = raw[:MAX_DIFF_BYTES].decode("utf-8", errors="replace")
        diffs.append(VariantDiff(case=rec["case"], kernel=rec["kernel"], name=rec["name"], status=rec["status"],
                                 added=_count(rec["added"]), removed=_count(rec["removed"]), diff_text=text,
                                 rows=tuple(filter(None, rec["rows"].split(","))), reason=rec["reason"]))
    return diffs, paths


def _count(text: str) -> int:
    return int(text) if text.isdigit() else 0


def copy_folder(source: Path, dest: Path) -> None:
    """``source``'s index, levels table, summary and every diff its tables list, copied into
    ``dest`` (the same relative paths); what is not listed is not copied (its pass blame is
    carried by ``gate.ir_blame.carry_blame``, within that file's own bound)."""
    source, dest = Path(source), Path(dest)
    wanted = [PurePosixPath(INDEX)]
    for name in (LEVELS_FILE, "summary.md"):
        if safefs.kind(source, name) == "file":
            wanted.append(PurePosixPath(name))
    listed = [rec["diff"] for rec in _records(source) if rec["diff"]]
    if LEVELS_FILE in {str(w) for w in wanted}:
        listed += listed_diffs(_tsv(source, LEVELS_FILE))
    if len(listed) > MAX_FILES:
        raise ValueError(f"{source}: lists {len(listed)} diff files, over {MAX_FILES}")
    wanted += [_inside(rel) for rel in listed]
    limits = {rel: MAX_INDEX_BYTES if rel.suffix in (".tsv", ".md", ".json") else max(MAX_DIFF_BYTES, LOWER_DIFF_BYTES)
              for rel in wanted}
    # sized before anything is written (a link's own size: reading it is refused below)
    total = sum(min((source / rel).lstat().st_size, limit) for rel, limit in limits.items())
    if total > MAX_TOTAL_BYTES:
        raise ValueError(f"{source}: its listed files hold {total} bytes, over {MAX_TOTAL_BYTES} in all")
    for rel, limit in limits.items():
        raw = safefs.read_bytes(source, rel, limit=limit)
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(dest / rel, raw[:limit])
