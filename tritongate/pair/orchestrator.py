"""The paired run's parent: two workers (base and candidate builds) on one device, rows
measured in alternating rounds, two ordinary run directories and the verdict written.

Per row: both sides prepare (compile with the baseline's configs, warm up, check
correctness). If every launched kernel is byte-identical on both sides the row is
IDENTICAL_BINARY and is not timed (unless ``time_identical``). Otherwise k is chosen once
(the baseline's k for the row, else the base side's) and used by both, and rounds
alternate A B, B A, ... (who goes first swaps every pair). At planned looks a row short of
its precision target gets more pairs within its and the run's time budget.

A worker that dies, hangs past the row timeout or hits a fatal device error is killed
(its process group), its row is kept as an error/timeout row naming the side, and the
worker is restarted for the next row. This module never imports torch or triton.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Protocol

import yaml

from tritongate import markers
from tritongate.atomicio import write_text_atomic
from tritongate.calibrate.model import CalibrationSummary
from tritongate.errors import MeasurementError, PreflightError, UsageError
from tritongate.gate.policy import GatePolicy
from tritongate.gate.rule import PairLayout, Why, decide, paired_estimate, paired_log_ratios, precision
from tritongate.harness.measure import L2Policy, Measurement, TimerKind
from tritongate.gate.baseline_state import BaselineState
from tritongate.ir.changed import ChangedRows
from tritongate.pair.build import CompilerBuild, package_path_dir
from tritongate.pair.client import WorkerError, WorkerFailure, WorkerProcess, WorkerSpec, startup_timeout
from tritongate.pair.schedule import BudgetLedger, PairSchedule, ledger_for, run_schedule
from tritongate.pair.worker import DEFAULT_EXECUTOR
from tritongate.preflight import PlannedRow, check_out_dir
from tritongate.progress import Progress, ProgressFn, row_line
from tritongate.report.units import format_time
from tritongate.rowcase import PreparedRow, describe, error_row, finish_row
from tritongate.rundir import LOG, RunWriter, new_run_dir
from tritongate.runlog import RunLog
from tritongate.schema import Correctness, PairInfo, Row, RowStatus, SkipReason, Variant

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
# never shares a process with the measurement it confirms.
GPU_POOL_PAIRS = 3
CPU_POOL_PAIRS = 2
CONFIRM_PAIRS = 20  # a call needs this many pairs (twice --rounds if more): two looks past the default first
STARTUP_TIMEOUT_S = 600.0  # importing torch/triton and creating a device context
MAX_RESTARTS = 10  # per side: a worker that keeps dying stops the run
PAIR_SIDES = ("base", "candidate")


class Worker(Protocol):
    side: str

    @property
    def pid(self) -> int | None: ...

    @property
    def alive(self) -> bool: ...

    def start(self) -> None: ...

    def call(self, cmd: str, timeout_s: float, **args: Any) -> dict[str, Any]: ...

    def kill(self) -> None: ...

    def close(self) -> None: ...


SpawnFn = Callable[[WorkerSpec], Worker]


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
    executor: str = DEFAULT_EXECUTOR
    cache_root: Path | None = None  # private TRITON_CACHE_DIRs live here (default OUT/.triton-cache)
    changed_from: ChangedRows | None = None  # rows unchanged ahead of time are not run
    baseline_state: BaselineState | None = None  # the baseline lookup, shown in the verdict
    calibration: CalibrationSummary | None = None  # the runner's latest calibration, cited in the verdict
    shard: tuple[int, int] | None = None  # (I, N): every N-th planned row from the I-th (1-based)
    only_rows: frozenset[tuple[str, str, str]] | None = None  # (op, case, dtype): run only these planned rows
    worker_pool: int | None = None  # worker pairs kept alive for the run (None: by backend, see GPU_POOL_PAIRS)


def default_schedule(backend: str, rounds: int) -> PairSchedule:
    """Rows short of their target grow to 80 pairs on a GPU (30 s a row, 10 min a run): a row
    whose memory placement moves its time by 2 % a round (a skinny matmul on the H200) needs
    that many to resolve 2 % (``bench/results/2026-11-30_h200_pair_noise.md``). On the
    interpreter, whose host timings are noisy, to 24 pairs within 8 s a row. A row called on
    fewer than 20 pairs (or twice ``rounds``) is looked at again first (``PairSchedule``), on a
    fresh worker pair."""
    confirm = max(CONFIRM_PAIRS, 2 * rounds)
    if backend == "cpu":
        return PairSchedule(min_rounds=rounds, max_rounds=max(rounds, 24), row_budget_s=8.0, run_budget_s=300.0,
                            confirm_rounds=confirm, max_worker_pairs=CPU_WORKER_PAIRS, confirm_calls=False)
    return PairSchedule(min_rounds=rounds, max_rounds=max(rounds, GPU_MAX_ROUNDS), confirm_rounds=confirm,
                        max_worker_pairs=GPU_WORKER_PAIRS, confirm_calls=True)


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


@dataclass
class _Side:
    """One build's side of the run: its run directory and its pool of workers (one per worker
    pair of the pool); ``worker``/``hello`` are those of the worker pair in use."""

    name: str
    build: CompilerBuild
    pool: list[Worker]
    hellos: list[dict[str, Any]] = field(default_factory=list)
    current: int = 0  # the worker pair in use
    writer: RunWriter | None = None
    log: RunLog | None = None
    restarts: int = 0
    gave_up: str = ""  # why this side runs no more rows

    @property
    def worker(self) -> Worker:
        return self.pool[self.current]

    @property
    def hello(self) -> dict[str, Any]:
        return self.hellos[self.current]

    @hello.setter
    def hello(self, value: dict[str, Any]) -> None:
        self.hellos[self.current] = value


@dataclass
class _RowState:
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


def spawn_process(spec: WorkerSpec) -> Worker:
    return WorkerProcess(spec)


def worker_settings(req: "PairRequest") -> dict[str, Any]:
    """What every worker of ``req`` is initialised with."""
    return {"backend": req.backend, "replay_from": str(Path(req.baseline).resolve()),
            "config_overrides": dict(req.config_overrides), "device_index": req.device_index,
            "isolate_tuner_cache": req.isolate_tuner_cache,
            # every worker (a restarted one too) loads the suite's own op modules at init
            "suite": req.suite, "shape_file": str(req.shape_file) if req.shape_file else None,
            # the interpreter backend pins both workers to this one core (see the executor)
            "cpu_affinity": [max(os.sched_getaffinity(0))] if hasattr(os, "sched_getaffinity") else None}


def side_worker_spec(req: "PairRequest", name: str, build: CompilerBuild, workers_dir: Path, *,
                     label: str | None = None) -> WorkerSpec:
    """How to start the worker of one side (``name``: base or candidate) of ``req``: the build's
    interpreter and environment, the side's own Triton cache, its log under ``workers_dir``
    (named ``label``, default ``name``: another worker of the same build shares its cache)."""
    cache_root = Path(req.cache_root) if req.cache_root else Path(req.out) / ".triton-cache"
    env = build.environment(os.environ, pythonpath=package_path_dir(workers_dir / "pythonpath"),
                            cache_dir=(cache_root / f"{name}-{build.digest()}").resolve())
    return WorkerSpec(side=label or name, argv=[build.python, "-m", "tritongate.pair.worker", "--executor",
                                                req.executor],
                      env=env, log_path=workers_dir / f"{label or name}.log")


class PairRunner:
    def __init__(self, request: PairRequest, progress: ProgressFn | None = None, *,
                 spawn: SpawnFn = spawn_process, clock: Callable[[], float] = time.monotonic) -> None:
        self.request = request
        self._progress = progress or (lambda event: None)
        self._spawn = spawn
        self._clock = clock
        self._sides: dict[str, _Side] = {}
        self._measure_pairs = 1  # worker pairs of the pool that measure; as many more confirm
        self._pair_id = ""
        self._sharing_off = ""  # why shared inputs failed in this run (the rest of it then uses own)

    # -- set-up ----------------------------------------------------------------------------
    def _settings(self) -> dict[str, Any]:
        return worker_settings(self.request)

    def _start(self, side: _Side, *, spawned: bool = False) -> None:
        if not spawned:
            side.worker.start()
        try:
            side.hello = side.worker.call("init", startup_timeout(self.request.row_timeout_s),
                                          settings=self._settings())
        except WorkerError as exc:
            side.worker.kill()
            where = f"{side.name} build ({side.build.python})"
            if exc.kind == "preflight":
                raise PreflightError(str(exc.check or "worker"), f"{where}: {exc}") from None
            raise UsageError(f"{where}: {exc}") from None
        except WorkerFailure as exc:
            raise MeasurementError(f"the {side.name} build's worker ({side.build.python}) could not start: "
                                   f"{exc.reason}") from None

    def _plan(self, base: _Side) -> dict[str, Any]:
        req = self.request
        try:
            return base.worker.call("plan", startup_timeout(req.row_timeout_s), suite=req.suite,
                                    shape_file=str(req.shape_file) if req.shape_file else None,
                                    only_ops=list(req.only_ops), only_dtypes=list(req.only_dtypes))
        except WorkerError as exc:
            if exc.kind == "preflight":
                raise PreflightError(str(exc.check or "suite"), str(exc)) from None
            raise UsageError(f"suite {req.suite}: {exc}") from None
        except WorkerFailure as exc:
            raise MeasurementError(f"the base worker failed while reading the suite: {exc.reason}") from None

    def _stop_workers(self, *, kill: bool) -> None:
        """Every worker ends here, whatever happens to the others; a second Ctrl-C or SIGTERM
        cannot cut this short and leave a worker behind."""
        import signal

        previous = {}
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                previous[sig] = signal.signal(sig, signal.SIG_IGN)
            except ValueError:  # not the main thread: signals are not ours to hold
                pass
        try:
            for side in self._sides.values():
                for worker in side.pool:
                    try:
                        worker.kill() if kill else worker.close()
                    except Exception:  # noqa: BLE001 - the next worker must still be stopped
                        try:
                            worker.kill()
                        except Exception:  # noqa: BLE001
                            pass
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _ensure_alive(self, side: _Side) -> None:
        """Restart a worker that died; after MAX_RESTARTS, or when it cannot start again, the
        side gives up: its remaining rows are error rows (the gate still runs)."""
        if side.worker.alive or side.gave_up:
            return
        if side.restarts >= MAX_RESTARTS:
            side.gave_up = f"the {side.name} worker failed {side.restarts} times; its remaining rows were not run"
            side.log.write(f"WORKER_GAVE_UP side={side.name} restarts={side.restarts}")  # type: ignore[union-attr]
            return
        side.restarts += 1
        side.log.write(f"WORKER_RESTART side={side.name} restart={side.restarts}")  # type: ignore[union-attr]
        try:
            self._start(side)
        except (MeasurementError, UsageError) as exc:
            side.gave_up = f"the {side.name} worker could not be restarted: {exc}"
            side.log.write(f"WORKER_GAVE_UP side={side.name} reason={exc}")  # type: ignore[union-attr]
            return
        self._check_same_device()

    def _make_sides(self) -> None:
        for name, build in (("base", self.request.base), ("candidate", self.request.cand)):
            spec = side_worker_spec(self.request, name, build, self._pair_dir / "workers")
            self._sides[name] = _Side(name=name, build=build, pool=[self._spawn(spec)], hellos=[{}])

    def _grow_pool(self, size: int) -> None:
        """Start the pool's worker pairs up to ``size``: every process is started before any is
        waited on, so their imports and device contexts come up side by side."""
        sides = list(self._sides.values())
        first, keep = len(sides[0].pool), sides[0].current
        for side in sides:
            for j in range(len(side.pool), size):
                spec = side_worker_spec(self.request, side.name, side.build, self._pair_dir / "workers",
                                        label=f"{side.name}-{j}")
                side.pool.append(self._spawn(spec))
                side.hellos.append({})
                side.pool[-1].start()
        for j in range(first, size):
            for side in sides:
                side.current = j
                self._start(side, spawned=True)
            self._check_same_device()
        for side in sides:
            side.current = keep

    def _pool_size(self, schedule: PairSchedule, backend: str) -> int:
        if self.request.worker_pool is not None:
            if self.request.worker_pool < 1:
                raise UsageError(f"worker_pool must be >= 1, got {self.request.worker_pool}")
            return self.request.worker_pool
        if schedule.max_worker_pairs < 2:
            return 1
        pool = (CPU_POOL_PAIRS if backend == "cpu" else GPU_POOL_PAIRS) * self.request.schedule_scale
        return min(schedule.max_worker_pairs, pool)

    def _use_worker_pair(self, index: int, *, confirming: bool = False) -> None:
        """Use worker pair ``index`` of the measuring ones (``confirming``: of the confirming
        ones, which are started here the first time)."""
        m = self._measure_pairs
        if confirming and len(self._sides["base"].pool) < 2 * m:
            self._grow_pool(2 * m)
        for side in self._sides.values():
            side.current = index % m + (m if confirming else 0)

    def _check_same_device(self) -> None:
        base, cand = self._sides["base"].hello, self._sides["candidate"].hello
        if base.get("device_uuid") != cand.get("device_uuid"):
            raise PreflightError("same_device", f"the base worker sees {base.get('device_uuid')} and the "
                                 f"candidate worker {cand.get('device_uuid')}: both builds must run on one "
                                 "physical device; check CUDA_VISIBLE_DEVICES in the --base-env/--cand-env overlays")
        if base.get("backend") != cand.get("backend"):
            raise PreflightError("backend", f"the base worker resolved backend {base.get('backend')!r}, the "
                                 f"candidate {cand.get('backend')!r}; pass --backend explicitly")
        for side in self._sides.values():
            side.build.check_backend(str(side.hello.get("backend")))

    def _gpu_state(self) -> dict[str, Any] | None:
        hello = self._sides["base"].hello
        if hello.get("backend") != "cuda":
            return None
        from tritongate.errors import GpuBusyError
        from tritongate.harness.gpu_state import read_idle_state

        try:
            state = read_idle_state(str(hello.get("device_uuid")), own_pids=self._own_pids(),
                                    allow_busy=self.request.allow_busy_gpu)
        except GpuBusyError:
            raise
        except Exception as exc:  # noqa: BLE001 - no nvidia-smi: record that, do not fail
            return {"error": describe(exc)}
        return state.to_dict()

    def _identity(self, side: _Side, plan: dict[str, Any], gpu_before: Any, schedule: PairSchedule) -> dict:
        h = side.hello
        other = "candidate" if side.name == "base" else "base"
        return {
            "suite": plan["suite"], "backend": h.get("backend"), "device": h.get("device"),
            "timer": h.get("timer"), "measure_config": h.get("measure_config", {}),
            "compiler_ref": h.get("compiler_ref"), "commit": h.get("commit"), "software": h.get("software"),
            "host": h.get("host"), "codegen_env": h.get("codegen_env"), "gpu_state_before": gpu_before,
            "started_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "replay_from": h.get("replay_from"), "replay_record": h.get("replay_record"),
            "tuner_cache": h.get("tuner_cache"), "planted_work": h.get("planted_work", 1),
            "planted_delay": h.get("planted_delay"),
            "cpu_affinity": h.get("cpu_affinity"),
            "pair": {"pair_id": self._pair_id, "side": side.name, "other_run": f"../{other}",
                     "build": side.build.to_dict(), "device_uuid": h.get("device_uuid"),
                     "worker_python": h.get("python"), "worker_pid": h.get("pid"), "time_identical": self.request.time_identical,
                     # asked for and possible (CUDA); rows that could not say so in run.log (INPUTS_OWN)
                     "share_inputs": self.request.share_inputs and h.get("backend") == "cuda",
                     "changed_from": self.request.changed_from.to_dict() if self.request.changed_from else None,
                     "shard": {"index": self.request.shard[0], "count": self.request.shard[1],
                               "planned_rows": len(plan["rows"])} if self.request.shard else None,
                     "only_rows": sorted("/".join(k) for k in self.request.only_rows)
                     if self.request.only_rows is not None else None,
                     "schedule": {"min_rounds": schedule.min_rounds, "max_rounds": schedule.max_rounds,
                                  "confirm_rounds": schedule.confirm_rounds,
                                  "row_budget_s": schedule.row_budget_s, "run_budget_s": schedule.run_budget_s,
                                  "max_worker_pairs": schedule.max_worker_pairs, "worker_pool": self._measure_pairs,
                                  "confirm_calls": schedule.confirm_calls}},
        }

    # -- the run ---------------------------------------------------------------------------
    def run(self) -> PairOutcome:
        req = self.request
        check_out_dir(Path(req.out))
        stem = Path(req.suite).stem if req.suite.endswith((".yaml", ".yml")) else req.suite
        self._pair_dir = new_run_dir(Path(req.out), f"pair-{stem}")
        self._pair_id = self._pair_dir.name
        outcome = PairOutcome(path=self._pair_dir, base_path=self._pair_dir / "base",
                              cand_path=self._pair_dir / "candidate")
        t0 = self._t0 = self._clock()
        self._make_sides()
        try:
            for side in self._sides.values():
                self._start(side)
            self._check_same_device()
            base = self._sides["base"]
            plan = self._plan(base)
            config = base.hello.get("measure_config", {})
            spr = int(config.get("samples_per_round", 5))
            if spr < 3 or spr % 2 == 0:
                # a pair's ratio is of round medians: of two samples that is their mean, and one
                # outlier sample moves it
                raise UsageError(f"--samples-per-round {spr}: a paired run takes the median of each round, "
                                 "which needs an odd number of samples, at least 3")
            try:
                schedule = req.schedule or default_schedule(str(base.hello.get("backend")),
                                                            int(config.get("rounds", 5)))
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
                raise UsageError(f"bad pairing schedule: {exc}") from exc
            self._measure_pairs = self._pool_size(schedule, str(base.hello.get("backend")))
            self._grow_pool(self._measure_pairs)
            gpu_before = self._gpu_state()
            self._run_rows(plan, gpu_before, schedule, outcome)
        except BaseException as exc:
            why = "interrupted" if isinstance(exc, KeyboardInterrupt) else describe(exc)
            self._stop_workers(kill=True)  # first: a worker may hold the GPU mid-kernel
            for side in self._sides.values():
                if side.writer is not None:
                    side.writer.fail(why)
                if side.log is not None:
                    side.log.write(f"RUN_FAILED {why}")
                    side.log.close()
            if any(side.writer is not None for side in self._sides.values()):
                exc.add_note(f"partial run directories (load as incomplete): {outcome.base_path} "
                             f"{outcome.cand_path}")
            raise
        self._stop_workers(kill=False)
        for side in self._sides.values():
            if side.log is not None:
                side.log.close()
        outcome.wall_s = self._clock() - t0
        outcome.restarts = {s.name: s.restarts for s in self._sides.values()}
        self._gate(outcome)
        self._progress(Progress("finish", total=len(outcome.rows), message=str(self._pair_dir)))
        return outcome

    def _run_rows(self, plan: dict[str, Any], gpu_before: Any, schedule: PairSchedule,
                  outcome: PairOutcome) -> None:
        rows = [PlannedRow(op=r["op"], shape=tuple(r["shape"]), dtype=r["dtype"]) for r in plan["rows"]]
        if self.request.shard is not None:  # round robin: each shard gets every op's mix of sizes
            index, count = self.request.shard
            rows = rows[index - 1::count]
        if self.request.only_rows is not None:  # a calibration's paired check: its unsure rows alone
            rows = [r for r in rows if (r.op, r.case, r.dtype) in self.request.only_rows]
        shapes_text = yaml.safe_dump(plan["shapes"], sort_keys=False)
        for side in self._sides.values():
            path = self._pair_dir / side.name
            side.writer = RunWriter(path, self._identity(side, plan, gpu_before, schedule), mode="replay")
            write_text_atomic(path / "shapes.yaml", shapes_text)
            side.log = RunLog(path / LOG)
            side.log.write(f"tritongate pair  side={side.name}  suite={plan['suite']['name']}  "
                           f"backend={side.hello.get('backend')}  device={side.hello.get('device')}  "
                           f"rows={len(rows)}  compiler={side.hello.get('compiler_ref')}  "
                           f"python={side.build.python}  replay_from={side.hello.get('replay_from')}")
        recorded_k = {(op, case, dtype): k for op, case, dtype, k in
                      self._sides["base"].hello.get("recorded_launches", [])}
        ledger = ledger_for(schedule)
        self._progress(Progress("start", total=len(rows), message=str(self._pair_dir)))
        for note in plan.get("notes") or ():
            self._progress(Progress("note", message=str(note)))
        from tritongate.harness.gpu_state import state_markers

        extra_markers = state_markers(gpu_before)
        for i, item in enumerate(rows):
            self._progress(Progress("row_start", index=i, total=len(rows), planned=item))
            self._use_worker_pair(i)  # rows start on each worker pair of the pool in turn
            for side in self._sides.values():
                self._ensure_alive(side)
            t_row = self._clock()
            if self._unchanged_ahead_of_time(item):
                base_row = cand_row = _not_run_row(item, self._backend())
            else:
                base_row, cand_row = self._pair_row(item, recorded_k.get((item.op, item.case, item.dtype)),
                                                    schedule, ledger)
            outcome.timed_s += self._clock() - t_row
            for side, row in ((self._sides["base"], base_row), (self._sides["candidate"], cand_row)):
                if extra_markers and row.status is RowStatus.OK:
                    row = replace(row, markers=row.markers + extra_markers)
                side.writer.add(row)  # type: ignore[union-attr]
                side.log.write(row_line(row))  # type: ignore[union-attr]
                for m in row.markers:
                    side.log.write(m)  # type: ignore[union-attr]
            outcome.rows.append((base_row, cand_row))
            self._progress(Progress("row_done", index=i, total=len(rows), planned=item, row=cand_row,
                                    message=_row_summary(base_row, cand_row)))
        after = self._gpu_state_after()
        for side in self._sides.values():
            side.writer.set_identity_extra({"gpu_state_after": after,  # type: ignore[union-attr]
                                            "wall_s": round(self._clock() - self._t0, 3),
                                            "timed_s": round(outcome.timed_s, 3), "restarts": side.restarts,
                                            "shared_inputs_failed": self._sharing_off or None})
            side.writer.finish()  # type: ignore[union-attr]
            side.log.write(f"RUN_COMPLETE rows={len(rows)} restarts={side.restarts}")  # type: ignore[union-attr]

    def _own_pids(self) -> set[int]:
        """This process and its workers: they hold device contexts, but are not "other processes"."""
        return {os.getpid()} | {w.pid for s in self._sides.values() for w in s.pool if w.pid}

    def _gpu_state_after(self) -> dict[str, Any] | None:
        if self._sides["base"].hello.get("backend") != "cuda":
            return None
        from tritongate.harness.gpu_state import read_gpu_state

        try:
            return read_gpu_state(str(self._sides["base"].hello.get("device_uuid")),
                                  own_pids=self._own_pids()).to_dict()
        except Exception as exc:  # noqa: BLE001
            return {"error": describe(exc)}

    # -- one row ---------------------------------------------------------------------------
    def _unchanged_ahead_of_time(self, item: PlannedRow) -> bool:
        changed = self.request.changed_from
        return changed is not None and changed.is_unchanged((item.op, item.case, item.dtype))

    def _ask(self, side: _Side, state: _RowState, cmd: str, **args: Any) -> dict[str, Any] | None:
        """One request; a failure is recorded on the side's row state, never raised (except
        for whole-run errors)."""
        if state.failure is not None:
            return None
        try:
            return side.worker.call(cmd, self.request.row_timeout_s, **args)
        except WorkerFailure as exc:
            status = "timeout" if exc.kind == "timeout" else "error"
            state.failure = (status, f"{side.name} worker {exc.reason}")
            side.log.write(f"WORKER_FAILED side={side.name} kind={exc.kind} reason={exc.reason}")  # type: ignore[union-attr]
        except WorkerError as exc:
            if exc.kind in ("preflight", "usage"):
                raise UsageError(f"{side.name} worker: {exc}") from None
            state.failure = ("error", f"on the {side.name} side: {exc}")
            if exc.check == "shared_inputs":
                state.sharing_failed = str(exc)
        return None

    def _pair_row(self, item: PlannedRow, recorded_k: int | None, schedule: PairSchedule,
                  ledger: BudgetLedger) -> tuple[Row, Row]:
        base, cand = self._sides["base"], self._sides["candidate"]
        states = {"base": _RowState(), "candidate": _RowState()}
        for side in (base, cand):
            if side.gave_up:
                states[side.name].failure = ("error", side.gave_up)
        for side in (base, cand):
            states[side.name].prepared = self._ask(side, states[side.name], "prepare", op=item.op,
                                                   shape=list(item.shape), dtype=item.dtype,
                                                   run_dir=str(self._pair_dir / side.name))
        ok = all(s.failure is None for s in states.values())
        identical = ok and _identical(_prepared(states["base"].prepared), _prepared(states["candidate"].prepared))
        if ok and not (identical and not self.request.time_identical):
            self._time_row(item, recorded_k, schedule, ledger, states)
        for side in (base, cand):
            st = states[side.name]
            if st.failure is None:
                st.finished = self._ask(side, st, "finish")
            elif side.worker.alive:
                try:  # close the row's autotune bookkeeping on a worker that is still fine
                    side.worker.call("abort", self.request.row_timeout_s)
                except (WorkerFailure, WorkerError):
                    pass
        return (self._build_row(item, base, states, identical, schedule),
                self._build_row(item, cand, states, identical, schedule))

    def _time_row(self, item: PlannedRow, recorded_k: int | None, schedule: PairSchedule,
                  ledger: BudgetLedger, states: dict[str, _RowState]) -> None:
        share = self._time_pairs(item, recorded_k, schedule, ledger, states, share=None)
        broken = next((st.sharing_failed for st in states.values() if st.sharing_failed), "")
        if not (share and broken):
            return
        # Sharing failed (CUDA IPC refused by the platform or driver, or torches that disagree): this
        # row and the rest of the run are timed on own inputs, and the run says so.
        self._sharing_off = broken
        message = f"shared inputs failed on {item.op} {item.case} {item.dtype} ({broken}); this row and the " \
                  "rest of the run time each side on its own inputs"
        self._progress(Progress("note", message=message))
        for side in self._sides.values():
            side.log.write(f"INPUTS_OWN_FROM_HERE op={item.op} case={item.case} dtype={item.dtype} why={broken}")  # type: ignore[union-attr]
        for name, st in states.items():  # the failed pairs are dropped: each side starts the row's timing afresh
            states[name] = _RowState(prepared=st.prepared)
        self._time_pairs(item, recorded_k, schedule, ledger, states, share=False)

    def _time_pairs(self, item: PlannedRow, recorded_k: int | None, schedule: PairSchedule,
                    ledger: BudgetLedger, states: dict[str, _RowState], *, share: bool | None) -> bool:
        """Warm both sides up and run the row's pairs; ``share`` None: share inputs if asked and
        both sides can. Whether the pairs shared their inputs."""
        base, cand = self._sides["base"], self._sides["candidate"]
        b, c = states["base"], states["candidate"]
        warm = self._ask(base, b, "warm_up", k=recorded_k)
        if warm is None:
            return False
        cand_warm = self._ask(cand, c, "warm_up", k=int(warm["k"]))
        if cand_warm is None:
            return False
        if share is None:
            share = self._share_inputs(item, {"base": warm, "candidate": cand_warm})
        b.inputs = c.inputs = "shared" if share else "own"
        target = self.request.policy.min_effect_for(item.op)
        worker_pair = [base.current]
        confirming = [False]  # the measurement under way confirms a call (its own worker pairs)

        def new_worker_pair(i: int) -> bool:
            # the pairs so far are kept (each side's finish); the next worker pair of the pool
            # takes over (with a pool of one, both workers start afresh)
            for side in (base, cand):
                st = states[side.name]
                answer = self._ask(side, st, "finish")
                if answer is None:
                    return False
                st.parts.append(answer)
            if self._measure_pairs > 1:
                m = self._measure_pairs
                try:
                    if confirming[0] and base.current < m:  # a confirmation begins: the other half
                        self._use_worker_pair(base.current, confirming=True)
                    else:
                        self._use_worker_pair(base.current % m + 1, confirming=confirming[0])
                except (MeasurementError, UsageError, PreflightError) as exc:
                    for side in (base, cand):
                        states[side.name].failure = ("error", f"the worker pairs that confirm a call could "
                                                              f"not be started: {exc}")
                    return False
                for side in (base, cand):
                    self._ensure_alive(side)
                    if side.gave_up:
                        states[side.name].failure = ("error", side.gave_up)
                        return False
                    side.log.write(f"WORKER_PAIR_NEXT side={side.name} pair={side.current} "  # type: ignore[union-attr]
                                   f"pid={side.worker.pid} op={item.op} case={item.case} dtype={item.dtype}")
            else:
                for side in (base, cand):
                    if not self._restart_for_row(side, states[side.name]):
                        return False
            for side in (base, cand):
                if self._ask(side, states[side.name], "prepare", op=item.op, shape=list(item.shape), dtype=item.dtype,
                             run_dir=str(self._pair_dir / side.name)) is None:
                    return False
            for side in (base, cand):
                if self._ask(side, states[side.name], "warm_up", k=int(warm["k"])) is None:
                    return False
            worker_pair[0] = base.current if self._measure_pairs > 1 else worker_pair[0] + 1
            return True

        def measure_pair(i: int) -> bool:
            order = (base, cand) if i % 2 == 0 else (cand, base)
            shared: dict[str, Any] | None = None
            for position, side in enumerate(order):
                st = states[side.name]
                # sharing: the first side builds the pair's inputs, the second reads them
                args = {} if not share else {"inputs": "export"} if position == 0 \
                    else {"inputs": "import", "shared": shared}
                answer = self._ask(side, st, "round", **args)
                if answer is None:
                    if share and position == 1:  # it gave back the payload's holds, unless its worker is gone
                        self._let_go(order[0], states[order[0].name], release=not side.worker.alive)
                    return False
                shared = answer.get("shared")
                if answer.get("markers"):
                    # the side fell back to another timer and dropped its earlier samples: the
                    # row carries the marker and is rejected; more pairs would add nothing
                    st.fell_back = True
                st.samples.extend(float(x) for x in answer["samples"])
                st.went_first.append(position == 0)
                st.worker_pairs.append(worker_pair[0])
            if share:
                self._let_go(order[0], states[order[0].name], release=False)
            return not any(states[s].fell_back for s in states)

        result = run_schedule(measure_pair=measure_pair, reached=lambda: self._reached(states, target),
                              schedule=schedule, ledger=ledger, clock=self._clock,
                              would_call=lambda: self._would_call(states, target), new_worker_pair=new_worker_pair)
        for st in states.values():
            st.stopped_by = result.stopped_by
        healthy = all(st.failure is None and not st.fell_back for st in states.values())
        if schedule.confirm_calls and healthy and result.pairs and self._would_call(states, target):
            # an independent measurement of the call: fresh worker pairs, the schedule anew, judged alone
            start = result.pairs
            for st in states.values():
                st.confirm_from = start
            confirming[0] = True
            if not new_worker_pair(start):
                return share
            again = run_schedule(measure_pair=lambda i: measure_pair(start + i),
                                 reached=lambda: self._reached(states, target, start),
                                 schedule=schedule, ledger=ledger, clock=self._clock,
                                 would_call=lambda: self._would_call(states, target, start),
                                 new_worker_pair=lambda i: new_worker_pair(start + i), confirming=True)
            for st in states.values():
                st.stopped_by = again.stopped_by
        return share

    def _restart_for_row(self, side: _Side, state: _RowState) -> bool:
        """A fresh worker for the row's next worker pair; a worker that cannot start fails the
        row on that side (the next row restarts it as after a crash)."""
        try:
            side.worker.close()
        except Exception:  # noqa: BLE001 - a worker that will not close is killed
            side.worker.kill()
        try:
            self._start(side)
        except (MeasurementError, UsageError, PreflightError) as exc:
            state.failure = ("error", f"the {side.name} worker could not be started afresh for the row: {exc}")
            return False
        side.log.write(f"WORKER_PAIR_FRESH side={side.name} pid={side.worker.pid}")  # type: ignore[union-attr]
        return True

    def _let_go(self, side: _Side, state: _RowState, *, release: bool) -> None:
        """Tell the side that exported a pair's inputs that the other side is done with them
        (``release``: the other side's worker died holding them). Only logged if it fails: the
        row's timing is not at stake, and a dead worker is restarted for the next row anyway.
        A first side that failed is not asked: its worker gives the inputs back on its own
        (``abort``), or died with them."""
        if state.failure is not None:
            return
        try:
            side.worker.call("unshare", self.request.row_timeout_s, release=release)
        except (WorkerFailure, WorkerError) as exc:
            side.log.write(f"UNSHARE_FAILED side={side.name} reason={exc}")  # type: ignore[union-attr]

    def _share_inputs(self, item: PlannedRow, warm: dict[str, dict[str, Any]]) -> bool:
        """Whether this row's pairs share their inputs: asked for, and both sides can."""
        if not self.request.share_inputs or self._backend().name != "cuda" or self._sharing_off:
            return False  # (on the host there is no device memory to share; a failure was logged once)
        why = {name: str(answer.get("unshareable", "the worker cannot share inputs")) for name, answer in warm.items()}
        for name, reason in why.items():
            if reason:
                self._sides[name].log.write(  # type: ignore[union-attr]
                    f"INPUTS_OWN op={item.op} case={item.case} dtype={item.dtype} side={name} why={reason}")
        return not any(why.values())

    def _spr(self) -> int:
        return int(self._sides["base"].hello.get("measure_config", {}).get("samples_per_round", 5))

    def _reached(self, states: dict[str, _RowState], target: float, start: int = 0) -> bool:
        p = self._precision(states, target, start)
        return p is not None and p <= target

    def _would_call(self, states: dict[str, _RowState], target: float, start: int = 0) -> bool:
        """Whether the rule would call the row's timing on the pairs from ``start``."""
        spr, policy = self._spr(), self.request.policy
        b, c = states["base"].samples[start * spr:], states["candidate"].samples[start * spr:]
        if not b or not c:
            return False
        return decide(b, c, base_per_round=spr, cand_per_round=spr, min_effect=target, noise_z=policy.noise_z,
                      min_samples=policy.min_samples, paired=True, layout=_layout(states["base"], start),
                      process_sd=policy.process_sd, pair_inflation=policy.pair_inflation).why is Why.CALLED

    def _precision(self, states: dict[str, _RowState], target: float, start: int = 0) -> float | None:
        spr = self._spr()
        return self._precision_of(states["base"].samples[start * spr:], states["candidate"].samples[start * spr:],
                                  target, _layout(states["base"], start))

    def _precision_of(self, b: list[float], c: list[float], target: float, layout: PairLayout) -> float | None:
        if not b or not c:
            return None
        spr = self._spr()
        return precision(b, c, base_per_round=spr, cand_per_round=spr, paired=True, min_effect=target,
                         noise_z=self.request.policy.noise_z, layout=layout,
                         process_sd=self.request.policy.process_sd,
                         pair_inflation=self.request.policy.pair_inflation).detectable

    def _build_row(self, item: PlannedRow, side: _Side, states: dict[str, _RowState], identical: bool,
                   schedule: PairSchedule) -> Row:
        st = states[side.name]
        other = states["candidate" if side.name == "base" else "base"]
        if st.failure is not None:
            status, text = st.failure
            if status == "timeout":
                return error_row(item, self._backend(), text, status=RowStatus.TIMEOUT,
                                 marker_kind=markers.ROW_TIMEOUT, side=side.name)
            return error_row(item, self._backend(), text, side=side.name)
        prepared = _prepared(st.prepared)
        fin = st.finished or {}
        autotune = (st.parts[0] if st.parts else fin).get("autotune")
        tuned_markers = tuple(dict.fromkeys(m for part in (*st.parts, fin) for m in part.get("autotune_markers") or ()))
        meas = _merged_measurement([*st.parts, fin])
        if other.failure is not None or meas is None:
            skip = SkipReason.OTHER_SIDE_FAILED if other.failure is not None or not identical \
                else SkipReason.IDENTICAL_BINARY
            extra = () if prepared.correctness.ok else (markers.make(
                markers.CORRECTNESS_MISMATCH, reason=prepared.correctness.detail),)
            return Row(**prepared.fields, samples=(), skipped=skip, markers=tuned_markers + extra,
                       correctness=prepared.correctness, variants=prepared.variants, autotune=autotune)
        m = Measurement(timer=TimerKind(meas["timer"]), samples_us=tuple(meas["samples"]),
                        samples_per_round=int(meas["samples_per_round"]),
                        launches_per_sample=int(meas["launches_per_sample"]),
                        warmup_calls=int(meas["warmup_calls"]), l2=L2Policy(meas["l2"]),
                        shift_bytes=tuple(meas["shift_bytes"]), markers=tuple(meas["markers"]))
        rounds = len(m.samples_us) // m.samples_per_round
        target = self.request.policy.min_effect_for(item.op)
        # precision of what the rows hold: the workers' own samples (a timer fallback drops a
        # side's earlier rounds), judged only when both sides kept the same rounds
        other_meas = _merged_measurement([*other.parts, other.finished or {}]) or {}
        kept = {side.name: list(m.samples_us), ("candidate" if side.name == "base" else "base"):
                list(other_meas.get("samples") or ())}
        base_state = states["base"]
        layout = PairLayout(tuple(base_state.went_first[-rounds:]), tuple(base_state.worker_pairs[-rounds:]))
        reached = self._precision_of(kept["base"], kept["candidate"], target, layout) \
            if len(kept["base"]) == len(kept["candidate"]) else None
        if reached is not None and not math.isfinite(reached):
            reached = None  # too few pairs to estimate anything
        pairing = PairInfo(pair_id=self._pair_id, side=side.name, went_first=tuple(st.went_first[-rounds:]),
                           target_effect=target, detectable_effect=reached,
                           target_reached=None if reached is None else reached <= target,
                           min_rounds=schedule.min_rounds, max_rounds=schedule.max_rounds,
                           confirm_rounds=schedule.confirm_rounds, inputs=st.inputs,
                           worker_pairs=tuple(st.worker_pairs[-rounds:]) if len(st.worker_pairs) >= rounds else (),
                           stopped_by=st.stopped_by, confirm_from=st.confirm_from if st.confirm_from < rounds else 0)
        row = finish_row(prepared, m, pairing=pairing)
        return replace(row, markers=row.markers + tuned_markers, autotune=autotune)

    def _backend(self):
        from tritongate.backends import resolve_backend

        return resolve_backend(str(self._sides["base"].hello.get("backend", "cpu")))

    # -- the verdict -----------------------------------------------------------------------
    def _gate(self, outcome: PairOutcome) -> None:
        from tritongate.gate.output import write_verdict
        from tritongate.gate.verdict import run_gate
        from tritongate.rundir import load_run

        result = run_gate(load_run(outcome.base_path), load_run(outcome.cand_path), self.request.policy)
        outcome.result = result
        outcome.verdict_json, outcome.verdict_md = write_verdict(
            result, self._pair_dir / "verdict", artifact_url=self.request.artifact_url,
            baseline=self.request.baseline_state, calibration=self.request.calibration)


def _layout(base: _RowState, start: int = 0) -> PairLayout:
    return PairLayout(base_first=tuple(base.went_first[start:]), worker_pairs=tuple(base.worker_pairs[start:]))


def _merged_measurement(answers: list[dict[str, Any]]) -> dict[str, Any] | None:
    """One side's measurement over every worker pair of the row, in the order measured."""
    parts = [a["measurement"] for a in answers if a.get("measurement")]
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    return {**parts[-1], "samples": [x for p in parts for x in p["samples"]],
            "shift_bytes": [x for p in parts for x in p.get("shift_bytes", [])],
            "markers": list(dict.fromkeys(m for p in parts for m in p.get("markers", []))),
            "warmup_calls": parts[0]["warmup_calls"]}


def _identical(base: PreparedRow, cand: PreparedRow) -> bool:
    from tritongate.gate.verdict import same_binaries  # the gate's own test, before any timing

    return same_binaries(base.variants, cand.variants, base.fields.get("params") or {},
                         cand.fields.get("params") or {})


def _not_run_row(item: PlannedRow, backend: Any) -> Row:
    """A row the ahead-of-time IR diff showed unchanged: kept, marked, never run."""
    from tritongate.rowcase import row_seed

    return Row(op=item.op, case=item.case, dtype=item.dtype, timer=backend.timer.value, samples=(),
               params={"shape": list(item.shape), "seed": row_seed(item.op, item.case, item.dtype)},
               skipped=SkipReason.UNCHANGED_AHEAD_OF_TIME)


def _prepared(answer: dict[str, Any] | None) -> PreparedRow:
    answer = answer or {}
    return PreparedRow(fields=dict(answer["fields"]), make_fn=lambda: (lambda: None),
                       variants=tuple(Variant(**v) for v in answer.get("variants", ())),
                       correctness=Correctness(**answer["correctness"]))


def _row_summary(base: Row, cand: Row) -> str:
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
    layout = PairLayout(bp.went_first, bp.worker_pairs) if bp is not None else None
    # the rule's own robust estimate (trimmed, order removed, per worker pair), not the mean
    effect = math.expm1(float(paired_estimate(ratios, layout, 0.0).effect_log)) if ratios \
        else cs.median / bs.median - 1
    return f"{format_time(bs.median)} -> {format_time(cs.median)} ({effect:+.2%} paired, {len(ratios)} rounds)"


def run_pair(request: PairRequest, progress: ProgressFn | None = None, *,
             spawn: SpawnFn = spawn_process) -> PairOutcome:
    return PairRunner(request, progress, spawn=spawn).run()


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


__all__ = ["PairOutcome", "PairRequest", "PairRunner", "default_schedule", "parse_builds", "run_pair",
           "side_worker_spec", "spawn_process", "worker_settings"]
