"""The per-op speedup intervals over a gate result (the batch A/B summary)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tritongate.gate.verdict import GateResult

if TYPE_CHECKING:
    import pandas as pd

COLUMNS = ["op", "rows", "min", "geomean", "max"]


def per_op_records(result: GateResult) -> list[dict[str, Any]]:
    """Per op (sorted by name): rows compared, and the interval and geometric mean of their
    speedups. numpy, not pandas: every gate writes this, and pandas costs the gate more to
    import than the table costs to make."""
    import numpy as np

    speedups: dict[str, list[float]] = {}
    for r in result.timed():
        if r.timing is not None:  # a timed row has its timing
            speedups.setdefault(r.op, []).append(r.timing.speedup)
    return [{"op": op, "rows": len(s), "min": min(s), "geomean": float(np.exp(np.log(np.array(s)).mean())),
             "max": max(s)} for op, s in sorted(speedups.items())]


def per_op(result: GateResult) -> "pd.DataFrame":
    """``per_op_records`` as a frame, one row per op."""
    import pandas as pd

    return pd.DataFrame(per_op_records(result), columns=COLUMNS)
