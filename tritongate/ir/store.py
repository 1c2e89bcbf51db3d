"""The ``ttgir/`` folder of a run directory, written row by row.

Each row's compiled variants are merged into the index and the folder is rewritten at once
(atomic files), so a run that crashes keeps the IR of every row it got to, the crashing
row's compiles included (the caller hands them over from a ``finally``). Names depend on
the whole (case, kernel) group, so a later row (another dtype of the same case) can rename
an earlier file; stale files are removed. A worker that restarts reopens the folder.
"""

from __future__ import annotations

import atexit
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Iterable

from tritongate import safefs
from tritongate.atomicio import write_text_atomic
from tritongate.ir import naming
from tritongate.ir.capture import RowIR
from tritongate.ir.index import INDEX, CompiledVariant, index_text, read_index

TTGIR_DIR = "ttgir"
NAMING = "naming.md"


class IRStore:
    def __init__(self, run_dir: Path) -> None:
        self.root = Path(run_dir) / TTGIR_DIR
        self._variants: dict[tuple[str, str, str], CompiledVariant] = {}
        self._texts: dict[str, str] = {}  # compile hash -> TTGIR
        self._files: set[Path] = set()
        self._dirty = False
        self.notes: list[str] = []
        if (self.root / INDEX).is_file():
            self._reopen()
        atexit.register(self.flush)  # a run that dies between rows still leaves its IR

    def _reopen(self) -> None:
        for v in read_index(self.root / INDEX):
            self._variants[v.key] = v
            if v.file and (self.root / v.file).is_file():
                path = self.root / v.file
                self._texts[v.compile_hash] = path.read_text(encoding="utf-8")
                self._files.add(path)

    @property
    def variants(self) -> list[CompiledVariant]:
        return list(self._variants.values())

    def add(self, ir: RowIR) -> None:
        """Merge one row's variants and write the folder."""
        for v in ir.variants:
            old = self._variants.get(v.key)
            if old is not None:
                v = replace(old, launches=old.launches + v.launches, sweep_loser=old.sweep_loser and v.sweep_loser,
                            rows=tuple(sorted(set(old.rows) | set(v.rows))))
            self._variants[v.key] = v
        self._texts.update(ir.ttgir)
        self.notes.extend(n for n in ir.notes if n not in self.notes)
        self._dirty = True
        self.flush()

    def flush(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        groups: dict[tuple[str, str], list[CompiledVariant]] = defaultdict(list)
        for v in self._variants.values():
            groups[(v.case, v.kernel)].append(v)
        kernels_by_case: dict[str, set[str]] = defaultdict(set)
        for case, kernel in groups:
            kernels_by_case[case].add(kernel)
        named: list[CompiledVariant] = []
        wanted: set[Path] = set()
        for (case, kernel), members in sorted(groups.items()):
            launched = [v for v in members if not v.sweep_loser and v.compile_hash in self._texts]
            names = naming.assign_names(launched) if launched else {}
            folder = Path(naming.case_dir(case)) / naming.kernel_dir(kernel, kernels_by_case[case] - {kernel})
            for v in members:
                stem = names.get(v.compile_hash, "")
                rel = str(folder / f"{stem}.ttgir") if stem else ""
                named.append(replace(v, name=stem, file=rel))
                if rel:
                    path = self.root / rel
                    wanted.add(path)
                    text = self._texts[v.compile_hash]
                    if path not in self._files or not path.is_file() or path.read_text(encoding="utf-8") != text:
                        path.parent.mkdir(parents=True, exist_ok=True)
                        write_text_atomic(path, text)
        for stale in self._files - wanted:  # renamed when the group grew
            stale.unlink(missing_ok=True)
        self._files = wanted
        self._variants = {v.key: v for v in named}
        self.root.mkdir(parents=True, exist_ok=True)
        write_text_atomic(self.root / INDEX, index_text(named))
        by_group = {f"{case}/{kernel}": members for (case, kernel), members in groups.items()}
        write_text_atomic(self.root / NAMING, naming.legend(by_group))

    def close(self) -> None:
        self.flush()
        atexit.unregister(self.flush)


def merge_ttgir(roots: Iterable[Path], run_dir: Path) -> None:
    """Every ``ttgir/`` folder of ``roots`` (run directories) into ``run_dir``'s, renamed as
    one run would have named them (shards of a run, the ops of a batch)."""
    store: IRStore | None = None
    for run in roots:
        root = Path(run) / TTGIR_DIR
        if not (root / INDEX).is_file():
            continue
        store = store or IRStore(run_dir)
        variants = tuple(read_index(root / INDEX))
        texts = {v.compile_hash: safefs.read_text(root, v.file)  # never a link's target
                 for v in variants if v.file and safefs.kind(root, v.file) == "file"}
        store.add(RowIR(variants=variants, ttgir=texts))
    if store is not None:
        store.close()
