"""Synthetic nightly series, and small stores of real publishes, for the history tests."""

from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path
from typing import Sequence

import numpy as np

from tritongate.baselines.publishing import publish
from tritongate.history.points import Point
from tritongate.history.series import Series
from tritongate.schema import Row

from tests.baselines.test_store import make_record

T0 = dt.datetime(2026, 11, 1, 3, 0, tzinfo=dt.timezone.utc)
DAY = dt.timedelta(days=1)


def commit(i: int) -> str:
    """The compiler commit of night ``i``: 40 hex digits, a distinct 7-digit prefix per night."""
    return hashlib.sha1(f"night {i}".encode()).hexdigest()


def noisy(levels: Sequence[float], sd: float, seed: int, base: float = 20.0) -> list[float]:
    """``base * levels`` with lognormal noise of relative size ``sd`` (seeded)."""
    rng = np.random.default_rng(seed)
    return [float(v) for v in base * np.asarray(levels, dtype=float) * np.exp(rng.normal(0.0, sd, len(levels)))]


def series(values: Sequence[float | None], *, op: str = "softmax", case: str = "4096x4096", dtype: str = "float16",
           skip_nights: Sequence[int] = (), commits: Sequence[str] | None = None) -> Series:
    """One point per value on consecutive nights from ``T0`` (``skip_nights`` published
    nothing); ``None`` is a gap (the row errored that night)."""
    nights = [n for n in range(len(values) + len(skip_nights)) if n not in set(skip_nights)]
    points = []
    for i, (night, v) in enumerate(zip(nights, values)):
        when = T0 + night * DAY
        c = commits[i] if commits else commit(night)
        points.append(Point(recorded=when, commit=c, entry=f"h200/pr/nvidia-h200/{when:%Y%m%dT%H%M%SZ}-{c[:12]}",
                            median_us=v, n=25 if v is not None else 0, gap=None if v is not None else "error: boom"))
    return Series(op, case, dtype, tuple(points))


def publish_nights(store: Path, work: Path, nights: Sequence[Sequence[Row]], *, skip: Sequence[int] = (),
                   device: str = "NVIDIA H200", suite: str = "pr", runner_class: str = "h200",
                   compiler_repo: str = "org/triton", digests: Sequence[str] = (),
                   identities: Sequence[dict] = ()) -> list[Path]:
    """Publish one record run per night (night ``i`` recorded at ``T0 + i days`` from
    ``commit(i)``; nights in ``skip`` published nothing; ``digests``: night ``i``'s suite
    digest, default "d1"; ``identities``: night ``i``'s run identity fields over the
    defaults); returns the entry folders."""
    entries = []
    for i, rows in enumerate(nights):
        if i in skip:
            continue
        started = T0 + i * DAY
        run = make_record(work / f"{suite}_{device[-4:]}_{i:02d}", started=started, commit=commit(i), rows=list(rows),
                          device=device, suite=suite, digest=digests[i] if i < len(digests) else "d1",
                          identity=identities[i] if i < len(identities) else None)
        entries.append(publish(store, run, runner_class=runner_class, compiler_repo=compiler_repo,
                               now=started + dt.timedelta(hours=2)).path)
    return entries
