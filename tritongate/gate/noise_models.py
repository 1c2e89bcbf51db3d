"""Noise models for paired rows: sample paths of base and candidate times, many rows at once.

Every model has the iid part: per round and side a placement offset (``round_sd``) and per
sample a small jitter, plus a drift both sides share (a random walk, half of each step between
the two rounds of a pair: it cancels in the pair only to first order). On top, each model plants
one pattern the H200 shows or the audit of the rule found, *per worker process*: a process is
one side of one worker pair, and a fresh worker pair brings two fresh processes.

- ``offsets``: a persistent offset per process, N(0, ``tau``) (the H200 shared-inputs series:
  worker pairs differ by SD 0.24 % beyond their own noise, up to -0.58 %);
- ``two_state``: each process sits in one of two speed states ``amp`` apart, drawn at random
  when it starts and left with probability ``1 / dwell`` before each of its rounds;
- ``step``: one process of the row (a random side, from a random pair on) runs ``amp`` slower
  for the rest of its life;
- ``drift``: one process of the row (a random side) slows by ``amp`` per pair from its start;
- ``serial``: each process's level wanders (AR(1) per pair, correlation ``rho``, stationary
  SD ``sd``), started afresh with each process: the H200 series' pairs of one worker pair are
  correlated at lags 1-10 (0.1-0.3), so a 10-20 pair mean varies 2-2.3x more than their spread;
- ``outliers``: a round is ``amp`` times slower with probability ``p`` (one side, one round);
- ``order``: the side timed second in a pair runs ``amp`` slower;
- ``few_pairs``: iid noise, but the budget stops every row at ``cap`` pairs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class NoiseModel:
    name: str
    kind: str  # iid | offsets | two_state | step | drift | outliers | order | few_pairs
    params: dict[str, float] = field(default_factory=dict)
    worker_level: bool = False  # a pattern that lives with a worker process (the 1e-3 goal's models)
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "params": dict(self.params), "worker_level": self.worker_level,
                "note": self.note}


# At the offsets the H200 data shows (bench/results/2026-11-30_h200_shared_inputs.json), and
# the patterns of the audit of issue 23.
MODELS = (
    NoiseModel("iid", "iid"),
    NoiseModel("offsets 0.2 % per process", "offsets", {"tau": 0.002}, True,
               "pair offset SD 0.28 %: the H200 series' 0.24 % between worker pairs, their max |offset| 0.58 %"),
    NoiseModel("offsets 0.4 % per process", "offsets", {"tau": 0.004}, True, "twice the H200's"),
    NoiseModel("two-state 0.6 %, dwell 10 rounds", "two_state", {"amp": 0.006, "dwell": 10}, True,
               "states as far apart as the H200's largest worker offset"),
    NoiseModel("two-state 0.6 %, dwell 50 rounds", "two_state", {"amp": 0.006, "dwell": 50}, True),
    NoiseModel("two-state 1.4 %, dwell 10 rounds", "two_state", {"amp": 0.014, "dwell": 10}, True,
               "rmsnorm 16x8192 on the H200 (1.755 / 1.780 us): states beyond the 1 % minimum effect"),
    NoiseModel("two-state 1.4 %, dwell 50 rounds", "two_state", {"amp": 0.014, "dwell": 50}, True,
               "as above, states lasting most of a row"),
    NoiseModel("step +1.5 % on one worker", "step", {"amp": 0.015}, True),
    NoiseModel("drift +0.05 %/pair on one worker", "drift", {"amp": 0.0005}, True),
    NoiseModel("serial correlation, AR(1) 0.9, SD 0.3 %", "serial", {"rho": 0.9, "sd": 0.003}, True,
               "slow drift within each process, as the H200 series show"),
    NoiseModel("outlier rounds 3x, 2 %", "outliers", {"amp": 3.0, "p": 0.02}),
    NoiseModel("order effect 1 %", "order", {"amp": 0.01}),
    NoiseModel("few pairs (budget: 6)", "few_pairs", {"cap": 6}),
)


def sample_paths(model: NoiseModel, *, rows: int, pairs: int, per_round: int, pair_sd: float, shift: float,
                 base_first: np.ndarray, worker_pairs: np.ndarray, rng: np.random.Generator,
                 drift_sd: float = 0.002) -> tuple[np.ndarray, np.ndarray]:
    """(base, cand) times of shape (rows, pairs, per_round); the candidate ``shift`` slower.
    ``pair_sd``: the SD of a pair's log ratio from the iid part (a row's own noise level)."""
    r, n, s = rows, pairs, per_round
    round_sd, within_sd = pair_sd / np.sqrt(2) * 0.9, pair_sd * 0.5
    bf = np.asarray(base_first, bool)
    wp = np.asarray(worker_pairs, int)
    logs = {}
    steps = rng.normal(0, drift_sd / 2, (r, n, 2))
    walk = np.cumsum(steps.reshape(r, 2 * n), axis=1).reshape(r, n, 2)  # level at each pair's 1st/2nd round
    for side in ("base", "cand"):
        first = bf if side == "base" else ~bf
        level = np.where(first[None, :], walk[..., 0], walk[..., 1])
        x = level + rng.normal(0, round_sd, (r, n))
        logs[side] = x[..., None] + rng.normal(0, within_sd, (r, n, s))
    lb, lc = logs["base"], logs["cand"]
    p = model.params
    kind = model.kind
    if kind == "offsets":
        k = int(wp.max()) + 1
        for side in (lb, lc):
            off = rng.normal(0, p["tau"], (r, k))
            side += off[:, wp][..., None]
    elif kind == "two_state":
        for side in (lb, lc):
            side += p["amp"] * _two_state(rng, r, wp, 1 / p["dwell"])[..., None]
    elif kind == "step":
        at = rng.integers(0, n, r)
        on_cand = rng.random(r) < 0.5
        idx = np.arange(n)[None, :]
        same = wp[None, :] == wp[at][:, None]
        hit = (idx >= at[:, None]) & same
        lb += np.where(~on_cand[:, None] & hit, p["amp"], 0.0)[..., None]
        lc += np.where(on_cand[:, None] & hit, p["amp"], 0.0)[..., None]
    elif kind == "drift":
        age = np.arange(n) - np.array([np.flatnonzero(wp == g)[0] for g in wp])  # pairs since its start
        on_cand = rng.random(r) < 0.5
        which = wp[rng.integers(0, n, r)]  # the drifting process: its worker pair, by share of pairs
        ramp = np.where(wp[None, :] == which[:, None], p["amp"] * age[None, :], 0.0)
        lb += np.where(~on_cand[:, None], ramp, 0.0)[..., None]
        lc += np.where(on_cand[:, None], ramp, 0.0)[..., None]
    elif kind == "serial":
        fresh = np.r_[True, wp[1:] != wp[:-1]]
        for side in (lb, lc):
            x = rng.normal(0, p["sd"], r)
            innov = p["sd"] * np.sqrt(1 - p["rho"] ** 2)
            for i in range(n):
                x = rng.normal(0, p["sd"], r) if fresh[i] else p["rho"] * x + rng.normal(0, innov, r)
                side[:, i, :] += x[:, None]
    elif kind == "outliers":
        for side in (lb, lc):
            side += np.where(rng.random((r, n)) < p["p"], np.log(p["amp"]), 0.0)[..., None]
    elif kind == "order":
        lb += np.where(~bf, p["amp"], 0.0)[None, :, None]  # the base timed second
        lc += np.where(bf, p["amp"], 0.0)[None, :, None]
    lc += np.log1p(shift)
    return np.exp(lb), np.exp(lc)


def _two_state(rng: np.random.Generator, rows: int, wp: np.ndarray, switch: float) -> np.ndarray:
    """0/1 state per (row, pair) of one side: a fresh process (a new worker pair) draws its
    state afresh, then leaves it with probability ``switch`` before each round."""
    n = len(wp)
    flips = (rng.random((rows, n)) < switch).astype(int)
    fresh = np.r_[True, wp[1:] != wp[:-1]]
    init = rng.integers(0, 2, (rows, n))
    flips = np.where(fresh[None, :], 0, flips)
    csum = np.cumsum(flips, axis=1)
    start_of = np.maximum.accumulate(np.where(fresh, np.arange(n), 0))
    since = csum - csum[:, start_of]
    return (init[:, start_of] + since) % 2
