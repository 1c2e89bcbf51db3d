"""``run_batch``: plan, resume, one op at a time per device, status files, the merged run.

The parent holds ``BATCH/.lock`` (a second batch process there is refused). Ctrl-C (or SIGTERM,
which the CLI turns into it) kills the running ops' groups, marks them INTERRUPTED and re-raises
``KeyboardInterrupt``, leaving the batch resumable.
"""

from __future__ import annotations

import collections
import contextlib
import os
import shutil
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

from tritongate.batch.lane import RUNNING, Lane, reap_orphan
from tritongate.batch.opflow import OpRunner
from tritongate.batch.plan import (MANIFEST, OPS_DIR, RUN_DIR, BatchRequest, OpPlan, Plan, check_resume, op_environment,
                                   plan_batch, plan_doc, replay_source, utc_now, write_manifest)
from tritongate.batch.shards import MergedRun, OpRun, merge_op_runs
from tritongate.batch.status import (COMPLETE, RESULT, Attempt, OpResult, OpStatus, read_op_result, summary_lines,
                                     write_op_result, write_tables)
from tritongate.errors import GateError, UsageError
from tritongate.rundir import load_run, new_run_dir
from tritongate.schema import Row
from tritongate.workdir import held_alone

LOCK = ".lock"


@dataclass(frozen=True)
class BatchEvent:
    """One progress event (the library never prints; the CLI shows these on stderr)."""

    kind: str  # "start" | "note" | "reused" | "op_start" | "attempt" | "op_done" | "merged"
    op: str = ""
    done: int = 0
    total: int = 0
    device: str = ""
    result: OpResult | None = None
    attempt: Attempt | None = None
    message: str = ""


BatchProgress = Callable[[BatchEvent], None]


@dataclass
class BatchOutcome:
    path: Path
    results: list[OpResult] = field(default_factory=list)  # in plan order
    run: MergedRun | None = None

    def count(self, status: OpStatus) -> int:
        return sum(r.status is status for r in self.results)

    @property
    def exit_code(self) -> int:
        """0: every op PASS or SKIP; 1: some op FAIL or TIMEOUT (the batch itself completed)."""
        return 1 if any(r.status.failed for r in self.results) else 0


class _Board:
    """The batch's shared state: results per op, the status files (kept current), progress events."""

    def __init__(self, batch_dir: Path, plan: Plan, progress: BatchProgress) -> None:
        self.dir = batch_dir
        self.order = [p.op for p in plan.ops]
        self.results: dict[str, OpResult] = {op: OpResult(op, OpStatus.PENDING) for op in self.order}
        self.summary: dict[str, list[dict[str, object]]] = {}
        self.lock = threading.RLock()  # held while the status files are written and an event is sent
        self._progress = progress
        self._records: dict[str, dict[tuple[str, str, str], float]] = {}  # each replayed record's medians

    def event(self, kind: str, **kw: object) -> None:
        with self.lock:
            done = sum(r.status not in (OpStatus.PENDING, OpStatus.RUNNING) for r in self.results.values())
            self._progress(BatchEvent(kind, done=done, total=len(self.order), **kw))  # type: ignore[arg-type]

    def write(self) -> None:
        write_tables(self.dir, [self.results[op] for op in self.order],
                     [line for op in self.order for line in self.summary.get(op, ())])

    def start(self, op: str, device: str) -> None:
        with self.lock:
            self.results[op] = OpResult(op, OpStatus.RUNNING, device=device, started_utc=utc_now())
            self.write()
            self.event("op_start", op=op, device=device)

    def finish(self, result: OpResult, rows: Mapping[str, Sequence[Row]], *, reused: bool = False) -> None:
        lines = summary_lines(result, rows, self._records)
        with self.lock:
            if not reused:
                write_op_result(self.dir / OPS_DIR / result.op, result)
            self.results[result.op] = result
            self.summary[result.op] = lines
            self.write()
            self.event("reused" if reused else "op_done", op=result.op, device=result.device, result=result)


def _locked(batch_dir: Path) -> contextlib.AbstractContextManager[None]:
    return held_alone(batch_dir / LOCK, f"another tritongate batch process is running in {batch_dir}; wait for "
                      "it, or stop it first")


def run_batch(request: BatchRequest, progress: BatchProgress | None = None) -> BatchOutcome:
    """Run (or resume) a batch; see the package docstring for the layout and semantics."""
    plan = plan_batch(request)
    if request.command is None and not (Path(request.python).is_file() and os.access(request.python, os.X_OK)):
        raise UsageError(f"--python {request.python}: not an executable file; pass a venv's bin/python")
    if request.resume is not None:
        batch_dir = Path(request.resume)
        saved = check_resume(batch_dir, request, plan)
    else:
        index, count = request.shard
        name = f"batch-{plan.suite.name}" + (f"-shard{index}of{count}" if count > 1 else "")
        batch_dir = new_run_dir(Path(request.out), name)  # type: ignore[arg-type]
        saved = {}
    with _locked(batch_dir):
        execution = {"devices": list(request.devices), "op_timeout_s": request.op_timeout_s,
                     "kill_grace_s": request.kill_grace_s, "retries": request.retries, "python": request.python,
                     "env": dict(request.env), "command": "custom" if request.command else "tritongate run",
                     "process": "worker" if request.worker_attempts else "fresh",
                     "worker_attempts": request.worker_attempts}
        manifest = {"plan": plan_doc(request, plan), "execution": execution,
                    "created_utc": saved.get("created_utc") or utc_now(), "finished": False, "run": None}
        write_manifest(batch_dir, manifest)
        board = _Board(batch_dir, plan, progress or (lambda event: None))
        board.event("start", message=str(batch_dir))
        todo: collections.deque[OpPlan] = collections.deque()
        for p in plan.ops:
            op_dir = batch_dir / OPS_DIR / p.op
            if (op_dir / RUNNING).exists():
                note = reap_orphan(op_dir / RUNNING, request.kill_grace_s)
                if note:
                    board.event("note", op=p.op, message=f"{p.op}: {note}")
            done = read_op_result(op_dir, complete_only=True) if request.resume is not None else None
            try:  # reused when every run it kept is intact; one gone or damaged: the op reruns
                rows = {run: load_run(batch_dir / run).rows for run in done.runs} if done else None
            except GateError:
                rows = None
            if done and rows is not None:
                board.finish(done, rows, reused=True)
                continue
            for stale in (COMPLETE, RESULT):  # an old marker must never outlive the run that replaces it
                (op_dir / stale).unlink(missing_ok=True)
            todo.append(p)
        with board.lock:
            board.write()
        _execute(request, plan, batch_dir, board, todo)
        outcome = BatchOutcome(path=batch_dir, results=[board.results[op] for op in board.order])
        try:
            outcome.run = _merge(request, batch_dir, outcome.results)
        except UsageError as exc:
            write_manifest(batch_dir, {**manifest, "finished": True, "finished_utc": utc_now(),
                                       "merge_error": str(exc)})
            raise
        except KeyboardInterrupt as exc:  # every op is done; a resume reuses them and merges again
            exc.add_note(f"the batch is resumable: tritongate batch --resume {batch_dir}")
            raise
        if outcome.run is not None:
            board.event("merged", message=str(outcome.run.path))
        write_manifest(batch_dir, {**manifest, "finished": True, "finished_utc": utc_now(),
                                   "run": RUN_DIR if outcome.run else None,
                                   "counts": {s.value: outcome.count(s) for s in OpStatus if outcome.count(s)}})
        return outcome


def _execute(request: BatchRequest, plan: Plan, batch_dir: Path, board: _Board,
             todo: collections.deque[OpPlan]) -> None:
    """One thread per device slot pulls ops in plan order."""
    from tritongate.childenv import package_link_dir

    # another interpreter (a compiler build's venv) must import this very tritongate
    pythonpath = package_link_dir(batch_dir / ".pythonpath") if request.python != sys.executable else None
    stop = threading.Event()
    errors: list[BaseException] = []

    def work(device: str, finished: threading.Event) -> None:
        # the slot's worker process runs its ops one after another (worker_attempts=0: fresh processes)
        lane = Lane((request.python, sys.executable), max_attempts=request.worker_attempts)
        try:
            env = op_environment(request, device, pythonpath)
            while not stop.is_set():
                try:
                    p = todo.popleft()
                except IndexError:
                    return
                board.start(p.op, device)
                replay = replay_source(request.replay_root, p.op) if request.replay_root else None
                runner = OpRunner(batch_dir, request, p, suite=str(plan.suite.path), device=device, env=env, stop=stop,
                                  replay_from=replay, on_attempt=lambda op, a: board.event("attempt", op=op, attempt=a),
                                  launch=lane.run_attempt)
                try:
                    result = runner.run()
                    board.finish(result, runner.kept_rows(result))
                except BaseException as exc:  # noqa: BLE001 - handed to the main thread, which re-raises
                    errors.append(exc)
                    stop.set()
                    return
        finally:
            lane.close(request.kill_grace_s)
            finished.set()

    slots = request.devices or ("",)
    finished = [threading.Event() for _ in slots]
    for device, event in zip(slots, finished):
        threading.Thread(target=work, args=(device, event), name=f"batch-device-{device or 'default'}",
                         daemon=True).start()
    try:
        _wait(finished)
    except KeyboardInterrupt as exc:
        stop.set()
        _wait(finished, patient=True)  # each kills its op's process group
        with board.lock:
            for op, r in board.results.items():
                if r.status is OpStatus.RUNNING:
                    board.results[op] = OpResult(op, OpStatus.INTERRUPTED, device=r.device)
            board.write()
        exc.add_note(f"the batch is resumable: tritongate batch --resume {batch_dir}")
        raise
    if errors:
        raise errors[0]


def _wait(finished: Sequence[threading.Event], *, patient: bool = False) -> None:
    """Until every worker is done. Events, not ``Thread.join``: on Python 3.11 a join that
    Ctrl-C interrupts marks a thread still running as stopped, and its op would be left running."""
    for event in finished:
        while not event.is_set():
            try:
                event.wait(0.1)
            except KeyboardInterrupt:
                if not patient:
                    raise  # a second Ctrl-C while stopping is ignored: the ops must be killed first


def _merge(request: BatchRequest, batch_dir: Path, results: Sequence[OpResult]) -> MergedRun | None:
    """Every PASS op's runs into ``BATCH/run`` (rebuilt on each resume); None without any."""
    sources = [OpRun(op=r.op, path=batch_dir / run, device=r.device, label=run)
               for r in results if r.status is OpStatus.PASS for run in r.runs]
    target = batch_dir / RUN_DIR
    if not sources:
        if target.exists():  # an earlier merge would now claim ops this batch no longer passes
            shutil.rmtree(target)
        return None
    index, count = request.shard
    provenance = {"dir": str(batch_dir.resolve()), "shard": f"{index}/{count}", "devices": list(request.devices),
                  "replay_root": str(request.replay_root.resolve()) if request.replay_root else None}
    replay = None
    if request.replay_root is not None:  # the record a gate of BATCH/run compares with: the root's merged run
        root = request.replay_root.resolve()
        replay = str(root / RUN_DIR) if (root / MANIFEST).is_file() and (root / RUN_DIR).is_dir() else str(root)
    return merge_op_runs(sources, target, provenance=provenance, replay_from=replay)
