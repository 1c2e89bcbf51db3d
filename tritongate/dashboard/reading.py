"""The store read into one ``History`` per group: the entries of one runner class, suite, GPU
and compiler repository, which is what ``tritongate history`` calls one history.

The store's manifests (``baselines.store.scan``: no other file read) say which groups there are;
each group is then read by ``history.series.load_history`` itself, so its series, gaps, missing
nightlies and notes are exactly what ``tritongate history`` reports. An entry of the group that
the history skipped (a file missing or edited, a record that does not load) is kept as
``Damaged``, with its night (its manifest is good) and the history's reason, so the site shows
it as a gap rather than leave it out. Each read entry's ``summary.tsv`` gives the rows' IQR,
shown beside the median (the history keeps the median and the sample count only).
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from tritongate import safefs
from tritongate.baselines.manifest import BaselineError, check_runner_class, gpu_slug, suite_folder
from tritongate.baselines.repo import Repo
from tritongate.baselines.store import NO_REPO, SUMMARY, Entry, repo_wanted, scan, select
from tritongate.errors import GateError, UsageError
from tritongate.history.points import Key
from tritongate.history.series import History, HistoryError, load_history

MAX_SUMMARY_BYTES = 64 * 2**20


class DashboardError(UsageError):
    """A site that cannot be built from the inputs given (exit code 2)."""


@dataclass(frozen=True)
class GroupKey:
    """One history's entries: of one runner class, suite, GPU and compiler repository."""

    runner_class: str
    suite: str
    gpu_slug: str
    repo: Repo | None  # None: the entries record none

    @property
    def repo_display(self) -> str | None:
        return self.repo.display if self.repo else None

    def sort_key(self) -> tuple[str, str, str, str]:
        return (self.runner_class, self.suite, self.gpu_slug, self.repo.key if self.repo else "")


@dataclass(frozen=True)
class Damaged:
    """An entry the history skipped (its manifest is good, a file is not): where, its night, why."""

    path: str  # relative to the store
    recorded: dt.datetime
    reason: str


@dataclass
class Group:
    """A group's history (None: it could not be read; ``error`` says why), the entries it
    skipped, and each read entry's row IQRs."""

    key: GroupKey
    history: History | None
    damaged: list[Damaged] = field(default_factory=list)
    iqr: dict[str, dict[Key, float]] = field(default_factory=dict)  # entry path -> row -> IQR (µs)
    error: str | None = None


def _cell(value: str) -> str:
    """A name as ``summary.tsv`` writes it (``publishing.summary_tsv``)."""
    if value.isprintable() and "\t" not in value:
        return value
    return "".join(c if c.isprintable() and c != "\t" else " " for c in value)


def iqr_of(entry_dir: Path, keys: Iterable[Key]) -> dict[Key, float]:
    """Each row's IQR (µs) from an entry's ``summary.tsv``; a row it does not give is left out."""
    try:
        text = safefs.read_bytes(entry_dir, SUMMARY, limit=MAX_SUMMARY_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError, GateError):
        return {}
    by_cell: dict[tuple[str, ...], float] = {}
    for line in text.splitlines()[1:]:
        cells = line.split("\t")
        if len(cells) >= 6 and cells[5]:
            try:
                by_cell[tuple(cells[:3])] = float(cells[5])
            except ValueError:
                continue
    # NaN fails the test too
    return {key: v for key in keys if (v := by_cell.get(tuple(map(_cell, key)))) is not None and v >= 0}


def find_entries(store: Path, *, runner_class: str | None = None, suite: str | None = None,
                 gpu: str | None = None, compiler_repo: str | None = None,
                 damaged: list[Path] | None = None) -> tuple[list[Entry], list[str]]:
    """The store's entries with a valid manifest, filtered as ``baseline list`` filters, and
    notes on what was skipped (manifests only: ``load_history`` checks the files). ``damaged``
    gets the entry folders skipped for their manifest within the runner class, suite and GPU
    asked for (their repository is unknown, so ``compiler_repo`` does not filter them)."""
    if not store.is_dir():
        raise DashboardError(f"baseline store {store} is not a directory; pass the folder nightlies publish into "
                             "(on GitHub a checkout of the data branch)")
    if runner_class:
        check_runner_class(runner_class)
    try:
        repo = repo_wanted(compiler_repo)
    except BaselineError as exc:
        raise DashboardError(f"--compiler-repo: {exc}") from exc
    notes: list[str] = []
    suite_name = suite_folder(suite) if suite else None
    skipped: list[Path] = []
    entries = select(scan(store, runner_class=runner_class, suite=suite_name, notes=notes, damaged=skipped),
                     suite=suite_name, gpu=gpu, repo=repo)
    if damaged is not None:
        damaged += [d for d in skipped if not gpu or d.parent.name == gpu_slug(gpu)]
    return entries, notes


def _reason(notes: Sequence[str], entry: Entry) -> str:
    """The history's note on a skipped entry, without the entry's own path."""
    where = f"{entry.path}: "
    for note in notes:
        if where in note:
            text = note.split(where, 1)[1].replace(f"{entry.path}{os.sep}", "")
            return text.removesuffix("; find skips it")
    return "skipped by the history"


def read_groups(store: Path, entries: Sequence[Entry]) -> list[Group]:
    """One ``Group`` per runner class, suite, GPU and compiler repository of ``entries``, in
    that order, each read by ``load_history``."""
    keyed: dict[tuple[str, str, str, str], tuple[GroupKey, list[Entry]]] = {}
    for e in sorted(entries, key=Entry.sort_key):  # oldest first
        m = e.manifest
        key = GroupKey(m.runner_class, m.suite_name, m.gpu_slug, e.repo())
        keyed.setdefault(key.sort_key(), (key, []))[1].append(e)
    return [_group(store, *keyed[k]) for k in sorted(keyed)]


def _group(store: Path, key: GroupKey, entries: list[Entry]) -> Group:
    try:
        history = load_history(store, key.runner_class, key.suite, key.gpu_slug,
                               compiler_repo=key.repo_display or NO_REPO)
    except HistoryError as exc:  # no readable entry, or (no repository recorded) several repositories
        return Group(key=key, history=None, error=str(exc),
                     damaged=[Damaged(e.manifest.record_path, e.manifest.recorded, "not read: see the note")
                              for e in entries])
    read = {info.record_path for info in history.entries}
    keys = [s.key for s in history.series]
    return Group(key=key, history=history,
                 damaged=[Damaged(e.manifest.record_path, e.manifest.recorded, _reason(history.notes, e))
                          for e in entries if e.manifest.record_path not in read],
                 iqr={e.record_path: iqr_of(store / e.record_path, keys) for e in history.entries})
