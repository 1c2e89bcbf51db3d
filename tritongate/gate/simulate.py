"""Synthetic base/candidate runs at a given noise level, to measure the gate's own
false-alarm rate and power without a GPU.

Noise model (H200, graph timer, per-round placement shift): every round gets its own
placement offset, every sample its own within-round noise. A row's pooled relative IQR r
sets sigma_total = r / 1.349, of which the round offsets carry the larger part.

``simulate`` draws two stored runs (unpaired) and gates them through ``run_gate``. Paired
runs, with the noise that lives with a worker process (offsets, speed states, steps, drift),
outlier rounds, order effects and budgets, are drawn many rows at a time by
``tritongate.gate.noise_models`` and judged by ``tritongate.gate.batch`` (the paired rule and
schedule, vectorised): ``simulate_paired_models`` is the entry point.
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from tritongate.gate.policy import GatePolicy
from tritongate.gate.verdict import GateResult, run_gate
from tritongate.rundir import Run
from tritongate.schema import MeasurementInfo, Row, RunStatus

if TYPE_CHECKING:
    from tritongate.gate.batch import ScheduleOutcome
    from tritongate.gate.noise_models import NoiseModel

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


def simulate_paired_models(model: "NoiseModel", *, rows: int, pair_sd: float, shift: float, seed: int,
                           policy: GatePolicy | None = None, fixed: int | None = None,
                           confirm: bool = True) -> "ScheduleOutcome":
    """``rows`` paired rows of ``model`` judged by the shipped rule under the shipped GPU
    schedule, calls confirmed on an independent measurement (``confirm``; ``fixed``: on that
    many pairs instead, unconfirmed: the same sample paths for the same seed)."""
    import numpy as np

    from tritongate.gate.batch import confirmed, decide_paired, schedule
    from tritongate.gate.noise_models import sample_paths
    from tritongate.pair.request import default_schedule

    policy = policy or GatePolicy()
    sched = default_schedule("cuda", 5)
    cap = int(model.params.get("cap", sched.max_rounds))
    looks = [n for n in sched.looks() if n < cap] + [cap]
    bf = np.arange(cap) % 2 == 0
    wp = np.array(sched.worker_pair_of(cap))
    base, cand = sample_paths(model, rows=rows, pairs=cap, per_round=5, pair_sd=pair_sd, shift=shift,
                              base_first=bf, worker_pairs=wp, rng=np.random.default_rng(seed))

    rng = np.random.default_rng(seed + 1)

    def run(base: np.ndarray, cand: np.ndarray) -> "ScheduleOutcome":
        def at(n: int):
            return decide_paired(base[:, :n], cand[:, :n], base_first=bf[:n], worker_pairs=wp[:n],
                                 min_effect=policy.min_effect, noise_z=policy.noise_z,
                                 min_samples=policy.min_samples, process_sd=policy.process_sd, pair_inflation=policy.pair_inflation)
        return schedule(at, [fixed] if fixed else looks, rows=len(base), target=policy.min_effect,
                        confirm_rounds=sched.confirm_rounds)

    def again(idx: np.ndarray) -> "ScheduleOutcome":
        return run(*sample_paths(model, rows=len(idx), pairs=cap, per_round=5, pair_sd=pair_sd, shift=shift,
                                 base_first=bf, worker_pairs=wp, rng=rng))
    first = run(base, cand)
    return first if fixed or not confirm else confirmed(first, again)
