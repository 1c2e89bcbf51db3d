"""Synthetic base/candidate runs at a given noise level, to measure the gate's own
false-alarm rate and power without a GPU.

Noise model (H200, graph timer, per-round placement shift): every round gets its own
placement offset, every sample its own within-round noise. A row's pooled relative IQR r
sets sigma_total = r / 1.349, of which the round offsets carry the larger part.

``simulate`` draws two stored runs (unpaired) and gates them through ``run_gate``. Paired
runs, with the noise that lives with a worker process (offsets, speed states, steps, drift),
outlier rounds, order effects and budgets, are drawn many rows at a time by
``bench.sim.noise_models`` and judged by ``bench.sim.paired_rule`` (the paired rule and
schedule, vectorised) on the layout the orchestrator gives a GPU run (``row_layout``,
``confirm_layout``: ``tests/gate/test_simulate_layout.py`` holds them to a real paired run's
recorded worker pairs): ``simulate_runs`` and ``simulate_paired_models`` are the entry points.
``simulate_runs_aged`` draws the launch-state models row by row instead, so that a process ages
only by the pairs the schedule had it measure (``simulate_runs`` draws every row to the cap, and
what lives with a process evolves along all of it).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np

from bench.sim.paired_rule import BatchDecision, ScheduleOutcome, confirmed, decide_paired, schedule
from tritongate.gate.policy import GatePolicy
from tritongate.gate.verdict import GateResult, run_gate
from tritongate.pair.request import default_pool_size, default_schedule
from tritongate.pair.schedule import PairSchedule
from tritongate.rundir import Run
from tritongate.schema import MeasurementInfo, Row, RunStatus

if TYPE_CHECKING:
    from bench.sim.noise_models import NoiseModel

# Pooled relative IQRs of graph-timer rows measured on an H200: add 4K 0.25 %, softmax and
# add 1M 0.5-0.7 %, matmuls and event-noisy rows 1-2.4 % (bench/results, verdict probe).
H200_REL_IQRS = (0.0025, 0.0049, 0.0054, 0.0060, 0.0063, 0.0074, 0.0105, 0.0139, 0.0241)
GRAPH_TIMER_REL_IQR = 0.006  # softmax 4096², a typical graph-timer row

IDENTITY = {"device": "simulated", "backend": "cuda", "timer": "cuda-graph",
            "gpu_state_before": {"driver": "sim"}, "codegen_env": {}, "measure_config": {"l2": "warm"}}


def draw(rng: random.Random, median: float, rel_iqr: float, *, rounds: int = 5,
         per_round: int = 5) -> tuple[float, ...]:
    sigma = rel_iqr / 1.349
    round_sd, within_sd = 0.85 * sigma, 0.5 * sigma
    out = []
    for _ in range(rounds):
        offset = rng.gauss(0, round_sd)
        out += [median * (1 + offset) * (1 + rng.gauss(0, within_sd)) for _ in range(per_round)]
    return tuple(out)


def synthetic_run(rows: Sequence[Row], mode: str, name: str = "") -> Run:
    return Run(path=Path(f"/simulated/{name or mode}"), status=RunStatus.COMPLETE, identity=IDENTITY,
               rows=tuple(rows), mode=mode)


def simulate(*, rows: int, shift: float, rel_iqrs: Sequence[float], seed: int,
             policy: GatePolicy | None = None, rounds: int = 5, per_round: int = 5) -> GateResult:
    """Gate ``rows`` synthetic rows whose candidate is slower by ``shift`` (0 for A/A)."""
    rng = random.Random(seed)
    info = MeasurementInfo(launches_per_sample=20, samples_per_round=per_round, warmup_calls=50, l2="warm")
    base, cand = [], []
    for i in range(rows):
        r = rel_iqrs[i % len(rel_iqrs)]
        median = math.exp(rng.uniform(math.log(1.0), math.log(500.0)))  # 1 µs .. 500 µs
        for out, m in ((base, median), (cand, median * (1 + shift))):
            out.append(Row(op="sim", case=f"c{i}", dtype="float16", timer="cuda-graph",
                           samples=draw(rng, m, r, rounds=rounds, per_round=per_round), measurement=info))
    return run_gate(synthetic_run(base, "record"), synthetic_run(cand, "replay"), policy or GatePolicy())


def pool_pairs(sched: PairSchedule) -> int:
    """Measuring worker pairs a GPU run keeps (``pair.request.default_pool_size``); as many more confirm."""
    return default_pool_size(sched, "cuda")


def row_layout(sched: PairSchedule, pool: int, row: int, pairs: int) -> np.ndarray:
    """The pool pair (its index: the layout's label) that measures each of the first ``pairs``
    pairs of the run's ``row``-th row: the row starts on pool pair ``row % pool``, and each fresh
    worker pair of the schedule (``worker_pair_starts``) is the pool's next one."""
    return (row + np.array(sched.worker_pair_of(pairs), int)) % pool


def confirm_layout(sched: PairSchedule, pool: int, last: int, pairs: int) -> np.ndarray:
    """The same for a call's confirmation, begun after the row's first measurement ended on pool
    pair ``last``: on the confirming pairs (``pool`` .. ``2 pool - 1``), from ``last``'s twin on."""
    return pool + (last + np.array(sched.worker_pair_of(pairs), int)) % pool


@dataclass(frozen=True)
class RunOutcomes:
    """Rows of simulated runs (run-major), judged four ways on the same sample paths."""

    adaptive: ScheduleOutcome  # the shipped schedule, calls confirmed on the confirming pairs
    schedule_only: ScheduleOutcome  # the same, unconfirmed
    fixed: ScheduleOutcome  # the rule on the first ``fixed`` pairs, calls confirmed (the same way, on as many)
    fixed_only: ScheduleOutcome  # the same, unconfirmed


def simulate_runs(model: "NoiseModel", *, runs: int, rows_per_run: int, pair_sd: float | Sequence[float],
                  shift: float, seed: int, policy: GatePolicy | None = None, fixed: int = 20,
                  per_round: int = 5, pool: int | None = None) -> RunOutcomes:
    """``runs`` GPU paired runs of ``rows_per_run`` rows each (``pair_sd``: one, or one per row of a
    run), measured on the shipped layout (``row_layout``; processes persist through a run) and
    judged by the shipped rule and schedule (``default_schedule('cuda', per_round)``), each call
    measured again on the confirming pairs (``confirm_layout``) and standing only if that calls
    it the same way. ``pool``: measuring pool pairs other than the shipped (a comparison)."""
    from bench.sim.noise_models import sample_run

    policy = policy or GatePolicy()
    sched = default_schedule("cuda", per_round)
    pool = pool or pool_pairs(sched)
    cap = int(model.params.get("cap", sched.max_rounds))
    looks = [n for n in sched.looks() if n < cap] + [cap]
    layout = np.stack([row_layout(sched, pool, j, cap) for j in range(rows_per_run)])
    bf = np.arange(cap) % 2 == 0  # the orchestrator's pair i: base first when i is even
    rng = np.random.default_rng(seed)
    base, cand, offsets = sample_run(model, runs=runs, layout=layout, per_round=per_round, pair_sd=pair_sd,
                                     shift=shift, base_first=bf, processes=2 * pool, rng=rng)
    labels = np.tile(layout, (runs, 1))
    sd = np.tile(np.broadcast_to(np.asarray(pair_sd, float), (rows_per_run,)), runs)
    judge = dict(rows_per_run=rows_per_run, policy=policy, sched=sched, pool=pool, cap=cap, rng=rng,
                 offsets=offsets, sd=sd, model=model, per_round=per_round, shift=shift)
    first = _schedule(base, cand, labels, bf, looks, policy, sched)
    fix = [min(fixed, cap)]
    first_fixed = _schedule(base, cand, labels, bf, fix, policy, sched)
    return RunOutcomes(adaptive=confirmed(first, lambda idx: _confirm(idx, first, looks, labels, **judge)),
                       schedule_only=first,
                       fixed=confirmed(first_fixed, lambda idx: _confirm(idx, first_fixed, fix, labels, **judge)),
                       fixed_only=first_fixed)


def _decide(base: np.ndarray, cand: np.ndarray, labels: np.ndarray, bf: np.ndarray, n: int,
            policy: GatePolicy) -> BatchDecision:
    """The rule on each row's first ``n`` pairs, rows grouped by their layout (its labels)."""
    uniq, inverse = np.unique(labels[:, :n], axis=0, return_inverse=True)
    inverse = inverse.ravel()
    called, effect, detect = np.zeros(len(base), bool), np.zeros(len(base)), np.zeros(len(base))
    for g, wp in enumerate(uniq):
        idx = inverse == g
        d = decide_paired(base[idx, :n], cand[idx, :n], base_first=bf[:n], worker_pairs=wp,
                          min_effect=policy.min_effect, noise_z=policy.noise_z, min_samples=policy.min_samples,
                          process_sd=policy.process_sd, pair_inflation=policy.pair_inflation)
        called[idx], effect[idx], detect[idx] = d.called, d.effect_log, d.detectable_log
    return BatchDecision(called=called, effect_log=effect, detectable_log=detect)


def _schedule(base: np.ndarray, cand: np.ndarray, labels: np.ndarray, bf: np.ndarray, looks: list[int],
              policy: GatePolicy, sched: PairSchedule) -> ScheduleOutcome:
    return schedule(lambda n: _decide(base, cand, labels, bf, n, policy), looks, rows=len(base),
                    target=policy.min_effect, confirm_rounds=sched.confirm_rounds)


def _confirm(idx: np.ndarray, first: ScheduleOutcome, looks: list[int], labels: np.ndarray, *,
             rows_per_run: int, policy: GatePolicy, sched: PairSchedule, pool: int, cap: int,
             rng: np.random.Generator, offsets: np.ndarray | None, sd: np.ndarray, model: "NoiseModel",
             per_round: int, shift: float) -> ScheduleOutcome:
    """The confirmations of rows ``idx``: fresh paths on the confirming pairs, from the twin of
    the pool pair each row's measurement ended on, its pairs continuing the row's alternation;
    the run's persistent offsets apply, its stepped or drifting process (a measuring one) does not."""
    from bench.sim.noise_models import sample_paths

    start = first.pairs[idx]
    last = labels[idx, start - 1]
    conf = np.stack([confirm_layout(sched, pool, int(k), cap) for k in last])
    n = len(idx)
    pairs, unconfirmed, reached = np.zeros(n, int), np.zeros(n, bool), np.zeros(n, bool)
    called, effect, detect = np.zeros(n, bool), np.zeros(n), np.zeros(n)
    for parity in (0, 1):
        sel = start % 2 == parity
        if not sel.any():
            continue
        b_first = (parity + np.arange(cap)) % 2 == 0  # the orchestrator's pair start + i
        rows = idx[sel]
        base = np.empty((len(rows), cap, per_round))
        cand = np.empty_like(base)
        for k in np.unique(last[sel]):
            mine = last[sel] == k
            off = None if offsets is None else offsets[rows[mine] // rows_per_run]
            base[mine], cand[mine] = sample_paths(
                model, rows=int(mine.sum()), pairs=cap, per_round=per_round, pair_sd=sd[rows[mine]], shift=shift,
                base_first=b_first, worker_pairs=confirm_layout(sched, pool, int(k), cap), rng=rng, offsets=off,
                one_process=False)
        part = _schedule(base, cand, conf[sel], b_first, looks, policy, sched)
        pairs[sel], unconfirmed[sel], reached[sel] = part.pairs, part.unconfirmed, part.reached
        called[sel], effect[sel] = part.decision.called, part.decision.effect_log
        detect[sel] = part.decision.detectable_log
    return ScheduleOutcome(pairs=pairs, decision=BatchDecision(called=called, effect_log=effect, detectable_log=detect),
                           unconfirmed=unconfirmed, reached=reached)


def simulate_paired_models(model: "NoiseModel", *, rows: int, pair_sd: float, shift: float, seed: int,
                           policy: GatePolicy | None = None, fixed: int | None = None,
                           confirm: bool = True, rows_per_run: int = 34) -> ScheduleOutcome:
    """``rows`` paired rows of ``model`` in runs of ``rows_per_run`` (a PR check's 34), judged by
    the shipped rule under the shipped GPU schedule and layout (``simulate_runs``), calls
    confirmed (``confirm``); ``fixed``: on that many pairs instead, unconfirmed (the same sample
    paths for the same seed)."""
    runs = -(-rows // rows_per_run)
    out = simulate_runs(model, runs=runs, rows_per_run=rows_per_run, pair_sd=pair_sd, shift=shift, seed=seed,
                        policy=policy, fixed=fixed or 20)
    pick = out.fixed_only if fixed else out.adaptive if confirm else out.schedule_only
    return ScheduleOutcome(pairs=pick.pairs[:rows], unconfirmed=pick.unconfirmed[:rows], reached=pick.reached[:rows],
                           decision=BatchDecision(called=pick.decision.called[:rows],
                                                  effect_log=pick.decision.effect_log[:rows],
                                                  detectable_log=pick.decision.detectable_log[:rows]))


@dataclass(frozen=True)
class AgedOutcomes:
    """Rows of simulated runs (run-major) whose processes age by the pairs they measure."""

    adaptive: ScheduleOutcome  # the shipped schedule, calls confirmed on the confirming pairs
    schedule_only: ScheduleOutcome  # the same measurements, unconfirmed
    ages: np.ndarray  # (runs, 2 pool, 2): rounds each process measured in its run (base, candidate)
    cap_ages: np.ndarray  # (runs, 2 pool, 2): what they would have measured had every row run to the cap


def simulate_runs_aged(model: "NoiseModel", *, runs: int, rows_per_run: int, pair_sd: float | Sequence[float],
                       shift: float, seed: int, policy: GatePolicy | None = None, per_round: int = 5,
                       pool: int | None = None, drift_sd: float = 0.002) -> AgedOutcomes:
    """``simulate_runs`` for the process-state models (``noise_models.AGED_KINDS``), with each
    process aged by the pairs it really measures: a run's rows are drawn one after another (all
    runs at once), each to the cap on the shipped layout, judged by the shipped rule and
    schedule, and only the pairs the schedule measured (its first ``pairs``) move its processes'
    states on; a call is measured again at once on the confirming pool pairs, whose processes
    persist through the run and age the same way. No fixed-count variant: its rows would age
    the processes otherwise, so it cannot share the adaptive rows' paths."""
    from bench.sim.noise_models import AGED_KINDS, _finish, _iid, advance, initial_states, state_logs, state_paths

    if model.kind not in AGED_KINDS:
        raise ValueError(f"{model.name}: simulate_runs_aged takes {AGED_KINDS}, not {model.kind}")
    policy = policy or GatePolicy()
    sched = default_schedule("cuda", per_round)
    pool = pool or pool_pairs(sched)
    cap = sched.max_rounds
    looks = sched.looks()
    rng = np.random.default_rng(seed)
    sds = np.broadcast_to(np.asarray(pair_sd, float), (rows_per_run,))
    states = initial_states(model, runs, 2 * pool, rng)
    ages = np.zeros((runs, 2 * pool, 2), int)
    cap_ages = np.zeros_like(ages)

    def draw(st: np.ndarray, labels: np.ndarray, bf: np.ndarray, sd: float) -> tuple:
        lb, lc = _iid(len(st), cap, per_round, sd, bf, rng, drift_sd)
        at, after = state_paths(model, st, labels, rng)
        ob, oc = state_logs(model, at)
        base, cand = _finish(model, lb + ob[..., None], lc + oc[..., None], bf, shift, rng)
        return base, cand, after

    parts: dict[str, list] = {"adaptive": [], "schedule_only": []}
    for j in range(rows_per_run):
        labels = row_layout(sched, pool, j, cap)
        bf = np.arange(cap) % 2 == 0  # the orchestrator's pair i: base first when i is even
        base, cand, after = draw(states, labels, bf, float(sds[j]))
        first = _schedule(base, cand, np.tile(labels, (runs, 1)), bf, looks, policy, sched)
        advance(states, ages, labels, after, first.pairs)
        np.add.at(cap_ages, (slice(None), labels), 1)

        def again(idx: np.ndarray, first: ScheduleOutcome = first, labels: np.ndarray = labels,
                  sd: float = float(sds[j])) -> ScheduleOutcome:
            start = first.pairs[idx]
            last = labels[start - 1]
            n = len(idx)
            out = dict(pairs=np.zeros(n, int), unconfirmed=np.zeros(n, bool), reached=np.zeros(n, bool),
                       called=np.zeros(n, bool), effect=np.zeros(n), detect=np.zeros(n))
            for k in np.unique(last):
                for parity in (0, 1):
                    sel = (last == k) & (start % 2 == parity)
                    if not sel.any():
                        continue
                    rows = idx[sel]
                    conf = confirm_layout(sched, pool, int(k), cap)
                    b_first = (parity + np.arange(cap)) % 2 == 0  # the orchestrator's pair start + i
                    st, ag = states[rows], ages[rows]
                    cb, cc, c_after = draw(st, conf, b_first, sd)
                    part = _schedule(cb, cc, np.tile(conf, (len(rows), 1)), b_first, looks, policy, sched)
                    advance(st, ag, conf, c_after, part.pairs)
                    states[rows], ages[rows] = st, ag
                    out["pairs"][sel], out["unconfirmed"][sel], out["reached"][sel] = \
                        part.pairs, part.unconfirmed, part.reached
                    out["called"][sel], out["effect"][sel] = part.decision.called, part.decision.effect_log
                    out["detect"][sel] = part.decision.detectable_log
            return ScheduleOutcome(pairs=out["pairs"], unconfirmed=out["unconfirmed"], reached=out["reached"],
                                   decision=BatchDecision(called=out["called"], effect_log=out["effect"],
                                                          detectable_log=out["detect"]))

        parts["adaptive"].append(confirmed(first, again))
        parts["schedule_only"].append(first)

    def stack(outs: list[ScheduleOutcome]) -> ScheduleOutcome:  # (rows, runs) -> run-major
        def cat(f):
            return np.stack([f(o) for o in outs], axis=1).ravel()

        return ScheduleOutcome(pairs=cat(lambda o: o.pairs), unconfirmed=cat(lambda o: o.unconfirmed),
                               reached=cat(lambda o: o.reached),
                               decision=BatchDecision(called=cat(lambda o: o.decision.called),
                                                      effect_log=cat(lambda o: o.decision.effect_log),
                                                      detectable_log=cat(lambda o: o.decision.detectable_log)))

    return AgedOutcomes(adaptive=stack(parts["adaptive"]), schedule_only=stack(parts["schedule_only"]), ages=ages,
                        cap_ages=cap_ages)
