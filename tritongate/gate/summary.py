"""The per-op speedup intervals over a gate result (the batch A/B summary), with pandas."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tritongate.gate.verdict import GateResult

if TYPE_CHECKING:
    import pandas as pd


def per_op(result: GateResult) -> "pd.DataFrame":
    """Per op: rows compared, and the interval and geometric mean of their speedups."""
    import numpy as np
    import pandas as pd  # here, not at the top: importing the gate must not pay for pandas

    timed = [{"op": r.op, "speedup": r.timing.speedup} for r in result.timed()]
    if not timed:
        return pd.DataFrame(columns=["op", "rows", "min", "geomean", "max"])
    frame = pd.DataFrame(timed)
    grouped = frame.groupby("op", sort=True)["speedup"]
    out = pd.DataFrame({
        "rows": grouped.size(),
        "min": grouped.min(),
        "geomean": grouped.apply(lambda s: float(np.exp(np.log(s).mean()))),
        "max": grouped.max(),
    }).reset_index()
    return out
