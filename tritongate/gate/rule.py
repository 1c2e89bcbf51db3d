"""The per-row decision rule on two sample sets, in log ratios, and what it could have detected.

Everything is relative: the effect is ``log(cand median / base median)`` (paired: the 20 %
trimmed mean of the per-pair log ratios of round medians, order term removed, combined over
the worker pairs that measured them: ``tritongate.gate.robust``), and every spread
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
(5) paired, with two or more worker pairs: they agree (``robust.estimate``'s agreement
    probability at least ``AGREEMENT_P``): a step or a speed state on one worker process
    shows in its worker pair only.

The floor's standard error comes from rounds, not samples (each round has its own memory
placement, so rounds are the independent units):

- **paired** (base and candidate measured in alternating rounds in one job): Yuen's standard
  error of the per-pair log ratios ``log(cand round median) - log(base round median)`` per
  worker pair, with the between-worker-pair SD (at least the policy's ``process_sd``) added
  at the second level. Rounds measured back to back share their drift, which cancels in the
  difference; a persistent offset between two processes does not, and more pairs from the
  same two processes cannot shrink it.
- **unpaired** (two stored runs): from each side's spread of log round medians, combined,
  plus the between-run part (``process_sd`` for each run's process): two runs are two
  processes at two times, and unpaired timing is not the PR path.

Otherwise the row is UNCHANGED, with the reason why (``Why``), and the smallest effect it
could have called; a row that could not have been called at all (too few samples) has no
detectable effect.
"""

from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass
from enum import Enum
from typing import Sequence

import numpy as np

from tritongate.gate.robust import PairedEstimate, estimate, order_signs
from tritongate.stats import Change, Summary, quartiles, summarize

# Worker pairs whose estimates spread this improbably under one common effect disagree.
AGREEMENT_P = 0.01

# A median from n samples has about sqrt(pi/2) times the standard error of a mean.
_MEDIAN_SE_FACTOR = math.sqrt(math.pi / 2)


class Why(str, Enum):
    """Why a timed row got the verdict it got."""

    CALLED = "called"  # slower or faster: every condition held
    TOO_FEW_SAMPLES = "too_few_samples"
    IQRS_OVERLAP = "iqrs_overlap"
    BELOW_MIN_EFFECT = "below_min_effect"
    BELOW_NOISE_FLOOR = "below_noise_floor"
    WORKER_PAIRS_DISAGREE = "worker_pairs_disagree"


@dataclass(frozen=True)
class PairLayout:
    """How a paired row's pairs were measured: per pair, whether the base went first and
    which worker pair (fresh processes) measured it. Missing: alternating order from the
    base, one worker pair (the runs of schema 3 and before)."""

    base_first: tuple[bool, ...] = ()
    worker_pairs: tuple[int, ...] = ()

    def arrays(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        bf = np.array(self.base_first[:n], dtype=bool) if len(self.base_first) >= n \
            else np.arange(n) % 2 == 0
        wp = np.array(self.worker_pairs[:n], dtype=int) if len(self.worker_pairs) >= n else np.zeros(n, dtype=int)
        return bf, wp


def round_medians(samples: Sequence[float], per_round: int) -> list[float]:
    per_round = max(1, per_round)
    if isinstance(samples, tuple):  # a row's samples: judging one asks for its medians several times
        return list(_round_medians_of(samples, per_round))
    return _round_medians(samples, per_round)


def _round_medians(samples: Sequence[float], per_round: int) -> list[float]:
    return [statistics.median(samples[i:i + per_round]) for i in range(0, len(samples), per_round)
            if samples[i:i + per_round]]


@functools.lru_cache(maxsize=8)  # the row being judged, both sides; equal samples give equal medians
def _round_medians_of(samples: tuple[float, ...], per_round: int) -> tuple[float, ...]:
    return tuple(_round_medians(samples, per_round))


@functools.lru_cache(maxsize=4096)  # a gate of thousands of rows shares a few degrees of freedom
def floor_multiplier(noise_z: float, df: float) -> float:
    """How many standard errors the floor is: Student's t at the tail probability of noise_z."""
    if noise_z <= 0:
        return 0.0
    if not df >= 1 or not math.isfinite(df):
        return math.inf if not df >= 1 else noise_z
    return _t_isf_at_z(noise_z, float(df))


def _t_isf_at_z(noise_z: float, df: float) -> float:
    from tritongate.gate.quantiles import norm_sf, t_isf

    return t_isf(norm_sf(noise_z), df)


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


def paired_log_ratios(base: Sequence[float], cand: Sequence[float], *, base_per_round: int,
                      cand_per_round: int) -> list[float]:
    """log(cand round median) - log(base round median), pair by pair."""
    b = round_medians(base, base_per_round)
    c = round_medians(cand, cand_per_round)
    return [math.log(cm) - math.log(bm) for bm, cm in zip(b, c)]


def paired_estimate(ratios: Sequence[float], layout: PairLayout | None, process_sd: float,
                    pair_inflation: float = 1.0) -> PairedEstimate:
    bf, wp = (layout or PairLayout()).arrays(len(ratios))
    return estimate(np.asarray(ratios, dtype=float), base_first=bf, groups=wp, process_sd=process_sd,
                    inflation=pair_inflation)


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
                 paired: bool, est: PairedEstimate | None = None,
                 layout: PairLayout | None = None) -> tuple[list[float], list[float]]:
    """Log samples for the IQR condition; paired: each pair's shared level removed, and the
    order term (``est``) taken out of each pair as it was taken out of the estimate."""
    if not paired:
        return [math.log(x) for x in base], [math.log(x) for x in cand]
    bpr, cpr = max(1, base_per_round), max(1, cand_per_round)
    b_out: list[float] = []
    c_out: list[float] = []
    meds = list(zip(round_medians(base, bpr), round_medians(cand, cpr)))
    signs = order_signs((layout or PairLayout()).arrays(len(meds))[0])
    half = float(est.order_log) / 2 if est is not None else 0.0
    for i, (bm, cm) in enumerate(meds):
        level = (math.log(bm) + math.log(cm)) / 2
        shift = half * float(signs[i])  # base-first pairs: the candidate ran 2*half slower for order alone
        b_out += [math.log(x) - level + shift for x in base[i * bpr:(i + 1) * bpr]]
        c_out += [math.log(x) - level - shift for x in cand[i * cpr:(i + 1) * cpr]]
    return b_out, c_out


def _rel(log_value: float) -> float:
    """A log ratio as a relative effect (exp - 1), inf-safe."""
    return math.expm1(log_value) if log_value < 700 else math.inf


@dataclass(frozen=True)
class TimingDecision:
    change: Change
    speedup: float  # base / candidate: the ratio of medians, or paired: exp(-robust paired estimate)
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
    worker_pairs: int = 0  # independent worker pairs behind a paired estimate (0: unpaired)
    order_effect: float = 0.0  # base-first minus candidate-first pairs, removed before the checks
    # worker pairs that disagree on the size but every one of them on the direction: a change
    # whose size depends on the process is still a change (``row_judging`` shows it)
    one_way: bool = False

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


@dataclass(frozen=True)
class _Evidence:
    se: float  # measured: Student's t on ``df`` applies
    df: float
    est: PairedEstimate | None  # paired only
    prior_se: float = 0.0  # known from the policy, not measured: the normal quantile applies


def _evidence(base: Sequence[float], cand: Sequence[float], *, base_per_round: int, cand_per_round: int,
              paired: bool, layout: PairLayout | None, process_sd: float, pair_inflation: float = 1.0) -> _Evidence:
    if paired:
        ratios = paired_log_ratios(base, cand, base_per_round=base_per_round, cand_per_round=cand_per_round)
        if not ratios:
            return _Evidence(math.inf, 0.0, None)
        est = paired_estimate(ratios, layout, process_sd, pair_inflation)
        se = float(est.se_measured)
        return _Evidence(se if math.isfinite(se) else math.inf, float(est.df), est, prior_se=float(est.se_prior))
    se, df = _unpaired_se_df(base, cand, base_per_round, cand_per_round)
    # two stored runs are two processes at two times: each run's own offset is in the difference
    return _Evidence(se, df, None, prior_se=math.sqrt(2) * process_sd)


def _precision_and_overlap(ev: _Evidence, base: Sequence[float], cand: Sequence[float], *, base_per_round: int,
                           cand_per_round: int, paired: bool, min_effect: float, noise_z: float,
                           layout: PairLayout | None) -> tuple[Precision, bool]:
    """The row's precision and whether its IQRs overlap, from one set of log samples."""
    mult = floor_multiplier(noise_z, ev.df)
    floor_log = 0.0 if mult == 0 else math.hypot(mult * ev.se, noise_z * ev.prior_se)
    lb, lc = _log_samples(base, cand, base_per_round=base_per_round, cand_per_round=cand_per_round, paired=paired,
                          est=ev.est, layout=layout)
    (bq1, _, bq3), (cq1, _, cq3) = quartiles(lb), quartiles(lc)  # a summary's quartiles, without the rest
    # the shift that would just separate the two IQRs if both kept their (log) widths
    prec = Precision(noise_floor_log=floor_log, iqr_gap_log=((bq3 - bq1) + (cq3 - cq1)) / 2,
                     min_effect_log=math.log1p(min_effect))
    return prec, not (bq3 < cq1 or cq3 < bq1)


def precision(base: Sequence[float], cand: Sequence[float], *, base_per_round: int, cand_per_round: int,
              paired: bool, min_effect: float, noise_z: float, layout: PairLayout | None = None,
              process_sd: float = 0.0, pair_inflation: float = 1.0) -> Precision:
    """The smallest change a row could call. It depends on spreads only, never on the
    difference of the medians, so a schedule that adds rounds until it is small enough
    cannot steer a row towards a verdict."""
    ev = _evidence(base, cand, base_per_round=base_per_round, cand_per_round=cand_per_round, paired=paired,
                   layout=layout, process_sd=process_sd, pair_inflation=pair_inflation)
    return _precision_and_overlap(ev, base, cand, base_per_round=base_per_round, cand_per_round=cand_per_round,
                                  paired=paired, min_effect=min_effect, noise_z=noise_z, layout=layout)[0]


def decide(base: Sequence[float], cand: Sequence[float], *, base_per_round: int, cand_per_round: int,
           min_effect: float, noise_z: float, min_samples: int, paired: bool = False,
           layout: PairLayout | None = None, process_sd: float = 0.0, pair_inflation: float = 1.0,
           base_summary: Summary | None = None, cand_summary: Summary | None = None) -> TimingDecision:
    """``base_summary``/``cand_summary``: the samples' summaries where the caller has them (``Row.summary``)."""
    ev = _evidence(base, cand, base_per_round=base_per_round, cand_per_round=cand_per_round, paired=paired,
                   layout=layout, process_sd=process_sd, pair_inflation=pair_inflation)
    return judge(ev, base, cand, base_summary or summarize(base), cand_summary or summarize(cand), base_per_round=base_per_round,
                 cand_per_round=cand_per_round, paired=paired, layout=layout, min_effect=min_effect,
                 noise_z=noise_z, min_samples=min_samples)


def judge(ev: _Evidence, base: Sequence[float], cand: Sequence[float], b: Summary, c: Summary, *,
          base_per_round: int, cand_per_round: int, paired: bool, layout: PairLayout | None,
          min_effect: float, noise_z: float, min_samples: int) -> TimingDecision:
    """``decide`` from a row's evidence and its samples' summaries ``b``/``c``."""
    prec, overlap = _precision_and_overlap(ev, base, cand, base_per_round=base_per_round,
                                           cand_per_round=cand_per_round, paired=paired, min_effect=min_effect,
                                           noise_z=noise_z, layout=layout)
    agree = 1.0
    one_way = False
    if paired and ev.est is not None:
        # the estimate whose standard error the floor uses (the ratio of pooled medians would
        # mix in where the drift stood when each side ran)
        log_ratio = float(ev.est.effect_log)
        agree = float(ev.est.agreement_p)
    elif paired:
        log_ratio = 0.0
    else:
        log_ratio = math.log(c.median / b.median)
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
    elif agree < AGREEMENT_P and ev.est is not None:  # agreement is measured on an estimate
        why = Why.WORKER_PAIRS_DISAGREE
        one_way = bool(np.all(np.sign(np.atleast_1d(ev.est.cluster_effects)) == np.sign(log_ratio)))
        effects = ", ".join(f"{_rel(float(x)):+.2%}" for x in np.atleast_1d(ev.est.cluster_effects))
        reason = (f"effect {_rel(size):.2%}, but the {ev.est.worker_pairs} worker pairs disagree ({effects}; "
                  f"p = {agree:.1e} under one common effect)")
    else:
        why = Why.CALLED
        reason = (f"{'slower' if log_ratio > 0 else 'faster'}: IQRs disjoint, effect {_rel(size):.2%} "
                  f"clears the minimum effect {min_effect:.2%} and the noise floor {floor:.2%}")
    change = Change.WITHIN_NOISE if why is not Why.CALLED else (Change.SLOWER if log_ratio > 0 else Change.FASTER)
    return TimingDecision(change=change, speedup=math.exp(-log_ratio), effect=math.expm1(log_ratio),
                          base=b, cand=c, iqrs_overlap=overlap, paired=paired, pairs=pairs,
                          noise_floor=floor, detectable=detectable, why=why, reason=reason,
                          worker_pairs=ev.est.worker_pairs if ev.est is not None else 0,
                          order_effect=math.expm1(2 * float(ev.est.order_log)) if ev.est is not None else 0.0,
                          one_way=one_way)
