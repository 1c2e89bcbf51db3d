"""One row's verdict: the word the gate gives a (base, candidate) row, with its reasons, its
timing decision and pairing, and whether it resolved its target; ``RowVerdict.to_dict`` is
the row as verdict.json writes it (``gate.verdict`` keeps the schema's history)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from tritongate.gate.rule import TimingDecision
from tritongate.model.verdict import Verdict
from tritongate.schema import PairInfo


def unconfirmed(r: "RowVerdict") -> bool:
    """A change seen and not confirmed (``row_judging`` gives the reason: too few pairs, not
    repeated on fresh worker pairs, one worker pair, disagreeing pairs, launch states)."""
    return r.verdict is Verdict.UNCONFIRMED


@dataclass(frozen=True)
class RowVerdict:
    op: str
    case: str
    dtype: str
    verdict: Verdict
    reasons: tuple[str, ...] = ()
    timing: TimingDecision | None = None
    min_effect: float | None = None
    base_markers: tuple[str, ...] = ()
    cand_markers: tuple[str, ...] = ()
    fails_policy: bool = False  # a rejected row that fails the gate even without --strict
    pairing: PairInfo | None = None  # the candidate side's pairing (target, rounds) if paired
    rounds: int | None = None  # rounds per side behind the timing
    # timed rows: did the row resolve its target (its detectable effect <= the op's minimum
    # effect, or a confirmed call)? None for rows that were not timed
    reached_target: bool | None = None
    stopped_by: str | None = None  # what ended it short of its target (gate_result words it); None when reached

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.op, self.case, self.dtype)

    def to_dict(self) -> dict[str, Any]:
        t = self.timing
        d: dict[str, Any] = {"op": self.op, "case": self.case, "dtype": self.dtype,
                             "verdict": self.verdict.value, "reasons": list(self.reasons),
                             "min_effect": self.min_effect, "base_markers": list(self.base_markers),
                             "cand_markers": list(self.cand_markers), "fails_policy": self.fails_policy,
                             "timed": t is not None, "rounds": self.rounds,
                             "reached_target": self.reached_target, "stopped_by": self.stopped_by}
        if self.pairing is not None:
            d.update({"target_effect": self.pairing.target_effect,
                      "target_reached": self.pairing.target_reached,
                      "confirm_rounds": self.pairing.confirm_rounds, "call_unconfirmed": unconfirmed(self),
                      "inputs": self.pairing.inputs})
        if t is not None:
            d.update({"timing_change": t.change.value, "speedup": t.speedup, "effect": t.effect,
                      "base_median_us": t.base.median, "base_q1_us": t.base.q1, "base_q3_us": t.base.q3,
                      "cand_median_us": t.cand.median, "cand_q1_us": t.cand.q1, "cand_q3_us": t.cand.q3,
                      "base_n": t.base.n, "cand_n": t.cand.n, "iqrs_overlap": t.iqrs_overlap,
                      "noise_floor": t.noise_floor if math.isfinite(t.noise_floor) else None,
                      "detectable_effect": t.detectable if t.detectable is None or math.isfinite(t.detectable)
                      else None, "paired": t.paired, "pairs": t.pairs, "why": t.why.value,
                      "worker_pairs": t.worker_pairs, "order_effect": t.order_effect})
        return d
