"""One store entry's points: what a history keeps of each of its rows (a median and a sample
count, or a gap with its reason), and of the entry itself."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import sys
from dataclasses import dataclass
from typing import Any, Sequence

from tritongate.baselines.store import Entry
from tritongate.schema import AutotuneInfo, Row, RowStatus

Key = tuple[str, str, str]  # a row's (op, case, dtype)
ABSENT = "not in this entry"
MAX_REASON = 200  # characters of a gap reason taken from a row's error text


def as_utc(when: dt.datetime, what: str) -> dt.datetime:
    if when.tzinfo is None or when.utcoffset() is None:
        raise ValueError(f"{what} must be timezone-aware, got {when!r}")
    return when.astimezone(dt.timezone.utc)


@dataclass(frozen=True, slots=True)  # slots: a year of a deep scan is ~450,000 points
class Point:
    """One entry's value of one row: a median in µs, or a gap with its reason."""

    recorded: dt.datetime  # the entry's recorded time, UTC
    commit: str | None  # the compiler commit the entry was built from
    entry: str  # the entry's folder, relative to the store
    median_us: float | None
    n: int = 0  # raw samples behind the median
    gap: str | None = None  # why there is no value
    config: str | None = None  # fingerprint of the configs autotune chose (None: no tuned kernel)

    def __post_init__(self) -> None:
        object.__setattr__(self, "recorded", as_utc(self.recorded, "a point's recorded time"))
        if self.median_us is None:
            if not self.gap:
                raise ValueError(f"a point without a value needs a gap reason ({self.entry})")
            if self.n:
                raise ValueError(f"a gap has no samples, got n={self.n} ({self.entry})")
        else:
            if self.gap is not None:
                raise ValueError(f"a point with a value is not a gap ({self.entry})")
            if not (math.isfinite(self.median_us) and self.median_us > 0):
                raise ValueError(f"a median must be finite and > 0 µs, got {self.median_us!r}")
            if self.n < 1:
                raise ValueError(f"a median needs at least one sample, got n={self.n}")

    @property
    def is_gap(self) -> bool:
        return self.median_us is None

    def to_dict(self) -> dict[str, Any]:
        return {"recorded_utc": self.recorded.isoformat(), "commit": self.commit, "entry": self.entry,
                "median_us": self.median_us, "n": self.n, "gap": self.gap, "config": self.config}


@dataclass(frozen=True)
class EntryInfo:
    """What the history keeps of one store entry."""

    record_path: str
    recorded: dt.datetime
    commit: str | None
    compiler_repo: str | None
    triton_version: str
    gpu_slug: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "recorded", as_utc(self.recorded, "an entry's recorded time"))

    @classmethod
    def of(cls, entry: Entry) -> "EntryInfo":
        m = entry.manifest
        return cls(record_path=m.record_path, recorded=m.recorded, commit=m.compiler_commit,
                   compiler_repo=m.compiler_repo, triton_version=m.triton_version, gpu_slug=m.gpu_slug)

    def to_dict(self) -> dict[str, Any]:
        return {"entry": self.record_path, "recorded_utc": self.recorded.isoformat(), "commit": self.commit,
                "compiler_repo": self.compiler_repo, "triton_version": self.triton_version,
                "gpu_slug": self.gpu_slug}


def gap_reason(row: Row) -> str | None:
    """Why a row gives no value for the history (None: its median counts)."""
    status, error, markers = row.status.value, row.error, row.markers
    if status != RowStatus.OK.value:
        error = " ".join(error.split())
        error = error if len(error) <= MAX_REASON else error[: MAX_REASON - 1] + "…"
        return f"{status}: {error}" if error else status
    if markers:
        kinds = sorted({m.split(" ", 1)[0] for m in markers if m.strip()})
        return f"marked {', '.join(kinds)}"
    if row.skipped is not None:
        return f"not timed ({row.skipped.value})"
    if not row.samples:
        return "no samples"
    return None


def config_fingerprint(autotune: AutotuneInfo | None) -> str | None:
    """The configs autotune chose for a row's kernels, as 12 hex digits: two nights whose
    fingerprints differ timed different code, whatever the compiler did (two records of one
    build minutes apart differed by more than 1 % only on rows whose choice differed:
    bench/results/2026-12-05_h100_plant_rated_clock.md). Interned: a year of points shares them."""
    if autotune is None or not autotune.kernels:
        return None
    chosen = sorted(json.dumps([k.get("kernel"), k.get("key"), k.get("config")], sort_keys=True, default=str)
                    for k in autotune.kernels)
    return sys.intern(hashlib.sha256("\n".join(chosen).encode()).hexdigest()[:12])


def point_of(info: EntryInfo, row: Row | None) -> Point:
    """A row's point in the entry (without the row: an ``ABSENT`` gap)."""
    common = dict(recorded=info.recorded, commit=info.commit, entry=info.record_path)
    reason = ABSENT if row is None else gap_reason(row)
    if reason is not None or row is None:
        return Point(median_us=None, gap=reason, **common)
    summary = row.summary
    assert summary is not None  # an ok row without a skip reason has samples (schema)
    return Point(median_us=summary.median, n=summary.n, config=config_fingerprint(row.autotune), **common)


def points_of(info: EntryInfo, rows: Sequence[Row]) -> dict[Key, Point]:
    """One entry's point of each of its rows: all a history keeps of the entry's rows."""
    return {r.key: point_of(info, r) for r in rows}
