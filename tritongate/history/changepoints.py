"""Change points in a nightly series: lasting shifts of a row's median, confirmed twice.

The rule (``docs/history.md``), on the series' valued points only (gaps and missing nightlies
are skipped, never imputed):

1. ``y = log(median)`` (a shift is relative) over a robust noise ``sigma = 1.4826 *
   MAD(diff(y)) / sqrt(2)`` (differences cancel the level, so a step or a ramp hardly
   inflates it), floored at ``noise_floor`` so a flat series is not infinitely sensitive.
2. Candidates: PELT (``l2`` cost, segments of at least ``min_points``) with a penalty of
   ``beta * log(n)`` per change: BIC for a shift of the mean, generous on purpose.
3. Confirmation, until every candidate passes: the neighbouring segments' medians differ by
   ``min_effect`` or more AND a two-sided Mann–Whitney U test gives ``p < p_value``, with at
   least ``min_points`` a side (and a side of just ``min_points``, but the series' first,
   starts at its own level: ``_edges_in_place``). The failing candidate with the largest
   p-value is dropped and its segments merged (a ramp cut into small steps ends as a few
   steps that pass); each round first moves every candidate to the least-squares best split
   of its neighbouring segments.

So a slow ramp gives at least one change point, and ``drift`` (the last segment's median over
the first's, minus one) is its total change. PELT is done in numpy, batched (``pelt_many``;
``docs/design-notes.md`` says why), and checked against ``ruptures`` by the tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np

from tritongate.history.points import Key, Point
from tritongate.history.series import Series

MAD_TO_SD = 1.4826  # MAD of normal data times this is its standard deviation


@dataclass(frozen=True)
class Detection:
    """The change-point rule's parameters (see the module docstring)."""

    min_effect: float = 0.02  # relative change of the segment medians
    p_value: float = 0.01  # two-sided Mann-Whitney U significance
    min_points: int = 3  # per side of a change point (and PELT's minimum segment)
    beta: float = 2.0  # PELT penalty per change: beta * log(n), on noise-scaled log medians
    noise_floor: float = 0.002  # the least relative noise assumed

    def __post_init__(self) -> None:
        for name, v in (("min_effect", self.min_effect), ("p_value", self.p_value)):
            if not (math.isfinite(v) and 0 < v < 1):
                raise ValueError(f"{name} must be in (0, 1), got {v!r}")
        if isinstance(self.min_points, bool) or not isinstance(self.min_points, int) or self.min_points < 2:
            raise ValueError(f"min_points must be an integer >= 2, got {self.min_points!r}")
        for name, v in (("beta", self.beta), ("noise_floor", self.noise_floor)):
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be > 0, got {v!r}")

    @property
    def min_length(self) -> int:
        """Valued points a series needs before a change can be looked for."""
        return 2 * self.min_points

    def to_dict(self) -> dict[str, Any]:
        return {"min_effect": self.min_effect, "p_value": self.p_value, "min_points": self.min_points,
                "penalty": f"{self.beta:g} * log(n) on log medians / noise", "beta": self.beta,
                "noise_floor": self.noise_floor}


@dataclass(frozen=True)
class Shift:
    """A confirmed change in a plain sequence of values: ``values[at]`` is the first after."""

    at: int
    median_before: float
    median_after: float
    n_before: int
    n_after: int
    p_value: float

    def __post_init__(self) -> None:
        if not (self.median_before > 0 and self.median_after > 0 and 0 <= self.p_value <= 1 and self.at > 0):
            raise ValueError(f"a shift needs medians > 0, a p-value in [0, 1] and a place > 0, got {self!r}")

    @property
    def rel_change(self) -> float:
        return self.median_after / self.median_before - 1.0


@dataclass(frozen=True)
class Segmentation:
    """What ``detect`` found in one sequence: its confirmed shifts, segment medians and noise."""

    shifts: tuple[Shift, ...]
    levels: tuple[float, ...]  # median of each segment, first to last
    noise: float  # sigma of the log values (a relative noise level), floored

    @property
    def drift(self) -> float:
        """The last segment's median over the first's, minus one (0 without a change)."""
        return self.levels[-1] / self.levels[0] - 1.0 if self.levels else 0.0


def robust_noise(log_values: np.ndarray, floor: float) -> float:
    """MAD of first differences / sqrt(2), as a standard deviation, at least ``floor``."""
    if len(log_values) < 3:
        return floor
    d = np.diff(log_values)
    mad = float(np.median(np.abs(d - np.median(d))))
    return max(MAD_TO_SD * mad / math.sqrt(2.0), floor)


def _refine(z: np.ndarray, cuts: list[int], min_points: int) -> list[int]:
    """Move each cut to the least-squares best split of its two neighbouring segments: after a
    merge, a cut may sit where PELT put it for a neighbour now gone (on a ramp, before it starts)."""
    s1, s2 = np.concatenate([[0.0], np.cumsum(z)]), np.concatenate([[0.0], np.cumsum(z * z)])

    def sse(a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:  # of z[a:b], from prefix sums
        return s2[b] - s2[a] - (s1[b] - s1[a]) ** 2 / (np.asarray(b) - np.asarray(a))

    cuts = list(cuts)
    for i in range(len(cuts)):
        lo, hi = (cuts[i - 1] if i else 0), (cuts[i + 1] if i + 1 < len(cuts) else len(z))
        splits = np.arange(lo + min_points, hi - min_points + 1)
        if not len(splits):
            continue
        cost = sse(lo, splits) + sse(splits, hi)
        best = np.flatnonzero(cost <= cost.min() + 1e-9)  # ties: stay nearest where it was
        cuts[i] = int(splits[best[np.argmin(np.abs(splits[best] - cuts[i]))]])
    return cuts


def _judge(values: np.ndarray, bounds: list[int], i: int, rule: Detection) -> tuple[Shift, bool]:
    """The candidate ``bounds[i + 1]`` against its two neighbouring segments."""
    before, after = values[bounds[i]: bounds[i + 1]], values[bounds[i + 1]: bounds[i + 2]]
    shift = Shift(at=bounds[i + 1], median_before=float(np.median(before)), median_after=float(np.median(after)),
                  n_before=len(before), n_after=len(after), p_value=1.0)
    if min(len(before), len(after)) < rule.min_points:
        return shift, False
    from scipy.stats import mannwhitneyu  # 0.6 s to import: paid only where a candidate is tested

    p = float(mannwhitneyu(before, after, alternative="two-sided").pvalue)
    shift = replace(shift, p_value=p if math.isfinite(p) else 1.0)
    return shift, (abs(shift.rel_change) >= rule.min_effect and shift.p_value < rule.p_value
                   and _edges_in_place(before, after, shift, rule, first=bounds[i] == 0))


def _edges_in_place(before: np.ndarray, after: np.ndarray, shift: Shift, rule: Detection, *, first: bool) -> bool:
    """A side of the fewest points the rule allows is where ``_refine`` could not move the cut
    further into it: its point next to the cut must lie nearer its own side's median than the
    other's. If it does not, the shift lies further in (a step two nights old, cut three from
    the end with the last night before it; a level of two nights between two others), so that
    side has too few nights to confirm it (the newest side: yet; the next night gives it a
    fourth), and the place found would name the wrong nights and commits. Not the series'
    first side (``first``): it never grows, and merging its step away would leave no change at
    all, so a step three nights after the first whose third night was noisy would never be
    confirmed however many nights followed it."""
    lb, la = math.log(shift.median_before), math.log(shift.median_after)
    if len(after) == rule.min_points and abs(math.log(after[0]) - la) > abs(math.log(after[0]) - lb):
        return False
    return first or not (len(before) == rule.min_points
                         and abs(math.log(before[-1]) - lb) > abs(math.log(before[-1]) - la))


def pelt_many(zs: np.ndarray, min_size: int, pen: float) -> list[list[int]]:
    """The segment ends (``n`` last) of each row of ``zs`` (series of one length) under the ``l2``
    cost, ``pen`` per change, segments of at least ``min_size``: PELT (Killick et al. 2012) as
    ``ruptures.Pelt(model="l2", jump=1)`` does it, with its candidates, pruning and ties (the
    first best split wins). Each step is one numpy expression over every series' splits, from
    prefix sums; a pruned split is masked, not removed."""
    zs = np.asarray(zs, dtype=float)
    if zs.ndim != 2:
        raise ValueError("pelt_many takes a 2-D array: one series per row")
    m, n = zs.shape
    if n < min_size:
        raise ValueError(f"{n} points cannot hold a segment of {min_size}")
    zero = np.zeros((m, 1))
    s1 = np.concatenate([zero, np.cumsum(zs, axis=1)], axis=1)
    s2 = np.concatenate([zero, np.cumsum(zs * zs, axis=1)], axis=1)
    best = np.zeros((m, n + 1))
    prev = np.zeros((m, n + 1), dtype=np.int64)
    alive = np.zeros((m, n + 1), dtype=bool)  # the admissible splits of each series
    starts = np.arange(n + 1)
    rows = np.arange(m)
    for end in [*range(min_size, n), n]:
        start = end - min_size
        if start == 0 or start >= min_size:
            alive[:, start] = True
        k = start + 1  # splits 0..start: the ones never admitted stay masked
        s = s1[:, end, None] - s1[:, :k]
        cost = np.maximum(s2[:, end, None] - s2[:, :k] - s * s / (end - starts[:k]), 0.0)
        total = np.where(alive[:, :k], best[:, :k] + (cost + pen), np.inf)
        i = np.argmin(total, axis=1)  # the first best, in split order, as ruptures'
        best[:, end] = total[rows, i]
        prev[:, end] = i
        alive[:, :k] &= total <= best[:, end, None] + pen
    out = []
    for r in range(m):
        ends = [n]
        while prev[r, ends[-1]] > 0:
            ends.append(int(prev[r, ends[-1]]))
        out.append(sorted(ends))
    return out


def _scaled(values: Sequence[float], rule: Detection) -> tuple[np.ndarray, float, np.ndarray | None]:
    """The values checked, their noise, and the noise-scaled log values PELT searches (None:
    too few values to look for a change)."""
    vals = np.asarray(values, dtype=float)
    if vals.ndim != 1 or not np.all(np.isfinite(vals)) or np.any(vals <= 0):
        raise ValueError("values must be a sequence of finite numbers > 0")
    y = np.log(vals)
    noise = robust_noise(y, rule.noise_floor)
    return vals, noise, (y - np.median(y)) / noise if len(vals) >= rule.min_length else None


def _confirmed(vals: np.ndarray, noise: float, z: np.ndarray | None, cuts: list[int] | None,
               rule: Detection) -> Segmentation:
    bounds = [0, len(vals)] if len(vals) else [0]
    judged: list[tuple[Shift, bool]] = []
    while z is not None and cuts is not None:  # None: too few values to look for a change
        cuts = _refine(z, cuts, rule.min_points)
        bounds = [0, *cuts, len(vals)]
        judged = [_judge(vals, bounds, i, rule) for i in range(len(cuts))]
        failing = [s for s, ok in judged if not ok]
        if not failing:
            break
        worst = max(failing, key=lambda s: (s.p_value, -abs(s.rel_change)))
        cuts.remove(worst.at)
    levels = tuple(float(np.median(vals[a:b])) for a, b in zip(bounds, bounds[1:]))
    return Segmentation(shifts=tuple(s for s, _ in judged), levels=levels, noise=noise)


def detect(values: Sequence[float], rule: Detection = Detection()) -> Segmentation:
    """Confirmed change points of ``values`` (medians in µs, in time order, all > 0)."""
    return detect_many([values], rule)[0]


def detect_many(sequences: Sequence[Sequence[float]], rule: Detection = Detection()) -> list[Segmentation]:
    """``detect`` of each sequence; the PELT search of sequences of one length is done at once."""
    scaled = [_scaled(v, rule) for v in sequences]
    cuts: list[list[int] | None] = [None] * len(scaled)
    by_length: dict[int, list[int]] = {}
    for i, (_, _, z) in enumerate(scaled):
        if z is not None:
            by_length.setdefault(len(z), []).append(i)
    for n, members in by_length.items():
        found = pelt_many(np.stack([scaled[i][2] for i in members]), rule.min_points,  # type: ignore[misc]
                          rule.beta * math.log(n))
        for i, ends in zip(members, found):
            cuts[i] = [b for b in ends if 0 < b < n]
    return [_confirmed(vals, noise, z, c, rule) for (vals, noise, z), c in zip(scaled, cuts)]


# -- on a series -----------------------------------------------------------------------------

@dataclass(frozen=True)
class ChangePoint:
    """A confirmed change of one row: between ``before`` (its last valued point before the
    change) and ``after`` (the first valued point after it; ``index`` is its position in the
    series' points). ``rel_change`` > 0 is slower."""

    op: str
    case: str
    dtype: str
    index: int
    before: Point
    after: Point
    median_before_us: float
    median_after_us: float
    n_before: int  # valued points in the segment before
    n_after: int
    p_value: float

    def __post_init__(self) -> None:
        if self.index < 1:
            raise ValueError(f"a change point's first point after is not the series' first, got {self.index}")
        if self.before.is_gap or self.after.is_gap:
            raise ValueError("a change point lies between two valued points")
        for name in ("median_before_us", "median_after_us"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be finite and > 0 µs, got {value!r}")
        if not 0 <= self.p_value <= 1:
            raise ValueError(f"p_value must be in [0, 1], got {self.p_value!r}")

    @property
    def key(self) -> Key:
        return (self.op, self.case, self.dtype)

    @property
    def rel_change(self) -> float:
        return self.median_after_us / self.median_before_us - 1.0

    @property
    def config_changed(self) -> bool:
        """Autotune chose other configs on the two nights around it: the shift may be the
        choice, not the compiler's code for one config."""
        return None not in (self.before.config, self.after.config) and self.before.config != self.after.config

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.op, "case": self.case, "dtype": self.dtype, "index": self.index,
                "before": self.before.to_dict(), "after": self.after.to_dict(),
                "median_before_us": self.median_before_us, "median_after_us": self.median_after_us,
                "rel_change": self.rel_change, "n_before": self.n_before, "n_after": self.n_after,
                "p_value": self.p_value, "config_changed": self.config_changed}


@dataclass(frozen=True)
class SeriesAnalysis:
    """A series with its change points, drift (start to end) and noise level."""

    series: Series
    change_points: tuple[ChangePoint, ...]
    drift: float  # the last segment's median over the first's, minus one
    noise: float  # robust relative noise of the valued points
    valued: int  # valued points looked at
    note: str | None = None  # why no change point was looked for

    def to_dict(self) -> dict[str, Any]:
        return {**self.series.to_dict(), "valued": self.valued, "noise": self.noise, "drift": self.drift,
                "note": self.note, "change_points": [c.to_dict() for c in self.change_points]}


def analyse(series: Series, rule: Detection = Detection()) -> SeriesAnalysis:
    """``detect`` on the series' valued points, mapped back to its points."""
    return analyse_many([series], rule)[0]


def analyse_many(series: Sequence[Series], rule: Detection = Detection()) -> list[SeriesAnalysis]:
    """``analyse`` of each series, their searches done together (``detect_many``)."""
    wheres = [s.valued() for s in series]
    values = [[s.points[i].median_us for i in where] for s, where in zip(series, wheres)]
    segs = detect_many(values, rule)  # type: ignore[arg-type]  # valued points have a median
    return [_analysis(s, where, seg, rule) for s, where, seg in zip(series, wheres, segs)]


def _analysis(series: Series, where: list[int], seg: Segmentation, rule: Detection) -> SeriesAnalysis:
    note = (f"only {len(where)} valued point{'' if len(where) == 1 else 's'} (of {len(series.points)}); "
            f"{rule.min_length} needed to look for a change") if len(where) < rule.min_length else None
    cps = tuple(ChangePoint(op=series.op, case=series.case, dtype=series.dtype, index=where[s.at],
                            before=series.points[where[s.at - 1]], after=series.points[where[s.at]],
                            median_before_us=s.median_before, median_after_us=s.median_after,
                            n_before=s.n_before, n_after=s.n_after, p_value=s.p_value)
                for s in seg.shifts)
    return SeriesAnalysis(series=series, change_points=cps, drift=seg.drift, noise=seg.noise,
                          valued=len(where), note=note)
