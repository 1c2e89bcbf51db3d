"""The gate's false-alarm rate and power on synthetic samples drawn at H200 noise levels
(the noise model is in bench.sim.simulate)."""

import math

import pytest

from bench.sim.simulate import GRAPH_TIMER_REL_IQR, H200_REL_IQRS, simulate
from tritongate.gate.verdict import Verdict

ROWS = 1000


def counts(**kw):
    result = simulate(rows=ROWS, **kw)
    return {v: len(result.by(v)) for v in Verdict}


def test_aa_at_measured_noise_calls_nothing():
    c = counts(shift=0.0, rel_iqrs=H200_REL_IQRS, seed=20261129)
    assert c[Verdict.REGRESSED] == 0 and c[Verdict.IMPROVED] == 0
    assert c[Verdict.UNCHANGED] == ROWS


def test_planted_5_percent_slowdown_is_caught_at_graph_timer_noise():
    c = counts(shift=0.05, rel_iqrs=[GRAPH_TIMER_REL_IQR], seed=7)
    assert c[Verdict.REGRESSED] >= 0.99 * ROWS and c[Verdict.IMPROVED] == 0


def test_planted_5_percent_speedup_is_caught_too():
    c = counts(shift=-0.05, rel_iqrs=[GRAPH_TIMER_REL_IQR], seed=8)
    assert c[Verdict.IMPROVED] >= 0.99 * ROWS


def _model(name):
    from bench.sim.noise_models import MODELS

    return next(m for m in MODELS if m.name == name)


def _firm(out):
    return int((out.decision.called & ~out.unconfirmed).sum())


def test_the_batch_rule_is_decide_row_by_row():
    """The simulation judges rows with bench.sim.paired_rule; it must be the rule the gate runs."""
    import numpy as np

    from bench.sim.paired_rule import decide_paired
    from bench.sim.noise_models import sample_paths
    from tritongate.gate.policy import GatePolicy
    from tritongate.gate.rule import PairLayout, decide

    policy = GatePolicy()
    bf = np.arange(20) % 2 == 0
    wp = np.array((0,) * 5 + (1,) * 10 + (2,) * 5)
    for name, shift in (("outlier rounds 3x, 2 %", 0.012), ("order effect 1 %", 0.02), ("iid", 0.0)):
        base, cand = sample_paths(_model(name), rows=12, pairs=20, per_round=5, pair_sd=0.006, shift=shift,
                                  base_first=bf, worker_pairs=wp, rng=np.random.default_rng(3))
        batch = decide_paired(base, cand, base_first=bf, worker_pairs=wp, min_effect=0.01, noise_z=4.0,
                              min_samples=10, process_sd=policy.process_sd, pair_inflation=policy.pair_inflation)
        for i in range(len(base)):
            one = decide(base[i].ravel().tolist(), cand[i].ravel().tolist(), base_per_round=5, cand_per_round=5,
                         min_effect=0.01, noise_z=4.0, min_samples=10, paired=True,
                         layout=PairLayout(tuple(bf), tuple(wp)), process_sd=policy.process_sd, pair_inflation=policy.pair_inflation)
            assert bool(batch.called[i]) == (one.why.value == "called")
            assert math.expm1(batch.effect_log[i]) == pytest.approx(one.effect, abs=1e-12)
            assert math.expm1(batch.detectable_log[i]) == pytest.approx(one.detectable, rel=1e-9)


@pytest.mark.parametrize("name", ["offsets 0.2 % per process", "two-state 0.6 %, dwell 50 rounds",
                                  "step +1.5 % on one worker", "outlier rounds 3x, 2 %"])
def test_worker_level_noise_at_the_h200_offsets_calls_no_aa_row(name):
    from bench.sim.simulate import simulate_paired_models

    out = simulate_paired_models(_model(name), rows=1000, pair_sd=0.004, shift=0.0, seed=11)
    assert _firm(out) == 0


def test_the_rule_before_worker_pairs_called_a_step_on_one_worker():
    """What the audit found: a +1.5 % step on one worker, all of a row's pairs on one worker
    pair, the mean of the pairs and its plain standard error: a tenth of A/A rows called."""
    import numpy as np

    from bench.sim.paired_rule import decide_before
    from bench.sim.noise_models import sample_paths

    bf = np.arange(20) % 2 == 0
    base, cand = sample_paths(_model("step +1.5 % on one worker"), rows=1000, pairs=20, per_round=5, pair_sd=0.004,
                              shift=0.0, base_first=bf, worker_pairs=np.zeros(20, int), rng=np.random.default_rng(5))
    before = decide_before(base, cand, min_effect=0.01, noise_z=4.0, min_samples=10)
    assert before.called.mean() > 0.05


def test_power_at_2_percent_on_quiet_rows_with_confirmation():
    from bench.sim.simulate import simulate_paired_models

    out = simulate_paired_models(_model("offsets 0.2 % per process"), rows=400, pair_sd=0.004, shift=0.02, seed=12)
    caught = out.decision.called & ~out.unconfirmed & (out.decision.effect_log > 0)
    assert caught.mean() >= 0.95


def test_a_row_stopped_by_its_budget_is_unconfirmed_never_a_failure():
    from bench.sim.simulate import simulate_paired_models

    out = simulate_paired_models(_model("few pairs (budget: 6)"), rows=500, pair_sd=0.004, shift=0.05, seed=13)
    # six pairs on two worker pairs resolve little: blind, and a call made on them is shown only
    assert _firm(out) == 0 and out.unconfirmed.any() and not out.reached.any()


@pytest.mark.slow
def test_the_adaptive_schedule_is_not_worse_than_20_fixed_pairs_on_the_same_paths():
    from bench.sim.simulate import simulate_paired_models

    for name, sd in (("iid", 0.012), ("two-state 0.6 %, dwell 10 rounds", 0.004)):
        for shift in (0.0, 0.02):
            kw = dict(rows=600, pair_sd=sd, shift=shift, seed=14, confirm=False)
            adaptive = simulate_paired_models(_model(name), **kw)
            fixed = simulate_paired_models(_model(name), fixed=20, **kw)
            if shift == 0:
                assert _firm(adaptive) <= _firm(fixed) + 1
            else:
                assert _firm(adaptive) >= _firm(fixed)
