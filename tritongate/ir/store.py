"""The ``ttgir/`` folder of a run directory, written row by row.

Each row's variants are merged and written at once (atomic files), so a run that crashes
keeps the IR of every row it got to, the crashing row's included. Names depend on the whole
(case, kernel) group, so a later row can rename an earlier file; stale files are removed.
A flush costs what changed: only the groups a row touched (and those of a case that gained
a kernel) are renamed, a file is written only when its path now holds another variant's
TTGIR, and ``index.tsv`` is joined from lines kept per variant. Writes between rows skip the
fsync (atomic through a crash of the run, not of the machine); ``close`` writes with one.
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
from tritongate.ir.capture import LOWER_LEVELS, RowIR
from tritongate.ir.index import INDEX, CompiledVariant, index_text, level_file, read_index

TTGIR_DIR = "ttgir"
NAMING = "naming.md"

Group = tuple[str, str]  # (case, kernel)


def _index_line(v: CompiledVariant) -> tuple[tuple[str, str, bool, str, str], str]:
    """The variant's sort key and line in ``index.tsv``, as ``index_text`` writes them."""
    return (v.case, v.kernel, v.sweep_loser, v.name, v.compile_hash), index_text([v]).split("\n", 1)[1]


class IRStore:
    def __init__(self, run_dir: Path) -> None:
        self.root = Path(run_dir) / TTGIR_DIR
        self._groups: dict[Group, dict[str, CompiledVariant]] = defaultdict(dict)  # -> compile hash -> variant
        self._kernels: dict[str, set[str]] = defaultdict(set)  # case -> its kernels
        # case -> folder key -> the case's kernels with that key: a kernel's folder depends only
        # on the kernels of its case whose folder names it could clash with
        self._clashing: dict[str, dict[tuple[str, str], set[str]]] = defaultdict(lambda: defaultdict(set))
        self._folder_keys: dict[str, tuple[tuple[str, str], ...]] = {}
        self._cases: dict[str, set[str]] = defaultdict(set)  # kernel -> its cases
        self._texts: dict[str, str] = {}  # compile hash -> TTGIR
        self._lower: dict[str, dict[str, str]] = {}  # compile hash -> level -> text (beside the .ttgir)
        self._written: dict[Path, str] = {}  # file -> the compile hash whose IR it holds
        self._group_files: dict[Group, set[Path]] = {}
        self._lines: dict[tuple[str, str, str], tuple[tuple[str, str, bool, str, str], str]] = {}
        self._sections: dict[str, str] = {}  # kernel -> its part of naming.md
        self._legend = ""
        self._changed: set[Group] = set()
        self._dirty = False
        self.notes: list[str] = []
        if (self.root / INDEX).is_file():
            self._reopen()
        atexit.register(self.flush)  # a run that dies between rows still leaves its IR

    def _reopen(self) -> None:
        for v in read_index(self.root / INDEX):
            self._put(v)
            if v.file and (self.root / v.file).is_file():
                path = self.root / v.file
                self._texts[v.compile_hash] = path.read_text(encoding="utf-8")
                self._written[path] = v.compile_hash
                self._group_files.setdefault((v.case, v.kernel), set()).add(path)
                for level in LOWER_LEVELS:
                    lower = self.root / level_file(v.file, level)
                    if lower.is_file():
                        self._lower.setdefault(v.compile_hash, {})[level] = lower.read_text(encoding="utf-8")
                        self._written[lower] = v.compile_hash
                        self._group_files[(v.case, v.kernel)].add(lower)
            self._lines[v.key] = _index_line(v)
        if (self.root / NAMING).is_file():
            self._legend = (self.root / NAMING).read_text(encoding="utf-8")
        # every group is named again at the next flush, once: the folder may predate this version
        self._changed.update(self._groups)

    def _put(self, v: CompiledVariant) -> None:
        group = (v.case, v.kernel)
        if v.kernel not in self._kernels[v.case]:
            self._kernels[v.case].add(v.kernel)
            self._cases[v.kernel].add(v.case)
            # a kernel new to the case can change the folders of the kernels it clashes with
            for key in self._keys(v.kernel):
                self._clashing[v.case][key].add(v.kernel)
            self._changed.update((v.case, k) for k in self._near(v.case, v.kernel))
        self._groups[group][v.compile_hash] = v
        self._changed.add(group)

    @property
    def variants(self) -> list[CompiledVariant]:
        return [v for members in self._groups.values() for v in members.values()]

    def add(self, ir: RowIR) -> None:
        """Merge one row's variants and write what changed."""
        for v in ir.variants:
            old = self._groups.get((v.case, v.kernel), {}).get(v.compile_hash)
            if old is not None:
                v = replace(old, launches=old.launches + v.launches, sweep_loser=old.sweep_loser and v.sweep_loser,
                            rows=tuple(sorted(set(old.rows) | set(v.rows))))
            self._put(v)
        self._texts.update(ir.ttgir)
        for h, levels in ir.lower.items():
            self._lower.setdefault(h, {}).update(levels)
        self.notes.extend(n for n in ir.notes if n not in self.notes)
        self._dirty = True
        self.flush()

    def flush(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        changed, self._changed = sorted(self._changed), set()
        claimed: set[Path] = set()
        released = set().union(*(self._name_group(group, claimed) for group in changed))
        for stale in released - claimed:  # renamed when the group grew
            self._written.pop(stale, None)
            stale.unlink(missing_ok=True)
        self.root.mkdir(parents=True, exist_ok=True)
        write_text_atomic(self.root / INDEX, self._index_text(), durable=False)
        for kernel in sorted({k for _, k in changed}):
            self._sections[kernel] = self._section(kernel)
        legend = "\n".join([naming.legend({}), *(self._sections[k] for k in sorted(self._sections))])
        if legend != self._legend or not (self.root / NAMING).is_file():
            write_text_atomic(self.root / NAMING, legend, durable=False)
            self._legend = legend

    def _name_group(self, group: Group, claimed: set[Path]) -> set[Path]:
        """Name one group's variants and write the files whose contents changed (adding them
        to ``claimed``); returns the files the group no longer uses."""
        case, kernel = group
        members = self._groups[group]
        launched = [v for v in members.values() if not v.sweep_loser and v.compile_hash in self._texts]
        names = naming.assign_names(launched) if launched else {}
        folder = Path(naming.case_dir(case)) / naming.kernel_dir(kernel, self._near(case, kernel) - {kernel})
        wanted: set[Path] = set()
        for h, v in list(members.items()):
            stem = names.get(h, "")
            rel = str(folder / f"{stem}.ttgir") if stem else ""
            named = v if (v.name, v.file) == (stem, rel) else replace(v, name=stem, file=rel)
            members[h] = named
            self._lines[named.key] = _index_line(named)
            if rel:
                files = [(self.root / rel, self._texts[h])]
                files += [(self.root / level_file(rel, level), text) for level, text in self._lower.get(h, {}).items()]
                for path, text in files:
                    wanted.add(path)
                    if self._written.get(path) != h:
                        path.parent.mkdir(parents=True, exist_ok=True)
                        write_text_atomic(path, text, durable=False)
                        self._written[path] = h
        claimed |= wanted
        released = self._group_files.get(group, set()) - wanted
        self._group_files[group] = wanted
        return released

    def _keys(self, kernel: str) -> tuple[tuple[str, str], ...]:
        """What ``naming.kernel_dir`` compares (case-insensitively) with the case's other kernels."""
        if kernel not in self._folder_keys:
            self._folder_keys[kernel] = (("last", naming._last_part_dir(kernel).casefold()),
                                         ("full", naming._full_id_dir(kernel).casefold()))
        return self._folder_keys[kernel]

    def _near(self, case: str, kernel: str) -> set[str]:
        """The kernels of ``case`` whose folder names ``kernel``'s could clash with (itself too)."""
        return set().union(*(self._clashing[case][key] for key in self._keys(kernel)))

    def _section(self, kernel: str) -> str:
        """The kernel's part of ``naming.md`` (``legend`` of its variants, the rules left out)."""
        variants = [v for case in sorted(self._cases[kernel]) for v in self._groups[(case, kernel)].values()]
        return naming.legend({kernel: variants})[len(naming.legend({})) + 1:]

    def _index_text(self) -> str:
        return index_text([]) + "".join(line for _, line in sorted(self._lines.values()))

    def close(self) -> None:
        """The last flush, and the index once more with an fsync (on disk, not only in the page cache)."""
        self.flush()
        if (self.root / INDEX).is_file():
            write_text_atomic(self.root / INDEX, self._index_text())
        atexit.unregister(self.flush)


def merge_ttgir(roots: Iterable[Path], run_dir: Path) -> None:
    """Every ``ttgir/`` folder of ``roots`` (run directories: shards, a batch's ops) into
    ``run_dir``'s, named as one run would have named them."""
    store: IRStore | None = None
    for run in roots:
        root = Path(run) / TTGIR_DIR
        if not (root / INDEX).is_file():
            continue
        store = store or IRStore(run_dir)
        variants = tuple(read_index(root / INDEX))
        texts = {v.compile_hash: safefs.read_text(root, v.file)  # never a link's target
                 for v in variants if v.file and safefs.kind(root, v.file) == "file"}
        lower = {v.compile_hash: {level: safefs.read_text(root, level_file(v.file, level)) for level in LOWER_LEVELS
                                  if safefs.kind(root, level_file(v.file, level)) == "file"}
                 for v in variants if v.compile_hash in texts}
        store.add(RowIR(variants=variants, ttgir=texts, lower={h: m for h, m in lower.items() if m}))
    if store is not None:
        store.close()
