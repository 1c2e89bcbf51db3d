"""The paired run's workers: one ``Side`` per build, each with its pool of worker processes
(one per worker pair), started, grown, rotated over rows, restarted when they die and
stopped at the end; and the checks that both sides' workers see one device.

Kept apart from the rows' measurement so that the rules for a worker's life (how long its
start may take, when a side gives up, what a start failure means to the exit code) live in
one place, whichever row or confirmation needs a worker.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritongate.backends import Backend, resolve_backend
from tritongate.errors import MeasurementError, PreflightError, UsageError
from tritongate.pair.build import CompilerBuild
from tritongate.pair.client import WorkerError, WorkerFailure, ask_all, startup_timeout
from tritongate.pair.request import PairRequest
from tritongate.pair.spawn import SpawnFn, Worker, side_worker_spec, worker_settings
from tritongate.rowcase import describe
from tritongate.rundir import RunWriter
from tritongate.runlog import RunLog

MAX_RESTARTS = 10  # per side: a worker that keeps dying stops the run


@dataclass
class Side:
    """One build's side of the run: its run directory and its pool of workers (one per worker
    pair of the pool); ``worker``/``hello`` are those of the worker pair in use."""

    name: str
    build: CompilerBuild
    pool: list[Worker]
    hellos: list[dict[str, Any]] = field(default_factory=list)
    current: int = 0  # the worker pair in use
    opened_writer: RunWriter | None = None  # the run directory, once rundirs.open_sides opened it
    opened_log: RunLog | None = None
    restarts: int = 0
    gave_up: str = ""  # why this side runs no more rows

    @property
    def writer(self) -> RunWriter:
        if self.opened_writer is None:
            raise RuntimeError(f"the {self.name} side's run directory is not open yet")
        return self.opened_writer

    @property
    def log(self) -> RunLog:
        if self.opened_log is None:
            raise RuntimeError(f"the {self.name} side's run.log is not open yet")
        return self.opened_log

    @property
    def worker(self) -> Worker:
        return self.pool[self.current]

    @property
    def hello(self) -> dict[str, Any]:
        return self.hellos[self.current]

    @hello.setter
    def hello(self, value: dict[str, Any]) -> None:
        self.hellos[self.current] = value


class WorkerPool:
    """Both sides' workers for one run of ``request``; their logs go under ``pair_dir``."""

    def __init__(self, request: PairRequest, pair_dir: Path, spawn: SpawnFn) -> None:
        self.request = request
        self._pair_dir = pair_dir
        self._spawn = spawn
        self.sides: dict[str, Side] = {}
        self.measure_pairs = 1  # worker pairs of the pool that measure; as many more confirm

    def _settings(self) -> dict[str, Any]:
        return worker_settings(self.request)

    def make_sides(self) -> None:
        for name, build in (("base", self.request.base), ("candidate", self.request.cand)):
            spec = side_worker_spec(self.request, name, build, self._pair_dir / "workers")
            self.sides[name] = Side(name=name, build=build, pool=[self._spawn(spec)], hellos=[{}])

    def start(self, side: Side, *, spawned: bool = False) -> None:
        """Start (unless ``spawned``: already started) and initialise the side's worker in use;
        its answer is the side's hello."""
        self.start_all([(side, side.current)], spawned=spawned)

    def start_all(self, workers: list[tuple[Side, int]], *, spawned: bool = False) -> None:
        """Start (unless ``spawned``) and initialise worker ``j`` of each side given, all at once:
        a worker's init imports torch, triton and the suite's ops and opens a device context
        (seconds each on a GPU host), and waiting for one before asking the next made a pool of
        8 worker pairs take 110 s to come up on the H200."""
        timeout = startup_timeout(self.request.row_timeout_s)
        settings = {"settings": self._settings()}
        if not spawned:
            for side, j in workers:
                side.pool[j].start()
        answers = ask_all([(side.pool[j], "init", timeout, settings) for side, j in workers])
        for (side, j), answer in zip(workers, answers):
            if answer.error is not None:
                self._start_failed(side, j, answer.error)
            side.hellos[j] = answer.result  # type: ignore[assignment]

    def _start_failed(self, side: Side, j: int, exc: WorkerFailure | WorkerError) -> None:
        """Raise the named error of worker ``j`` of ``side`` failing its start-up."""
        if isinstance(exc, WorkerFailure):
            raise MeasurementError(f"the {side.name} build's worker ({side.build.python}) could not start: "
                                   f"{exc.reason}") from None
        side.pool[j].kill()
        where = f"{side.name} build ({side.build.python})"
        if exc.kind == "preflight":
            raise PreflightError(str(exc.check or "worker"), f"{where}: {exc}") from None
        raise UsageError(f"{where}: {exc}") from None

    def plan(self, base: Side) -> dict[str, Any]:
        """The suite's planned rows, as the base worker reads them."""
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

    def stop(self, *, kill: bool) -> None:
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
            for side in self.sides.values():
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

    def ensure_alive(self, side: Side) -> None:
        """Restart a worker that died; after MAX_RESTARTS, or when it cannot start again, the
        side gives up: its remaining rows are error rows (the gate still runs)."""
        if side.worker.alive or side.gave_up:
            return
        if side.restarts >= MAX_RESTARTS:
            side.gave_up = f"the {side.name} worker failed {side.restarts} times; its remaining rows were not run"
            side.log.write(f"WORKER_GAVE_UP side={side.name} restarts={side.restarts}")
            return
        side.restarts += 1
        side.log.write(f"WORKER_RESTART side={side.name} restart={side.restarts}")
        try:
            self.start(side)
        except (MeasurementError, UsageError) as exc:
            side.gave_up = f"the {side.name} worker could not be restarted: {exc}"
            side.log.write(f"WORKER_GAVE_UP side={side.name} reason={exc}")
            return
        self.check_same_device()

    def restart_for_row(self, side: Side) -> str | None:
        """A fresh worker for the row's next worker pair; why it could not start (the row then
        fails on that side, and the next row restarts it as after a crash), else None."""
        try:
            side.worker.close()
        except Exception:  # noqa: BLE001 - a worker that will not close is killed
            side.worker.kill()
        try:
            self.start(side)
        except (MeasurementError, UsageError, PreflightError) as exc:
            return f"the {side.name} worker could not be started afresh for the row: {exc}"
        side.log.write(f"WORKER_PAIR_FRESH side={side.name} pid={side.worker.pid}")
        return None

    def grow(self, size: int) -> None:
        """Start the pool's worker pairs up to ``size``, all at once (``start_all``)."""
        sides = list(self.sides.values())
        first = len(sides[0].pool)
        for side in sides:
            for j in range(len(side.pool), size):
                spec = side_worker_spec(self.request, side.name, side.build, self._pair_dir / "workers",
                                        label=f"{side.name}-{j}")
                side.pool.append(self._spawn(spec))
                side.hellos.append({})
        self.start_all([(side, j) for j in range(first, size) for side in sides])
        keep = sides[0].current
        for j in range(first, size):
            for side in sides:
                side.current = j
            self.check_same_device()
        for side in sides:
            side.current = keep

    def preload(self, prepare_args: dict[str, Any]) -> tuple[int, dict[int, Exception]]:
        """Every other live worker of both sides (not the pair in use, which has just prepared
        the row itself) prepares this row and drops it again, all at once: the
        first row of an op in a worker pays for the op's code generation and compiles (about
        3 s a worker for a FlagGems pointwise op on the H200), and a row's fresh worker pairs
        each paid it in turn, one side after the other. Nothing is timed meanwhile, and no IR is
        written (``run_dir`` None: the row's own prepare writes it). How many workers were
        asked, and each failure by the worker's ``id`` (a worker that died or hung is killed,
        and restarted when it is next used; an error answer comes again at the row's own
        prepare)."""
        args = {**prepare_args, "run_dir": None}
        timeout = self.request.row_timeout_s
        workers = [w for side in self.sides.values() for w in side.pool if w.alive and w is not side.worker]
        asked = len(workers)
        failed: dict[int, Exception] = {}
        for cmd, cmd_args in (("prepare", args), ("abort", {})):
            for worker, answer in zip(workers, ask_all([(w, cmd, timeout, cmd_args) for w in workers])):
                if answer.error is not None:
                    failed.setdefault(id(worker), answer.error)
            workers = [w for w in workers if w.alive]
        return asked, failed

    def use_worker_pair(self, index: int, *, confirming: bool = False) -> None:
        """Use worker pair ``index`` of the measuring ones (``confirming``: of the confirming
        ones, which are started here the first time)."""
        m = self.measure_pairs
        if confirming and len(self.sides["base"].pool) < 2 * m:
            self.grow(2 * m)
        for side in self.sides.values():
            side.current = index % m + (m if confirming else 0)

    def check_same_device(self) -> None:
        base, cand = self.sides["base"].hello, self.sides["candidate"].hello
        if base.get("device_uuid") != cand.get("device_uuid"):
            raise PreflightError("same_device", f"the base worker sees {base.get('device_uuid')} and the "
                                 f"candidate worker {cand.get('device_uuid')}: both builds must run on one "
                                 "physical device; check CUDA_VISIBLE_DEVICES in the --base-env/--cand-env overlays")
        if base.get("backend") != cand.get("backend"):
            raise PreflightError("backend", f"the base worker resolved backend {base.get('backend')!r}, the "
                                 f"candidate {cand.get('backend')!r}; pass --backend explicitly")
        for side in self.sides.values():
            side.build.check_backend(str(side.hello.get("backend")))

    def backend(self) -> Backend:
        """The backend the workers resolved (the base's; ``check_same_device`` holds them equal)."""
        return resolve_backend(str(self.sides["base"].hello.get("backend", "cpu")))

    def _own_pids(self) -> set[int]:
        """This process and its workers: they hold device contexts, but are not "other processes"."""
        return {os.getpid()} | {w.pid for s in self.sides.values() for w in s.pool if w.pid}

    def gpu_state_before(self) -> dict[str, Any] | None:
        """The device's state before any row (None off a GPU); a busy GPU fails the run unless
        the request allows it."""
        hello = self.sides["base"].hello
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

    def gpu_state_after(self) -> dict[str, Any] | None:
        if self.sides["base"].hello.get("backend") != "cuda":
            return None
        from tritongate.harness.gpu_state import read_gpu_state

        try:
            return read_gpu_state(str(self.sides["base"].hello.get("device_uuid")),
                                  own_pids=self._own_pids()).to_dict()
        except Exception as exc:  # noqa: BLE001
            return {"error": describe(exc)}
