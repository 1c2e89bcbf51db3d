"""From the calibration's paired runs to per-row figures."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from tritongate.calibrate.model import Calibration, PlantedOutcome, RowCalibration, fraction_key


@dataclass(frozen=True)
class StepRow:
    """One row of one paired run, as the calibration reads it."""

    op: str
    case: str
    dtype: str
    verdict: str
    effect: float | None
    detectable: float | None
    base_median_us: float | None

    @property
    def key(self) -> str:
        return f"{self.op}/{self.case}/{self.dtype}"


@dataclass(frozen=True)
class Step:
    name: str  # "aa-1", "gain", "planted-0.02"
    fraction: float | None  # planted fraction; None for A/A runs and the gain run
    rows: tuple[StepRow, ...]
    wall_s: float
    path: str = ""
    delays_ns: Mapping[str, int] | None = None  # gain and planted steps: the plan's spins


_CALLS = {"slower": "REGRESSED", "faster": "IMPROVED"}


def step_rows(result: Any) -> tuple[StepRow, ...]:
    """The rows of a ``GateResult`` (a pair's verdict), each with the rule's call on its timing:
    an A/A row's kernels are byte-identical, so its verdict is IDENTICAL_BINARY whatever the
    timing said, and the timing is what a calibration checks."""
    out = []
    for r in result.rows:
        t = r.timing
        call = _CALLS.get(t.change.value, "UNCHANGED") if t is not None else r.verdict.value
        out.append(StepRow(r.op, r.case, r.dtype, call, t.effect if t else None,
                           t.detectable if t else None, t.base.median if t else None))
    return tuple(out)


def delays_for(rows: Sequence[StepRow], fraction: float, gains: Mapping[str, float] | None = None) -> dict[str, int]:
    """Each timed row's per-program spin: ``fraction`` of its base median over its gain (1
    when none is given), in whole nanoseconds (at least 1)."""
    out = {}
    for r in rows:
        if r.base_median_us is None or r.base_median_us <= 0:
            continue
        gain = gains.get(r.key) if gains is not None else 1.0
        if gain:
            out[r.key] = max(1, round(fraction * r.base_median_us * 1000 / gain))
    return out


MIN_GAIN, MAX_GAIN = 0.05, 10_000.0


def gains_from(rows: Sequence[StepRow], probe_ns: Mapping[str, int]) -> tuple[dict[str, float], list[str]]:
    """Per row, the time a launch gained per nanosecond spun in the gain step (its effect
    times its base median over the spin); rows without a usable gain are named in a note."""
    gains: dict[str, float] = {}
    unusable = []
    seen = {r.key for r in rows}
    unusable += [f"{key} (not in the gain step)" for key in sorted(probe_ns) if key not in seen]
    for r in rows:
        spun = probe_ns.get(r.key)
        if spun is None:
            continue
        if r.effect is None or r.base_median_us is None:
            unusable.append(f"{r.key} (not timed: {r.verdict})")
            continue
        if r.verdict != "REGRESSED":  # the probe must stand out of the row's noise, or its size is noise
            unusable.append(f"{r.key} (the {r.effect:+.1%} probe was within the noise)")
            continue
        gain = r.effect * r.base_median_us * 1000 / spun
        if not MIN_GAIN <= gain <= MAX_GAIN:
            unusable.append(f"{r.key} (gain {gain:.3g})")
            continue
        gains[r.key] = gain
    notes = [f"no usable gain, so not planted: {', '.join(unusable)}"] if unusable else []
    return gains, notes


def analyse(*, created_utc: str, suite: str, runner: Mapping[str, Any], aa: Sequence[Step],
            gain: Step | None, gains: Mapping[str, float], planted: Sequence[Step],
            notes: Sequence[str] = ()) -> Calibration:
    """Rows timed in the first A/A run are calibrated; the others are noted."""
    if not aa:
        raise ValueError("a calibration needs at least one A/A run")
    first = {r.key: r for r in aa[0].rows}
    zero_rows = {r.key: r for r in gain.rows} if gain else {}
    rows: list[RowCalibration] = []
    skipped = []
    for key, r in first.items():
        if r.base_median_us is None or r.base_median_us <= 0:
            skipped.append(f"{key} ({r.verdict})")
            continue
        aa_rows = [next((x for x in step.rows if x.key == key), None) for step in aa]
        planted_out = {}
        for step in planted:
            got = next((x for x in step.rows if x.key == key), None)
            delay = (step.delays_ns or {}).get(key)
            if delay is not None and step.fraction is not None:  # planted and missing: not caught
                planted_out[fraction_key(step.fraction)] = PlantedOutcome(
                    delay, got.verdict if got is not None else "MISSING", got.effect if got is not None else None)
        z = zero_rows.get(key)
        rows.append(RowCalibration(
            op=r.op, case=r.case, dtype=r.dtype, kernel_us=r.base_median_us,
            zero_us=z.base_median_us if z is not None else None, gain=gains.get(key),
            aa_verdicts=tuple(x.verdict if x else "MISSING" for x in aa_rows),
            aa_effects=tuple(x.effect if x else None for x in aa_rows),
            detectable=r.detectable, planted=planted_out))
    all_notes = list(notes)
    if skipped:
        all_notes.append(f"not timed in the A/A run, so not calibrated: {', '.join(skipped)}")
    fractions = tuple(s.fraction for s in planted if s.fraction is not None)
    steps = tuple({"name": s.name, "fraction": s.fraction, "wall_s": round(s.wall_s, 1), "path": s.path}
                  for s in (*aa, *([gain] if gain else []), *planted))
    return Calibration(created_utc=created_utc, suite=suite, runner=dict(runner), fractions=fractions,
                       rows=tuple(rows), steps=steps, notes=tuple(all_notes))
