"""What lives with a worker process in the simulation lives as long as the process: through
a row's segments on it, and into the run's next rows (``noise_models.sample_run``)."""

from __future__ import annotations

import numpy as np

from bench.sim.noise_models import NoiseModel, sample_paths, sample_run
from bench.sim.simulate import row_layout
from tritongate.pair.orchestrator import default_schedule

SCHED = default_schedule("cuda", 5)
BF = np.arange(80) % 2 == 0
LAYOUT = np.stack([row_layout(SCHED, 3, j, 80) for j in range(6)])


def _ratios(model, runs=40, seed=0):
    base, cand, _ = sample_run(model, runs=runs, layout=LAYOUT, per_round=5, pair_sd=1e-9, shift=0.0, drift_sd=0.0,
                               base_first=BF, processes=6, rng=np.random.default_rng(seed))
    return (np.log(np.median(cand, -1)) - np.log(np.median(base, -1))).reshape(runs, -1)  # a run's pairs in time order


def test_a_step_hits_one_process_from_a_pair_on_to_the_end_of_the_run():
    d = _ratios(NoiseModel("step", "step", {"amp": 0.015}))
    labels = LAYOUT.ravel()
    crossed = 0
    for run in d:
        hit = np.abs(run) > 0.0075
        assert hit.any() and np.allclose(np.abs(run[hit]), 0.015, atol=1e-3)
        assert len(set(labels[hit].tolist())) == 1  # one process ...
        k, at = labels[hit][0], np.flatnonzero(hit)[0]
        assert hit[at:][labels[at:] == k].all()  # ... every pair it measures from then on
        crossed += (at // 80) < len(LAYOUT) - 1 and hit[80 * (at // 80 + 1):].any()
    assert crossed > 10  # into the rows after the one it began in


def test_a_confirmations_rows_carry_no_step():
    base, cand = sample_paths(NoiseModel("step", "step", {"amp": 0.015}), rows=20, pairs=80, per_round=5,
                              pair_sd=1e-9, shift=0.0, base_first=BF, worker_pairs=3 + LAYOUT[0], drift_sd=0.0,
                              rng=np.random.default_rng(1), one_process=False)
    assert np.allclose(cand, base, rtol=1e-6)


def test_a_drift_restarts_with_each_row_and_runs_on_through_its_segments_on_the_process():
    d = _ratios(NoiseModel("drift", "drift", {"amp": 0.001}), runs=10).reshape(10, len(LAYOUT), 80)
    for run in d:
        k = LAYOUT[0][np.argmax(np.abs(run[0]))]
        for j, row in enumerate(run):
            mine = np.flatnonzero(LAYOUT[j] == k)
            age = np.abs(row[mine]) / 0.001  # pairs since the process's first pair of the row
            assert np.allclose(age, mine - mine[0], atol=0.5)
            assert np.allclose(np.delete(row, mine), 0, atol=1e-6)


def test_a_process_level_carries_into_its_next_row():
    d = _ratios(NoiseModel("serial", "serial", {"rho": 0.99, "sd": 0.01}), runs=200, seed=3)
    labels = LAYOUT.ravel()
    k = labels[79]  # the process of row 0's last pair: its next pair is in a later row
    nxt = 80 + np.flatnonzero(labels[80:] == k)[0]
    gap = d[:, nxt] - d[:, 79]
    assert gap.std() < 0.4 * d[:, 79].std()  # continued (AR(1) 0.99), not drawn afresh (ratio √2)
