"""The calibration's paired runs, in order, each a normal ``tritongate pair`` directory.

1. ``aa-<i>``: the build against itself, every row timed (``--time-identical``): every REGRESSED
   or IMPROVED is a false verdict; the base medians are the rows' kernel times.
2. ``gain``: both sides with the planted spin compiled in, the base spinning 0, the candidate
   ``PROBE`` (10 %) of each row's A/A time per program: the base is the one every planted run is
   measured against, and the effect gives the row's gain, the time a launch gains per
   nanosecond every program spins (1 for one wave of programs, more for several).
3. ``planted-<f>``: the base as in ``gain``, the candidate spinning ``f`` times the row's time
   over its gain (``TRITONGATE_PLANTED_DELAY``): a REGRESSED is a catch.
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from tritongate.calibrate.analysis import Step, StepRow, analyse, delays_for, gains_from, step_rows
from tritongate.calibrate.model import Calibration, fraction_key
from tritongate.planting import MAX_DELAY_NS, PLANTED_DELAY_ENV, write_plan

# (step out dir, base env overlay, candidate env overlay) -> a PairRequest with every row timed
MakeRequest = Callable[[Path, Mapping[str, str], Mapping[str, str]], Any]
RunPair = Callable[[Any], Any]  # PairRequest -> PairOutcome
Log = Callable[[str], None]
PROBE = 0.10  # the gain step's spin, as a fraction of each row's A/A time


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
    return Step(name, fraction, step_rows(outcome.result), time.perf_counter() - t0, str(outcome.path),
                delays), outcome


def _bounded(delays: Mapping[str, int]) -> tuple[dict[str, int], list[str]]:
    """The delays a plan can hold; the others (a row far slower than any GPU kernel, e.g. under
    the interpreter) named in a note."""
    keep = {k: v for k, v in delays.items() if v <= MAX_DELAY_NS}
    over = sorted(set(delays) - set(keep))
    return keep, ([f"not planted (its spin would exceed {MAX_DELAY_NS / 1e9:g} s): {', '.join(over)}"] if over else [])


def runner_of(outcome_identity: Mapping[str, Any]) -> dict[str, Any]:
    ident = outcome_identity or {}
    sw = ident.get("software") or {}
    return {"device": ident.get("device"), "backend": ident.get("backend"), "timer": ident.get("timer"),
            "driver": (ident.get("gpu_state_before") or {}).get("driver"),
            "torch": sw.get("torch"), "triton": (sw.get("triton") or {}).get("version"),
            "host": (ident.get("host") or {}).get("hostname")}


def calibrate(plan: CalibrationPlan, make_request: MakeRequest, run: RunPair, log: Log = lambda _: None) -> Calibration:
    """Run every step and analyse them."""
    out = plan.out
    plans = out / "plans"
    aa: list[Step] = []
    identity: Mapping[str, Any] = {}
    for i in range(1, plan.aa_runs + 1):
        log(f"A/A {i}/{plan.aa_runs}: the build against itself, every row timed")
        step, outcome = _timed_step(f"aa-{i}", None, make_request(out / f"aa-{i}", {}, {}), run)
        aa.append(step)
        identity = identity or (outcome.result.base.identity or {})
    timed = [r for r in aa[0].rows if r.base_median_us and r.op in plan.plantable]
    notes = [f"not planted (the op has no planted spin: only builtin ops do): {', '.join(sorted(skip))}"
             for skip in [{r.key for r in aa[0].rows if r.op not in plan.plantable}] if skip]
    zero_plan = write_plan(plans / "zero.json", 0.0, {r.key: 0 for r in timed})
    zero_env = {PLANTED_DELAY_ENV: str(zero_plan.resolve())}
    probe, too_long = _bounded(delays_for(timed, PROBE))
    notes += too_long
    if not probe:
        raise ValueError("no row of the suite can be planted (builtin ops timed in the A/A run); "
                         "calibrate a suite of builtin ops, e.g. pr")
    probe_plan = write_plan(plans / "gain.json", PROBE, probe)
    log(f"gain: the candidate spinning {PROBE:.0%} of each row's time per program, the base 0")
    gain_step, _ = _timed_step("gain", None, make_request(out / "gain", zero_env,
                                                          {PLANTED_DELAY_ENV: str(probe_plan.resolve())}), run, probe)
    gains, gain_notes = gains_from(gain_step.rows, probe)
    notes += gain_notes
    base_rows: list[StepRow] = [r for r in gain_step.rows if r.key in gains]
    planted: list[Step] = []
    for f in plan.fractions:
        delays, too_long = _bounded(delays_for(base_rows, f, gains))
        notes += too_long
        if not delays:
            notes.append(f"planted {f:.0%}: no row to plant (no usable gain), not run")
            log(f"planted {f:.0%}: no row to plant, skipped")
            continue
        path = write_plan(plans / f"planted-{fraction_key(f)}.json", f, delays)
        log(f"planted {f:.0%}: the candidate {f:.0%} slower on each of {len(delays)} rows")
        step, _ = _timed_step(f"planted-{fraction_key(f)}", f, make_request(
            out / f"planted-{fraction_key(f)}", zero_env, {PLANTED_DELAY_ENV: str(path.resolve())}), run, delays)
        planted.append(step)
    return analyse(created_utc=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), suite=plan.suite,
                   runner=runner_of(identity), aa=aa, gain=gain_step, gains=gains, planted=planted, notes=notes)
