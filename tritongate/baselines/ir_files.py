"""The IR index a baseline entry keeps: ``ttgir/index.tsv``, ``ttgir/naming.md`` and, when
small enough, the launched variants' TTGIR.

The index is what ``tritongate ir --from ENTRY`` recompiles under another compiler, so the
pre-screen of a PR needs nothing but the entry. The TTGIR is kept only up to ``MAX_TTGIR_BYTES``
in all (the `pr` suite's launched TTGIR on the H200: 34 files, 317 KB;
``bench/results/2026-12-01_h200_cpu_index_equality.md``); beyond, it stays a CI artifact.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from tritongate.ir.index import INDEX, read_index
from tritongate.ir.store import NAMING, TTGIR_DIR

MAX_TTGIR_BYTES = 16 * 2**20


def _plain_file(path: Path) -> bool:
    return not path.is_symlink() and path.is_file()


def _inside(rel: str) -> PurePosixPath | None:
    p = PurePosixPath(rel)
    if not rel or p.is_absolute() or ".." in p.parts or p.suffix != ".ttgir":
        return None
    return p


def ir_files(run_dir: Path, max_ttgir_bytes: int = MAX_TTGIR_BYTES) -> list[str]:
    """Relative paths (``ttgir/...``) of the IR files a publish copies from ``run_dir``:
    none when the run has no index; the index and legend always; the TTGIR files the index
    lists when they are plain files inside ``ttgir/`` totalling at most ``max_ttgir_bytes``.
    ``ValueError`` when the index is damaged (a publish refuses it rather than drop it)."""
    root = Path(run_dir) / TTGIR_DIR
    index = root / INDEX
    if not root.is_symlink() and not index.is_symlink() and not index.exists():
        return []  # a run without an IR index (the cpu backend records none; older runs)
    if root.is_symlink() or not _plain_file(index):
        # published without it, the entry could never be pre-screened, and nothing would say so
        what = f"{TTGIR_DIR}/ is a link" if root.is_symlink() else f"{TTGIR_DIR}/{INDEX} is not a plain file"
        raise ValueError(f"{run_dir}: {what}; the IR index is part of a baseline (the pre-screen recompiles "
                         "from it): publish the run directory itself, not links into another")
    names = [f"{TTGIR_DIR}/{INDEX}"] + ([f"{TTGIR_DIR}/{NAMING}"] if _plain_file(root / NAMING) else [])
    texts: list[str] = []
    total = 0
    for v in read_index(root / INDEX):
        rel = _inside(v.file)
        if rel is None or any((root / p).is_symlink() for p in [rel, *rel.parents][:-1]):
            continue
        path = root / rel
        if _plain_file(path):
            total += path.stat().st_size
            texts.append(f"{TTGIR_DIR}/{rel}")
    return names + (sorted(set(texts)) if total <= max_ttgir_bytes else [])
