"""From the calibration's paired runs to per-row figures."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from tritongate.calibrate.aim import RowAim
from tritongate.model.calibration import Calibration, PlantedOutcome, RowCalibration, fraction_key
from tritongate.model.verdict import Verdict
from tritongate.ops.planting import row_key


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
    noise_floor: float | None = None  # the effect the row's own noise could produce (inf: unknown)

    @property
    def key(self) -> str:
        return row_key(self.op, self.case, self.dtype)


@dataclass(frozen=True)
class Step:
    name: str  # "aa-1", "planted-0.02"
    fraction: float | None  # planted fraction; None for A/A runs
    rows: tuple[StepRow, ...]
    wall_s: float
    path: str = ""
    delays_ns: Mapping[str, int] | None = None  # planted steps: the rows planted, with their spins
    gpu_uuid: str | None = None  # the physical GPU the step's pairs ran on


_CALLS = {"slower": Verdict.REGRESSED, "faster": Verdict.IMPROVED}


def step_rows(result: Any) -> tuple[StepRow, ...]:
    """The rows of a ``GateResult`` (a pair's verdict), each with the rule's call on its timing:
    an A/A row's kernels are byte-identical, so its verdict is IDENTICAL_BINARY whatever the
    timing said, and the timing is what a calibration checks."""
    return tuple(StepRow(r.op, r.case, r.dtype, r.verdict.value, None, None, None) if (t := r.timing) is None
                 else StepRow(r.op, r.case, r.dtype, _CALLS.get(t.change.value, "UNCHANGED"), t.effect,
                              t.detectable, t.base.median, t.noise_floor) for r in result.rows)


def _unaimed(why: str | None, fractions: Sequence[float]) -> dict[str, Any] | None:
    """What a row whose aim failed records: every size missed, with why."""
    return None if why is None else {"failed": why, "missed": {fraction_key(f): f"not aimed: {why}" for f in fractions}}


def analyse(*, created_utc: str, suite: str, runner: Mapping[str, Any], aa: Sequence[Step],
            fractions: Sequence[float], aims: Mapping[str, RowAim], aim_s: float, planted: Sequence[Step],
            checks: Sequence[Step] = (), notes: Sequence[str] = (),
            unaimed: Mapping[str, str] | None = None, aim_gpus: Sequence[str] = ()) -> Calibration:
    """Rows timed in the first A/A run are calibrated; the others are noted. A row in
    ``unaimed`` (its aim failed) could not be planted at any size: a miss for the goals."""
    if not aa:
        raise ValueError("a calibration needs at least one A/A run")
    first = {r.key: r for r in aa[0].rows}
    rows: list[RowCalibration] = []
    skipped = []
    for key, r in first.items():
        if r.base_median_us is None or r.base_median_us <= 0:
            skipped.append(f"{key} ({r.verdict})")
            continue
        aa_rows = [next((x for x in step.rows if x.key == key), None) for step in aa]
        aim = aims.get(key)
        planted_out = {}
        for step in planted:
            got = next((x for x in step.rows if x.key == key), None)
            delay = (step.delays_ns or {}).get(key)
            if delay is not None and step.fraction is not None:  # planted and missing: not caught
                k = fraction_key(step.fraction)
                planted_out[k] = PlantedOutcome(
                    delay, got.verdict if got is not None else "MISSING", got.effect if got is not None else None,
                    aimed=aim.aimed.get(k) if aim is not None else None)
        rows.append(RowCalibration(
            op=r.op, case=r.case, dtype=r.dtype, kernel_us=r.base_median_us,
            zero_us=aim.zero_us if aim is not None else None,
            aa_verdicts=tuple(x.verdict if x else "MISSING" for x in aa_rows),
            aa_effects=tuple(x.effect if x else None for x in aa_rows),
            detectable=r.detectable, planted=planted_out,
            aim=aim.to_dict() if aim is not None else _unaimed((unaimed or {}).get(key), fractions)))
    if skipped:
        notes = [*notes, f"not timed in the A/A run, so not calibrated: {', '.join(skipped)}"]
    aim_step = Step("aim", None, (), aim_s, gpu_uuid=", ".join(aim_gpus) or None)
    steps = tuple({"name": s.name, "fraction": s.fraction, "wall_s": round(s.wall_s, 1), "path": s.path,
                   "gpu_uuid": s.gpu_uuid} for s in (*aa, aim_step, *checks, *planted))
    gpus = sorted({s.gpu_uuid for s in (*aa, *checks, *planted) if s.gpu_uuid} | set(aim_gpus))
    # steps on several physical GPUs calibrate what PRs meet: a class of runner, not one GPU
    runner = {**runner, "gpus": gpus, "scope": "one GPU" if len(gpus) <= 1 else f"runner class ({len(gpus)} GPUs)"}
    return Calibration(created_utc=created_utc, suite=suite, runner=dict(runner), fractions=tuple(fractions),
                       rows=tuple(rows), steps=steps, notes=tuple(notes))
