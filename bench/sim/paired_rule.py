"""The paired rule on arrays of simulated rows that share one layout, for the simulation.

``decide_paired`` is ``tritongate.gate.rule.decide(paired=True)`` for a batch of rows that share
one layout (pairs, order, worker pairs): the same estimate (``robust.estimate``), the same floor
(``rule.floor_multiplier``) and the same conditions; ``tests/bench/test_simulation.py`` checks
that it agrees with ``decide`` row by row. ``decide_before`` is the rule as it was before worker
pairs (mean of the pairs, its plain standard error, no order term, one worker pair), kept to
publish the difference. ``schedule`` replays ``pair.schedule.run_schedule``'s looks on sample
paths drawn to the cap, so an adaptive and a fixed count are judged on the same paths.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from tritongate.gate.robust import estimate, order_signs
from tritongate.gate.rule import AGREEMENT_P, floor_multiplier


@dataclass(frozen=True)
class BatchDecision:
    called: np.ndarray  # bool (R,): every condition held
    effect_log: np.ndarray  # (R,)
    detectable_log: np.ndarray  # (R,): what the row could have called (precision only)

    @property
    def slower(self) -> np.ndarray:
        return self.called & (self.effect_log > 0)

    @property
    def faster(self) -> np.ndarray:
        return self.called & (self.effect_log < 0)


def _iqr_terms(base: np.ndarray, cand: np.ndarray, shift: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(IQRs overlap, IQR gap) of log samples with each pair's level removed; ``shift`` (R, n)
    is added to the base's and taken from the candidate's logs (the order term, halved)."""
    lb, lc = np.log(base), np.log(cand)
    level = (np.median(lb, -1) + np.median(lc, -1)) / 2  # log of a median is the median of logs
    lb = (lb - level[..., None] + shift[..., None]).reshape(len(base), -1)
    lc = (lc - level[..., None] - shift[..., None]).reshape(len(cand), -1)
    bq1, bq3 = np.quantile(lb, [0.25, 0.75], axis=1, method="linear")
    cq1, cq3 = np.quantile(lc, [0.25, 0.75], axis=1, method="linear")
    overlap = ~((bq3 < cq1) | (cq3 < bq1))
    return overlap, ((bq3 - bq1) + (cq3 - cq1)) / 2


def decide_paired(base: np.ndarray, cand: np.ndarray, *, base_first: np.ndarray, worker_pairs: np.ndarray,
                  min_effect: float, noise_z: float, min_samples: int, process_sd: float,
                  pair_inflation: float = 1.0) -> BatchDecision:
    """``base``, ``cand``: (R, n, samples per round) times; the layout is (n,)."""
    d = np.log(np.median(cand, -1)) - np.log(np.median(base, -1))
    est = estimate(d, base_first=base_first, groups=worker_pairs, process_sd=process_sd, inflation=pair_inflation)
    by_df = {df: floor_multiplier(noise_z, df) for df in np.unique(est.df).tolist()}
    mult = np.vectorize(by_df.__getitem__, otypes=[float])(est.df)
    floor = np.zeros(len(d)) if noise_z <= 0 else np.hypot(mult * est.se_measured, noise_z * est.se_prior)
    shift = (est.order_log / 2)[:, None] * order_signs(base_first)[None, :]
    overlap, gap = _iqr_terms(base, cand, shift)
    return _conditions(base, est.effect_log, floor, overlap, gap, est.agreement_p, min_effect, min_samples)


def decide_before(base: np.ndarray, cand: np.ndarray, *, min_effect: float, noise_z: float,
                  min_samples: int) -> BatchDecision:
    """The paired rule before this design: mean of the pair log ratios, stdev / sqrt(n)."""
    d = np.log(np.median(cand, -1)) - np.log(np.median(base, -1))
    n = d.shape[1]
    se = d.std(axis=1, ddof=1) / math.sqrt(n)
    mult = floor_multiplier(noise_z, n - 1)
    overlap, gap = _iqr_terms(base, cand, np.zeros(d.shape))
    return _conditions(base, d.mean(axis=1), mult * se, overlap, gap, np.ones(len(d)), min_effect, min_samples)


def _conditions(base: np.ndarray, effect: np.ndarray, floor: np.ndarray, overlap: np.ndarray, gap: np.ndarray,
                agreement: np.ndarray, min_effect: float, min_samples: int) -> BatchDecision:
    me = math.log1p(min_effect)
    size = np.abs(effect)
    enough = base.shape[1] * base.shape[2] >= min_samples
    called = enough & ~overlap & (size >= me) & (size >= floor) & (agreement >= AGREEMENT_P)
    return BatchDecision(called=called, effect_log=effect, detectable_log=np.maximum(np.maximum(me, floor), gap))


@dataclass(frozen=True)
class ScheduleOutcome:
    pairs: np.ndarray  # (R,) pairs each row ended on
    decision: BatchDecision  # at that count
    unconfirmed: np.ndarray  # called on fewer pairs than a confirmation needs (the cap stopped it)
    reached: np.ndarray  # detectable <= target, or a confirmed call


def schedule(decide_at: Callable[[int], BatchDecision], looks: list[int], *, rows: int, target: float,
             confirm_rounds: int, confirm: bool = True) -> ScheduleOutcome:
    """``run_schedule`` on every row at once: at each look a row stops when it reached its
    target and is not a call on fewer than ``confirm_rounds`` pairs, or is a call on at least
    that many (``confirm`` False: the rule before confirmations); rows still going at the last
    look stop there."""
    stop = np.full(rows, -1)
    called = np.zeros(rows, bool)
    effect = np.zeros(rows)
    detect = np.zeros(rows)
    target_log = math.log1p(target)
    for i, n in enumerate(looks):
        dec = decide_at(n)
        going = stop < 0
        reached = dec.detectable_log <= target_log
        unconf = dec.called & (n < confirm_rounds) if confirm else np.zeros(rows, bool)
        confirmed = dec.called & ~unconf  # a call on the pairs a confirmation needs: more cannot add to it
        ends = going & ((reached & ~unconf) | confirmed | (i == len(looks) - 1))
        stop[ends] = n
        called[ends], effect[ends], detect[ends] = dec.called[ends], dec.effect_log[ends], dec.detectable_log[ends]
    decision = BatchDecision(called=called, effect_log=effect, detectable_log=detect)
    unconfirmed = called & (stop < confirm_rounds) if confirm else np.zeros(rows, bool)
    reached = (called & ~unconfirmed) | (~called & (detect <= target_log))
    return ScheduleOutcome(pairs=stop, decision=decision, unconfirmed=unconfirmed, reached=reached)


def confirmed(first: ScheduleOutcome, again: Callable[[np.ndarray], ScheduleOutcome]) -> ScheduleOutcome:
    """The orchestrator's confirmation of a call: the rows ``first`` calls (on the pairs a
    confirmation needs) are measured again, independently (``again(rows)``: new sample paths
    for those rows on fresh worker pairs, the schedule anew), and stand only if that calls them
    the same way; the others become UNCONFIRMED."""
    firm = first.decision.called & ~first.unconfirmed
    idx = np.flatnonzero(firm)
    if not len(idx):
        return first
    second = again(idx)
    agree = second.decision.called & ~second.unconfirmed & \
        (np.sign(second.decision.effect_log) == np.sign(first.decision.effect_log[idx]))
    called = first.decision.called.copy()
    unconfirmed = first.unconfirmed.copy()
    unconfirmed[idx[~agree]] = True
    effect = first.decision.effect_log.copy()
    effect[idx] = second.decision.effect_log
    pairs = first.pairs.copy()
    pairs[idx] += second.pairs
    reached = first.reached.copy()
    reached[idx] = agree
    return ScheduleOutcome(pairs=pairs, decision=BatchDecision(called=called, effect_log=effect,
                                                               detectable_log=first.decision.detectable_log),
                           unconfirmed=unconfirmed, reached=reached)
