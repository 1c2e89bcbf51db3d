"""What a paired row's answers make: each side's ``RowState`` (what its workers answered so
far), the rule's reading of the pairs (precision, whether it would call them), and the
``Row`` records written to each side's run directory; plus the row's one-line summary.

No worker is asked anything here: kept apart from the measurement that fills a ``RowState``
so that how a row is judged and recorded can be read, and tested, without workers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

from tritongate import markers
from tritongate.backends import Backend
from tritongate.gate.policy import GatePolicy
from tritongate.gate.rule import PairLayout, Why, decide, paired_estimate, paired_log_ratios, precision
from tritongate.harness.measure import L2Policy, Measurement, TimerKind
from tritongate.pair.schedule import PairSchedule
from tritongate.preflight import PlannedRow
from tritongate.report.units import format_time
from tritongate.rowcase import PreparedRow, error_row, finish_row
from tritongate.schema import Correctness, PairInfo, Row, RowStatus, SkipReason, Variant


@dataclass
class RowState:
    """What one side produced for the row so far."""

    prepared: dict[str, Any] | None = None
    samples: list[float] = field(default_factory=list)
    went_first: list[bool] = field(default_factory=list)
    finished: dict[str, Any] | None = None
    failure: tuple[str, str] | None = None  # (status, text): "error"|"timeout", why
    fell_back: bool = False  # the worker switched timers mid-row
    inputs: str = "own"  # "shared": the second side of each pair read the first side's inputs
    sharing_failed: str = ""  # why this side could not share the row's inputs (its failure is that)
    worker_pairs: list[int] = field(default_factory=list)  # per pair: the worker pair that measured it
    parts: list[dict[str, Any]] = field(default_factory=list)  # earlier worker pairs' finish answers
    stopped_by: str | None = None  # what the schedule says ended the row short
    confirm_from: int = 0  # the pair a confirmation of the row's call began at (0: none)
    call_s: dict[str, float] = field(default_factory=dict)  # wall seconds spent per worker command (run.log)


def layout(base: RowState, start: int = 0) -> PairLayout:
    return PairLayout(base_first=tuple(base.went_first[start:]), worker_pairs=tuple(base.worker_pairs[start:]))


def precision_of(b: list[float], c: list[float], target: float, pair_layout: PairLayout, *, spr: int,
                 policy: GatePolicy) -> float | None:
    """The effect the rule could detect on these samples (``spr`` a round on both sides)."""
    if not b or not c:
        return None
    return precision(b, c, base_per_round=spr, cand_per_round=spr, paired=True, min_effect=target,
                     noise_z=policy.noise_z, layout=pair_layout, process_sd=policy.process_sd,
                     pair_inflation=policy.pair_inflation).detectable


def would_call(states: dict[str, RowState], target: float, start: int, *, spr: int, policy: GatePolicy) -> bool:
    """Whether the rule would call the row's timing on the pairs from ``start``."""
    b, c = states["base"].samples[start * spr:], states["candidate"].samples[start * spr:]
    if not b or not c:
        return False
    return decide(b, c, base_per_round=spr, cand_per_round=spr, min_effect=target, noise_z=policy.noise_z,
                  min_samples=policy.min_samples, paired=True, layout=layout(states["base"], start),
                  process_sd=policy.process_sd, pair_inflation=policy.pair_inflation).why is Why.CALLED


def merged_measurement(answers: list[dict[str, Any]]) -> dict[str, Any] | None:
    """One side's measurement over every worker pair of the row, in the order measured."""
    parts = [a["measurement"] for a in answers if a.get("measurement")]
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    return {**parts[-1], "samples": [x for p in parts for x in p["samples"]],
            "shift_bytes": [x for p in parts for x in p.get("shift_bytes", [])],
            # a round's state only where every part kept one for each of its rounds
            "launch_state_us": [x for p in parts for x in p.get("launch_state_us", [])]
            if all(len(p.get("launch_state_us", [])) * p["samples_per_round"] == len(p["samples"]) for p in parts)
            else [],
            "markers": list(dict.fromkeys(m for p in parts for m in p.get("markers", []))),
            "warmup_calls": parts[0]["warmup_calls"]}


def prepared_row(answer: dict[str, Any] | None) -> PreparedRow:
    """A worker's ``prepare`` answer as the parent's ``PreparedRow`` (nothing to launch here)."""
    answer = answer or {}
    return PreparedRow(fields=dict(answer["fields"]), make_fn=lambda: (lambda: None),
                       variants=tuple(Variant(**v) for v in answer.get("variants", ())),
                       correctness=Correctness(**answer["correctness"]))


def identical(base: PreparedRow, cand: PreparedRow) -> bool:
    from tritongate.gate.verdict import same_binaries  # the gate's own test, before any timing

    return same_binaries(base.variants, cand.variants, base.fields.get("params") or {},
                         cand.fields.get("params") or {})


def not_run_row(item: PlannedRow, backend: Backend) -> Row:
    """A row the ahead-of-time IR diff showed unchanged: kept, marked, never run."""
    from tritongate.rowcase import row_seed

    return Row(op=item.op, case=item.case, dtype=item.dtype, timer=backend.timer.value, samples=(),
               params={"shape": list(item.shape), "seed": row_seed(item.op, item.case, item.dtype)},
               skipped=SkipReason.UNCHANGED_AHEAD_OF_TIME)


def failed_row(item: PlannedRow, backend: Backend, name: str, failure: tuple[str, str]) -> Row:
    """Side ``name``'s record of a row that failed on it (``failure``: a ``RowState``'s)."""
    status, text = failure
    if status == "timeout":
        return error_row(item, backend, text, status=RowStatus.TIMEOUT, marker_kind=markers.ROW_TIMEOUT, side=name)
    return error_row(item, backend, text, side=name)


def build_row(item: PlannedRow, name: str, states: dict[str, RowState], is_identical: bool,
              schedule: PairSchedule, *, policy: GatePolicy, pair_id: str, spr: int) -> Row:
    """Side ``name``'s record of a row that did not fail on it, from both sides' states
    (``spr``: samples a round)."""
    st = states[name]
    other = states["candidate" if name == "base" else "base"]
    prepared = prepared_row(st.prepared)
    fin = st.finished or {}
    autotune = (st.parts[0] if st.parts else fin).get("autotune")
    tuned_markers = tuple(dict.fromkeys(m for part in (*st.parts, fin) for m in part.get("autotune_markers") or ()))
    meas = merged_measurement([*st.parts, fin])
    if other.failure is not None or meas is None:
        skip = SkipReason.OTHER_SIDE_FAILED if other.failure is not None or not is_identical \
            else SkipReason.IDENTICAL_BINARY
        extra = () if prepared.correctness.ok else (markers.make(
            markers.CORRECTNESS_MISMATCH, reason=prepared.correctness.detail),)
        return Row(**prepared.fields, samples=(), skipped=skip, markers=tuned_markers + extra,
                   correctness=prepared.correctness, variants=prepared.variants, autotune=autotune)
    m = Measurement(timer=TimerKind(meas["timer"]), samples_us=tuple(meas["samples"]),
                    samples_per_round=int(meas["samples_per_round"]),
                    launches_per_sample=int(meas["launches_per_sample"]),
                    warmup_calls=int(meas["warmup_calls"]), l2=L2Policy(meas["l2"]),
                    shift_bytes=tuple(meas["shift_bytes"]), markers=tuple(meas["markers"]),
                    launch_state_us=tuple(meas.get("launch_state_us", ())))
    rounds = len(m.samples_us) // m.samples_per_round
    target = policy.min_effect_for(item.op)
    # precision of what the rows hold: the workers' own samples (a timer fallback drops a
    # side's earlier rounds), judged only when both sides kept the same rounds
    other_meas = merged_measurement([*other.parts, other.finished or {}]) or {}
    kept = {name: list(m.samples_us), ("candidate" if name == "base" else "base"):
            list(other_meas.get("samples") or ())}
    base_state = states["base"]
    kept_layout = PairLayout(tuple(base_state.went_first[-rounds:]), tuple(base_state.worker_pairs[-rounds:]))
    reached = precision_of(kept["base"], kept["candidate"], target, kept_layout, spr=spr, policy=policy) \
        if len(kept["base"]) == len(kept["candidate"]) else None
    if reached is not None and not math.isfinite(reached):
        reached = None  # too few pairs to estimate anything
    pairing = PairInfo(pair_id=pair_id, side=name, went_first=tuple(st.went_first[-rounds:]),
                       target_effect=target, detectable_effect=reached,
                       target_reached=None if reached is None else reached <= target,
                       min_rounds=schedule.min_rounds, max_rounds=schedule.max_rounds,
                       confirm_rounds=schedule.confirm_rounds, inputs=st.inputs,
                       worker_pairs=tuple(st.worker_pairs[-rounds:]) if len(st.worker_pairs) >= rounds else (),
                       stopped_by=st.stopped_by, confirm_from=st.confirm_from if st.confirm_from < rounds else 0)
    row = finish_row(prepared, m, pairing=pairing)
    return replace(row, markers=row.markers + tuned_markers, autotune=autotune)


def row_summary(base: Row, cand: Row, policy: GatePolicy | None = None) -> str:
    """The row's progress line: its error, why it was not timed, or the paired effect as the
    verdict will show it (the rule's estimate under ``policy``; a confirmed call's confirmation)."""
    if cand.status is not RowStatus.OK or base.status is not RowStatus.OK:
        return (base.error or cand.error)[:120]
    if cand.skipped is SkipReason.IDENTICAL_BINARY:
        return "identical binary (not timed)"
    if cand.skipped is SkipReason.UNCHANGED_AHEAD_OF_TIME:
        return "unchanged ahead of time (not run)"
    if cand.skipped:
        return f"not timed ({cand.skipped.value.replace('_', ' ')})"
    bs, cs = base.summary, cand.summary
    if bs is None or cs is None or base.measurement is None or cand.measurement is None:
        return ""
    ratios = paired_log_ratios(base.samples, cand.samples, base_per_round=base.measurement.samples_per_round,
                               cand_per_round=cand.measurement.samples_per_round)
    bp = base.measurement.pairing
    pair_layout = PairLayout(bp.went_first, bp.worker_pairs) if bp is not None else None
    head = f"{format_time(bs.median)} -> {format_time(cs.median)}"
    if not ratios:
        return f"{head} ({cs.median / bs.median - 1:+.2%})"
    policy = policy or GatePolicy()

    def estimate(r: Sequence[float], layout: PairLayout | None) -> float:
        # the rule's own robust estimate (trimmed, order removed, per worker pair), not the mean
        return math.expm1(float(paired_estimate(r, layout, policy.process_sd, policy.pair_inflation).effect_log))

    effect = estimate(ratios, pair_layout)
    start = bp.confirm_from if bp is not None else 0
    if pair_layout is None or not 0 < start < len(ratios):
        return f"{head} ({effect:+.2%} paired, {len(ratios)} rounds)"
    # a call measured again on fresh worker pairs: the verdict shows the confirmation's figure
    again = PairLayout(pair_layout.base_first[start:], pair_layout.worker_pairs[start:])
    confirmed = estimate(ratios[start:], again)
    return (f"{head} ({confirmed:+.2%} paired on the {len(ratios) - start} confirming rounds; "
            f"{effect:+.2%} over all {len(ratios)})")
