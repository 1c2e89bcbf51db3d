"""The paired estimate's floor under per-process offsets larger than the policy's prior."""

from __future__ import annotations

import math

import numpy as np

from tritongate.gate.robust import estimate
from tritongate.gate.rule import floor_multiplier

Z, PRIOR, INFLATION = 4.0, 0.003, 2.5


def _exceedances(offset_sd: float, rows: int = 20_000, k: int = 8, pairs: int = 40, seed: int = 1) -> tuple[int, int]:
    """A/A rows whose worker pairs sit ``offset_sd`` apart (a process's own level, nothing
    else): how many clear the floor with its df as estimated, and with the within df alone."""
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(k), pairs // k)
    d = rng.normal(0, offset_sd, (rows, k))[:, groups] + rng.normal(0, 0.003, (rows, pairs))
    est = estimate(d, base_first=np.tile([True, False], pairs // 2), groups=groups, process_sd=PRIOR,
                   inflation=INFLATION)
    within_df = float(est.df.max())  # rows with no between excess keep the within df
    counts = []
    for dfs in (est.df, np.full(rows, within_df)):
        mult = np.array([floor_multiplier(Z, x) for x in dfs])
        floor = np.hypot(mult * est.se_measured, Z * est.se_prior)
        counts.append(int((np.abs(est.effect_log) >= floor).sum()))
    return counts[0], counts[1]


def test_the_floor_counts_the_worker_pairs_behind_its_between_part():
    """With offsets well above the prior, the part of the standard error that measures them
    rests on K - 1 degrees of freedom, not on the pairs': the floor widens accordingly."""
    nominal = 20_000 * 2 * math.erfc(Z / math.sqrt(2)) / 2
    with_k, within_only = _exceedances(0.02)
    assert within_only > 15 * nominal  # what the within df alone lets through
    assert with_k < within_only / 2
    # rows whose eight offsets happen to lie close together look like a real change to any
    # floor; the confirmation on fresh worker pairs is what keeps them from standing
    assert with_k > 0


def test_the_df_is_the_within_df_when_the_worker_pairs_agree():
    rng = np.random.default_rng(3)
    groups = np.repeat(np.arange(4), 5)
    d = rng.normal(0, 0.001, (50, 20))
    est = estimate(d, base_first=None, groups=groups, process_sd=PRIOR, inflation=1.0)
    assert (est.df == 4 * (5 - 2 - 1)).all()  # h - 1 = 2 per worker pair of 5 (one trimmed each end)
