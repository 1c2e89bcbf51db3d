"""The rule in log ratios: a slowdown never inflates its own floor, paired rounds cancel a
shared drift, and precision depends on spreads only."""

from __future__ import annotations

import math
import random

import pytest

from tritongate.gate.rule import Why, decide, precision
from tritongate.stats import Change


def _rounds(median: float, offsets, *, per_round: int = 3, within: float = 0.0, seed: int = 0):
    rng = random.Random(seed)
    return [median * (1 + o) * (1 + rng.gauss(0, within)) for o in offsets for _ in range(per_round)]


RULE = dict(min_effect=0.01, noise_z=4.0, min_samples=10)


def test_a_ten_fold_slowdown_of_a_noisy_row_is_called():
    """Interpreter-like noise: rounds ±5 %. In absolute terms the candidate's spread is ten
    times the base's; divided by the base median that made a floor of ~100-500 %."""
    offsets = [0.05, -0.04, 0.03, -0.05, 0.02, -0.01, 0.04, 0.0]
    base = _rounds(20_000, offsets, within=0.01, seed=1)
    cand = _rounds(200_000, offsets[::-1], within=0.01, seed=2)
    for paired in (False, True):
        d = decide(base, cand, base_per_round=3, cand_per_round=3, paired=paired, **RULE)
        assert d.change is Change.SLOWER and d.why is Why.CALLED
        assert d.noise_floor < 0.5 and d.effect == pytest.approx(9.0, rel=0.1)


def test_pairing_cancels_a_drift_both_sides_share():
    drift = [0.03 * i for i in range(10)]  # +3 % per pair, measured by both sides alike
    base = _rounds(100.0, drift, per_round=5, within=0.001, seed=3)
    cand = _rounds(101.5, drift, per_round=5, within=0.001, seed=4)  # +1.5 %
    paired = decide(base, cand, base_per_round=5, cand_per_round=5, paired=True, **RULE)
    unpaired = decide(base, cand, base_per_round=5, cand_per_round=5, paired=False, **RULE)
    assert paired.change is Change.SLOWER and paired.pairs == 10 and paired.noise_floor < 0.01
    assert unpaired.change is Change.WITHIN_NOISE and unpaired.noise_floor > 0.05
    assert unpaired.why is Why.IQRS_OVERLAP  # the drift widens both raw IQRs


def test_too_few_samples_cannot_be_called_and_has_no_detectable_effect():
    d = decide([10.0] * 6, [20.0] * 6, base_per_round=3, cand_per_round=3, paired=True, **RULE)
    assert d.why is Why.TOO_FEW_SAMPLES and d.detectable is None and d.change is Change.WITHIN_NOISE
    assert "too few samples" in d.reason


def test_precision_does_not_depend_on_the_difference_of_the_medians():
    offsets = [0.01, -0.02, 0.015, 0.0, -0.01]
    base = _rounds(50.0, offsets, per_round=5, within=0.003, seed=5)
    cand = _rounds(50.0, offsets[::-1], per_round=5, within=0.003, seed=6)
    for paired in (False, True):
        same = precision(base, cand, base_per_round=5, cand_per_round=5, paired=paired, min_effect=0.01, noise_z=4)
        slow = precision(base, [3 * x for x in cand], base_per_round=5, cand_per_round=5, paired=paired,
                         min_effect=0.01, noise_z=4)
        assert same.detectable == pytest.approx(slow.detectable, rel=1e-9)


def test_each_reason_is_named():
    flat = [100.0, 100.2, 99.8] * 4
    near = decide(flat, [x * 1.002 for x in flat], base_per_round=3, cand_per_round=3, **RULE)
    assert near.why is Why.IQRS_OVERLAP
    small = decide(flat, [x * 1.006 for x in flat], base_per_round=3, cand_per_round=3, **RULE)
    assert small.why is Why.BELOW_MIN_EFFECT and "minimum effect" in small.reason
    noisy_b = _rounds(100.0, [0.0, 0.1, -0.1, 0.05], within=0.0)
    noisy_c = _rounds(100.0 * 1.3, [0.1, -0.1, 0.05, 0.0], within=0.0)
    # round offsets of ±10 % on each side, judged unpaired: a floor well above 30 %
    wide = decide(noisy_b, noisy_c, base_per_round=3, cand_per_round=3, min_effect=0.01, noise_z=4.0,
                  min_samples=10, paired=False)
    assert wide.why in (Why.BELOW_NOISE_FLOOR, Why.IQRS_OVERLAP) and wide.change is Change.WITHIN_NOISE
    assert math.isfinite(wide.noise_floor) and wide.noise_floor > 0.1


def test_the_floor_uses_students_t_for_the_rows_degrees_of_freedom():
    from tritongate.gate.rule import floor_multiplier

    assert floor_multiplier(4.0, 4) == pytest.approx(17.4, abs=0.1)  # 5 pairs: a wide floor
    assert floor_multiplier(4.0, 19) == pytest.approx(5.1, abs=0.1)
    assert floor_multiplier(4.0, 1e6) == pytest.approx(4.0, abs=0.01)
    assert floor_multiplier(4.0, 0) == math.inf and floor_multiplier(0.0, 3) == 0.0


def test_the_rule_imports_no_scipy_until_a_floor_is_computed():
    """scipy costs a few hundred ms to import: only a decision pays for it, and then only
    scipy.special (scipy.stats would cost 0.6 CPU s more for wrappers of the same functions)."""
    import subprocess
    import sys

    code = ("import sys, tritongate.gate.rule as r; assert 'scipy.stats' not in sys.modules; "
            "assert 'scipy.special' not in sys.modules; r.floor_multiplier(4.0, 10); "
            "assert 'scipy.special' in sys.modules and 'scipy.stats' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_one_outlier_round_moves_neither_the_estimate_nor_the_floor_much():
    """The trimmed mean of the pairs: a 3x round in 20 pairs used to make +2 % uncatchable."""
    rng = random.Random(7)
    base = [100 * (1 + rng.gauss(0, 0.002)) for _ in range(20 * 5)]
    cand = [102 * (1 + rng.gauss(0, 0.002)) for _ in range(20 * 5)]
    cand[35:40] = [3 * x for x in cand[35:40]]  # one round, three times slower
    from tritongate.gate.rule import PairLayout

    layout = PairLayout(tuple(i % 2 == 0 for i in range(20)), tuple(i // 5 for i in range(20)))
    d = decide(base, cand, base_per_round=5, cand_per_round=5, paired=True, layout=layout, process_sd=0.003,
               pair_inflation=2.5, **RULE)
    assert d.change is Change.SLOWER and d.effect == pytest.approx(0.02, abs=0.003)


def test_an_order_effect_is_removed_before_the_iqr_check_and_the_floor():
    """Whoever goes second runs 1 % slower: on a real +1.5 %, base-first pairs say +2.5 % and
    candidate-first +0.5 %; the order term must come out, not widen the IQRs."""
    rng = random.Random(8)
    base, cand = [], []
    for i in range(20):
        second_penalty = 1.01
        b = 100 * (second_penalty if i % 2 == 1 else 1)  # base goes second in odd pairs
        c = 101.5 * (second_penalty if i % 2 == 0 else 1)
        base += [b * (1 + rng.gauss(0, 0.001)) for _ in range(5)]
        cand += [c * (1 + rng.gauss(0, 0.001)) for _ in range(5)]
    from tritongate.gate.rule import PairLayout

    layout = PairLayout(tuple(i % 2 == 0 for i in range(20)), tuple(i // 5 for i in range(20)))
    d = decide(base, cand, base_per_round=5, cand_per_round=5, paired=True, layout=layout, process_sd=0.003, **RULE)
    assert d.order_effect == pytest.approx(0.02, abs=0.003)  # base-first minus candidate-first
    assert d.change is Change.SLOWER and d.effect == pytest.approx(0.015, abs=0.002)
    # told every pair went base first, the rule cannot see the order term: it widens the floor
    blind = decide(base, cand, base_per_round=5, cand_per_round=5, paired=True, process_sd=0.003, **RULE,
                   layout=PairLayout((True,) * 20, tuple(i // 5 for i in range(20))))
    assert blind.change is Change.WITHIN_NOISE and blind.noise_floor > 2 * d.noise_floor
