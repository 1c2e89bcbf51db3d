"""The calibration's paired runs, in order, each a normal ``tritongate pair`` directory.

1. ``aa-<i>``: the build against itself, every row timed (``--time-identical``): every REGRESSED
   or IMPROVED is a false verdict; the base medians are the rows' kernel times.
2. ``aim``: in one worker of the build, each row timed at 0, then at the spins that find, per
   fraction, the spin that makes it that much slower (``aim``); ``check-<f>-<n>``: for rows
   whose time moves in one process (power-bound), that spin in a paired run, rescaled until it
   lands (``aim_check``).
3. ``planted-<f>``: both sides with the planted spin compiled in, the base spinning 0, the
   candidate the spin aimed at ``f`` (``TRITONGATE_PLANTED_DELAY``): a REGRESSED is a catch.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from tritongate.calibrate.aim import TOLERANCE, RowAim, unplanted_notes
from tritongate.calibrate.aim_check import check_aims
from tritongate.calibrate.analysis import Step, StepRow, analyse, step_rows
from tritongate.model.calibration import Calibration, fraction_key
from tritongate.ops.planting import PLANTED_DELAY_ENV, split_key, write_plan

# A check's rows may grow to this many times the run's pairs, row budget and worker pairs (320 pairs
# over 12 worker pairs on a GPU): a skinny matmul whose paired log ratios spread 2 % needs ~260 pairs
# to size a 2 % spin to ±0.5 % (80 gave ±1.2 %; at a spread of 2.7 % even 320 fall short).
CHECK_SCALE = 4
# (step out dir, base env overlay, candidate env overlay) -> a PairRequest with every row timed
MakeRequest = Callable[[Path, Mapping[str, str], Mapping[str, str]], Any]
RunPair = Callable[[Any], Any]  # PairRequest -> PairOutcome
Log = Callable[[str], None]
# (row keys, fractions) -> each row's aim, the rows that could not be aimed (with why), seconds it took
Aim = Callable[[Sequence[str], Sequence[float]], tuple[Mapping[str, RowAim], Mapping[str, str], float]]


@dataclass(frozen=True)
class CalibrationPlan:
    suite: str
    out: Path
    fractions: Sequence[float]
    aa_runs: int = 1
    plantable: frozenset[str] = frozenset()  # ops whose kernels take the planted spin (builtin ops)

    def __post_init__(self) -> None:
        if self.aa_runs < 1:
            raise ValueError(f"aa_runs must be at least 1, got {self.aa_runs}")
        if not self.fractions or any(not 0 < f < 1 for f in self.fractions):
            raise ValueError(f"planted fractions {list(self.fractions)}: each must be in (0, 1)")


def _timed_step(name: str, fraction: float | None, request: Any, run: RunPair,
                delays: Mapping[str, int] | None = None) -> tuple[Step, Any]:
    t0 = time.perf_counter()
    outcome = run(request)
    if outcome.result is None:
        raise RuntimeError(f"calibration step {name}: the paired run gave no verdict ({outcome.path})")
    # a step read back by --resume reports what it cost when it ran
    wall = getattr(outcome, "wall_s", 0.0) or time.perf_counter() - t0
    ident = outcome.result.base.identity or {}
    uuid = (ident.get("gpu_state_before") or {}).get("uuid") or (ident.get("pair") or {}).get("device_uuid")
    return Step(name, fraction, step_rows(outcome.result), wall, str(outcome.path), delays,
                gpu_uuid=str(uuid) if uuid else None), outcome


def runner_of(outcome_identity: Mapping[str, Any]) -> dict[str, Any]:
    ident = outcome_identity or {}
    sw = ident.get("software") or {}
    return {"device": ident.get("device"), "backend": ident.get("backend"), "timer": ident.get("timer"),
            "driver": (ident.get("gpu_state_before") or {}).get("driver"),
            "torch": sw.get("torch"), "triton": (sw.get("triton") or {}).get("version"),
            "host": (ident.get("host") or {}).get("hostname")}


def calibrate(plan: CalibrationPlan, make_request: MakeRequest, run: RunPair, aim: Aim,
              log: Log = lambda _: None, detail: Log | None = None) -> Calibration:
    """Run every step and analyse them; ``log`` a line per step, ``detail`` (default ``log``) per check."""
    out = plan.out
    plans = out / "plans"
    aa: list[Step] = []
    identity: Mapping[str, Any] = {}
    for i in range(1, plan.aa_runs + 1):
        log(f"A/A {i}/{plan.aa_runs}: the build against itself, every row timed")
        step, outcome = _timed_step(f"aa-{i}", None, make_request(out / f"aa-{i}", {}, {}), run)
        aa.append(step)
        identity = identity or (outcome.result.base.identity or {})
    timed = [r.key for r in aa[0].rows if r.base_median_us and r.op in plan.plantable]
    notes = [f"not planted (the op has no planted spin: only builtin ops do): {', '.join(sorted(skip))}"
             for skip in [{r.key for r in aa[0].rows if r.op not in plan.plantable}] if skip]
    if not timed:
        raise ValueError("no row of the suite can be planted (builtin ops timed in the A/A run); "
                         "calibrate a suite of builtin ops, e.g. pr")
    log(f"aim: the spin for {', '.join(f'{f:.0%}' for f in plan.fractions)} on each of {len(timed)} rows, "
        "timed in one process")
    aims, unaimed, aim_s, aim_gpus = aim(timed, plan.fractions)
    aim_notes = [f"not aimed, so not planted (a miss at every size): "
                 f"{', '.join(f'{k} ({why})' for k, why in sorted(unaimed.items()))}"] if unaimed else []
    zeros = {key: 0 for key in aims}  # every aimed row spins, 0 unless planted: binaries match across a pair
    zero_plan = write_plan(plans / "zero.json", 0.0, zeros)
    zero_env = {PLANTED_DELAY_ENV: str(zero_plan.resolve())}
    checks: list[Step] = []

    def run_check(name: str, f: float, spins: Mapping[str, int]) -> dict[str, StepRow]:
        path = write_plan(plans / f"{name}.json", f, {**zeros, **spins})
        request = make_request(out / name, zero_env, {PLANTED_DELAY_ENV: str(path.resolve())})
        # only the rows checked, their pairs grown until the noise floor resolves the size to the
        # aim's tolerance (a row's schedule works to its minimum effect). A check sizes a spin, it
        # does not gate: over CHECK_SCALE times the worker pairs the between-process spread is
        # estimated from the processes themselves, so the gate's assumed minimum (process_sd,
        # which would hold the floor at ±0.35 % however many pairs) is not imposed
        policy = dataclasses.replace(request.policy, min_effect=TOLERANCE * f, op_min_effect={}, process_sd=0.0)
        rows = frozenset(split_key(key) for key in spins)
        # a check's call is no verdict: not confirmed on fresh worker pairs, nor a reason to stop
        # (a spin is a slowdown: every check would stop at its first 20 pairs, short of its precision)
        request = dataclasses.replace(request, only_ops=tuple(sorted({op for op, _, _ in rows})), only_rows=rows,
                                      policy=policy, schedule_scale=CHECK_SCALE,
                                      schedule_overrides={**request.schedule_overrides, "confirm_calls": False,
                                                          "confirm_rounds": 0})
        step, _ = _timed_step(name, None, request, run, dict(spins))
        checks.append(step)
        return {r.key: r for r in step.rows}

    aims = check_aims(aims, plan.fractions, run_check, log=detail or log)
    notes += aim_notes + unplanted_notes(aims)
    planted: list[Step] = []
    for f in plan.fractions:
        k = fraction_key(f)
        delays = {key: a.spins_ns[k] for key, a in aims.items() if k in a.spins_ns}
        if not delays:
            notes.append(f"planted {f:.0%}: no row could be aimed at it, not run")
            log(f"planted {f:.0%}: no row to plant, skipped")
            continue
        path = write_plan(plans / f"planted-{k}.json", f, {**zeros, **delays})
        log(f"planted {f:.0%}: the candidate {f:.0%} slower on each of {len(delays)} rows")
        step, _ = _timed_step(f"planted-{k}", f, make_request(
            out / f"planted-{k}", zero_env, {PLANTED_DELAY_ENV: str(path.resolve())}), run, delays)
        planted.append(step)
    return analyse(created_utc=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), suite=plan.suite,
                   runner=runner_of(identity), aa=aa, fractions=plan.fractions, aims=aims, aim_s=aim_s,
                   aim_gpus=aim_gpus,
                   checks=checks, planted=planted, notes=notes, unaimed=unaimed)
