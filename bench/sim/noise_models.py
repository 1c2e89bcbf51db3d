"""Noise models for paired rows: sample paths of base and candidate times, many rows at once.

Every model has the iid part: per round and side a placement offset (``round_sd``) and per
sample a small jitter, plus a drift both sides share (a random walk, half of each step between
the two rounds of a pair: it cancels in the pair only to first order). On top, each model plants
one pattern the H200 shows or the audit of the rule found, *per worker process*. A process is
one side of one worker pair of the run's pool, and it lives for the whole run: the shipped GPU
schedule keeps 8 measuring worker pairs (``GPU_WORKER_PAIRS``; a row's segments rotate over them,
each row starts on the next) and 8 more that confirm calls (``bench.sim.simulate.row_layout``). So what lives
with a process is shared by every pair it measures: the segments of one row on one pool pair,
and the rows that follow on it. ``sample_run`` draws whole runs (rows in the order the run
measures them, each process's pairs in its own time order); ``sample_paths`` draws rows that
share no process with each other (a call's confirmation: given the run's persistent offsets).

- ``offsets``: a persistent offset per process, N(0, ``tau``) (the H200 shared-inputs series:
  worker pairs differ by SD 0.24 % beyond their own noise, up to -0.58 %);
- ``two_state``: each process sits in one of two speed states ``amp`` apart, drawn at random
  when it is first used and left with probability ``1 / dwell`` before each of its own pairs
  (its state carries over from one row to its next);
- ``step``: one process of the run (a random side, by share of pairs) runs ``amp`` slower from
  a random pair of the run on, to its end (in a confirmation's rows: none);
- ``drift``: one process of the run (a random side, by share of pairs) slows by ``amp`` per pair
  from the first pair it measures of each row (a ramp that restarts with each row: one that
  built up over a run would be a step by its middle, which ``step`` covers);
- ``serial``: each process's level wanders, AR(1) over its own pairs (correlation ``rho``,
  stationary SD ``sd``), carried across its rows: the H200 series' pairs of one worker pair are
  correlated at lags 1-10 (0.1-0.3), so a 10-20 pair mean varies 2-2.3x more than their spread;
- ``outliers``: a round is ``amp`` times slower with probability ``p`` (one side, one round);
- ``order``: the side timed second in a pair runs ``amp`` slower;
- ``few_pairs``: iid noise, but the budget stops every row at ``cap`` pairs.

These models are drawn to the 80-pair cap for every row, and what lives with a process evolves
along those paths: a ``two_state`` or ``serial`` process (and where a run's ``step`` begins) is
aged as if every row it measures ran to the cap, though most rows stop at 20-40 pairs.

Launch states (``STATE_MODELS``; ``bench/results/2026-12-05_h100_two_speeds.md``: kernels of
1-2 us run 0.13-0.26 us a launch, 7-23 %, slower once their process has made its third CUDA
graph, and stay there) are aged by the pairs a process really measures: a process's state is a
two-level Markov chain over its own rounds (one round a pair it measures), drawn row by row as
the run goes (``bench.sim.simulate.simulate_runs_aged``: a row's pairs beyond those its schedule
measured never age its processes). Its level is L, or L (1 + ``s``) in the other state:

- ``state_symmetric``: every process of both builds starts at L and switches for good after a
  geometric number of its own rounds (mean ``mean_rounds``; at least one), as fresh processes
  did before the tool settled them;
- ``state_one_sided``: only the candidate's processes ever reach L (1 + ``s``): from their first
  round (``mean_rounds`` 0) or after a geometric number of rounds; the base's stay at L (what a
  build that triggers the state would do: a real difference the candidate causes);
- ``state_switching``: every process starts at L and flips between the two levels after each of
  its rounds with probability ``p``.
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
# the structured patterns real workers show (process offsets, speed states, drift, outliers).
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


# Launch states at the measured sizes (0.13-0.26 us on kernels of 1-2 us: 7-23 %).
STATE_SIZES = (0.07, 0.15, 0.23)
STATE_KINDS = ("state_symmetric", "state_one_sided", "state_switching")
STATE_MODELS = (
    NoiseModel("no launch state (baseline)", "state_switching", {"s": 0.0, "p": 0.0}, False,
               "the same runs, rows and rule with no state: what the state models are compared with"),
    *(NoiseModel(f"symmetric state +{s:.0%}, switch after ~3 rounds", "state_symmetric",
                 {"s": s, "mean_rounds": 3.0}, True,
                 "every process of both builds switches from L to L(1+s) for good after a geometric number of "
                 "its own rounds (mean 3): fresh processes before the tool settled them") for s in STATE_SIZES),
    *(NoiseModel(f"one-sided state +{s:.0%} on the candidate, from the start", "state_one_sided",
                 {"s": s, "mean_rounds": 0.0}, True,
                 "every candidate process at L(1+s) from its first round, every base process at L") for s in STATE_SIZES),
    *(NoiseModel(f"one-sided state +{s:.0%} on the candidate, after ~3 rounds", "state_one_sided",
                 {"s": s, "mean_rounds": 3.0}, True,
                 "every candidate process switches to L(1+s) after a geometric number of its rounds (mean 3); "
                 "the base's stay at L") for s in STATE_SIZES),
    *(NoiseModel(f"switching state +{s:.0%}, p 1 % a round", "state_switching", {"s": s, "p": 0.01}, True,
                 "every process starts at L and flips between L and L(1+s) after each of its rounds with "
                 "probability 1 %") for s in STATE_SIZES),
    NoiseModel("switching state +15%, p 0.1 % a round", "state_switching", {"s": 0.15, "p": 0.001}, True,
               "rarer flips: a flipped process mostly stays flipped for the rest of a run"),
)
AGED_KINDS = (*STATE_KINDS, "two_state")  # the kinds ``simulate_runs_aged`` ages by measured pairs


def _chain(model: NoiseModel) -> tuple[np.ndarray, np.ndarray, float]:
    """The process-state chain of an aged model: (up, down) per side (base, candidate): the
    probability of leaving state 0 / state 1 after one of the process's rounds, and the log
    offset of state 1."""
    p, kind = model.params, model.kind
    q = 1 / p["mean_rounds"] if p.get("mean_rounds", 0) > 0 else 0.0
    if kind == "state_symmetric":
        return np.array([q, q]), np.zeros(2), float(np.log1p(p["s"]))
    if kind == "state_one_sided":
        return np.array([0.0, q]), np.zeros(2), float(np.log1p(p["s"]))
    if kind == "state_switching":
        return np.full(2, p["p"]), np.full(2, p["p"]), float(np.log1p(p["s"]))
    if kind == "two_state":  # the old model on measured ages (a comparison): states drawn at random
        return np.full(2, 1 / p["dwell"]), np.full(2, 1 / p["dwell"]), float(p["amp"])
    raise ValueError(f"{model.name}: not a process-state model ({kind})")


def initial_states(model: NoiseModel, batch: int, processes: int, rng: np.random.Generator) -> np.ndarray:
    """(batch, processes, 2) bool: the state of each process (base, candidate) at its first round."""
    st = np.zeros((batch, processes, 2), bool)
    if model.kind == "state_one_sided" and model.params.get("mean_rounds", 0) <= 0:
        st[..., 1] = True  # the candidate's processes are in it from the start
    elif model.kind == "two_state":
        st[:] = rng.integers(0, 2, st.shape).astype(bool)
    return st


def state_paths(model: NoiseModel, states: np.ndarray, labels: np.ndarray,
                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Each process's state at each of T pairs measured in this order by the processes ``labels``
    (T,) names, each going on from ``states`` (batch, processes, 2): the state of its next round.
    Returns (at, after), both (batch, T, 2) bool: the state of the base's and the candidate's
    process in the pair, and the state of that process's next round. ``states`` is not changed:
    ``advance`` moves it on by the pairs a row really measured."""
    up, down, _ = _chain(model)
    labels = np.asarray(labels, int)
    cur = states.copy()
    at = np.empty((len(states), len(labels), 2), bool)
    after = np.empty_like(at)
    u = rng.random(at.shape)
    for t, k in enumerate(labels):
        s = cur[:, k, :]
        at[:, t] = s
        cur[:, k, :] = s ^ (u[:, t] < np.where(s, down, up))
        after[:, t] = cur[:, k, :]
    return at, after


def advance(states: np.ndarray, ages: np.ndarray, labels: np.ndarray, after: np.ndarray, used: np.ndarray) -> None:
    """Age the processes by the first ``used`` (batch,) pairs of a row (``labels``, and ``after``
    from ``state_paths``), in place: each process's state becomes the one after its last pair
    among them, its age (``ages``, (batch, processes, 2) rounds measured) grows by its pairs."""
    used = np.asarray(used, int)
    for t, k in enumerate(np.asarray(labels, int)):
        m = used > t
        states[m, k, :] = after[m, t]
        ages[m, k, :] += 1


def state_logs(model: NoiseModel, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The log offsets (base, candidate), each (batch, T), of the states ``at``."""
    level = _chain(model)[2]
    return level * at[..., 0], level * at[..., 1]


def sample_paths(model: NoiseModel, *, rows: int, pairs: int, per_round: int, pair_sd: float | np.ndarray,
                 shift: float, base_first: np.ndarray, worker_pairs: np.ndarray, rng: np.random.Generator,
                 drift_sd: float = 0.002, offsets: np.ndarray | None = None,
                 one_process: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(base, cand) times of shape (rows, pairs, per_round) of rows that share no process; the
    candidate ``shift`` slower. ``pair_sd``: the SD of a pair's log ratio from the iid part (a
    row's own noise level; one for all rows or one per row). ``worker_pairs``: the layout, (pairs,)
    labels. ``offsets``: (rows, labels, 2) process offsets to use (``offsets`` model; default
    fresh ones). ``one_process``: plant ``step`` / ``drift`` (False: the rows' processes are not
    the run's stepped or drifting one)."""
    wp = np.asarray(worker_pairs, int)
    lb, lc = _iid(rows, pairs, per_round, pair_sd, np.asarray(base_first, bool), rng, drift_sd)
    add = _process_logs(model, wp, rows, rng, offsets=offsets, row_len=pairs, one_process=one_process)
    lb += add[0][..., None]
    lc += add[1][..., None]
    return _finish(model, lb, lc, np.asarray(base_first, bool), shift, rng)


def sample_run(model: NoiseModel, *, runs: int, layout: np.ndarray, per_round: int, pair_sd: float | np.ndarray,
               shift: float, base_first: np.ndarray, processes: int, rng: np.random.Generator,
               drift_sd: float = 0.002) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``runs`` runs of J rows each, ``layout`` (J, pairs): the pool pair measuring each pair of
    each row of a run, in the order the run measures them. Returns (base, cand) of shape
    (runs * J, pairs, per_round), run-major, and the ``offsets`` model's (runs, ``processes``, 2)
    process offsets (labels ``processes`` counts: the confirming pool pairs too), else None.
    ``pair_sd``: one for all rows or one per row of a run (J,)."""
    layout = np.asarray(layout, int)
    j, n = layout.shape
    sd = np.tile(np.broadcast_to(np.asarray(pair_sd, float), (j,)), runs)
    bf = np.asarray(base_first, bool)
    lb, lc = _iid(runs * j, n, per_round, sd, bf, rng, drift_sd)
    off = rng.normal(0, model.params["tau"], (runs, processes, 2)) if model.kind == "offsets" else None
    add = _process_logs(model, layout.ravel(), runs, rng, offsets=off, row_len=n, one_process=True)
    lb += add[0].reshape(runs * j, n)[..., None]
    lc += add[1].reshape(runs * j, n)[..., None]
    base, cand = _finish(model, lb, lc, bf, shift, rng)
    return base, cand, off


def _iid(rows: int, n: int, s: int, pair_sd: float | np.ndarray, bf: np.ndarray, rng: np.random.Generator,
         drift_sd: float) -> tuple[np.ndarray, np.ndarray]:
    sd = np.broadcast_to(np.asarray(pair_sd, float), (rows,))[:, None]
    round_sd, within_sd = sd / np.sqrt(2) * 0.9, sd * 0.5
    steps = rng.normal(0, drift_sd / 2, (rows, n, 2))
    walk = np.cumsum(steps.reshape(rows, 2 * n), axis=1).reshape(rows, n, 2)  # level at each pair's 1st/2nd round
    logs = []
    for first in (bf, ~bf):  # base, cand
        level = np.where(first[None, :], walk[..., 0], walk[..., 1])
        x = level + rng.standard_normal((rows, n)) * round_sd
        logs.append(x[..., None] + rng.standard_normal((rows, n, s)) * within_sd[..., None])
    return logs[0], logs[1]


def _process_logs(model: NoiseModel, labels: np.ndarray, batch: int, rng: np.random.Generator, *,
                  offsets: np.ndarray | None, row_len: int, one_process: bool) -> np.ndarray:
    """(2, batch, T) log offsets of the base's and the candidate's processes at each of T pairs
    measured in time order by the processes ``labels`` (T,) names; the batch's members are
    independent (runs, or rows that share no process)."""
    t_len = len(labels)
    p, kind = model.params, model.kind
    add = np.zeros((2, batch, t_len))
    masks = [labels == k for k in np.unique(labels)]
    if kind == "offsets":
        off = offsets if offsets is not None else rng.normal(0, p["tau"], (batch, int(labels.max()) + 1, 2))
        add += np.moveaxis(off[:, labels, :], -1, 0)
    elif kind == "two_state":
        for side in range(2):
            flips = rng.random((batch, t_len)) < 1 / p["dwell"]
            for m in masks:
                f = flips[:, m].astype(np.int64)
                f[:, 0] = 0  # a process's first pair is in the state it was drawn in
                init = rng.integers(0, 2, (batch, 1))
                add[side][:, m] = p["amp"] * ((init + np.cumsum(f, axis=1)) % 2)
    elif kind == "serial":
        from scipy.signal import lfilter

        for side in range(2):
            for m in masks:
                e = rng.normal(0, p["sd"] * np.sqrt(1 - p["rho"] ** 2), (batch, int(m.sum())))
                e[:, 0] = rng.normal(0, p["sd"], batch)  # a stationary start
                add[side][:, m] = lfilter([1.0], [1.0, -p["rho"]], e, axis=1)
    elif kind in ("step", "drift") and one_process:
        t = np.arange(t_len)
        at = rng.integers(0, t_len, batch)
        which = labels[at]  # the process: by share of pairs
        on_cand = rng.random(batch) < 0.5
        mine = labels[None, :] == which[:, None]
        if kind == "step":
            shape = np.where(mine & (t[None, :] >= at[:, None]), p["amp"], 0.0)
        else:
            key = (t // row_len) * (int(labels.max()) + 1) + labels
            _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
            age = t - first[inverse.ravel()]  # pairs since the process's first pair of this row
            shape = np.where(mine, p["amp"] * age[None, :], 0.0)
        add[0] += np.where(~on_cand[:, None], shape, 0.0)
        add[1] += np.where(on_cand[:, None], shape, 0.0)
    return add


def _finish(model: NoiseModel, lb: np.ndarray, lc: np.ndarray, bf: np.ndarray, shift: float,
            rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The per-round patterns (outlier rounds, order effects) and the shift; times from logs."""
    p = model.params
    if model.kind == "outliers":
        for side in (lb, lc):
            side += np.where(rng.random(side.shape[:2]) < p["p"], np.log(p["amp"]), 0.0)[..., None]
    elif model.kind == "order":
        lb += np.where(~bf, p["amp"], 0.0)[None, :, None]  # the base timed second
        lc += np.where(bf, p["amp"], 0.0)[None, :, None]
    lc += np.log1p(shift)
    return np.exp(lb), np.exp(lc)
