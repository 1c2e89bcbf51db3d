"""Pure statistics over timing samples: summaries, Tukey outliers and the IQR-overlap rule.

No I/O, no torch. Quantiles use linear interpolation between order statistics (the
``inclusive`` method, the same as numpy's and torch.quantile's default), so q1/q3 of
``[1, 2, 3, 4, 100]`` are 2 and 4.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from enum import Enum
from typing import Sequence


@dataclass(frozen=True)
class Summary:
    """Order statistics of one sample set (same unit as the samples)."""

    n: int
    mean: float
    median: float
    q1: float
    q3: float
    min: float
    max: float

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    @property
    def rel_iqr(self) -> float:
        """IQR relative to the median: the row's own noise level."""
        return self.iqr / self.median if self.median else math.inf

    def to_dict(self) -> dict[str, float | int]:
        return {
            "n": self.n,
            "mean": self.mean,
            "median": self.median,
            "q1": self.q1,
            "q3": self.q3,
            "iqr": self.iqr,
            "min": self.min,
            "max": self.max,
        }


def _check_samples(samples: Sequence[float]) -> list[float]:
    values = list(map(float, samples))
    if not values:
        raise ValueError("need at least one sample")
    if not all(map(math.isfinite, values)):
        raise ValueError(f"samples must be finite numbers, got {values!r}")
    return values


def _quartiles_of(values: list[float]) -> tuple[float, float, float]:
    """``quartiles`` of checked values: ``statistics.quantiles(n=4, method="inclusive")``'s
    own arithmetic, done once per summary (the gate summarises every row several times)."""
    if len(values) == 1:
        return values[0], values[0], values[0]
    data = sorted(values)
    m = len(data) - 1
    out = []
    for i in (1, 2, 3):
        j, delta = divmod(i * m, 4)
        out.append((data[j] * (4 - delta) + data[j + 1] * delta) / 4)
    return out[0], out[1], out[2]


def quartiles(samples: Sequence[float]) -> tuple[float, float, float]:
    """(q1, median, q3) by linear interpolation; a single sample is all three."""
    return _quartiles_of(_check_samples(samples))


def summarize(samples: Sequence[float]) -> Summary:
    """mean, median, q1, q3, min, max and n (``iqr`` is derived)."""
    values = _check_samples(samples)
    q1, med, q3 = _quartiles_of(values)
    return Summary(
        n=len(values),
        mean=statistics.fmean(values),
        median=med,
        q1=q1,
        q3=q3,
        min=min(values),
        max=max(values),
    )


def outliers(samples: Sequence[float], k: float = 1.5) -> list[int]:
    """Indices of samples outside the Tukey fences [q1 - k*IQR, q3 + k*IQR].

    Report them, don't silently drop them: an outlier usually has a cause (another
    process, a clock drop, a first-touch page fault).
    """
    values = _check_samples(samples)
    q1, _, q3 = quartiles(values)
    iqr = q3 - q1
    low, high = q1 - k * iqr, q3 + k * iqr
    return [i for i, v in enumerate(values) if v < low or v > high]


class Change(str, Enum):
    FASTER = "faster"
    SLOWER = "slower"
    WITHIN_NOISE = "within noise"


@dataclass(frozen=True)
class Comparison:
    """Outcome of the IQR-overlap rule for one base/new pair (samples are times)."""

    change: Change
    speedup: float  # base median / new median; > 1 means new is faster
    base: Summary
    new: Summary
    iqrs_overlap: bool
    reason: str

    @property
    def effect(self) -> float:
        """Relative change of the new median against the base: +0.05 is 5% slower."""
        return self.new.median / self.base.median - 1.0


def compare(
    base: Sequence[float],
    new: Sequence[float],
    *,
    min_effect: float = 0.0,
    min_samples: int = 1,
) -> Comparison:
    """Faster or slower only when the IQRs [q1, q3] do not overlap, the effect
    |new/base - 1| reaches ``min_effect`` and each side has ``min_samples``;
    otherwise within noise. Times: smaller is faster.
    """
    if min_effect < 0:
        raise ValueError(f"min_effect must be >= 0, got {min_effect}")
    b, n = summarize(base), summarize(new)
    if b.median <= 0 or n.median <= 0:
        raise ValueError("medians must be positive to form a speedup")
    speedup = b.median / n.median
    overlap = not (n.q3 < b.q1 or b.q3 < n.q1)
    effect = abs(n.median / b.median - 1.0)
    if min(b.n, n.n) < min_samples:
        change, reason = Change.WITHIN_NOISE, f"fewer than {min_samples} samples on a side"
    elif overlap:
        change, reason = Change.WITHIN_NOISE, "IQRs overlap"
    elif effect < min_effect:
        change, reason = Change.WITHIN_NOISE, f"effect {effect:.2%} below minimum {min_effect:.2%}"
    else:
        change = Change.FASTER if n.median < b.median else Change.SLOWER
        reason = "IQRs disjoint"
    return Comparison(change, speedup, b, n, overlap, reason)
