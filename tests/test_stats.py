import math

import pytest
from hypothesis import given, strategies as st

from tritongate.stats import Change, compare, outliers, summarize

finite = st.floats(min_value=1e-3, max_value=1e6, allow_nan=False, allow_infinity=False)
sample_sets = st.lists(finite, min_size=1, max_size=60)


def test_summarize_seed_example():
    s = summarize([1, 2, 3, 4, 100])
    assert (s.mean, s.median, s.q1, s.q3, s.iqr, s.min, s.max, s.n) == (22, 3, 2, 4, 2, 1, 100, 5)


def test_outliers_seed_example():
    assert outliers([1.0, 1.1, 0.9, 1.0, 1.05, 0.95, 5.0]) == [6]


def test_compare_seed_faster_table():
    r = compare([10, 10.5, 11, 11.5, 12], [5, 5.2, 5.5, 5.8, 6])
    assert r.change is Change.FASTER
    assert r.speedup == pytest.approx(2.0)
    assert (r.base.median, r.base.q1, r.base.q3) == (11, 10.5, 11.5)
    assert (r.new.median, r.new.q1, r.new.q3) == (5.5, 5.2, 5.8)


def test_compare_seed_within_noise_table():
    r = compare([10, 10.5, 11, 11.5, 12], [9.5, 10, 11, 11.8, 12.5])
    assert r.change is Change.WITHIN_NOISE
    assert r.iqrs_overlap
    assert (r.new.q1, r.new.q3) == (10, 11.8)


def test_compare_min_effect_and_min_samples_hold_back_a_verdict():
    base, new = [100, 100.1, 100.2, 100.3, 100.4], [100.6, 100.7, 100.8, 100.9, 101.0]
    assert compare(base, new).change is Change.SLOWER
    assert compare(base, new, min_effect=0.01).change is Change.WITHIN_NOISE
    assert compare(base, new, min_samples=6).change is Change.WITHIN_NOISE


def test_rejects_bad_samples():
    with pytest.raises(ValueError):
        summarize([])
    with pytest.raises(ValueError):
        summarize([1.0, math.nan])
    with pytest.raises(ValueError):
        compare([1.0], [1.0], min_effect=-0.1)


@given(sample_sets)
def test_summary_orders_statistics(xs):
    s = summarize(xs)
    tol = 1e-9 * s.max
    assert s.min - tol <= s.q1 <= s.median + tol <= s.q3 + 2 * tol <= s.max + 3 * tol
    assert s.min - tol <= s.mean <= s.max + tol
    assert s.n == len(xs) and s.iqr >= -tol


@given(sample_sets, st.floats(min_value=0.01, max_value=100))
def test_summary_scales_with_the_samples(xs, c):
    a, b = summarize(xs), summarize([x * c for x in xs])
    assert b.median == pytest.approx(a.median * c, rel=1e-9)
    assert b.iqr == pytest.approx(a.iqr * c, rel=1e-6, abs=1e-9 * b.max)


@given(sample_sets)
def test_outliers_lie_outside_the_fences_and_only_those(xs):
    s = summarize(xs)
    lo, hi = s.q1 - 1.5 * s.iqr, s.q3 + 1.5 * s.iqr
    idx = set(outliers(xs))
    for i, x in enumerate(xs):
        assert (i in idx) == (x < lo or x > hi)


@given(sample_sets)
def test_an_identical_copy_is_never_a_change(xs):
    r = compare(xs, list(xs))
    assert r.change is Change.WITHIN_NOISE and r.speedup == pytest.approx(1.0)


@given(sample_sets, sample_sets)
def test_compare_is_antisymmetric(a, b):
    ab, ba = compare(a, b), compare(b, a)
    assert ab.speedup == pytest.approx(1 / ba.speedup)
    flip = {Change.FASTER: Change.SLOWER, Change.SLOWER: Change.FASTER,
            Change.WITHIN_NOISE: Change.WITHIN_NOISE}
    assert ba.change is flip[ab.change]


@given(sample_sets, sample_sets)
def test_a_verdict_implies_disjoint_iqrs(a, b):
    r = compare(a, b)
    if r.change is not Change.WITHIN_NOISE:
        assert r.new.q3 < r.base.q1 or r.base.q3 < r.new.q1
        assert (r.change is Change.FASTER) == (r.new.median < r.base.median)


def test_quartiles_are_the_inclusive_quantiles_of_the_standard_library():
    """``quartiles`` does ``statistics.quantiles(n=4, method="inclusive")``'s arithmetic itself
    (once per summary): the same numbers to the last bit, odd and even counts, ties included."""
    import random
    import statistics

    from tritongate.stats import quartiles

    rng = random.Random(11)
    for n in [2, 3, 4, 5, 8, 25, 101] * 30:
        values = [round(rng.lognormvariate(3, 0.2), rng.choice([1, 6, 12])) for _ in range(n)]
        assert quartiles(values) == tuple(statistics.quantiles(values, n=4, method="inclusive"))
    assert quartiles([7.5]) == (7.5, 7.5, 7.5)
