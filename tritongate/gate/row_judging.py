"""Judging (base, candidate) row pairs: the verdict of a row not judged on its timings
(rejected, identical binaries, not comparable), the timing decision of the others
(``rule.decide``), a call's confirmation on fresh worker pairs, and whether
each timed row resolved its target or what stopped it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence, TypedDict

from tritongate.gate.policy import GatePolicy
from tritongate.gate.row_comparability import (identical_binaries, launch_state, launch_state_unknown, paired_rows,
                                               row_marker_reasons, row_mismatch, row_rounds, row_status_reasons)
from tritongate.gate.row_verdict import RowVerdict
from tritongate.model.verdict import Verdict
from tritongate.gate.rule import PairLayout, TimingDecision, Why, decide
from tritongate.model.verdict import SHOWN_NOT_FAILING
from tritongate.schema import PairInfo, Row, RowStatus, SkipReason
from tritongate.stats import Change, Summary

AHEAD_OF_TIME_REASON = ("every kernel it launched compiled byte-identical under both builds ahead of time "
                        "(pair --changed-from); not timed")
# what stopped a pairing short (``PairInfo.stopped_by``), in the words of a row's reason
_STOP_WORDS = {"row_budget": "row budget", "run_budget": "run budget", "round_cap": "round cap"}


def _short_call(pairing: PairInfo | None, rounds: int | None) -> bool:
    return pairing is not None and rounds is not None and rounds < pairing.confirm_rounds


def judge_rows(pairs: Sequence[tuple[Row, Row]], policy: GatePolicy) -> list[RowVerdict]:
    """The verdict of each (base, candidate) pair, each timed row decided by ``rule.decide``
    (the floor's multiplier is cached by degrees of freedom, the samples' summaries are the
    rows' own: at 10,000 rows as fast as the batched path this replaced)."""
    early = [_untimed(b, c, policy) for b, c in pairs]
    timed = [(i, _timed(b, c, policy)) for i, ((b, c), v) in enumerate(zip(pairs, early)) if v is None]
    decisions = [decide(**t.samples, noise_z=policy.noise_z, min_samples=policy.min_samples,
                        process_sd=policy.process_sd, pair_inflation=policy.pair_inflation) for _, t in timed]
    out = list(early)
    for (i, t), timing in zip(timed, decisions):
        out[i] = _timed_verdict(pairs[i][0], pairs[i][1], t, timing, policy)
    return [v for v in out if v is not None]  # every None was replaced


def _common(base: Row, cand: Row, policy: GatePolicy) -> dict[str, Any]:
    return dict(op=base.op, case=base.case, dtype=base.dtype, base_markers=base.markers,
                cand_markers=cand.markers, min_effect=policy.min_effect_for(base.op))


def _untimed(base: Row, cand: Row, policy: GatePolicy) -> RowVerdict | None:
    """The verdict of a row that is not judged on its timings; None for one that is."""
    common = _common(base, cand, policy)
    status = row_status_reasons(base, "base") + row_status_reasons(cand, "candidate")
    marker_reasons, hard = row_marker_reasons(base, cand)
    if cand.status is not RowStatus.OK and base.status is RowStatus.OK:
        # the candidate build crashed, hung or raised where the base build ran: a regression
        hard = True
        status.append("the candidate failed on a row the base ran")
    if status or marker_reasons:
        return RowVerdict(verdict=Verdict.REJECTED, reasons=tuple(status + marker_reasons),
                          fails_policy=hard, **common)
    identical = identical_binaries(base, cand)
    if base.skipped is cand.skipped is SkipReason.UNCHANGED_AHEAD_OF_TIME:
        return RowVerdict(verdict=Verdict.IDENTICAL_BINARY, reasons=(AHEAD_OF_TIME_REASON,), **common)
    if base.skipped or cand.skipped:
        if identical and base.skipped is cand.skipped is SkipReason.IDENTICAL_BINARY:
            return RowVerdict(verdict=Verdict.IDENTICAL_BINARY, reasons=(
                "every launched kernel is byte-identical on both sides (not timed)",), **common)
        side = "base" if base.skipped else "candidate"
        skipped = base.skipped or cand.skipped
        assert skipped is not None  # one side skipped, by the test above
        why = skipped.value.replace("_", " ")
        return RowVerdict(verdict=Verdict.NOT_COMPARABLE, reasons=(
            f"not timed on the {side} ({why}) and the kernels are not identical on both sides; "
            "measure both sides with timing (tritongate pair --time-identical)",), **common)
    mismatch = row_mismatch(base, cand)
    if mismatch:
        return RowVerdict(verdict=Verdict.NOT_COMPARABLE, reasons=tuple(mismatch), **common)
    return None


class _DecideArgs(TypedDict):
    """One row's part of a ``rule.decide`` call (typed, so the call is checked)."""

    base: Sequence[float]
    cand: Sequence[float]
    base_per_round: int
    cand_per_round: int
    min_effect: float
    paired: bool
    layout: PairLayout | None
    base_summary: Summary | None
    cand_summary: Summary | None


@dataclass(frozen=True)
class _Timed:
    """A row judged on its timings: what its decision takes, and its pairing."""

    samples: _DecideArgs
    bp: PairInfo | None  # the base side's pairing, paired rows only


def _timed(base: Row, cand: Row, policy: GatePolicy) -> _Timed:
    paired = paired_rows(base, cand)
    bp = base.measurement.pairing if paired and base.measurement else None
    layout = PairLayout(base_first=bp.went_first, worker_pairs=bp.worker_pairs) if bp is not None else None
    # Row.summary is summarize(row.samples), made once when the row was loaded
    return _Timed(_DecideArgs(
        base=base.samples, cand=cand.samples,
        base_per_round=base.measurement.samples_per_round if base.measurement else len(base.samples),
        cand_per_round=cand.measurement.samples_per_round if cand.measurement else len(cand.samples),
        min_effect=policy.min_effect_for(base.op), paired=paired, layout=layout,
        base_summary=base.summary, cand_summary=cand.summary), bp)


def _timed_verdict(base: Row, cand: Row, t: _Timed, timing: TimingDecision, policy: GatePolicy) -> RowVerdict:
    common = _common(base, cand, policy)
    identical = identical_binaries(base, cand)
    paired, bp = t.samples["paired"], t.bp
    pairing = cand.measurement.pairing if paired and cand.measurement else None
    rounds = row_rounds(cand)
    extra: dict[str, Any] = dict(pairing=pairing, rounds=rounds)
    if identical:
        return RowVerdict(verdict=Verdict.IDENTICAL_BINARY, timing=timing,
                          reasons=("every launched kernel is byte-identical on both sides",), **common, **extra)
    verdict = {Change.SLOWER: Verdict.REGRESSED, Change.FASTER: Verdict.IMPROVED}.get(timing.change,
                                                                                  Verdict.UNCHANGED)
    reasons = [timing.reason]
    timed_from = 0  # the first round the timing shown stands on
    if pairing is not None and bp is not None and 0 < pairing.confirm_from < (rounds or 0):
        timed_from = pairing.confirm_from
        verdict, timing, confirm_reason = _confirmed(base, cand, bp, pairing.confirm_from, policy, common["min_effect"])
        reasons = [timing.reason, confirm_reason]
        # both measurements must be long enough: a first call cut short by a budget is one
        # a confirmation cannot rescue
        # (a first call is confirmed only on the pairs a call needs since 2026-12-06; earlier
        # runs confirmed short ones too, without saying what stopped them)
        short = [(f"{what} has {n} pairs", stop) for what, n, stop in (
            ("the first call", pairing.confirm_from, None),
            ("its confirmation", (rounds or 0) - pairing.confirm_from, pairing.stopped_by)) if _short_call(pairing, n)]
        if verdict is not Verdict.UNCONFIRMED and short:
            verdict = Verdict.UNCONFIRMED
            reasons.append(_short_reason(short, pairing.confirm_rounds))
    elif verdict is not Verdict.UNCHANGED and pairing is not None and _short_call(pairing, rounds):
        verdict = Verdict.UNCONFIRMED
        reasons.append(f"called on {rounds} pairs, fewer than the {pairing.confirm_rounds} a confirmation needs "
                       f"(stopped by the {_STOP_WORDS.get(_stop(pairing, rounds), 'budget')}){SHOWN_NOT_FAILING}")
    if verdict is Verdict.UNCHANGED and timing.why is Why.WORKER_PAIRS_DISAGREE and timing.one_way:
        # every process measured the candidate the same way round, by different amounts: not a
        # size the gate can stand on, nor nothing (a planted spin converted at a cold clock did this)
        verdict = Verdict.UNCONFIRMED
        reasons.append(f"every worker pair measured it {'slower' if timing.effect > 0 else 'faster'}, by amounts "
                       f"that depend on the process{SHOWN_NOT_FAILING}")
    if verdict in (Verdict.REGRESSED, Verdict.IMPROVED) and paired and timing.worker_pairs == 1 \
            and not (pairing is not None and pairing.confirm_from):
        # one base and one candidate process: a process's own level moves every pair alike
        verdict = Verdict.UNCONFIRMED
        reasons.append("called on one worker pair, where a process's own offset cannot be told from a change "
                       f"(the cpu backend keeps one){SHOWN_NOT_FAILING}")
    state = launch_state(base, cand, timed_from)  # a confirmed call stands on its confirmation's rounds
    unknown = launch_state_unknown(base, cand)
    if unknown is not None:
        reasons.append(unknown)
    hidden = False  # an unchanged row whose sides' states could hide a change of the minimum effect
    if state is not None:
        # the change the call stands on, µs a launch (a paired call's estimate, not pooled medians)
        base_us = timing.base.median
        change_us = timing.effect * base_us
        if verdict in (Verdict.REGRESSED, Verdict.IMPROVED) and state.explains(change_us):
            verdict = Verdict.UNCONFIRMED
            reasons.append(f"{state.reason}{SHOWN_NOT_FAILING}")
        elif verdict is Verdict.UNCHANGED and state.reach_us >= common["min_effect"] * base_us:
            hidden = True
            reasons.append(f"{state.reason}: enough to hide a change of the minimum effect")
        # a call the state cannot explain (too large, or the other way) stands, and needs no note
    reached, stopped = _reached(timing, verdict, common["min_effect"], pairing, rounds)
    if hidden and reached:  # short of its target anyway: the budget or cap that stopped it says what to raise
        reached, stopped = False, "launch_state"
    return RowVerdict(verdict=verdict, timing=timing, reasons=tuple(reasons), reached_target=reached,
                      stopped_by=stopped, **common, **extra)


def _confirmed(base: Row, cand: Row, bp: PairInfo, start: int, policy: GatePolicy,
               min_effect: float) -> tuple[Verdict, TimingDecision, str]:
    """A call measured again from round ``start`` on fresh worker pairs: it stands only if that
    measurement, judged alone, calls it the same way. The timing shown is the confirmation's."""
    bpr, cpr = base.measurement.samples_per_round, cand.measurement.samples_per_round  # type: ignore[union-attr]

    def judge(lo: int, hi: int | None) -> TimingDecision:
        layout = PairLayout(bp.went_first[lo:hi], bp.worker_pairs[lo:hi])
        return decide(base.samples[lo * bpr:None if hi is None else hi * bpr],
                      cand.samples[lo * cpr:None if hi is None else hi * cpr], base_per_round=bpr, cand_per_round=cpr,
                      min_effect=min_effect, noise_z=policy.noise_z, min_samples=policy.min_samples, paired=True,
                      layout=layout, process_sd=policy.process_sd, pair_inflation=policy.pair_inflation)
    first, again = judge(0, start), judge(start, None)
    if first.change is not Change.WITHIN_NOISE and again.change is first.change:
        verdict = Verdict.REGRESSED if again.change is Change.SLOWER else Verdict.IMPROVED
        return verdict, again, (f"confirmed on fresh worker pairs: {first.effect:+.2%} on the first {start} pairs, "
                                f"{again.effect:+.2%} on the {again.pairs} after")
    return Verdict.UNCONFIRMED, again, (f"{first.effect:+.2%} on the first {start} pairs was not confirmed on fresh "
                                        f"worker pairs ({again.effect:+.2%} on the {again.pairs} after: "
                                        f"{again.reason}){SHOWN_NOT_FAILING}")


def _short_reason(short: Sequence[tuple[str, str | None]], needed: int) -> str:
    """Why a confirmed call stays unconfirmed: which of its two measurements had too few pairs,
    each with what stopped it (one stop said once; none for runs that did not record it)."""
    def stopped(stop: str | None) -> str:
        return f" (stopped by the {_STOP_WORDS.get(stop, 'budget')})" if stop else ""
    stops = {stop for _, stop in short}
    if len(stops) == 1:
        return f"{' and '.join(what for what, _ in short)}, fewer than the {needed} a call needs" \
               f"{stopped(stops.pop())}{SHOWN_NOT_FAILING}"
    return f"{' and '.join(what + stopped(stop) for what, stop in short)}, fewer than the {needed} a call needs" \
           f"{SHOWN_NOT_FAILING}"


def _stop(pairing: PairInfo, rounds: int | None) -> str:
    if pairing.stopped_by:
        return pairing.stopped_by
    # runs before schema 3's stopped_by: a row at its cap ran out of rounds, else of a budget
    return "round_cap" if rounds is not None and rounds >= pairing.max_rounds else "row_budget"


def _reached(timing: TimingDecision, verdict: Verdict, min_effect: float, pairing: PairInfo | None,
             rounds: int | None) -> tuple[bool, str | None]:
    """Whether a timed row resolved its target, and if not what stopped it."""
    if verdict in (Verdict.REGRESSED, Verdict.IMPROVED):
        return True, None
    # the gate's own precision, and the pairing's where the run recorded one (it judged the
    # samples its workers kept) for a target at least this fine: a gate asking for less than
    # the pairing aimed at (another --min-effect) is not held to the pairing's aim
    recorded = pairing is None or pairing.target_reached is not False or (
        pairing.target_effect is not None and min_effect > pairing.target_effect + 1e-12)
    if timing.detectable is not None and timing.detectable <= min_effect and verdict is not Verdict.UNCONFIRMED \
            and recorded:
        return True, None
    if pairing is not None:
        if verdict is Verdict.UNCONFIRMED and not pairing.stopped_by and (
                pairing.confirm_from or not _short_call(pairing, rounds)):
            return False, None  # a call nothing cut short: its reason says why it stands unconfirmed
        return False, _stop(pairing, rounds)
    return False, "too_few_samples" if timing.detectable is None else "unpaired"

