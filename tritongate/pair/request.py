"""What a paired run is asked to do and what it gives back: ``PairRequest``, ``PairOutcome``,
and the defaults a request leaves open (the backend's pairing schedule, the worker pool's
size, the two builds from the command line).

Kept apart from the run itself so that the CLI, a calibration and the gate's simulation can
build a request or read the shipped schedule without loading the machinery that runs it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable

from tritongate.model.calibration import CalibrationSummary
from tritongate.errors import UsageError
from tritongate.gate.baseline_state import BaselineState
from tritongate.gate.policy import GatePolicy
from tritongate.ir.changed import ChangedRows
from tritongate.pair.build import CompilerBuild
from tritongate.pair.schedule import PairSchedule
from tritongate.pair.worker import DEFAULT_EXECUTOR
from tritongate.schema import Row

GPU_MAX_ROUNDS = 80
# Fresh worker pairs a row's pairs are spread over: on a GPU one at the end of the first block,
# then one every 10 pairs (a call needs 20 pairs, so it rests on three). On the interpreter one:
# its floor is tens of per cent (host timing of Python executing the kernel), far above any
# offset between two processes, and each more worker is seconds of torch and triton imports on
# a machine of two cores; calls there are not confirmed on other workers either.
GPU_WORKER_PAIRS = 8
CPU_WORKER_PAIRS = 1
# Worker pairs kept alive for the whole run; a row's worker pairs (above) rotate over them, so
# a "fresh" worker pair costs a prepare and a warm-up, not a process start (seconds of torch,
# triton and a device context, on every row). Independent processes are what the two-level
# error needs; a process that measured the previous row is as independent as a new one. A
# call's confirmation runs on as many more, started when a first call needs one, so that it
# never shares a process with the measurement it confirms. As many as a row may use: with 3
# pool pairs a process with a step in its speed sits in a third of every later row, whose
# worker pairs then disagree (blind), and +2 % was caught on 64 % of quiet rows in the
# simulation of a step of 1.5 % on one worker, 97.9 % with 8 (bench/results/2026-12-02_gate_simulation*).
GPU_POOL_PAIRS = GPU_WORKER_PAIRS
CPU_POOL_PAIRS = 2
# a stretched check's pool (schedule_scale) grows with it, up to this many pairs: 2 x 12 GPU
# processes for the measurement, enough to estimate the spread between processes from them
MAX_POOL_PAIRS = 12
CONFIRM_PAIRS = 20  # a call needs this many pairs (twice --rounds if more): two looks past the default first


@dataclass(frozen=True)
class PairRequest:
    baseline: Path  # a record run: both sides replay its autotune configs
    suite: str
    out: Path
    base: CompilerBuild = field(default_factory=lambda: CompilerBuild("base"))
    cand: CompilerBuild = field(default_factory=lambda: CompilerBuild("candidate"))
    backend: str = "auto"
    shape_file: Path | None = None
    only_ops: tuple[str, ...] = ()
    only_dtypes: tuple[str, ...] = ()
    config_overrides: dict[str, Any] = field(default_factory=dict)  # MeasureConfig fields
    schedule: PairSchedule | None = None  # None: the backend's default ...
    schedule_overrides: dict[str, Any] = field(default_factory=dict)  # ... with these fields replaced
    # ... then its max pairs and row budget this many times over (a calibration's paired check,
    # which must size a planted spin to a quarter of itself)
    schedule_scale: int = 1
    time_identical: bool = False
    # the side measured second in a pair reads the inputs the first side built (CUDA IPC), so
    # both see the same memory placement; rows whose inputs cannot be shared use their own
    share_inputs: bool = True
    row_timeout_s: float = 600.0
    allow_busy_gpu: bool = False
    isolate_tuner_cache: bool = False
    device_index: int = 0
    policy: GatePolicy = field(default_factory=GatePolicy)
    artifact_url: str | None = None
    verdict_template: Path | None = None  # verdict.md's layout, when not the shipped one
    executor: str = DEFAULT_EXECUTOR
    cache_root: Path | None = None  # private TRITON_CACHE_DIRs live here (default OUT/.triton-cache)
    changed_from: ChangedRows | None = None  # rows unchanged ahead of time are not run
    baseline_state: BaselineState | None = None  # the baseline lookup, shown in the verdict
    calibration: CalibrationSummary | None = None  # the runner's latest calibration, cited in the verdict
    shard: tuple[int, int] | None = None  # (I, N): every N-th planned row from the I-th (1-based)
    only_rows: frozenset[tuple[str, str, str]] | None = None  # (op, case, dtype): run only these planned rows
    worker_pool: int | None = None  # worker pairs kept alive for the run (None: by backend, see GPU_POOL_PAIRS)


@dataclass
class PairOutcome:
    path: Path  # the pair directory
    base_path: Path
    cand_path: Path
    verdict_md: Path | None = None
    verdict_json: Path | None = None
    result: Any = None  # GateResult
    rows: list[tuple[Row, Row]] = field(default_factory=list)
    wall_s: float = 0.0
    timed_s: float = 0.0  # wall seconds spent in warm-up and rounds
    restarts: dict[str, int] = field(default_factory=dict)


def default_schedule(backend: str, rounds: int) -> PairSchedule:
    """Rows short of their target grow to 80 pairs on a GPU (30 s a row, 10 min a run): a row
    whose memory placement moves its time by 2 % a round (a skinny matmul on the H200) needs
    that many to resolve 2 % (``bench/results/2026-11-30_h200_pair_noise.md``). On the
    interpreter, whose host timings are noisy, to 24 pairs within 8 s a row. A row called on
    fewer than 20 pairs (or twice ``rounds``) is looked at again first (``PairSchedule``), on a
    fresh worker pair. On the interpreter a row keeps its one worker pair, so a call is measured
    again on two fresh processes: one pair of processes cannot tell its own offset from a change."""
    confirm = max(CONFIRM_PAIRS, 2 * rounds)
    if backend == "cpu":
        return PairSchedule(min_rounds=rounds, max_rounds=max(rounds, 24), row_budget_s=8.0, run_budget_s=300.0,
                            confirm_rounds=confirm, max_worker_pairs=CPU_WORKER_PAIRS, confirm_calls=True)
    return PairSchedule(min_rounds=rounds, max_rounds=max(rounds, GPU_MAX_ROUNDS), confirm_rounds=confirm,
                        max_worker_pairs=GPU_WORKER_PAIRS, confirm_calls=True)


def request_schedule(req: PairRequest, backend: str, measure_config: dict[str, Any]) -> PairSchedule:
    """The schedule ``req`` runs with, once the base worker said its backend and measure
    config: the request's own or the backend's default, with its overrides and scale."""
    spr = int(measure_config.get("samples_per_round", 5))
    if spr < 3 or spr % 2 == 0:
        # a pair's ratio is of round medians: of two samples that is their mean, and one
        # outlier sample moves it
        raise UsageError(f"--samples-per-round {spr}: a paired run takes the median of each round, "
                         "which needs an odd number of samples, at least 3")
    try:
        schedule = req.schedule or default_schedule(backend, int(measure_config.get("rounds", 5)))
        if req.schedule_overrides:
            schedule = replace(schedule, **req.schedule_overrides)
        if req.schedule_scale < 1:
            raise ValueError(f"schedule_scale must be >= 1, got {req.schedule_scale}")
        if req.schedule_scale != 1:
            # a stretched row also spreads over that many times the worker pairs: the
            # between-process part of its error shrinks only with more processes
            schedule = replace(schedule, max_rounds=schedule.max_rounds * req.schedule_scale,
                               row_budget_s=schedule.row_budget_s * req.schedule_scale,
                               max_worker_pairs=schedule.max_worker_pairs * req.schedule_scale
                               if schedule.max_worker_pairs > 1 else 1)
    except ValueError as exc:
        said = str(exc)
        for field_name, flag in _FLAGS.items():  # the options a user gave, not the fields they set
            said = said.replace(field_name, flag)
        raise UsageError(f"bad pairing schedule: {said}") from exc
    return schedule


# PairSchedule's fields as the command line sets them (``request_schedule``'s errors)
_FLAGS = {"min_rounds": "--rounds", "max_rounds": "--max-rounds", "row_budget_s": "--row-budget",
          "run_budget_s": "--run-budget", "time budgets": "--row-budget and --run-budget"}


def pool_size(req: PairRequest, schedule: PairSchedule, backend: str) -> int:
    """Worker pairs of the pool that measure (as many more confirm calls)."""
    if req.worker_pool is not None:
        if req.worker_pool < 1:
            raise UsageError(f"worker_pool must be >= 1, got {req.worker_pool}")
        return req.worker_pool
    return default_pool_size(schedule, backend, req.schedule_scale)


def default_pool_size(schedule: PairSchedule, backend: str, schedule_scale: int = 1) -> int:
    """The pool a run of ``schedule`` keeps unless told otherwise: one pair when a row stays
    on one, else the backend's pool (times a stretched check's scale, up to MAX_POOL_PAIRS),
    never more than a row may use."""
    if schedule.max_worker_pairs < 2:
        return 1
    pool = (CPU_POOL_PAIRS if backend == "cpu" else GPU_POOL_PAIRS) * schedule_scale
    return min(schedule.max_worker_pairs, pool, MAX_POOL_PAIRS)


def parse_builds(base_python: str | None, cand_python: str | None, base_env: Iterable[str] | None,
                 cand_env: Iterable[str] | None) -> tuple[CompilerBuild, CompilerBuild]:
    from tritongate.pair.build import parse_env_overlay

    base = CompilerBuild("base", python=base_python or sys.executable,
                         env=parse_env_overlay(list(base_env or ()), option="--base-env"))
    cand = CompilerBuild("candidate", python=cand_python or sys.executable,
                         env=parse_env_overlay(list(cand_env or ()), option="--cand-env"))
    for build in (base, cand):
        build.check()
    return base, cand
