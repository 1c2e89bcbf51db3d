"""The few distribution functions the gate needs, from ``scipy.special``.

``scipy.stats`` costs 0.6 CPU s to import, more than a whole gate of a few hundred rows spends
deciding; its ``norm``, ``t`` and ``chi2`` methods used here are thin wrappers over these
``scipy.special`` functions (a third of the import), so each function below returns what the
``scipy.stats`` call named in its docstring returns, to the last bit, over the same domain
(``nan`` outside it; ``tests/gate/test_quantiles.py``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray


def norm_sf(z: float) -> float:
    """``scipy.stats.norm.sf(z)``."""
    from scipy.special import ndtr

    return float(ndtr(-z))


def t_isf(q: float, df: float) -> float:
    """``scipy.stats.t.isf(q, df)``: the upper ``q`` quantile of Student's t (``nan`` for
    ``df <= 0`` or ``q`` outside [0, 1]); scipy computes it as ``-ppf(q)`` too."""
    return -t_ppf(q, df)


def t_ppf(p: float, df: float) -> float:
    """``scipy.stats.t.ppf(p, df)`` (``nan`` for ``df <= 0`` or ``p`` outside [0, 1])."""
    from scipy.special import stdtrit

    if not (df > 0 and 0 <= p <= 1):
        return float("nan")
    return float(stdtrit(df, p))


def chi2_sf(x: ArrayLike, df: ArrayLike) -> NDArray[np.float64]:
    """``scipy.stats.chi2.sf(x, df)``, elementwise: 1 for ``x < 0``, ``nan`` for ``df <= 0``."""
    from scipy.special import chdtrc

    x = np.asarray(x, dtype=float)
    df = np.asarray(df, dtype=float)
    with np.errstate(invalid="ignore"):
        out = np.where(x < 0, 1.0, chdtrc(df, np.maximum(x, 0.0)))
    return np.where(df > 0, out, np.nan)
