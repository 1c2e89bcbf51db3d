"""The per-row decision rule on two sample sets, and what it could have detected.

speedup = base median / candidate median. A row is REGRESSED or IMPROVED only when
(1) the IQRs [q1, q3] of the raw samples do not overlap (the seed's rule),
(2) the effect |cand/base - 1| reaches the op's minimum effect,
(3) the effect clears the row's own noise floor: ``noise_z`` standard errors of the median
    difference, estimated from the spread of per-round medians (each round has its own
    memory placement, so rounds are the independent units, not samples), and
(4) each side has at least ``min_samples`` samples.
Otherwise it is UNCHANGED, and the row says the smallest effect it could have detected.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Sequence

from tritongate.stats import Change, Summary, compare, summarize


def round_medians(samples: Sequence[float], per_round: int) -> list[float]:
    per_round = max(1, per_round)
    return [statistics.median(samples[i:i + per_round]) for i in range(0, len(samples), per_round)
            if samples[i:i + per_round]]


def median_standard_error(samples: Sequence[float], per_round: int) -> float:
    """Standard error of a side's median, from its rounds; with one round, from its samples."""
    meds = round_medians(samples, per_round)
    if len(meds) >= 2:
        return statistics.stdev(meds) / math.sqrt(len(meds))
    if len(samples) >= 2:
        return 1.2533 * statistics.stdev(samples) / math.sqrt(len(samples))
    return math.inf


@dataclass(frozen=True)
class TimingDecision:
    change: Change
    speedup: float
    effect: float  # cand/base - 1: +0.05 is 5% slower
    base: Summary
    cand: Summary
    iqrs_overlap: bool
    noise_floor: float  # relative effect the row's own noise could produce
    detectable: float  # smallest relative effect this row could have called
    reason: str


def decide(base: Sequence[float], cand: Sequence[float], *, base_per_round: int, cand_per_round: int,
           min_effect: float, noise_z: float, min_samples: int) -> TimingDecision:
    b, c = summarize(base), summarize(cand)
    se = math.hypot(median_standard_error(base, base_per_round), median_standard_error(cand, cand_per_round))
    floor = noise_z * se / b.median
    # the shift that would just separate the IQRs if both sides kept their spread
    iqr_gap = ((b.q3 / b.q1) + (c.q3 / c.q1)) / 2 - 1 if b.q1 > 0 and c.q1 > 0 else math.inf
    required = max(min_effect, floor)
    cmp = compare(base, cand, min_effect=required, min_samples=min_samples)
    reason = cmp.reason
    if cmp.change is Change.WITHIN_NOISE and not cmp.iqrs_overlap and "below minimum" in reason:
        which = "noise floor" if floor > min_effect else "minimum effect"
        reason = f"effect {abs(cmp.effect):.2%} below the {which} {required:.2%}"
    return TimingDecision(change=cmp.change, speedup=cmp.speedup, effect=cmp.effect, base=b, cand=c,
                          iqrs_overlap=cmp.iqrs_overlap, noise_floor=floor,
                          detectable=max(required, iqr_gap), reason=reason)
