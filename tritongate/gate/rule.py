"""The per-row decision rule on two sample sets, in log ratios, and what it could have detected.

Everything is relative: the effect is ``log(cand median / base median)`` (paired: the mean of
the per-pair log ratios of round medians, the estimate the paired floor belongs to), and every spread
is taken on log times, so a slowdown never inflates its own noise floor (an absolute spread
of the candidate divided by the base median would grow with the slowdown). A row is
REGRESSED or IMPROVED only when

(1) each side has at least ``min_samples`` samples,
(2) the IQRs [q1, q3] of the raw samples do not overlap (the seed's rule),
(3) |log ratio| reaches log(1 + the op's minimum effect), and
(4) |log ratio| clears the row's noise floor: its standard error times Student's t quantile
    for the row's degrees of freedom at the two-sided tail probability of ``noise_z`` normal
    standard deviations (z = 4: p = 6.3e-5). With few rounds a standard error is itself
    noisy; a fixed multiple of it called A/A rows whose rounds happened to agree.

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

from scipy.stats import norm, t as student_t

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


def floor_multiplier(noise_z: float, df: float) -> float:
    """How many standard errors the floor is: Student's t at the tail probability of noise_z."""
    if noise_z <= 0:
        return 0.0
    if not df >= 1 or not math.isfinite(df):
        return math.inf if not df >= 1 else noise_z
    return float(student_t.isf(norm.sf(noise_z), df))


def log_median_var(samples: Sequence[float], per_round: int) -> tuple[float, float]:
    """(variance of a side's log median, its degrees of freedom), from its rounds; with one
    round, from its samples (which understates it: samples of one round share their
    placement)."""
    meds = [math.log(m) for m in round_medians(samples, per_round)]
    if len(meds) >= 2:
        return statistics.variance(meds) / len(meds), len(meds) - 1
    logs = [math.log(s) for s in samples]
    if len(logs) >= 2:
        return _MEDIAN_SE_FACTOR ** 2 * statistics.variance(logs) / len(logs), len(logs) - 1
    return math.inf, 0


def log_median_se(samples: Sequence[float], per_round: int) -> float:
    return math.sqrt(log_median_var(samples, per_round)[0])


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


def _unpaired_se_df(base: Sequence[float], cand: Sequence[float], base_per_round: int,
                    cand_per_round: int) -> tuple[float, float]:
    """Combined standard error and Welch-Satterthwaite degrees of freedom."""
    vb, db = log_median_var(base, base_per_round)
    vc, dc = log_median_var(cand, cand_per_round)
    total = vb + vc
    if not math.isfinite(total) or db < 1 or dc < 1:
        return math.inf, 0.0
    if total == 0:
        return 0.0, float(db + dc)
    return math.sqrt(total), total ** 2 / (vb ** 2 / db + vc ** 2 / dc)


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
    speedup: float  # base / candidate: the ratio of medians, or paired: exp(-mean paired log ratio)
    effect: float  # candidate / base - 1 (same estimate): +0.05 is 5 % slower
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
        return math.log1p(self.effect)


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
        ratios = paired_log_ratios(base, cand, base_per_round=base_per_round, cand_per_round=cand_per_round)
        se, df = paired_log_se(ratios), float(len(ratios) - 1)
    else:
        se, df = _unpaired_se_df(base, cand, base_per_round, cand_per_round)
    mult = floor_multiplier(noise_z, df)
    floor_log = 0.0 if mult == 0 else mult * se
    lb, lc = _log_samples(base, cand, base_per_round=base_per_round, cand_per_round=cand_per_round, paired=paired)
    b, c = summarize(lb), summarize(lc)
    # the shift that would just separate the two IQRs if both kept their (log) widths
    return Precision(noise_floor_log=floor_log, iqr_gap_log=(b.iqr + c.iqr) / 2,
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
    if paired:
        # the estimate whose standard error the floor uses: the mean paired log ratio (the
        # ratio of pooled medians would mix in where the drift stood when each side ran)
        ratios = paired_log_ratios(base, cand, base_per_round=base_per_round, cand_per_round=cand_per_round)
        log_ratio = statistics.fmean(ratios)
    else:
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
    return TimingDecision(change=change, speedup=math.exp(-log_ratio), effect=math.expm1(log_ratio),
                          base=b, cand=c, iqrs_overlap=overlap, paired=paired, pairs=pairs,
                          noise_floor=floor, detectable=detectable, why=why, reason=reason)
