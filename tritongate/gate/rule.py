"""The per-row decision rule on two sample sets, in log ratios, and what it could have detected.

Everything is relative: the effect is ``log(cand median / base median)``, and every spread
is taken on log times, so a slowdown never inflates its own noise floor (an absolute spread
of the candidate divided by the base median would grow with the slowdown). A row is
REGRESSED or IMPROVED only when

(1) each side has at least ``min_samples`` samples,
(2) the IQRs [q1, q3] of the raw samples do not overlap (the seed's rule),
(3) |log ratio| reaches log(1 + the op's minimum effect), and
(4) |log ratio| clears the row's noise floor, ``noise_z`` standard errors of the log ratio.

The floor's standard error comes from rounds, not samples (each round has its own memory
placement, so rounds are the independent units):

- **paired** (base and candidate measured in alternating rounds in one job): from the
  spread of the per-pair log ratios ``log(cand round median) - log(base round median)``.
  Rounds measured back to back share their drift, which cancels in the difference.
- **unpaired** (two stored runs): from each side's spread of log round medians, combined.

Otherwise the row is UNCHANGED, with the reason why (``Why``), and the smallest effect it
could have called; a row that could not have been called at all (too few samples) has no
detectable effect.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from enum import Enum
from typing import Sequence

from tritongate.stats import Change, Summary, summarize

# A median from n samples has about sqrt(pi/2) times the standard error of a mean.
_MEDIAN_SE_FACTOR = math.sqrt(math.pi / 2)


class Why(str, Enum):
    """Why a timed row got the verdict it got."""

    CALLED = "called"  # slower or faster: every condition held
    TOO_FEW_SAMPLES = "too_few_samples"
    IQRS_OVERLAP = "iqrs_overlap"
    BELOW_MIN_EFFECT = "below_min_effect"
    BELOW_NOISE_FLOOR = "below_noise_floor"


def round_medians(samples: Sequence[float], per_round: int) -> list[float]:
    per_round = max(1, per_round)
    return [statistics.median(samples[i:i + per_round]) for i in range(0, len(samples), per_round)
            if samples[i:i + per_round]]


def log_median_se(samples: Sequence[float], per_round: int) -> float:
    """Standard error of a side's log median, from its rounds; with one round, from its
    samples (which understates it: samples of one round share their placement)."""
    meds = [math.log(m) for m in round_medians(samples, per_round)]
    if len(meds) >= 2:
        return statistics.stdev(meds) / math.sqrt(len(meds))
    logs = [math.log(s) for s in samples]
    if len(logs) >= 2:
        return _MEDIAN_SE_FACTOR * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.inf


def paired_log_ratios(base: Sequence[float], cand: Sequence[float], *, base_per_round: int,
                      cand_per_round: int) -> list[float]:
    """log(cand round median) - log(base round median), pair by pair."""
    b = round_medians(base, base_per_round)
    c = round_medians(cand, cand_per_round)
    return [math.log(cm) - math.log(bm) for bm, cm in zip(b, c)]


def paired_log_se(ratios: Sequence[float]) -> float:
    if len(ratios) < 2:
        return math.inf
    return statistics.stdev(ratios) / math.sqrt(len(ratios))


def _log_samples(base: Sequence[float], cand: Sequence[float], *, base_per_round: int, cand_per_round: int,
                 paired: bool) -> tuple[list[float], list[float]]:
    """Log samples for the IQR condition; paired: each pair's shared level removed."""
    if not paired:
        return [math.log(x) for x in base], [math.log(x) for x in cand]
    bpr, cpr = max(1, base_per_round), max(1, cand_per_round)
    b_out: list[float] = []
    c_out: list[float] = []
    for bm, cm, i in zip(round_medians(base, bpr), round_medians(cand, cpr), range(len(base))):
        level = (math.log(bm) + math.log(cm)) / 2
        b_out += [math.log(x) - level for x in base[i * bpr:(i + 1) * bpr]]
        c_out += [math.log(x) - level for x in cand[i * cpr:(i + 1) * cpr]]
    return b_out, c_out


def _rel(log_value: float) -> float:
    """A log ratio as a relative effect (exp - 1), inf-safe."""
    return math.expm1(log_value) if log_value < 700 else math.inf


@dataclass(frozen=True)
class TimingDecision:
    change: Change
    speedup: float  # base median / candidate median
    effect: float  # cand/base - 1: +0.05 is 5 % slower
    base: Summary
    cand: Summary
    iqrs_overlap: bool  # paired: after removing each pair's shared level
    paired: bool  # judged from paired rounds (one job, alternating) or from two stored runs
    pairs: int  # paired rounds used (0 when unpaired)
    noise_floor: float  # relative effect the row's own noise could produce (inf: unknown)
    detectable: float | None  # smallest relative effect this row could have called; None: none
    why: Why
    reason: str

    @property
    def log_ratio(self) -> float:
        return math.log(self.cand.median / self.base.median)


@dataclass(frozen=True)
class Precision:
    """What a row's samples can resolve, without looking at the effect itself."""

    noise_floor_log: float
    iqr_gap_log: float
    min_effect_log: float

    @property
    def required_log(self) -> float:
        return max(self.min_effect_log, self.noise_floor_log)

    @property
    def detectable(self) -> float:
        return _rel(max(self.required_log, self.iqr_gap_log))


def precision(base: Sequence[float], cand: Sequence[float], *, base_per_round: int, cand_per_round: int,
              paired: bool, min_effect: float, noise_z: float) -> Precision:
    """The smallest change a row could call. It depends on spreads only, never on the
    difference of the medians, so a schedule that adds rounds until it is small enough
    cannot steer a row towards a verdict."""
    if paired:
        se = paired_log_se(paired_log_ratios(base, cand, base_per_round=base_per_round,
                                             cand_per_round=cand_per_round))
    else:
        se = math.hypot(log_median_se(base, base_per_round), log_median_se(cand, cand_per_round))
    lb, lc = _log_samples(base, cand, base_per_round=base_per_round, cand_per_round=cand_per_round, paired=paired)
    b, c = summarize(lb), summarize(lc)
    # the shift that would just separate the two IQRs if both kept their (log) widths
    return Precision(noise_floor_log=noise_z * se, iqr_gap_log=(b.iqr + c.iqr) / 2,
                     min_effect_log=math.log1p(min_effect))


def iqrs_overlap(base: Sequence[float], cand: Sequence[float], *, base_per_round: int, cand_per_round: int,
                 paired: bool) -> bool:
    lb, lc = _log_samples(base, cand, base_per_round=base_per_round, cand_per_round=cand_per_round, paired=paired)
    b, c = summarize(lb), summarize(lc)
    return not (b.q3 < c.q1 or c.q3 < b.q1)


def decide(base: Sequence[float], cand: Sequence[float], *, base_per_round: int, cand_per_round: int,
           min_effect: float, noise_z: float, min_samples: int, paired: bool = False) -> TimingDecision:
    b, c = summarize(base), summarize(cand)
    prec = precision(base, cand, base_per_round=base_per_round, cand_per_round=cand_per_round,
                     paired=paired, min_effect=min_effect, noise_z=noise_z)
    log_ratio = math.log(c.median / b.median)
    overlap = iqrs_overlap(base, cand, base_per_round=base_per_round, cand_per_round=cand_per_round,
                           paired=paired)
    pairs = min(len(round_medians(base, base_per_round)), len(round_medians(cand, cand_per_round))) \
        if paired else 0
    floor = _rel(prec.noise_floor_log)
    size = abs(log_ratio)
    detectable: float | None = prec.detectable
    if b.n < min_samples or c.n < min_samples:
        why, detectable = Why.TOO_FEW_SAMPLES, None
        reason = f"too few samples to decide (base {b.n}, candidate {c.n}; {min_samples} needed per side)"
    elif overlap:
        why, reason = Why.IQRS_OVERLAP, "IQRs overlap"
    elif size < prec.min_effect_log:
        why = Why.BELOW_MIN_EFFECT
        reason = f"effect {_rel(size):.2%} below the minimum effect {min_effect:.2%}"
    elif size < prec.noise_floor_log:
        why = Why.BELOW_NOISE_FLOOR
        reason = f"effect {_rel(size):.2%} below the noise floor {floor:.2%}"
    else:
        why = Why.CALLED
        reason = (f"{'slower' if log_ratio > 0 else 'faster'}: IQRs disjoint, effect {_rel(size):.2%} "
                  f"clears the minimum effect {min_effect:.2%} and the noise floor {floor:.2%}")
    change = Change.WITHIN_NOISE if why is not Why.CALLED else (Change.SLOWER if log_ratio > 0 else Change.FASTER)
    return TimingDecision(change=change, speedup=b.median / c.median, effect=c.median / b.median - 1,
                          base=b, cand=c, iqrs_overlap=overlap, paired=paired, pairs=pairs,
                          noise_floor=floor, detectable=detectable, why=why, reason=reason)
