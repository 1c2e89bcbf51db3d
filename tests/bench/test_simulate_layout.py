"""The simulation's layout is the one a GPU paired run gives its rows: a real paired run (the
orchestrator, on scripted devices) records per pair which pool pair measured it, and
``row_layout`` / ``confirm_layout`` must name the same, row by row, calls' confirmations
included; and what lives with a process is shared wherever the layout names one process."""

from __future__ import annotations

import numpy as np
import pytest

from bench.sim.noise_models import NoiseModel, sample_run
from bench.sim.simulate import confirm_layout, pool_pairs, row_layout
from tritongate.pair.orchestrator import run_pair
from tritongate.pair.request import GPU_POOL_PAIRS, default_schedule

from tests.pair.test_orchestrator import _request, _spawner
from tests.pair.fakes import World

SCHED = default_schedule("cuda", 5)


def _recorded(outcome):
    """Per row, in the order run: (its worker pairs, the pair its confirmation began at)."""
    out = []
    for base_row, _ in outcome.rows:
        p = base_row.measurement.pairing
        out.append((tuple(p.worker_pairs), p.confirm_from))
    return out


def test_the_pool_is_the_orchestrators():
    assert pool_pairs(SCHED) == GPU_POOL_PAIRS == SCHED.max_worker_pairs == 8


@pytest.mark.parametrize("cand_env", [{}, {"TG_FACTOR": "1.03"}], ids=["A/A", "called and confirmed"])
def test_each_rows_worker_pairs_are_those_a_paired_run_records(tmp_path, cand_env):
    noisy = {"TG_NOISE": "add:0.05"}  # add never reaches its target: all 80 pairs, 8 segments over the pool
    outcome = run_pair(_request(tmp_path, base_env=noisy, cand_env={**noisy, **cand_env}), spawn=_spawner(World()))
    recorded = _recorded(outcome)
    # A/A: add measures all 80 pairs (called: its 3 % may be called sooner, on fewer segments)
    assert len(recorded) == 3 and (bool(cand_env) or any(len(wp) == SCHED.max_rounds for wp, _ in recorded))
    pool = pool_pairs(SCHED)
    confirmed = 0
    for i, (wp, start) in enumerate(recorded):
        first = start or len(wp)
        expected = list(row_layout(SCHED, pool, i, first))
        if start:
            confirmed += 1
            expected += list(confirm_layout(SCHED, pool, expected[-1], len(wp) - start))
        assert list(wp) == expected, f"row {i}"
        if first == SCHED.max_rounds:  # 8 segments, each on its own pool pair
            assert len(set(SCHED.worker_pair_of(first))) == 8 and set(wp[:first]) == set(range(pool))
    assert confirmed >= 2 if cand_env else confirmed == 0  # the quiet rows' 3 % is called and confirmed


def test_a_rows_segments_on_one_pool_pair_share_its_offset_and_so_do_the_rows_after_it():
    sched = SCHED
    layout = np.stack([row_layout(sched, 3, j, 80) for j in range(4)])
    assert sorted(set(layout[0].tolist())) == [0, 1, 2] and layout[1][0] == 1  # 8 segments, 3 labels; row 1 starts on 1
    model = NoiseModel("offsets", "offsets", {"tau": 0.01})
    base, cand, off = sample_run(model, runs=2, layout=layout, per_round=5, pair_sd=1e-9, shift=0.0, drift_sd=0.0,
                                 base_first=np.arange(80) % 2 == 0, processes=6, rng=np.random.default_rng(1))
    d = np.log(np.median(cand, -1)) - np.log(np.median(base, -1))  # (runs * rows, pairs)
    for r in range(2):
        for j in range(4):
            for k in range(3):
                want = off[r, k, 1] - off[r, k, 0]  # one process per side of pool pair k, for the whole run
                assert np.allclose(d[4 * r + j, layout[j] == k], want, atol=1e-3)
    assert not np.allclose(off[0], off[1])  # runs are independent


def test_a_speed_state_carries_over_from_a_rows_segment_to_its_next_on_the_same_process():
    layout = np.stack([row_layout(SCHED, 3, j, 80) for j in range(2)])
    model = NoiseModel("two-state", "two_state", {"amp": 0.01, "dwell": 1e9})  # a state that never changes
    base, cand, _ = sample_run(model, runs=50, layout=layout, per_round=5, pair_sd=1e-9, shift=0.0, drift_sd=0.0,
                               base_first=np.arange(80) % 2 == 0, processes=6, rng=np.random.default_rng(2))
    d = (np.log(np.median(cand, -1)) - np.log(np.median(base, -1))).reshape(50, 2, 80)
    for k in range(3):
        on_k = d[:, :, :][:, layout == k]  # every pair pool pair k measured in a run
        assert np.allclose(on_k, on_k[:, :1], atol=1e-3)
    assert len(np.unique(np.round(d[:, 0, 0], 3))) == 3  # -1 %, 0, +1 %: states drawn per process
