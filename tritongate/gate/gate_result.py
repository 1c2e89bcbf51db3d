"""All rows' verdicts of one gate and what they add up to: the failures, the three states
(pass, blind, fail) and the geometric-mean speedup with its interval. The headline is the
verdict document's, worded in one place (``report.verdict_view.headline_parts``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from tritongate.errors import ExitCode
from tritongate.gate.comparability import Mismatch
from tritongate.gate.policy import GatePolicy
from tritongate.gate.row_verdict import RowVerdict
from tritongate.model.verdict import Verdict
from tritongate.model.verdict import FAILING, JUDGED, UNVERIFIED, spread_bound
from tritongate.rundir import Run

# blind_text's words for what stopped the rows (RowVerdict.stopped_by)
_STOP_PHRASES = {"row_budget": "{n} stopped by the row budget (raise --row-budget)",
                 "run_budget": "{n} by the run budget (raise --run-budget)",
                 "round_cap": "{n} by the round cap (raise --max-rounds)",
                 "sample_spread": "{n} by the spread of their samples within a round (their IQRs overlap at that "
                                  "size; more rounds do not narrow it{longer})",
                 "unpaired": "{n} timed unpaired, from two stored runs (not the PR path: tritongate pair pairs them)",
                 "too_few_samples": "{n} with too few samples (raise --rounds)",
                 "unconfirmed": "{n} called and not confirmed (the reason is on the row; run the pair again to "
                                "measure it anew)",
                 "launch_state": "{n} measured with the sides in CUDA-graph launch states far enough apart to hide "
                                 "the minimum effect (run the pair again)"}
# The verdict's three states.
PASS, BLIND, FAIL = "pass", "blind", "fail"


@dataclass
class GateResult:
    base: Run
    cand: Run
    policy: GatePolicy
    rows: list[RowVerdict]
    mismatches: list[Mismatch] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def by(self, verdict: Verdict) -> list[RowVerdict]:
        return [r for r in self.rows if r.verdict is verdict]

    @property
    def failures(self) -> list[str]:
        out = []
        for word in FAILING:
            if hit := self.by(word):
                out.append(f"{len(hit)} {word.lower()} row(s)")
        if hard := [r for r in self.rows if r.fails_policy]:
            out.append(f"{len(hard)} row(s) that the candidate fails where the base did not (an error, "
                       "timeout or crash, or a recorded config that no longer compiles)")
        missing = self.by(Verdict.MISSING)
        if len(missing) > self.policy.max_missing:
            out.append(f"{len(missing)} missing row(s), more than the {self.policy.max_missing} allowed")
        if self.policy.strict:
            unverified = [r for r in self.rows if r.verdict in UNVERIFIED and not r.fails_policy]
            if unverified:
                out.append(f"{len(unverified)} unverified row(s) (rejected or not comparable) under --strict")
        if self.policy.fail_on_blind and (blind := self.blind_rows):
            out.append(f"{len(blind)} row(s) that could not resolve their target under --fail-on-blind "
                       f"({self.blind_text()})")
        elif self.policy.fail_on_blind and not self.judged_any:
            out.append("no row judged, under --fail-on-blind")
        return out

    @property
    def judged_any(self) -> bool:
        """Whether some row was judged (timed, or its binaries compared): a verdict that judged
        none saw nothing, whatever its failures."""
        return any(r.verdict in JUDGED for r in self.rows)

    @property
    def blind_rows(self) -> list[RowVerdict]:
        """Timed rows that did not reach their precision target: a pass says nothing about them."""
        return [r for r in self.rows if r.reached_target is False]

    @property
    def state(self) -> str:
        """``pass``: nothing failed and every timed row reached its target (or was identical);
        ``blind``: nothing failed, but some rows could not see their target; ``fail``."""
        if self.failures:
            return FAIL
        return BLIND if self.blind_rows or not self.judged_any else PASS

    def blind_text(self) -> str:
        """N rows could not resolve X %, what stopped them, and the flags that raise it."""
        blind = self.blind_rows
        if not blind:
            return ""
        # a row the launch states could hide did resolve its noise: its size is not what it lacks
        seen = [r.timing.detectable for r in blind if r.timing is not None and r.timing.detectable is not None
                and math.isfinite(r.timing.detectable) and r.stopped_by != "launch_state"]
        worst = f"{max(seen):.1%}" if seen and len(seen) == len(blind) else "their minimum effect"
        why: dict[str, int] = {}
        for r in blind:
            # an unconfirmed call that nothing stopped: its reason says why (a confirmation that
            # disagreed, one worker pair, the launch states), not a budget
            stop = r.stopped_by or ("unconfirmed" if r.verdict is Verdict.UNCONFIRMED else "round_cap")
            if stop == "round_cap" and r.timing is not None and spread_bound(
                    r.timing.detectable, r.timing.noise_floor, r.min_effect):
                stop = "sample_spread"
            why[stop] = why.get(stop, 0) + 1
        # a CUDA-graph sample of more launches narrows it (its k is set when the row is recorded)
        longer = (", longer samples do: record with --sample-ms, or give the op sample_ms in its suite"
                  if self.base.identity.get("timer") == "cuda-graph" else "")
        stops = "; ".join(_STOP_PHRASES.get(k, "{n} by " + k).format(n=n, longer=longer) for k, n in why.items())
        return f"{len(blind)} row(s) could not resolve {worst}: {stops}"

    @property
    def passed(self) -> bool:
        """Nothing failed, and some row was judged: a gate that saw nothing did not pass."""
        return not self.failures and self.judged_any

    @property
    def exit_code(self) -> int:
        """What the command exits with: 1 on a failure, 2 when no row was judged (``cli``
        then says why), else 0."""
        if self.failures:
            return int(ExitCode.GATE_FAILED)
        return int(ExitCode.OK if self.judged_any else ExitCode.USAGE)

    def timed(self) -> list[RowVerdict]:
        return [r for r in self.rows if r.timing is not None and r.verdict in
                (Verdict.REGRESSED, Verdict.IMPROVED, Verdict.UNCONFIRMED, Verdict.UNCHANGED,
                 Verdict.IDENTICAL_BINARY)]

    @property
    def geomean_speedup(self) -> float | None:
        rows = self.timed()
        if not rows:
            return None
        return math.exp(sum(math.log(r.timing.speedup) for r in rows if r.timing is not None) / len(rows))

    def geomean_interval(self) -> tuple[float, float] | None:
        """95 % confidence interval of the geometric-mean speedup over the timed rows (Student's
        t on their log speedups); None with fewer than two rows."""
        rows = self.timed()
        if len(rows) < 2:
            return None
        from tritongate.gate.quantiles import t_ppf

        logs = [math.log(r.timing.speedup) for r in rows if r.timing is not None]
        mean = sum(logs) / len(logs)
        sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1))
        half = t_ppf(0.975, len(logs) - 1) * sd / math.sqrt(len(logs))
        return math.exp(mean - half), math.exp(mean + half)
