"""The gate's false-alarm rate and power on synthetic samples drawn at H200 noise levels.

Noise model (measured on an H200 with the graph timer and per-round placement shift;
``bench/results/2026-11-29_h200_timer_noise.md`` and the shared verdict probe): each round
gets its own placement offset, each sample its own within-round noise. A row's relative
IQR r (pooled over 5 rounds x 5 samples) ranged from 0.25% (add 4K) over 0.5-0.7%
(softmax, add 1M) to 1-2.4% (matmuls); here r sets sigma_total = r / 1.349, of which the
round offsets carry the larger part.
"""

import math
import random

from tritongate.gate.policy import GatePolicy
from tritongate.gate.verdict import Verdict, run_gate
from tritongate.schema import MeasurementInfo, Row

from tests.gate.helpers import run_of

REL_IQRS = [0.0025, 0.0049, 0.0054, 0.0060, 0.0063, 0.0074, 0.0105, 0.0139, 0.0241]
GRAPH_TIMER_REL_IQR = 0.006  # softmax 4096², the typical graph-timer row
ROWS = 1000


def draw(rng: random.Random, median: float, rel_iqr: float, rounds=5, per_round=5) -> tuple[float, ...]:
    sigma = rel_iqr / 1.349
    round_sd, within_sd = 0.85 * sigma, 0.5 * sigma
    out = []
    for _ in range(rounds):
        offset = rng.gauss(0, round_sd)
        out += [median * (1 + offset) * (1 + rng.gauss(0, within_sd)) for _ in range(per_round)]
    return tuple(out)


def simulate(seed: int, shift: float, rel_iqrs) -> dict:
    rng = random.Random(seed)
    info = MeasurementInfo(launches_per_sample=20, samples_per_round=5, warmup_calls=50, l2="warm")
    base, cand = [], []
    for i in range(ROWS):
        r = rel_iqrs[i % len(rel_iqrs)]
        median = math.exp(rng.uniform(math.log(1.0), math.log(500.0)))  # 1 µs .. 500 µs
        for rows, m in ((base, median), (cand, median * (1 + shift))):
            rows.append(Row(op="op", case=f"c{i}", dtype="float16", timer="cuda-graph",
                            samples=draw(rng, m, r), measurement=info))
    result = run_gate(run_of(base, "record"), run_of(cand, "replay"), GatePolicy())
    return {v: len(result.by(v)) for v in Verdict}


def test_aa_at_measured_noise_calls_nothing():
    counts = simulate(seed=20261129, shift=0.0, rel_iqrs=REL_IQRS)
    assert counts[Verdict.REGRESSED] == 0 and counts[Verdict.IMPROVED] == 0
    assert counts[Verdict.UNCHANGED] == ROWS


def test_planted_5_percent_slowdown_is_caught_at_graph_timer_noise():
    counts = simulate(seed=7, shift=0.05, rel_iqrs=[GRAPH_TIMER_REL_IQR])
    assert counts[Verdict.REGRESSED] >= 0.99 * ROWS
    assert counts[Verdict.IMPROVED] == 0


def test_planted_5_percent_speedup_is_caught_too():
    counts = simulate(seed=8, shift=-0.05, rel_iqrs=[GRAPH_TIMER_REL_IQR])
    assert counts[Verdict.IMPROVED] >= 0.99 * ROWS
