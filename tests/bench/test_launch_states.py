"""The launch-state models (``noise_models.STATE_MODELS``): two levels ``s`` apart, switching as
each model says over a process's own rounds, and processes aged by the pairs they really
measure (``simulate.simulate_runs_aged``), not by the 80-pair cap."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bench.sim.noise_models import (STATE_MODELS, STATE_SIZES, NoiseModel, advance, initial_states, state_logs,
                                    state_paths)
from bench.sim.simulate import simulate_runs_aged

ROUNDS = 60


def _model(kind: str, **params: float) -> NoiseModel:
    return NoiseModel(kind, kind, params, True)


def _one_process(model: NoiseModel, batch: int = 4000, seed: int = 0) -> np.ndarray:
    """(batch, ROUNDS, 2): the state of one process per side over its first ROUNDS rounds."""
    rng = np.random.default_rng(seed)
    at, _ = state_paths(model, initial_states(model, batch, 1, rng), np.zeros(ROUNDS, int), rng)
    return at


def _first_switch(at: np.ndarray) -> np.ndarray:
    """The round (1-based) at which each path is first in state 1 (ROUNDS + 1: never)."""
    return np.where(at.any(1), at.argmax(1) + 1, ROUNDS + 1)


def test_the_state_models_cover_the_measured_sizes_and_kinds():
    kinds = {m.kind for m in STATE_MODELS}
    assert kinds == {"state_symmetric", "state_one_sided", "state_switching"}
    for kind in kinds - {"state_switching"}:
        assert {m.params["s"] for m in STATE_MODELS if m.kind == kind} == set(STATE_SIZES) == {0.07, 0.15, 0.23}
    assert {m.params["mean_rounds"] for m in STATE_MODELS if m.kind == "state_one_sided"} == {0.0, 3.0}


@pytest.mark.parametrize("s", STATE_SIZES)
def test_two_levels_s_apart(s):
    at = _one_process(_model("state_switching", s=s, p=0.2), batch=50)
    lb, lc = state_logs(_model("state_switching", s=s, p=0.2), at)
    for logs in (lb, lc):
        assert set(np.round(np.exp(logs), 12).ravel().tolist()) == {1.0, round(1 + s, 12)}  # L and L(1+s)


def test_symmetric_every_process_starts_fast_and_switches_for_good_after_about_3_rounds():
    at = _one_process(_model("state_symmetric", s=0.15, mean_rounds=3.0))
    assert not at[:, 0].any()  # the first round of every process is at L
    assert (np.diff(at.astype(int), axis=1) >= 0).all()  # one way: never back
    for side in (0, 1):
        g = _first_switch(at[..., side]) - 1  # rounds at L: geometric, at least 1, mean 3
        assert g.min() == 1 and abs(g.mean() - 3) < 0.15
        assert abs((g == 1).mean() - 1 / 3) < 0.03
    assert (at[:, -1]).all()  # every process of both builds gets there
    assert (_first_switch(at[..., 0]) != _first_switch(at[..., 1])).mean() > 0.5  # each on its own time


def test_one_sided_from_the_start_only_the_candidates_processes_are_in_the_other_state():
    at = _one_process(_model("state_one_sided", s=0.07, mean_rounds=0.0), batch=200)
    assert not at[..., 0].any() and at[..., 1].all()


def test_one_sided_after_a_few_rounds_the_base_never_switches_the_candidate_after_about_3():
    at = _one_process(_model("state_one_sided", s=0.07, mean_rounds=3.0))
    assert not at[..., 0].any()
    assert not at[:, 0, 1].any() and (np.diff(at[..., 1].astype(int), axis=1) >= 0).all()
    assert abs((_first_switch(at[..., 1]) - 1).mean() - 3) < 0.15


def test_switching_flips_both_ways_at_its_rate_from_the_level_every_process_starts_at():
    p = 0.05
    at = _one_process(_model("state_switching", s=0.15, p=p))
    assert not at[:, 0].any()
    flips = np.diff(at.astype(int), axis=1)
    rate = (flips != 0).mean()
    assert abs(rate - p) < 0.005
    assert (flips > 0).any() and (flips < 0).any()
    assert at[:, -1].mean() > 0.3  # it goes back, too (absorbing would be near 1)


def test_paths_are_deterministic_with_a_seed():
    m = _model("state_switching", s=0.15, p=0.1)
    a, b, c = (_one_process(m, batch=50, seed=seed) for seed in (7, 7, 8))
    assert (a == b).all() and not (a == c).all()


def test_a_process_goes_on_from_its_state_only_over_the_pairs_a_row_measured():
    """advance: a process's next state is the one after its last measured pair; pairs beyond
    the row's count age nothing."""
    m = _model("state_switching", s=0.15, p=0.5)
    rng = np.random.default_rng(3)
    labels = np.array([0] * 5 + [1] * 10 + [2] * 5)
    states, ages = initial_states(m, 30, 4, rng), np.zeros((30, 4, 2), int)
    at, after = state_paths(m, states, labels, rng)
    used = rng.integers(1, len(labels) + 1, 30)
    before = states.copy()
    advance(states, ages, labels, after, used)
    for b in range(30):
        for k in range(4):
            mine = np.flatnonzero((labels == k) & (np.arange(len(labels)) < used[b]))
            assert (ages[b, k] == len(mine)).all()
            assert (states[b, k] == (after[b, mine[-1]] if len(mine) else before[b, k])).all()
    # a pair's state is the previous pair's "after" on the same process
    for k in range(3):
        idx = np.flatnonzero(labels == k)
        assert (at[:, idx[1:]] == after[:, idx[:-1]]).all()


def test_a_run_ages_its_processes_by_the_pairs_they_measure_not_the_cap():
    m = next(x for x in STATE_MODELS if x.kind == "state_symmetric")
    out = simulate_runs_aged(m, runs=40, rows_per_run=4, pair_sd=0.004, shift=0.0, seed=5)
    pool = out.ages.shape[1] // 2
    measured = out.schedule_only.pairs.sum()
    for side in (0, 1):
        assert out.ages[:, :pool, side].sum() == measured  # one round a pair, each side
        assert out.ages[:, pool:, side].sum() == out.adaptive.pairs.sum() - measured  # confirmations
    assert out.cap_ages[:, :pool, 0].sum() == 40 * 4 * 80
    assert measured < 0.75 * 40 * 4 * 80  # quiet rows stop well short of the cap


def test_a_one_sided_state_is_called_as_what_it_is_a_slower_candidate():
    m = next(x for x in STATE_MODELS if x.kind == "state_one_sided" and x.params["mean_rounds"] == 0
             and x.params["s"] == 0.07)
    out = simulate_runs_aged(m, runs=15, rows_per_run=3, pair_sd=0.004, shift=0.0, seed=6)
    a = out.adaptive
    assert (a.decision.called & ~a.unconfirmed).all()
    assert np.allclose(np.expm1(a.decision.effect_log), 0.07, atol=0.005)


def test_aged_runs_are_deterministic_with_a_seed():
    m = next(x for x in STATE_MODELS if x.kind == "state_switching")
    one, two = (simulate_runs_aged(m, runs=10, rows_per_run=3, pair_sd=0.004, shift=0.02, seed=9) for _ in range(2))
    assert (one.adaptive.decision.effect_log == two.adaptive.decision.effect_log).all()
    assert (one.ages == two.ages).all()
    assert not math.isnan(one.adaptive.decision.effect_log.sum())
