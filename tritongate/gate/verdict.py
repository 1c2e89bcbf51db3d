"""Compare two runs row by row and decide: the data behind verdict.json and verdict.md.

Versioned output (bump ``VERDICT_SCHEMA_VERSION`` on any change a reader must know):
  1 - first version: per-row verdicts with both medians/IQRs, speedup, effect, detectable
      effect and reasons; counts, failures, geometric-mean speedup, per-op speedup intervals.
  2 - the rule works in log ratios; per row ``paired`` (judged from paired rounds or from
      two stored runs), ``pairs``, ``why`` (called, too_few_samples, iqrs_overlap,
      below_min_effect, below_noise_floor), ``detectable_effect`` null where the row could
      not have been called, ``timed`` (false for an IDENTICAL_BINARY row that was not
      timed), and the pairing's precision target (``target_effect``, ``target_reached``,
      ``rounds``).
  3 - IR evidence: per row ``ir`` (kernels launched, kernels whose IR changed, the smallest
      diff's path inside the verdict folder, variants only one side launched; null when the
      runs kept no IR) and a top-level ``ir`` (the ir-diff folder, variants per status, a
      note when the IR could not be compared).
      Added since, optional, without a bump (readers ignore keys they do not know): a top-level
      ``calibration`` (the runner's calibration summary the footer cites; null without one);
      per paired row ``confirm_rounds`` (the pairs a call needs) and ``call_unconfirmed`` (a
      REGRESSED or IMPROVED made on fewer, a budget having stopped the row); per paired row
      ``inputs`` (``shared``: the side timed second in each pair read the first side's inputs).
  4 - the verdict never claims more than it measured: a top-level ``state`` (``pass``: every
      timed row reached its precision target or was identical; ``blind``: no regression found
      but some rows could not resolve their target; ``fail``) and ``blind_rows`` (count) with
      ``blind`` (what stopped them, the flag that raises it, the largest detectable effect);
      the verdict ``UNCONFIRMED`` (a call made on fewer pairs than a confirmation needs: shown,
      never failing; it replaces ``call_unconfirmed``, still written); per row
      ``reached_target`` (null for rows not timed), ``stopped_by`` (``row_budget``,
      ``run_budget``, ``round_cap``, ``unpaired``, ``too_few_samples``; null when it reached
      its target), ``worker_pairs`` and ``order_effect`` (paired rows), and the policy's
      ``process_sd`` and ``fail_on_blind``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Mapping, Sequence

from tritongate import markers
from tritongate.errors import GateError, ExitCode
from tritongate.gate.batch import RowSamples, decide_rows
from tritongate.gate.comparability import Mismatch, identity_mismatches, notes
from tritongate.gate.policy import GatePolicy
from tritongate.gate.rule import PairLayout, TimingDecision, decide
from tritongate.rundir import Run
from tritongate.schema import PairInfo, Row, RowStatus, SkipReason, Variant
from tritongate.stats import Change

VERDICT_SCHEMA_VERSION = 4
AHEAD_OF_TIME_REASON = ("every kernel it launched compiled byte-identical under both builds ahead of time "
                        "(pair --changed-from); not run on the GPU")


class IncomparableRunsError(GateError):
    """The runs' identities differ where timings cannot be compared."""


class Verdict(str, Enum):
    REGRESSED = "REGRESSED"
    IMPROVED = "IMPROVED"
    UNCONFIRMED = "UNCONFIRMED"  # called on fewer pairs than a confirmation needs: shown, never failing
    UNCHANGED = "UNCHANGED"
    IDENTICAL_BINARY = "IDENTICAL_BINARY"
    REJECTED = "REJECTED"
    NOT_COMPARABLE = "NOT_COMPARABLE"
    MISSING = "MISSING"
    NEW = "NEW"


# What stopped a row short of its target, and the option that gives it more.
STOP_FLAGS = {"row_budget": "--row-budget", "run_budget": "--run-budget", "round_cap": "--max-rounds",
              "unpaired": "tritongate pair", "too_few_samples": "--rounds"}
STOP_WORDS = {"row_budget": "row budget", "run_budget": "run budget", "round_cap": "round cap",
              "unpaired": "unpaired timing", "too_few_samples": "too few samples"}
_STOP_PHRASES = {"row_budget": "{n} stopped by the row budget (raise --row-budget)",
                 "run_budget": "{n} by the run budget (raise --run-budget)",
                 "round_cap": "{n} by the round cap (raise --max-rounds)",
                 "unpaired": "{n} timed unpaired, from two stored runs (not the PR path: tritongate pair pairs them)",
                 "too_few_samples": "{n} with too few samples (raise --rounds)"}
UNPAIRED_NOTE = ("{n} row(s) were timed unpaired, from two stored runs: two processes at two times, whose "
                 "drift between the runs no pairing cancels. Their floors carry each run's process offset "
                 "({sd:.1%} each) and most cannot resolve 1 %; unpaired timing is not the PR path: "
                 "tritongate pair times both builds in alternating pairs on fresh worker pairs")
# The headline's three states.
PASS, BLIND, FAIL = "pass", "blind", "fail"
_JUDGED = frozenset({Verdict.REGRESSED, Verdict.IMPROVED, Verdict.UNCONFIRMED, Verdict.UNCHANGED,
                     Verdict.IDENTICAL_BINARY})


def unconfirmed(r: "RowVerdict") -> bool:
    """A call made on fewer pairs than its paired run asks of a call (the budgets stopped it)."""
    return r.verdict is Verdict.UNCONFIRMED


def _short_call(pairing: PairInfo | None, rounds: int | None) -> bool:
    return pairing is not None and rounds is not None and rounds < pairing.confirm_rounds


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
    stopped_by: str | None = None  # what ended it short of its target (STOP_FLAGS); None when reached

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
        if reg := self.by(Verdict.REGRESSED):
            out.append(f"{len(reg)} regressed row(s)")
        if hard := [r for r in self.rows if r.fails_policy]:
            out.append(f"{len(hard)} row(s) that the candidate fails where the base did not (an error, "
                       "timeout or crash, or a recorded config that no longer compiles)")
        missing = self.by(Verdict.MISSING)
        if len(missing) > self.policy.max_missing:
            out.append(f"{len(missing)} missing row(s), more than the {self.policy.max_missing} allowed")
        if self.policy.strict:
            unverified = [r for r in self.rows if r.verdict in (Verdict.REJECTED, Verdict.NOT_COMPARABLE)
                          and not r.fails_policy]
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
        return any(r.verdict in _JUDGED for r in self.rows)

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
        seen = [r.timing.detectable for r in blind if r.timing is not None and r.timing.detectable is not None
                and math.isfinite(r.timing.detectable)]
        worst = f"{max(seen):.1%}" if seen and len(seen) == len(blind) else "their minimum effect"
        why: dict[str, int] = {}
        for r in blind:
            why[r.stopped_by or "round_cap"] = why.get(r.stopped_by or "round_cap", 0) + 1
        stops = "; ".join(_STOP_PHRASES.get(k, "{n} by " + k).format(n=n) for k, n in why.items())
        return f"{len(blind)} row(s) could not resolve {worst}: {stops}"

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def exit_code(self) -> int:
        return int(ExitCode.OK if self.passed else ExitCode.GATE_FAILED)

    def timed(self) -> list[RowVerdict]:
        return [r for r in self.rows if r.timing is not None and r.verdict in
                (Verdict.REGRESSED, Verdict.IMPROVED, Verdict.UNCONFIRMED, Verdict.UNCHANGED,
                 Verdict.IDENTICAL_BINARY)]

    def short_of_target(self) -> list[RowVerdict]:
        """Paired rows whose rounds ran out (row or run budget, round cap) before their
        detectable effect reached the op's minimum effect, or before a call had the pairs a
        call needs (``PairInfo.confirm_rounds``)."""
        return [r for r in self.blind_rows if r.pairing is not None]

    @property
    def geomean_speedup(self) -> float | None:
        rows = self.timed()
        if not rows:
            return None
        return math.exp(sum(math.log(r.timing.speedup) for r in rows) / len(rows))

    def worst(self) -> RowVerdict | None:
        reg = self.by(Verdict.REGRESSED)
        return max(reg, key=lambda r: r.timing.effect) if reg else None

    def geomean_interval(self) -> tuple[float, float] | None:
        """95 % confidence interval of the geometric-mean speedup over the timed rows (Student's
        t on their log speedups); None with fewer than two rows."""
        rows = self.timed()
        if len(rows) < 2:
            return None
        from tritongate.gate.quantiles import t_ppf

        logs = [math.log(r.timing.speedup) for r in rows]
        mean = sum(logs) / len(logs)
        sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1))
        half = t_ppf(0.975, len(logs) - 1) * sd / math.sqrt(len(logs))
        return math.exp(mean - half), math.exp(mean + half)

    def geomean_text(self) -> str:
        """The geomean with its interval; not offered as a finding when no row was called."""
        gm = self.geomean_speedup
        if gm is None:
            return ""
        ci = self.geomean_interval()
        ci_txt = f" (95 % CI {ci[0]:.3f}–{ci[1]:.3f})" if ci else ""
        if not (self.by(Verdict.REGRESSED) or self.by(Verdict.IMPROVED)):
            return f"no row changed beyond its noise (geomean {gm:.3f}×{ci_txt})"
        return f"geomean speedup {gm:.3f}×{ci_txt}"

    def counts_text(self) -> str:
        compared = len(self.rows) - len(self.by(Verdict.MISSING)) - len(self.by(Verdict.NEW))
        return (f"{len(self.rows)} rows: {compared} compared, {len(self.by(Verdict.MISSING))} missing, "
                f"{len(self.by(Verdict.NEW))} new")

    def headline(self) -> str:
        counts = self.counts_text()
        if self.state == BLIND:
            gm = self.geomean_text()
            return f"⚠️ no regression found; {self.blind_text()} ({counts})" + (f"; {gm}" if gm else "")
        if not self.passed:
            worst = self.worst()
            worst_txt = (f"; worst: {worst.op} {worst.case} {worst.dtype} {worst.timing.effect:+.1%} time"
                         if worst else "")
            return f"❌ gate failed: {'; '.join(self.failures)}{worst_txt} ({counts})"
        imp = len(self.by(Verdict.IMPROVED))
        unv = len(self.by(Verdict.REJECTED)) + len(self.by(Verdict.NOT_COMPARABLE))
        unc = len(self.by(Verdict.UNCONFIRMED))
        extra = (f", {imp} improved" if imp else "") + (f", {unv} unverified" if unv else "") + \
            (f", {unc} unconfirmed" if unc else "")
        gm = self.geomean_text()
        return f"✅ no regressions ({counts}){extra}" + (f"; {gm}" if gm else "")


def _status_reasons(row: Row, side: str) -> list[str]:
    if row.status is RowStatus.ERROR:
        return [f"error on {side}: {row.error}"]
    if row.status is RowStatus.TIMEOUT:
        return [f"timeout on {side}"]
    return []


def _marker_reasons(base: Row, cand: Row) -> tuple[list[str], bool]:
    """Why a row is not same-config evidence; and whether that fails the gate by itself."""
    reasons: list[str] = []
    hard = False
    for side, row, other in (("base", base, cand), ("candidate", cand, base)):
        for line in row.markers:
            m = markers.parse_marker(line)
            why = m.fields.get("reason", "")
            if m.kind == markers.REPLAY_FALLBACK:
                reasons.append(f"replay fallback on {side}: {why} ({m.fields.get('kernel', '?')})")
                hard = hard or why == "compile_failed"
            elif m.kind == markers.NO_CUDAGRAPH:
                if not any(markers.parse_marker(o).kind == markers.NO_CUDAGRAPH for o in other.markers):
                    reasons.append(f"timer fallback on {side} only (phase {m.fields.get('phase', '?')}): {why}")
            elif m.kind == markers.CORRECTNESS_MISMATCH:
                reasons.append(f"correctness mismatch on {side}: {why}")
            elif m.kind in (markers.GPU_BUSY, markers.GPU_THROTTLED):
                reasons.append(f"{'GPU busy' if m.kind == markers.GPU_BUSY else 'GPU throttled'} on {side}: {why}")
            elif m.kind == markers.ROW_TIMEOUT:
                reasons.append(f"timeout on {side}")
            elif m.kind != markers.ROW_ERROR:  # errors come from the row status
                reasons.append(f"{m.kind} on {side}: {why}")
    return reasons, hard


def _row_mismatch(base: Row, cand: Row) -> list[str]:
    out = []
    if base.timer != cand.timer:
        out.append(f"timer differs: base {base.timer}, candidate {cand.timer}")
    bm, cm = base.measurement, cand.measurement
    if bm and cm:
        if bm.launches_per_sample != cm.launches_per_sample and base.timer == "cuda-graph":
            out.append(f"launches per sample differ (base k={bm.launches_per_sample}, candidate "
                       f"k={cm.launches_per_sample}): per-launch time depends on k; replay from the base record")
        if bm.l2 != cm.l2:
            out.append(f"L2 policy differs: base {bm.l2}, candidate {cm.l2}")
    return out


def same_binaries(base_variants: Sequence[Variant], cand_variants: Sequence[Variant],
                  base_params: Mapping[str, Any], cand_params: Mapping[str, Any]) -> bool:
    """Every launched kernel byte-identical on both sides, doing the same work (params)."""
    def sig(variants: Sequence[Variant]) -> set[tuple[str, str]]:
        return {(v.kernel, v.binary_hash) for v in variants}
    return bool(base_variants) and all(v.binary_hash for v in (*base_variants, *cand_variants)) \
        and sig(base_variants) == sig(cand_variants) and dict(base_params) == dict(cand_params)


def identical_binaries(base: Row, cand: Row) -> bool:
    return same_binaries(base.variants, cand.variants, base.params, cand.params)


def paired_rows(base: Row, cand: Row) -> bool:
    """Were these two rows measured round by round against each other (one paired run)?"""
    bp = base.measurement.pairing if base.measurement else None
    cp = cand.measurement.pairing if cand.measurement else None
    return bool(bp and cp and bp.pair_id == cp.pair_id and bp.side == "base" and cp.side == "candidate"
                and _rounds(base) == _rounds(cand))


def _rounds(row: Row) -> int | None:
    if not row.samples or row.measurement is None:
        return None
    return len(row.samples) // row.measurement.samples_per_round


def judge_row(base: Row, cand: Row, policy: GatePolicy) -> RowVerdict:
    return judge_rows([(base, cand)], policy)[0]


def judge_rows(pairs: Sequence[tuple[Row, Row]], policy: GatePolicy) -> list[RowVerdict]:
    """``judge_row`` of each (base, candidate) pair; the timed rows' decisions are made
    together (``batch.decide_rows``: what rows share is computed once)."""
    early = [_untimed(b, c, policy) for b, c in pairs]
    timed = [(i, _timed(b, c, policy)) for i, ((b, c), v) in enumerate(zip(pairs, early)) if v is None]
    decisions = decide_rows([t.samples for _, t in timed], noise_z=policy.noise_z, min_samples=policy.min_samples,
                            process_sd=policy.process_sd, pair_inflation=policy.pair_inflation)
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
    status = _status_reasons(base, "base") + _status_reasons(cand, "candidate")
    marker_reasons, hard = _marker_reasons(base, cand)
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
        why = (base.skipped or cand.skipped).value.replace("_", " ")
        return RowVerdict(verdict=Verdict.NOT_COMPARABLE, reasons=(
            f"not timed on the {side} ({why}) and the kernels are not identical on both sides; "
            "measure both sides with timing (tritongate pair --time-identical)",), **common)
    mismatch = _row_mismatch(base, cand)
    if mismatch:
        return RowVerdict(verdict=Verdict.NOT_COMPARABLE, reasons=tuple(mismatch), **common)
    return None


@dataclass(frozen=True)
class _Timed:
    """A row judged on its timings: what its decision takes, and its pairing."""

    samples: RowSamples
    bp: PairInfo | None  # the base side's pairing, paired rows only


def _timed(base: Row, cand: Row, policy: GatePolicy) -> _Timed:
    paired = paired_rows(base, cand)
    bp = base.measurement.pairing if paired and base.measurement else None
    layout = PairLayout(base_first=bp.went_first, worker_pairs=bp.worker_pairs) if bp is not None else None
    # Row.summary is summarize(row.samples), made once when the row was loaded
    return _Timed(RowSamples(
        base.samples, cand.samples,
        base_per_round=base.measurement.samples_per_round if base.measurement else len(base.samples),
        cand_per_round=cand.measurement.samples_per_round if cand.measurement else len(cand.samples),
        min_effect=policy.min_effect_for(base.op), paired=paired, layout=layout,
        base_summary=base.summary, cand_summary=cand.summary), bp)


def _timed_verdict(base: Row, cand: Row, t: _Timed, timing: TimingDecision, policy: GatePolicy) -> RowVerdict:
    common = _common(base, cand, policy)
    identical = identical_binaries(base, cand)
    paired, bp = t.samples.paired, t.bp
    pairing = cand.measurement.pairing if paired and cand.measurement else None
    rounds = _rounds(cand)
    extra = dict(pairing=pairing, rounds=rounds)
    if identical:
        return RowVerdict(verdict=Verdict.IDENTICAL_BINARY, timing=timing,
                          reasons=("every launched kernel is byte-identical on both sides",), **common, **extra)
    verdict = {Change.SLOWER: Verdict.REGRESSED, Change.FASTER: Verdict.IMPROVED}.get(timing.change,
                                                                                  Verdict.UNCHANGED)
    reasons = [timing.reason]
    if pairing is not None and bp is not None and 0 < pairing.confirm_from < (rounds or 0):
        verdict, timing, confirm_reason = _confirmed(base, cand, bp, pairing.confirm_from, policy, common["min_effect"])
        reasons = [timing.reason, confirm_reason]
        if verdict is not Verdict.UNCONFIRMED and _short_call(pairing, (rounds or 0) - pairing.confirm_from):
            verdict = Verdict.UNCONFIRMED
            reasons.append(f"its confirmation has {(rounds or 0) - pairing.confirm_from} pairs, fewer than the "
                           f"{pairing.confirm_rounds} a confirmation needs: shown, not failing")
    elif verdict is not Verdict.UNCHANGED and _short_call(pairing, rounds):
        verdict = Verdict.UNCONFIRMED
        reasons.append(f"called on {rounds} pairs, fewer than the {pairing.confirm_rounds} a confirmation needs "
                       f"(stopped by the {STOP_WORDS.get(_stop(pairing, rounds), 'budget')}): shown, not failing")
    reached, stopped = _reached(timing, verdict, common["min_effect"], pairing, rounds)
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
                                        f"{again.reason}): shown, not failing")


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
    # samples its workers kept)
    recorded = pairing is None or pairing.target_reached is not False
    if timing.detectable is not None and timing.detectable <= min_effect and verdict is not Verdict.UNCONFIRMED \
            and recorded:
        return True, None
    if pairing is not None:
        return False, _stop(pairing, rounds)
    return False, "too_few_samples" if timing.detectable is None else "unpaired"


def run_gate(base: Run, cand: Run, policy: GatePolicy, *, allow_mismatch: bool = False) -> GateResult:
    """Compare ``cand`` against ``base``. Identity mismatches are refused
    (``IncomparableRunsError``) unless ``allow_mismatch``, which makes every row NOT_COMPARABLE."""
    if Path(base.path).resolve() == Path(cand.path).resolve():
        raise GateError(f"{base.path} was given as both the base and the candidate run; a run compared "
                        "with itself always passes. Pass the base build's run and the candidate's")
    mismatches = identity_mismatches(base.identity, cand.identity)
    if mismatches and not allow_mismatch:
        listing = "; ".join(map(str, mismatches))
        raise IncomparableRunsError(
            f"{base.path} and {cand.path} were not measured alike ({listing}). Measure both sides on "
            "the same runner with the same settings, or pass --allow-mismatch to list every row as "
            "NOT_COMPARABLE")
    base_rows, cand_rows = base.row_map(), cand.row_map()
    slots: list[RowVerdict | int] = []  # a verdict, or where the row is among those judged (together)
    judged: list[tuple[Row, Row]] = []
    for key, brow in base_rows.items():
        crow = cand_rows.get(key)
        if crow is None:
            slots.append(RowVerdict(*key, verdict=Verdict.MISSING, reasons=("not in the candidate run",),
                                    base_markers=brow.markers))
        elif mismatches:
            slots.append(RowVerdict(*key, verdict=Verdict.NOT_COMPARABLE,
                                    reasons=tuple(str(m) for m in mismatches),
                                    base_markers=brow.markers, cand_markers=crow.markers))
        else:
            slots.append(len(judged))
            judged.append((brow, crow))
    verdicts = judge_rows(judged, policy)
    rows = [verdicts[s] if isinstance(s, int) else s for s in slots]
    for key, crow in cand_rows.items():
        if key not in base_rows:
            rows.append(RowVerdict(*key, verdict=Verdict.NEW, reasons=("not in the base run",),
                                   cand_markers=crow.markers))
    found = notes(base.identity, cand.identity, str(base.path))
    unpaired = [r for r in rows if r.timing is not None and not r.timing.paired]
    if unpaired:
        found.append(UNPAIRED_NOTE.format(n=len(unpaired), sd=policy.process_sd))
    return GateResult(base=base, cand=cand, policy=policy, rows=rows, mismatches=mismatches, notes=found)
