"""Change points: steps, ramps and improvements are found; noise, short series and small
moves are not."""

from __future__ import annotations

import math

import numpy as np
import pytest
import ruptures
from ruptures.base import BaseCost

from tritongate.history.changepoints import (ChangePoint, Detection, analyse, detect, detect_many, pelt_many,
                                             robust_noise)
from tritongate.history.series import missing_nightlies

from tests.history.helpers import T0, DAY, commit, noisy, series

STEP = [1.0] * 10 + [1.05] * 10
RAMP = [1.0] * 10 + [1.0 + 0.01 * k for k in range(1, 9)] + [1.08] * 10


@pytest.mark.parametrize("seed", range(10))
def test_a_step_of_5_percent_is_one_change_point_at_its_night(seed):
    a = analyse(series(noisy(STEP, 0.005, seed)))
    (cp,) = a.change_points
    assert cp.index == 10 and cp.key == ("softmax", "4096x4096", "float16")
    assert cp.before.commit == commit(9) and cp.after.commit == commit(10)
    assert cp.before.recorded == T0 + 9 * DAY and cp.after.recorded == T0 + 10 * DAY
    assert cp.rel_change == pytest.approx(0.05, abs=0.01) and cp.rel_change > 0
    assert cp.median_before_us == pytest.approx(20.0, rel=0.01) and cp.median_after_us == pytest.approx(21.0, rel=0.01)
    assert (cp.n_before, cp.n_after) == (10, 10) and cp.p_value < 0.01
    assert a.drift == pytest.approx(cp.rel_change) and a.note is None and a.valued == 20


@pytest.mark.parametrize("seed", range(5))
def test_an_improvement_is_found_with_a_negative_sign(seed):
    (cp,) = analyse(series(noisy([1.0] * 10 + [0.95] * 10, 0.005, seed))).change_points
    assert cp.index == 10 and cp.rel_change == pytest.approx(-0.05, abs=0.01)


@pytest.mark.parametrize("seed", range(10))
def test_a_slow_ramp_gives_a_change_point_and_its_whole_drift(seed):
    a = analyse(series(noisy(RAMP, 0.005, seed)))
    assert a.change_points, "a regression that crept in over 8 nights must be found"
    assert all(c.rel_change > 0 and 10 <= c.index <= 18 for c in a.change_points)
    assert a.drift == pytest.approx(0.08, abs=0.015)


def test_noise_alone_gives_no_change_point_over_60_seeds():
    found = {seed: analyse(series(noisy([1.0] * 30, 0.01, seed))).change_points for seed in range(60)}
    assert not {s: c for s, c in found.items() if c}


def test_a_missing_nightly_and_a_gap_row_do_not_hide_a_step():
    values: list[float | None] = noisy([1.0] * 12 + [1.05] * 10, 0.005, seed=3)
    values[6] = None  # the row errored that night
    s = series(values, skip_nights=[4])  # and night 4 published nothing at all
    (hole,) = missing_nightlies([p.recorded for p in s.points])
    assert hole.missing == 1 and hole.after == T0 + 3 * DAY and hole.before == T0 + 5 * DAY
    assert "about 1 nightly missing between" in hole.note
    a = analyse(s)
    assert s.points[6].is_gap and a.valued == 21
    (cp,) = a.change_points
    assert cp.index == 12 and cp.after.recorded == T0 + 13 * DAY and cp.rel_change == pytest.approx(0.05, abs=0.01)


def test_a_change_next_to_a_gap_names_the_valued_points_around_it():
    values: list[float | None] = noisy(STEP, 0.005, seed=1)
    values[10] = None  # the first night after the change errored
    (cp,) = analyse(series(values)).change_points
    assert cp.index == 11 and cp.before.commit == commit(9) and cp.after.commit == commit(11)


@pytest.mark.parametrize("n", [0, 1, 5])
def test_a_series_too_short_gives_none_with_a_note(n):
    a = analyse(series([20.0] * (n - 1) + [25.0] if n else []))
    assert not a.change_points and a.drift == 0
    assert a.note.startswith(f"only {n} valued point") and "6 needed" in a.note


def test_gaps_do_not_count_as_points():
    a = analyse(series([20.0, None, 20.0, None, 21.0, 21.0, None, 21.0]))
    assert not a.change_points and "only 5 valued points (of 8)" in a.note


def test_a_flat_series_is_not_infinitely_sensitive():
    assert not detect([5.0] * 20).shifts
    assert not detect([5.0] * 10 + [5.05] * 10).shifts  # 1 %: below the minimum effect
    (shift,) = detect([5.0] * 10 + [5.15] * 10).shifts  # 3 %, noiseless: found
    assert shift.at == 10 and shift.rel_change == pytest.approx(0.03)


def test_the_minimum_effect_and_p_value_are_parameters():
    values = noisy(STEP, 0.005, seed=0)
    assert not detect(values, Detection(min_effect=0.08)).shifts
    assert not detect(values, Detection(p_value=1e-9)).shifts
    assert detect(values, Detection(min_effect=0.03)).shifts


def test_a_single_slow_night_is_not_a_change():
    values = noisy([1.0] * 20, 0.005, seed=2)
    values[9] *= 1.3
    assert not detect(values).shifts


def test_the_noise_estimate_is_robust_to_a_step_and_floored():
    y = np.log(noisy(STEP, 0.01, seed=0))
    assert 0.005 < robust_noise(y, 0.002) < 0.02
    assert robust_noise(np.zeros(10), 0.002) == 0.002


@pytest.mark.parametrize("kw", [{"min_effect": 0}, {"min_effect": 1.5}, {"p_value": 0}, {"p_value": math.nan},
                                {"min_points": 1}, {"min_points": 2.5}, {"beta": 0}, {"noise_floor": -1}])
def test_bad_parameters_are_refused(kw):
    with pytest.raises(ValueError):
        Detection(**kw)


@pytest.mark.parametrize("values", [[1.0, -1.0], [1.0, math.nan], [[1.0]]])
def test_bad_values_are_refused(values):
    with pytest.raises(ValueError):
        detect(values)


def test_a_change_point_lies_between_valued_points():
    s = series([20.0, None, 21.0])
    with pytest.raises(ValueError, match="between two valued points"):
        ChangePoint(op="a", case="b", dtype="c", index=1, before=s.points[0], after=s.points[1],
                    median_before_us=20.0, median_after_us=21.0, n_before=3, n_after=3, p_value=0.001)


class _PrefixL2(BaseCost):
    """The ``l2`` cost from prefix sums, as ruptures' custom cost (what ``detect`` ran before)."""

    model = "l2_prefix"
    min_size = 1

    def fit(self, signal):
        self.signal = np.asarray(signal, dtype=float).reshape(len(signal), -1)
        z = self.signal[:, 0]
        self._s1 = np.concatenate([[0.0], np.cumsum(z)])
        self._s2 = np.concatenate([[0.0], np.cumsum(z * z)])
        return self

    def error(self, start, end):
        s = self._s1[end] - self._s1[start]
        return max(float(self._s2[end] - self._s2[start] - s * s / (end - start)), 0.0)


def _ruptures_pelt(z, min_size, pen):
    return ruptures.Pelt(custom_cost=_PrefixL2(), min_size=min_size, jump=1).fit(z).predict(pen=pen)


def _shapes(rng, n):
    """Series of one length: noise, a step, a ramp, flat and rounded ones (ties everywhere), square waves."""
    t = np.arange(n)
    return np.stack([rng.normal(0, 1, n), np.where(t >= n // 2, 6.0, 0.0) + rng.normal(0, 1, n),
                     t / n * 10 + rng.normal(0, 1, n), np.zeros(n), np.round(rng.normal(0, 1, n)),
                     np.where(t % 20 < 10, 4.0, 0.0) + rng.normal(0, 0.5, n)])


@pytest.mark.slow
def test_pelt_many_finds_what_ruptures_pelt_finds():
    rng = np.random.default_rng(7)
    for n in (6, 7, 11, 40, 120, 365):
        zs = _shapes(rng, n)
        for min_size in (2, 3, 5):
            if n < 2 * min_size:
                continue
            for pen in (0.5, 2 * math.log(n), 30.0):
                want = [_ruptures_pelt(z, min_size, pen) for z in zs]
                assert pelt_many(zs, min_size, pen) == want, (n, min_size, pen)


def test_pelt_many_finds_for_each_series_what_it_finds_for_that_series_alone():
    """The batched search masks a pruned split instead of removing it: a series' splits,
    costs, pruning and ties do not depend on the others searched with it."""
    rng = np.random.default_rng(11)
    for n in (4, 6, 7, 11, 40, 120, 365):
        zs = _shapes(rng, n)
        for min_size in (2, 3, 5):
            if n < min_size:
                continue
            for pen in (0.5, 2 * math.log(n), 30.0):
                got = pelt_many(zs, min_size, pen)
                assert got == [pelt_many(z[None], min_size, pen)[0] for z in zs], (n, min_size, pen)


def test_detect_many_is_detect_of_each_sequence():
    rng = np.random.default_rng(5)
    seqs = [list(20 * np.exp(rng.normal(0, 0.004, n)) * np.where(np.arange(n) >= n // 2, 1.05, 1.0))
            for n in (0, 1, 5, 6, 30, 30, 30, 61)] + [[5.0] * 20, [5.0] * 10 + [5.15] * 10]
    assert detect_many(seqs) == [detect(s) for s in seqs]
    assert any(s.shifts for s in detect_many(seqs))
    with pytest.raises(ValueError, match="finite numbers > 0"):
        detect_many([[1.0, 2.0], [1.0, -1.0]])


@pytest.mark.parametrize("before", [20, 40])
def test_a_step_two_nights_old_is_not_confirmed_a_night_early(before):
    """Two nights at +30 % after 20 (or 40) quiet ones: the shortest segment the rule allows (3)
    took the last quiet night with them, and where that night happened to be the quiet nights'
    slowest, the step was confirmed between the wrong nights, its commits one night early."""
    for seed in range(12):
        early = analyse(series(noisy([1.0] * before + [1.3] * 2, 0.004, seed=seed)))
        assert early.change_points == (), (seed, [(c.index, c.p_value) for c in early.change_points])
        (cp,) = analyse(series(noisy([1.0] * before + [1.3] * 3, 0.004, seed=seed))).change_points
        assert cp.index == before and cp.rel_change == pytest.approx(0.3, abs=0.01)
    # a step its two sides confirm at their shortest is kept: the rule's 9 and 3, 6 and 4
    for values, at in (([1.0] * 9 + [1.3] * 3, 9), ([1.0] * 3 + [1.3] * 9, 3), ([1.0] * 6 + [1.3] * 4, 6)):
        assert [c.index for c in analyse(series(noisy(values, 0.004, seed=1))).change_points] == [at]


@pytest.mark.parametrize("seed", range(3))
def test_a_step_three_nights_after_the_first_is_confirmed_though_its_third_night_was_noisy(seed):
    """The series' first side never grows: a +4 % step after its first three nights, the third
    of them the slowest (nearer the level after than its own), was never confirmed, however many
    nights followed it; the row read 'no shift confirmed' for good."""
    first = [0.99 * 20, 1.0 * 20, 1.021 * 20]
    values = first + noisy([1.04] * 362, 0.01, seed=seed)
    assert abs(math.log(first[2] / 20)) > abs(math.log(first[2] / float(np.median(values[3:]))))  # the case
    (cp,) = analyse(series(values)).change_points
    assert (cp.index, cp.n_before, cp.n_after) == (3, 3, 362) and cp.p_value < 1e-4
    assert cp.rel_change == pytest.approx(0.04, abs=0.005)
