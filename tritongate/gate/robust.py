"""The paired estimate of a row, on many rows at once (numpy, last axis = pairs).

A row's evidence is its per-pair log ratios ``d`` (log cand round median - log base round
median), which worker pair measured each pair, and who went first in it. The estimate is
built in three steps, each against a noise pattern the H200 shows or the simulation plants:

1. **Order**: whoever is timed first in a pair may run differently. With both orders present
   the order term (half the difference of the two orders' trimmed means) is removed from every
   pair, so it inflates neither the IQR check nor the floor; balanced pairs average it out of
   the estimate anyway.
2. **Robust location**: per worker pair, the 20 % trimmed mean of the pairs and Yuen's
   standard error (from the winsorized variance): one 3x round moves neither.
   Pairs of one process are serially correlated (slow drift within a process, a speed state
   lasting rounds): on the H200 a 10-20 pair mean of one worker pair varies 2.0-2.3x (median
   of 16 series; up to 6.9x) more than its pairs' spread says. The policy's ``pair_inflation``
   scales each worker pair's variance by that factor.
3. **Two levels**: worker pairs are independent processes, and two processes of one build can
   differ persistently (placement, a kernel's speed state). Each worker pair's estimate is
   combined as in a random-effects meta-analysis: its weight is ``1 / (se_g^2 + tau^2)``,
   where tau is the between-worker-pair SD: the larger of the policy's ``process_sd`` (what
   the H200 shows; a row measured on one worker pair cannot estimate it) and the
   DerSimonian-Laird estimate from the worker pairs themselves. ``agreement_p`` is the
   probability of the worker pairs' spread (Cochran's Q with tau = process_sd) under one
   common effect: a small value means they disagree.

The floor's degrees of freedom: the measured standard error has a within-worker-pair part
(the pairs' spread, ``h - 1`` per worker pair) and, where the worker pairs differ by more
than ``process_sd``, a between part estimated from K worker pairs (K - 1). Their sum gets the
Welch-Satterthwaite df, rounded down; with the within df alone, pure per-process offsets of
0.5-2 % cleared the floor 20-340 times more often than its nominal tail.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

import numpy as np

from tritongate.gate.quantiles import chi2_sf

TRIM = 0.2


def _trimmed_mean_sorted(s: np.ndarray, trim: float = TRIM) -> np.ndarray:
    """The 20 % trimmed mean of ``s = np.sort(x, axis=-1)`` over its last axis."""
    n = s.shape[-1]
    g = int(math.floor(trim * n))
    return cast(np.ndarray, s[..., g:n - g].mean(axis=-1))  # a numpy scalar for one row, as before


def _winsorized_var_sorted(s: np.ndarray, trim: float = TRIM) -> np.ndarray:
    """The winsorized variance (ddof 1) of ``s = np.sort(x, axis=-1)``."""
    n = s.shape[-1]
    g = int(math.floor(trim * n))
    return cast(np.ndarray, np.clip(s, s[..., g:g + 1], s[..., n - g - 1:n - g]).var(axis=-1, ddof=1))


@dataclass(frozen=True)
class PairedEstimate:
    """Per row (arrays of the batch shape)."""

    effect_log: np.ndarray  # the combined estimate of log(cand / base)
    se: np.ndarray  # its standard error, the between-worker-pair part included
    se_measured: np.ndarray  # the part the pairs measured (Student's t on df applies) ...
    se_prior: np.ndarray  # ... and the part process_sd stands for (known: the normal quantile applies)
    df: np.ndarray  # degrees of freedom of se_measured (Welch-Satterthwaite, rounded down)
    order_log: np.ndarray  # the order term removed (base-first minus candidate-first, halved)
    adjusted: np.ndarray  # the per-pair log ratios with the order term removed
    worker_pairs: int  # K
    tau: np.ndarray  # between-worker-pair SD used
    agreement_p: np.ndarray  # P(spread at least this large | one common effect); 1 with K = 1
    cluster_effects: np.ndarray  # (..., K) each worker pair's trimmed mean


def order_signs(base_first: np.ndarray) -> np.ndarray:
    return np.where(base_first, 1.0, -1.0)


def estimate(d: np.ndarray, *, base_first: np.ndarray | None, groups: np.ndarray | None,
             process_sd: float, inflation: float = 1.0) -> PairedEstimate:
    """``d``: (..., n) per-pair log ratios; ``base_first``, ``groups``: (n,) for every row alike.
    ``inflation``: how much more a worker pair's mean varies than its pairs' spread says (the
    pairs of one process are serially correlated: slow drift, a speed state)."""
    d = np.asarray(d, dtype=float)
    n = d.shape[-1]
    groups = np.zeros(n, dtype=int) if groups is None else np.asarray(groups, dtype=int)
    order = np.zeros(d.shape[:-1])
    if base_first is not None and len(base_first) == n:
        bf = np.asarray(base_first, dtype=bool)
        if bf.sum() >= 2 and (~bf).sum() >= 2:
            order = (_trimmed_mean_sorted(np.sort(d[..., bf], axis=-1))
                     - _trimmed_mean_sorted(np.sort(d[..., ~bf], axis=-1))) / 2
            d = d - order[..., None] * order_signs(bf)
    labels = sorted(set(groups.tolist()))
    # Each worker pair's trimmed mean; its standard error from the winsorized variance pooled
    # over the worker pairs (a worker pair of two or three pairs cannot estimate its own
    # spread, and a tiny estimate would make the agreement test call it an outlier).
    means, var_sum, dof, sizes = [], np.zeros(d.shape[:-1]), 0, []
    for g in labels:
        # sorted once for the trimmed mean and the winsorized variance
        s = np.sort(d if len(labels) == 1 else d[..., groups == g], axis=-1)
        n_g = s.shape[-1]
        means.append(_trimmed_mean_sorted(s))
        sizes.append(n_g)
        if n_g >= 2:
            var_sum = var_sum + (n_g - 1) * _winsorized_var_sorted(s)
            dof += n_g - 1
    var_w = var_sum / dof if dof else np.full(d.shape[:-1], np.inf)
    ses, dfs = [], 0
    for n_g in sizes:
        h = n_g - 2 * int(math.floor(TRIM * n_g))
        ses.append(np.sqrt((n_g - 1) * var_w / (h * (h - 1))) if h >= 2 else np.sqrt(var_w / n_g))
        dfs += max(h - 1, 0)
    m = np.stack(means, axis=-1)
    v = np.stack(ses, axis=-1) ** 2 * inflation
    k = len(labels)
    tau2 = np.full(d.shape[:-1], process_sd ** 2)
    agreement = np.ones(d.shape[:-1])
    if k >= 2:
        with np.errstate(divide="ignore", invalid="ignore"):
            w0 = 1 / np.maximum(v, 1e-30)
            m0 = (w0 * m).sum(-1) / w0.sum(-1)
            q = (w0 * (m - m0[..., None]) ** 2).sum(-1)
            c = w0.sum(-1) - (w0 ** 2).sum(-1) / w0.sum(-1)
            tau2_dl = np.where(c > 0, np.maximum(0.0, (q - (k - 1)) / c), 0.0)
            tau2 = np.maximum(tau2, np.nan_to_num(tau2_dl, nan=0.0))
            wq = 1 / np.maximum(v + process_sd ** 2, 1e-30)
            mq = (wq * m).sum(-1) / wq.sum(-1)
            q_tau = (wq * (m - mq[..., None]) ** 2).sum(-1)
        agreement = np.where(np.isfinite(q_tau), chi2_sf(np.nan_to_num(q_tau, nan=0.0), k - 1), 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = 1 / np.maximum(v + tau2[..., None], 1e-30)
        sw = w.sum(-1)
        effect = (w * m).sum(-1) / sw
        se = np.sqrt(1 / sw)
        excess = (tau2 - process_sd ** 2)[..., None]  # between-worker-pair spread beyond the prior: measured
        se_measured = np.sqrt((w ** 2 * (v + excess)).sum(-1)) / sw
        within, between = (w ** 2 * v).sum(-1), (w ** 2 * excess).sum(-1)  # its two parts (times sw ** 2)
        se_prior = np.sqrt((w ** 2).sum(-1) * process_sd ** 2) / sw
        df = np.full(d.shape[:-1], float(dfs))
        if k >= 2 and dfs > 0:
            df_sw = (within + between) ** 2 / (within ** 2 / dfs + between ** 2 / (k - 1))
            df = np.where((between > 0) & np.isfinite(df_sw), np.floor(np.minimum(df_sw, dfs)), df)
    return PairedEstimate(effect_log=effect, se=se, se_measured=se_measured, se_prior=se_prior,
                          df=df, order_log=order, adjusted=d,
                          worker_pairs=k, tau=np.sqrt(tau2), agreement_p=agreement, cluster_effects=m)
