"""Synthetic base/candidate runs at a given noise level, to measure the gate's own
false-alarm rate and power without a GPU.

Noise model (H200, graph timer, per-round placement shift): every round gets its own
placement offset, every sample its own within-round noise. A row's pooled relative IQR r
sets sigma_total = r / 1.349, of which the round offsets carry the larger part.

``simulate`` draws two stored runs (unpaired). ``simulate_paired`` draws one paired run the
way ``tritongate pair`` measures it: rounds alternate between the sides (who goes first
swaps every pair), both sides share a drift that moves between and within pairs, and the
real schedule (``tritongate.pair.schedule.run_schedule``) adds pairs to rows short of their
precision target, looking at their spread only (and at the call, for a row called on fewer
pairs than the schedule's ``confirm_rounds``). ``modes`` adds a row that switches between two
states, each worker on its own (rmsnorm 16×8192 on the H200: 1.755 or 1.780 µs, a state
lasting several rounds).
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Sequence

from tritongate.gate.policy import GatePolicy
from tritongate.gate.verdict import GateResult, run_gate
from tritongate.rundir import Run
from tritongate.schema import MeasurementInfo, PairInfo, Row, RunStatus

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


def simulate_paired(*, rows: int, shift: float, rel_iqrs: Sequence[float], seed: int,
                    policy: GatePolicy | None = None, drift_sd: float = 0.005, per_round: int = 5,
                    schedule=None, modes: tuple[float, float] | None = None) -> GateResult:
    """Gate ``rows`` synthetic paired rows whose candidate is slower by ``shift``.

    Drift: a random walk shared by both sides, ``drift_sd`` per pair, half of it between the
    two rounds of a pair (the second side sees it, the first does not). Modes ``(offset,
    switch)``: each side's worker is in one of two states, the second ``offset`` slower, and
    leaves its state before a round with probability ``switch``."""
    from tritongate.gate.rule import Why, decide, precision
    from tritongate.pair.schedule import BudgetLedger, PairSchedule, run_schedule

    policy = policy or GatePolicy()
    # rows are independent here: the run-wide budget (which depends on the suite) is not simulated
    schedule = schedule or PairSchedule(run_budget_s=math.inf)
    ledger = BudgetLedger(run_budget_s=schedule.run_budget_s)
    rng = random.Random(seed)
    base_rows, cand_rows = [], []
    for i in range(rows):
        r = rel_iqrs[i % len(rel_iqrs)]
        sigma = r / 1.349
        round_sd, within_sd = 0.85 * sigma, 0.5 * sigma
        median = math.exp(rng.uniform(math.log(1.0), math.log(500.0)))
        samples: dict[str, list[float]] = {"base": [], "candidate": []}
        first: dict[str, list[bool]] = {"base": [], "candidate": []}
        level = [1.0]
        clock = [0.0]
        state = {side: rng.random() < 0.5 for side in samples} if modes is not None else {}

        def one_round(side: str, drift: float) -> None:
            m = median * (1 + shift) if side == "candidate" else median
            if modes is not None:
                if rng.random() < modes[1]:
                    state[side] = not state[side]
                m *= 1 + modes[0] * state[side]
            offset = rng.gauss(0, round_sd)
            samples[side] += [m * drift * (1 + offset) * (1 + rng.gauss(0, within_sd)) for _ in range(per_round)]

        def measure_pair(k: int) -> bool:
            level[0] *= 1 + rng.gauss(0, drift_sd / 2)
            order = ("base", "candidate") if k % 2 == 0 else ("candidate", "base")
            one_round(order[0], level[0])
            level[0] *= 1 + rng.gauss(0, drift_sd / 2)
            one_round(order[1], level[0])
            first[order[0]].append(True)
            first[order[1]].append(False)
            clock[0] += 0.1  # simulated seconds per pair, for the budgets
            return True

        target = policy.min_effect_for("sim")

        def reached() -> bool:
            return precision(samples["base"], samples["candidate"], base_per_round=per_round,
                             cand_per_round=per_round, paired=True, min_effect=target,
                             noise_z=policy.noise_z).detectable <= target

        def would_call() -> bool:
            return decide(samples["base"], samples["candidate"], base_per_round=per_round, cand_per_round=per_round,
                          min_effect=target, noise_z=policy.noise_z, min_samples=policy.min_samples,
                          paired=True).why is Why.CALLED

        run_schedule(measure_pair=measure_pair, reached=reached, schedule=schedule, ledger=ledger,
                     clock=lambda: clock[0], would_call=would_call)
        for side, out in (("base", base_rows), ("candidate", cand_rows)):
            info = MeasurementInfo(launches_per_sample=20, samples_per_round=per_round, warmup_calls=50, l2="warm",
                                   pairing=PairInfo(pair_id="sim", side=side, went_first=tuple(first[side]),
                                                    target_effect=target, min_rounds=schedule.min_rounds,
                                                    max_rounds=schedule.max_rounds,
                                                    confirm_rounds=schedule.confirm_rounds))
            out.append(Row(op="sim", case=f"c{i}", dtype="float16", timer="cuda-graph",
                           samples=tuple(samples[side]), measurement=info))
    return run_gate(synthetic_run(base_rows, "replay", "base"), synthetic_run(cand_rows, "replay", "candidate"),
                    policy)
