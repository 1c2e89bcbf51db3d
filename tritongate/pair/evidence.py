"""Whether a gated paired run (``pair``, ``loop``, ``merge`` of its shards) measured anything.

A verdict none of whose rows was judged says nothing about the change, so the command that
made it must not pass (``tritongate run`` that measured no row exits 2 for the same reason).
Judged: REGRESSED, IMPROVED, UNCONFIRMED, UNCHANGED and IDENTICAL_BINARY, including a row the
pre-screen proved byte-identical ahead of time (a pull request that changes no kernel passes
without GPU time; that is evidence, not its absence). Not judged: REJECTED, NOT_COMPARABLE,
MISSING, NEW, or no row at all.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from tritongate.gate.verdict import GateResult
from tritongate.model.verdict import JUDGED
from tritongate.report.untrusted import neutralize

MAX_REASON_CHARS = 200  # a reason can quote an op's own error text


@dataclass(frozen=True)
class NothingMeasured:
    """What the rows of a verdict that judged none of them were, for the error message."""

    rows: int
    counts: tuple[tuple[str, int], ...]  # (verdict, rows), most rows first
    reason: str  # the most common first reason of a row ("" without rows)
    reason_rows: int
    timeouts: int  # rows that timed out on either side

    def describe(self) -> str:
        if not self.rows:
            return "no row was planned"
        counts = ", ".join(f"{n} {v}" for v, n in self.counts)
        which = "its only row was not judged" if self.rows == 1 else f"none of its {self.rows} rows was judged"
        most = f"; most often: {self.reason} ({self.reason_rows} of {self.rows})" if self.reason else ""
        return f"{which} ({counts}{most})"

    def fix(self, *, row_timeout_s: float | None = None, again: str = "run the pair again") -> str:
        """What to change before measuring again; ``again``: how (the pair, the shards' pair
        runs, or the two runs a gate was given)."""
        if not self.rows:
            return ("no row of the record was selected: widen --ops/--dtypes, use fewer shards than the "
                    "suite has rows, or pass a record of this suite")
        if self.timeouts:
            was = f" (it was {row_timeout_s:g} s)" if row_timeout_s is not None else ""
            return f"{self.timeouts} row(s) timed out: raise --row-timeout{was} and {again}"
        return f"each row's reason is in verdict.md (Not judged) and both sides' run.log; fix the cause and {again}"


def nothing_measured(result: GateResult) -> NothingMeasured | None:
    """None when some row of ``result`` was judged; else what its rows were instead."""
    if any(r.verdict in JUDGED for r in result.rows):
        return None
    counts = Counter(r.verdict.value for r in result.rows)
    reasons = Counter(neutralize(r.reasons[0])[:MAX_REASON_CHARS] for r in result.rows if r.reasons)
    reason, reason_rows = reasons.most_common(1)[0] if reasons else ("", 0)
    timeouts = sum(1 for r in result.rows if any(x.startswith("timeout on ") for x in r.reasons))
    return NothingMeasured(rows=len(result.rows), counts=tuple(counts.most_common()), reason=reason,
                           reason_rows=reason_rows, timeouts=timeouts)
