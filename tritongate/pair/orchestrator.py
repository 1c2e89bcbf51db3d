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

This module only drives the run, in order; the parts live in their own modules: ``request``
(what is asked, the defaults), ``pool`` (the workers' lives), ``measure`` (one row's pairs),
``rows`` (the records they make) and ``rundirs`` (what each side's run directory holds).
"""

from __future__ import annotations

import errno
import os
import shutil
import time
from pathlib import Path
from typing import Any, Callable

from tritongate.errors import PreflightError, UsageError
from tritongate.pair.measure import RowMeasurer
from tritongate.pair.pool import WorkerPool
from tritongate.pair.request import PairOutcome, PairRequest, default_schedule, pool_size, request_schedule
from tritongate.pair.rows import not_run_row, row_summary
from tritongate.pair.rundirs import close_logs, fail_sides, finish_sides, open_sides, write_row
from tritongate.pair.schedule import PairSchedule, ledger_for
from tritongate.pair.spawn import SpawnFn, spawn_process
from tritongate.preflight import PlannedRow, check_out_dir
from tritongate.progress import Progress, ProgressFn
from tritongate.rowcase import describe
from tritongate.rundir import new_run_dir
from tritongate.sharding import shard_of
from tritongate.workdir import still_there


class PairRunner:
    def __init__(self, request: PairRequest, progress: ProgressFn | None = None, *,
                 spawn: SpawnFn = spawn_process, clock: Callable[[], float] = time.monotonic) -> None:
        self.request = request
        self._progress = progress or (lambda event: None)
        self._spawn = spawn
        self._clock = clock

    def run(self) -> PairOutcome:
        req = self.request
        check_out_dir(Path(req.out))
        stem = Path(req.suite).stem if req.suite.endswith((".yaml", ".yml")) else req.suite
        self._pair_dir = new_run_dir(Path(req.out), f"pair-{stem}")
        held = os.open(self._pair_dir, os.O_RDONLY | os.O_DIRECTORY)  # to tell its removal from a worker's error
        try:
            return self._run(held)
        finally:
            os.close(held)

    def _run(self, held: int) -> PairOutcome:
        req = self.request
        self._pair_id = self._pair_dir.name
        outcome = PairOutcome(path=self._pair_dir, base_path=self._pair_dir / "base",
                              cand_path=self._pair_dir / "candidate")
        t0 = self._t0 = self._clock()
        pool = self._pool = WorkerPool(req, self._pair_dir, self._spawn)
        self._rows = RowMeasurer(req, pool, self._pair_dir, self._pair_id, progress=self._progress,
                                 clock=self._clock)
        pool.make_sides()
        try:
            pool.start_all([(side, 0) for side in pool.sides.values()])
            pool.check_same_device()
            base = pool.sides["base"]
            plan = pool.plan(base)
            backend = str(base.hello.get("backend"))
            schedule = request_schedule(req, backend, base.hello.get("measure_config", {}))
            pool.measure_pairs = pool_size(req, schedule, backend)
            pool.grow(pool.measure_pairs)
            gpu_before = pool.gpu_state_before()
            self._run_rows(plan, gpu_before, schedule, outcome)
        except BaseException as exc:
            why = "interrupted" if isinstance(exc, KeyboardInterrupt) else describe(exc)
            pool.stop(kill=True)  # first: a worker may hold the GPU mid-kernel
            if not isinstance(exc, KeyboardInterrupt) and not still_there(held, self._pair_dir):
                # the workers' package link and logs went with it: what they then said is its consequence
                then = "" if isinstance(exc, OSError) else f" (then: {' '.join(why.split())[:200]})"
                raise FileNotFoundError(errno.ENOENT, f"the pair directory was removed while the paired run used "
                                        f"it{then}; pair again into a folder nothing else removes",
                                        str(self._pair_dir)) from exc
            if fail_sides(pool.sides.values(), why):
                exc.add_note(f"partial run directories (load as incomplete): {outcome.base_path} "
                             f"{outcome.cand_path}")
            elif isinstance(exc, (PreflightError, UsageError)):
                # refused before anything was measured, and the message says why: no folder
                # that reads as a pair directory is left behind
                shutil.rmtree(self._pair_dir, ignore_errors=True)
            else:
                exc.add_note(f"nothing was measured; the workers' logs: {self._pair_dir / 'workers'}")
            raise
        pool.stop(kill=False)
        close_logs(pool.sides.values())
        outcome.wall_s = self._clock() - t0
        outcome.restarts = {s.name: s.restarts for s in pool.sides.values()}
        self._gate(outcome)
        self._progress(Progress("finish", total=len(outcome.rows), message=str(self._pair_dir)))
        return outcome

    def _run_rows(self, plan: dict[str, Any], gpu_before: Any, schedule: PairSchedule,
                  outcome: PairOutcome) -> None:
        pool, sides = self._pool, self._pool.sides
        rows = [PlannedRow(op=r["op"], shape=tuple(r["shape"]), dtype=r["dtype"]) for r in plan["rows"]]
        if self.request.shard is not None:
            rows = shard_of(rows, *self.request.shard)
        if self.request.only_rows is not None:  # a calibration's paired check: its unsure rows alone
            rows = [r for r in rows if (r.op, r.case, r.dtype) in self.request.only_rows]
        open_sides(self.request, sides.values(), self._pair_dir, plan, len(rows), gpu_before, schedule,
                   pair_id=self._pair_id, worker_pool=pool.measure_pairs)
        recorded_k = {(op, case, dtype): k for op, case, dtype, k in
                      sides["base"].hello.get("recorded_launches", [])}
        ledger = ledger_for(schedule)
        self._progress(Progress("start", total=len(rows), message=str(self._pair_dir)))
        for note in plan.get("notes") or ():
            self._progress(Progress("note", message=str(note)))
        from tritongate.harness.gpu_state import state_markers

        extra_markers = state_markers(gpu_before)
        changed = self.request.changed_from
        for i, item in enumerate(rows):
            self._progress(Progress("row_start", index=i, total=len(rows), planned=item))
            pool.use_worker_pair(i)  # rows start on each worker pair of the pool in turn
            for side in sides.values():
                pool.ensure_alive(side)
            t_row = self._clock()
            if changed is not None and changed.is_unchanged((item.op, item.case, item.dtype)):
                base_row = cand_row = not_run_row(item, pool.backend())
            else:
                base_row, cand_row = self._rows.pair_row(item, recorded_k.get((item.op, item.case, item.dtype)),
                                                         schedule, ledger)
            outcome.timed_s += self._clock() - t_row
            write_row(sides["base"], base_row, extra_markers)
            write_row(sides["candidate"], cand_row, extra_markers)
            outcome.rows.append((base_row, cand_row))
            self._progress(Progress("row_done", index=i, total=len(rows), planned=item, row=cand_row,
                                    message=row_summary(base_row, cand_row, self.request.policy)))
        finish_sides(sides.values(), rows=len(rows), gpu_after=pool.gpu_state_after(), clock=self._clock,
                     t0=self._t0, timed_s=outcome.timed_s, sharing_off=self._rows.sharing_off)

    def _gate(self, outcome: PairOutcome) -> None:
        from tritongate.gate.pipeline import Citations, gate_runs

        changed = self.request.changed_from
        cite = Citations(baseline=self.request.baseline_state, calibration=self.request.calibration,
                         artifact_url=self.request.artifact_url,
                         ahead_of_time=changed.source if changed is not None else None)
        if changed is not None:  # the pre-screen's pass blame, for the rows timed here
            from tritongate.gate.ir_blame import carry_blame
            from tritongate.gate.ir_evidence import IR_DIFF_DIR

            carry_blame(changed.source, self._pair_dir / "verdict", IR_DIFF_DIR)
        gated = gate_runs(outcome.base_path, outcome.cand_path, self._pair_dir / "verdict", self.request.policy,
                          cite=cite, template=self.request.verdict_template)
        outcome.result = gated.result
        outcome.verdict_json, outcome.verdict_md = gated.written.json_path, gated.written.md_path


def run_pair(request: PairRequest, progress: ProgressFn | None = None, *,
             spawn: SpawnFn = spawn_process) -> PairOutcome:
    return PairRunner(request, progress, spawn=spawn).run()


# bench/ scripts and tests build requests and read the shipped schedule from here
__all__ = ["PairOutcome", "PairRequest", "PairRunner", "default_schedule", "run_pair"]
