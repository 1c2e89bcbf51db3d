"""The rule on many rows at once (``decide_rows``), for a gate of thousands of rows.

``decide_rows`` is ``tritongate.gate.rule.decide`` for every timed row of a gate, result for
result (``tests/gate/test_scale_decide.py`` checks it field by field): the rows share the
floor's t quantile of each degrees of freedom (``floor_multiplier`` is a scipy call, most of a
row's cost when made per row) and the layouts' arrays; the rest is ``rule.judge``, which
``decide`` calls too. The estimate stays one
``robust.estimate`` per row: numpy's sums over a batch round differently in the last bit, and
a verdict must not depend on how many rows it was judged with.
"""

from __future__ import annotations

import functools

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from tritongate.gate.rule import PairLayout, TimingDecision, _evidence, floor_multiplier, judge
from tritongate.stats import Summary, summarize


@dataclass(frozen=True)
class RowSamples:
    """One row's part of a ``rule.decide`` call; ``base_summary``/``cand_summary``: the
    samples' summaries where the caller has them (``Row.summary``), else made here."""

    base: Sequence[float]
    cand: Sequence[float]
    base_per_round: int
    cand_per_round: int
    min_effect: float
    paired: bool = False
    layout: PairLayout | None = None
    base_summary: Summary | None = None
    cand_summary: Summary | None = None


def decide_rows(rows: Sequence[RowSamples], *, noise_z: float, min_samples: int, process_sd: float = 0.0,
                pair_inflation: float = 1.0) -> list[TimingDecision]:
    """``[rule.decide(r.base, r.cand, ...) for r in rows]``, equal field for field."""
    multipliers: dict[float, float] = {}
    layouts: dict[tuple[PairLayout | None, int], tuple[np.ndarray, np.ndarray]] = {}

    def multiplier(df: float) -> float:
        if df not in multipliers:
            multipliers[df] = floor_multiplier(noise_z, df)
        return multipliers[df]

    def arrays(layout: PairLayout | None, n: int) -> tuple[np.ndarray, np.ndarray]:
        if (layout, n) not in layouts:
            layouts[layout, n] = (layout or PairLayout()).arrays(n)
        return layouts[layout, n]

    out = []
    for r in rows:
        ev = _evidence(r.base, r.cand, base_per_round=r.base_per_round, cand_per_round=r.cand_per_round,
                       paired=r.paired, layout=r.layout, process_sd=process_sd, pair_inflation=pair_inflation,
                       arrays=functools.partial(arrays, r.layout))
        out.append(judge(ev, r.base, r.cand, r.base_summary or summarize(r.base), r.cand_summary or summarize(r.cand),
                         base_per_round=r.base_per_round, cand_per_round=r.cand_per_round, paired=r.paired,
                         layout=r.layout, min_effect=r.min_effect, noise_z=noise_z, min_samples=min_samples,
                         mult=multiplier(ev.df)))
    return out
