"""The store's nightly entries for one runner class and suite, as one series per row.

Entries are read oldest first (recorded UTC, then publish time, then name); a damaged one (a
bad manifest, files not matching their sha256, a record that does not load) is skipped with a
note, never a crash. Each row key (op, case, dtype) gets one point per entry from its first
appearance to its last: the median of its raw samples (µs) and their count, or a *gap* with
the reason: the row failed, was not timed, carries a marker (it is not clean same-config
evidence: a fallback, a busy or throttled GPU, a mismatch...) or is absent from that entry.

A nightly that did not publish leaves no entry: an interval over ``MISSING_FACTOR`` times the
usual (median) spacing is a ``MissingNightly``. Change points are found on the points present;
nothing is imputed.
"""

from __future__ import annotations

import datetime as dt
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from tritongate.baselines.manifest import BaselineError, check_runner_class, gpu_slug
from tritongate.baselines.store import NO_REPO, Entry, check_files, list_entries
from tritongate.errors import GateError, UsageError
from tritongate.history.entries import SampleLengths, entry_points, sample_lengths
from tritongate.history.points import EntryInfo, Key, Point, as_utc, point_of
from tritongate.rundir import gc_paused

MISSING_FACTOR = 1.5  # an interval this many times the usual spacing hides a missing nightly


class HistoryError(UsageError):
    """A history that cannot be built from the inputs given (exit code 2)."""


@dataclass(frozen=True)
class Series:
    """One row's points in recorded order."""

    op: str
    case: str
    dtype: str
    points: tuple[Point, ...]

    def __post_init__(self) -> None:
        if not (self.op and self.case and self.dtype):
            raise ValueError("a series needs an op, a case and a dtype")
        object.__setattr__(self, "points", tuple(self.points))
        times = [p.recorded for p in self.points]
        if times != sorted(times):
            raise ValueError(f"series {self.key}: points must be in recorded order")

    @property
    def key(self) -> Key:
        return (self.op, self.case, self.dtype)

    def valued(self) -> list[int]:
        return [i for i, p in enumerate(self.points) if not p.is_gap]

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.op, "case": self.case, "dtype": self.dtype,
                "points": [p.to_dict() for p in self.points]}


@dataclass(frozen=True)
class MissingNightly:
    """An interval between two consecutive entries long enough to hide ``missing`` nightlies."""

    after: dt.datetime  # the last entry before the hole
    before: dt.datetime  # the first entry after it
    missing: int  # about how many nightlies did not publish
    spacing_days: float  # the usual spacing it was measured against

    def __post_init__(self) -> None:
        object.__setattr__(self, "after", as_utc(self.after, "a hole's start"))
        object.__setattr__(self, "before", as_utc(self.before, "a hole's end"))
        if not self.after < self.before:
            raise ValueError("a missing nightly lies between an earlier and a later entry")
        if self.missing < 1 or not (math.isfinite(self.spacing_days) and self.spacing_days > 0):
            raise ValueError("a missing nightly counts >= 1 missing entries against a spacing > 0 days")

    @property
    def note(self) -> str:
        days = (self.before - self.after).total_seconds() / 86400.0
        return (f"about {self.missing} nightl{'y' if self.missing == 1 else 'ies'} missing between "
                f"{self.after:%Y-%m-%d %H:%M} and {self.before:%Y-%m-%d %H:%M} UTC ({days:.1f} days apart; "
                f"usual spacing {self.spacing_days:.2g} day{'' if self.spacing_days == 1 else 's'})")

    def to_dict(self) -> dict[str, Any]:
        return {"after_utc": self.after.isoformat(), "before_utc": self.before.isoformat(),
                "missing": self.missing, "spacing_days": self.spacing_days, "note": self.note}


@dataclass(frozen=True)
class History:
    """The series of one runner class, suite and GPU, with what was skipped or missing."""

    store: Path
    runner_class: str
    suite: str
    gpu_slug: str
    entries: tuple[EntryInfo, ...]  # oldest first
    series: tuple[Series, ...]
    missing: tuple[MissingNightly, ...] = ()
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("entries", "series", "missing", "notes"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if not self.entries:
            raise ValueError("a history needs at least one entry")


MIN_MISSING_DAYS = 1 / 24  # a gap must be this much longer than the usual spacing to miss anything
RERUN_FRACTION = 0.25  # an interval under this fraction of the upper quartile's is a night's rerun
RERUN_MAX_DAYS = 0.25  # ... if it is also under six hours: a night's reruns are hours apart, nights a day


def usual_spacing(gaps: Sequence[float]) -> float:
    """The median interval between nights: intervals shorter than ``RERUN_FRACTION`` of the
    upper quartile, and than ``RERUN_MAX_DAYS``, are a night's reruns (a nightly run again, or
    published twice), not a spacing; where every night has one, the median of all intervals is
    the hour between a night's two. The upper quartile alone cannot tell reruns from nights: where
    a quarter of the intervals are outages of a week, it is a week, and the nights between them
    would be taken for reruns, the week for the spacing, and no nightly missing."""
    upper = statistics.quantiles(gaps, n=4, method="inclusive")[2]
    rerun = min(RERUN_FRACTION * upper, RERUN_MAX_DAYS)
    return statistics.median([g for g in gaps if g >= rerun])


def missing_nightlies(times: Sequence[dt.datetime], factor: float = MISSING_FACTOR) -> list[MissingNightly]:
    """Intervals longer than ``factor`` times the usual spacing (``usual_spacing``). Needs three
    entries (two intervals): with fewer there is no usual spacing to compare with."""
    ordered = sorted(as_utc(t, "an entry time") for t in times)
    gaps = [(b - a).total_seconds() / 86400.0 for a, b in zip(ordered, ordered[1:])]
    if len(gaps) < 2:
        return []
    usual = usual_spacing(gaps)
    if usual <= 0:
        return []
    # and at least an hour longer than usual: entries published minutes apart (a test, a rerun)
    # make no "missing nightlies"
    return [MissingNightly(after=a, before=b, missing=max(1, round(g / usual) - 1), spacing_days=usual)
            for a, b, g in zip(ordered, ordered[1:], gaps) if g > factor * usual and g - usual >= MIN_MISSING_DAYS]


def _series(maps: Sequence[tuple[EntryInfo, Mapping[Key, Point]]]) -> list[Series]:
    """One series per row key, sorted by key; a key's points run from the first entry that
    has it to the last (an entry in between without it is an ``ABSENT`` gap)."""
    span: dict[Key, list[int]] = {}  # first and last entry of each key
    for i, (_, points) in enumerate(maps):
        for key in points:
            span.setdefault(key, [i, i])[1] = i
    return [Series(*k, points=tuple([got.get(k) or point_of(info, None) for info, got in maps[a: b + 1]]))
            for k, (a, b) in sorted(span.items())]


# a night recorded later than this past the reader's clock is a clock or an edited manifest
FUTURE_SLACK = dt.timedelta(days=1)


def load_history(store: Path, runner_class: str, suite: str, gpu: str | None = None,
                 compiler_repo: str | None = None, *, now: dt.datetime | None = None) -> History:
    """The history of ``runner_class``/``suite`` (on ``gpu``: a GPU name or slug; of
    ``compiler_repo``'s builds: any spelling ``baselines.repo.parse_repo`` reads, or ``NO_REPO``
    for the entries that record none) in ``store``.

    Raises ``HistoryError`` (exit 2) for a store that is not a folder, no readable entries, or
    entries on several GPUs or of several compiler repositories when ``gpu`` or
    ``compiler_repo`` is not given (their timings are not one series).
    """
    store = Path(store)
    check_runner_class(runner_class)
    wanted = gpu_slug(gpu) if gpu else None
    if not store.is_dir():
        raise HistoryError(f"baseline store {store} is not a directory; pass the folder nightlies publish into "
                           "(on GitHub a checkout of the data branch)")
    try:
        found, notes = list_entries(store, runner_class=runner_class, suite=suite, gpu=wanted,
                                    compiler_repo=compiler_repo)
    except BaselineError as exc:
        raise HistoryError(f"--compiler-repo: {exc}") from exc
    found = sorted(found, key=Entry.sort_key)  # oldest first
    slugs = sorted({e.manifest.gpu_slug for e in found})
    if len(slugs) > 1:
        raise HistoryError(f"entries for runner class {runner_class}, suite {suite} in {store} were recorded on "
                           f"{len(slugs)} GPUs ({', '.join(slugs)}); pass --gpu with one of them")
    repos = sorted({r.display if (r := e.repo()) is not None
                    else f"{e.manifest.compiler_repo!r} (unreadable)" if e.manifest.compiler_repo else NO_REPO
                    for e in found})
    if len(repos) > 1:  # two compilers' nightlies are two histories, not one with steps between them
        raise HistoryError(f"entries for runner class {runner_class}, suite {suite} in {store} are of {len(repos)} "
                           f"compiler repositories ({', '.join(repos)}); pass --compiler-repo with one of them "
                           f"({NO_REPO}: the entries that record no repository)")
    with gc_paused():  # a year of entries: tens of millions of objects, no cycles
        loaded = _read_entries(found, notes, now or dt.datetime.now(dt.timezone.utc))
    if not loaded:
        on = f" on {wanted}" if wanted else ""
        why = f" ({len(notes)} damaged entr{'y' if len(notes) == 1 else 'ies'} skipped)" if notes else ""
        raise HistoryError(f"no readable entries for runner class {runner_class}, suite {suite}{on} in {store}{why}; "
                           f"see what the store holds with `tritongate baseline list --store {store} "
                           f"--runner-class {runner_class}`")
    infos = [info for info, _ in loaded]
    missing = missing_nightlies([info.recorded for info in infos])
    notes += suite_changes(suite, infos, {e.manifest.record_path: e.manifest.suite_digest for e in found})
    notes += sample_length_changes(infos, {e.manifest.record_path: sample_lengths(e) for e in found})
    notes += backend_changes(infos, {e.manifest.record_path: e.manifest.backend for e in found})
    return History(store=store, runner_class=runner_class, suite=suite, gpu_slug=infos[0].gpu_slug,
                   entries=tuple(infos), series=tuple(_series(loaded)),
                   missing=tuple(missing), notes=tuple(notes) + tuple(m.note for m in missing))


def suite_changes(suite: str, entries: Sequence[EntryInfo], digests: Mapping[str, str | None]) -> list[str]:
    """A note at each night whose suite file differs from the night before's (its digest): an
    edited suite, or another file of the same name, measures other rows from there on."""
    return _nights_differ(entries, digests, f"the {suite} suite file", lambda a, b: a != b,
                          lambda a, b: f"digest {a[:8]} -> {b[:8]}",
                          "an edited suite or another file of that name; rows only one of them measures start or "
                          "end there")


def backend_changes(entries: Sequence[EntryInfo], backends: Mapping[str, str]) -> list[str]:
    """A note at each night recorded by another backend than the night before on the same GPU:
    its launch path and timer are another's, so a step there need not be the compiler's."""
    return _nights_differ(entries, backends, "the backend", lambda a, b: a != b, lambda a, b: f"{a} -> {b}",
                          "another backend launches and times the kernels; a step there may be that, not a commit")


def sample_length_changes(entries: Sequence[EntryInfo], lengths: Mapping[str, SampleLengths | None]) -> list[str]:
    """A note at each night recorded with another sample length (``--sample-ms``, or a suite's
    per-op ``sample_ms``) than the night before: each row's launches per sample follow it, and
    the per-launch time shifts with them."""
    def same(a: SampleLengths, b: SampleLengths) -> bool:
        return math.isclose(a[0], b[0], rel_tol=1e-6) and len(a[1]) == len(b[1]) and all(
            x[0] == y[0] and math.isclose(x[1], y[1], rel_tol=1e-6) for x, y in zip(a[1], b[1]))

    def text(v: SampleLengths) -> str:
        ops = ", ".join(f"{op} {ms:g} ms" for op, ms in v[1])
        return f"{v[0]:g} ms" + (f" ({ops})" if ops else "")

    def detail(a: SampleLengths, b: SampleLengths) -> str:
        how = "--sample-ms" if not math.isclose(a[0], b[0], rel_tol=1e-6) else "the suite's sample_ms"
        return f"{text(a)} -> {text(b)}, {how}"

    return _nights_differ(entries, lengths, "the sample length", lambda a, b: not same(a, b), detail,
                          "each row's launches per sample changed with it, and per-launch times shift with them "
                          "(about 1.4 % for a 145 µs kernel from 3 to 26 launches); a step there may be that")


def _nights_differ(entries: Sequence[EntryInfo], values: Mapping[str, Any], what: str,
                   differ: Callable[[Any, Any], bool], detail: Callable[[Any, Any], str], means: str) -> list[str]:
    """A note at each pair of consecutive nights whose ``values`` (both known) ``differ``."""
    out: list[str] = []
    for before, after in zip(entries, entries[1:]):
        a, b = values.get(before.record_path), values.get(after.record_path)
        if a and b and differ(a, b):
            out.append(f"{what} differs between the nights of {before.recorded:%Y-%m-%d %H:%M} and "
                       f"{after.recorded:%Y-%m-%d %H:%M} UTC ({detail(a, b)}): {means}")
    return out


def _read_entries(found: Sequence[Entry], notes: list[str],
                  now: dt.datetime) -> list[tuple[EntryInfo, dict[Key, Point]]]:
    """Each entry read straight to its points (no rows kept: a year of a deep scan's rows, raw
    samples and all, would not fit in memory); a damaged one is a note in ``notes``."""
    loaded: list[tuple[EntryInfo, dict[Key, Point]]] = []
    for entry in found:
        named = any(f"{entry.path}:" in n for n in notes)  # the store's listing found it damaged
        info = EntryInfo.of(entry)
        if info.recorded > now + FUTURE_SLACK:  # it would stand as the newest night for good
            notes.append(f"skipped {entry.path}: recorded {info.recorded.isoformat()}, after now "
                         f"({now.isoformat(timespec='seconds')}): a wrong clock on the recording runner or an "
                         "edited manifest; not a night of this history")
            continue
        try:
            if named:  # the listing checked every entry's files: only a named one is checked again
                check_files(entry.path, entry.manifest)
            points = entry_points(entry, info)
        except (GateError, OSError) as exc:  # damage is a note, never a crash
            if not named:
                notes.append(f"skipped {entry.path}: {exc}")
            continue
        loaded.append((info, points))
    return loaded
