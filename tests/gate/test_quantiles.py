"""The gate's distribution functions equal the ``scipy.stats`` calls they replace, bit for bit,
edges of their domains included (a verdict must not change with the import it saves)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from tritongate.gate.quantiles import chi2_sf, norm_sf, t_isf, t_ppf

DFS = [1, 2, 3, 4.5, 7, 19, 20, 79, 319, 1000, 1e6]


@pytest.mark.parametrize("z", [0.0, 0.5, 1.2815515655446004, 1.96, 2.5, 3.0, 5.0, 8.0, -1.0])
def test_norm_sf(z: float):
    assert norm_sf(z) == stats.norm.sf(z)


@pytest.mark.parametrize("df", DFS)
@pytest.mark.parametrize("q", [1e-6, 0.001, float(stats.norm.sf(2.5)), 0.025, 0.1, 0.5, 0.9])
def test_t_isf_and_ppf(df: float, q: float):
    assert t_isf(q, df) == stats.t.isf(q, df)
    assert t_ppf(1 - q, df) == stats.t.ppf(1 - q, df)


@pytest.mark.parametrize("df,q", [(0, 0.01), (-1, 0.01), (3, 1.5), (3, -0.1)])
def test_t_outside_the_domain_is_nan_as_in_scipy_stats(df: float, q: float):
    assert math.isnan(t_isf(q, df)) and math.isnan(stats.t.isf(q, df))
    assert math.isnan(t_ppf(q, df)) and math.isnan(stats.t.ppf(q, df))


def test_chi2_sf_elementwise_with_its_edges():
    x = np.array([[-1.0, 0.0, 0.1, 1.0, 5.0, 30.0, 1e3, np.inf]] * 6)
    df = np.array([0, 1, 2, 5, 11, -2])[:, None] * np.ones_like(x)
    expected = stats.chi2.sf(x, df)
    np.testing.assert_array_equal(chi2_sf(x, df), expected)
    assert np.isnan(chi2_sf(x, df)[0]).all() and chi2_sf(-1.0, 3) == 1.0
