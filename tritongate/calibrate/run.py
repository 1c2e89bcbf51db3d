"""``tritongate calibrate``'s work: the steps on this machine, then calibration.json, .md and .png.

The command (``tritongate.cli.calibrate``) parses the options and prints the outcome; this
module runs the calibration from a template pair request and writes it.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Sequence

from tritongate.baselines.manifest import suite_folder
from tritongate.model.calibration import CALIBRATION_JSON, Calibration
from tritongate.calibrate.report import write_reports
from tritongate.calibrate.steps import CalibrationPlan, calibrate
from tritongate.report.units import counted
from tritongate.errors import UsageError
from tritongate.rundir import new_run_dir


def calibration_dir(out: Path, suite: str) -> Path:
    """``out/calibrate-<suite>_<UTC>/``, made like a run directory (a second in the same second: a suffix)."""
    return new_run_dir(out, f"calibrate-{suite_folder(suite)}")


def plantable_ops(suite_arg: str) -> frozenset[str]:
    """The suite's ops whose kernels take the planted spin (builtin ops); ``UsageError`` when
    none does (a FlagGems or user-op suite cannot be calibrated by planting)."""
    from tritongate.ops.user import registry_for
    from tritongate.suites import load_suite

    suite = load_suite(suite_arg)
    registry = registry_for(suite.modules, search_dir=suite.path.parent)
    ops = frozenset(op.name for op in suite.ops if registry.get(op.name).plantable)
    if not ops:
        raise UsageError(f"suite {suite.name}: none of its ops takes the planted slowdown (only the builtin ops "
                         "do: add, silu_mul, softmax, rmsnorm, matmul, attention, attention_causal); calibrate the "
                         "runner with a builtin suite, e.g. --suite pr")
    return ops


def run_calibration(template: Any, *, suite: str, out: Path, fractions: Sequence[float], aa_runs: int,
                    run: Callable[[Any], Any], log: Callable[[str], None], plantable: frozenset[str],
                    spawn: Callable[[Any], Any] | None = None,
                    detail: Callable[[str], None] | None = None) -> tuple[Calibration, Path, Path | None]:
    """Every step as ``template`` (a PairRequest) with its own directory and environment overlays,
    every row timed; then the reports. ``log`` gets a line per step, ``detail`` (default ``log``)
    one per row of the aim step; ``spawn`` starts the aim's worker (default: a process)."""
    from tritongate.calibrate.resume import keep_measurement, locked

    with locked(out):
        keep_measurement(out, template)  # a resume measures the remaining steps as the first ones were
        return _calibrate(template, out=out, suite=suite, fractions=fractions, aa_runs=aa_runs, run=run, log=log,
                          plantable=plantable, spawn=spawn, detail=detail)


def _calibrate(template: Any, *, suite: str, out: Path, fractions: Sequence[float], aa_runs: int,
               run: Callable[[Any], Any], log: Callable[[str], None], plantable: frozenset[str],
               spawn: Callable[[Any], Any] | None, detail: Callable[[str], None] | None,
               ) -> tuple[Calibration, Path, Path | None]:
    from tritongate.calibrate.aim_worker import AimWorker, aim_rows
    from tritongate.calibrate.resume import AimProgress, load_aims, resumable, save_aims
    from tritongate.pair.build import CompilerBuild
    from tritongate.pair.spawn import spawn_process

    def make_request(step_out: Path, base_env: dict, cand_env: dict) -> Any:
        return replace(template, out=step_out, time_identical=True,
                       base=CompilerBuild("base", template.base.python, {**template.base.env, **base_env}),
                       cand=CompilerBuild("candidate", template.cand.python, {**template.cand.env, **cand_env}))

    plan = CalibrationPlan(suite=suite, out=out, fractions=tuple(fractions), aa_runs=aa_runs, plantable=plantable)
    say = detail or log

    def aim(keys: Sequence[str], sizes: Sequence[float]) -> Any:
        prior = load_aims(out)
        if prior is not None and prior.complete:
            say("aim: finished before, read back from aim.json")
            return prior.aims, prior.failed, prior.wall_s, prior.gpus
        if prior is not None:
            say(f"aim: {counted(len(prior.aims) + len(prior.failed), 'row')} aimed before, read back from aim.json")
        before = prior.wall_s if prior is not None else 0.0
        t0 = time.perf_counter()

        def progress(aims: dict, failed: dict) -> None:  # kept after every row: a stop loses one row at most
            save_aims(out, AimProgress(aims, failed, before + time.perf_counter() - t0, complete=False,
                                       gpus=gpus))

        # the base build as the planted runs' base has it, replaying the same baseline
        with AimWorker(replace(template, out=out / "aim"), out / "aim", spawn=spawn or spawn_process) as worker:
            before_gpus = prior.gpus if prior else ()
            uuid = worker.device_uuid  # a resumed aim on another machine adds its GPU
            gpus = before_gpus + ((uuid,) if uuid and uuid not in before_gpus else ())
            aims, failed = aim_rows(worker, keys, sizes, say, done=prior.aims if prior else None,
                                    failed_before=prior.failed if prior else None, on_row=progress)
        wall = before + time.perf_counter() - t0
        save_aims(out, AimProgress(aims, failed, wall, complete=True, gpus=gpus))
        return aims, failed, wall, gpus

    cal = calibrate(plan, make_request, resumable(run, _regate, say), aim, log, detail)
    cal.write(out / CALIBRATION_JSON)
    return (cal, *write_reports(cal, out))


def _regate(request: Any, pair_dir: Path) -> Any:
    """A finished step's outcome, read back: its two run directories, gated again."""
    from tritongate.gate.pipeline import judge_runs
    from tritongate.pair.request import PairOutcome

    base, cand = pair_dir / "base", pair_dir / "candidate"
    return PairOutcome(path=pair_dir, base_path=base, cand_path=cand, result=judge_runs(base, cand, request.policy))
