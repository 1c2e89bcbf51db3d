"""One paired row's measurement: both sides prepare it, warm up with one k, and run its pairs
in alternating order (who goes first swaps every pair) as the schedule says, moving to fresh
worker pairs on the way; a row the rule would call is measured again on worker pairs of its
own (``confirm_calls``). Shared inputs (CUDA IPC) are asked for per pair, and a run whose
sharing fails goes on with each side's own inputs.

A worker's failure is recorded on the side's ``RowState`` and becomes that side's error or
timeout row, never an exception: one bad row must not end the run. Kept apart from the
pool (which owns the workers' lives) and from ``rows`` (which judges and records the answers).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from tritongate.errors import MeasurementError, PreflightError, UsageError
from tritongate.pair.client import WorkerError, WorkerFailure, ask_all
from tritongate.pair.pool import Side, WorkerPool
from tritongate.pair.request import PairRequest
from tritongate.pair.rows import (RowState, build_row, failed_row, identical, layout, precision_of, prepared_row,
                                  would_call)
from tritongate.pair.schedule import BudgetLedger, PairSchedule, run_schedule
from tritongate.preflight import PlannedRow
from tritongate.progress import Progress, ProgressFn
from tritongate.schema import Row


class RowMeasurer:
    """Measures rows of ``request`` on ``pool``'s workers; each side's files go under ``pair_dir``."""

    def __init__(self, request: PairRequest, pool: WorkerPool, pair_dir: Path, pair_id: str, *,
                 progress: ProgressFn, clock: Callable[[], float]) -> None:
        self.request = request
        self._pool = pool
        self._pair_dir = pair_dir
        self._pair_id = pair_id
        self._progress = progress
        self._clock = clock
        self.sharing_off = ""  # why shared inputs failed in this run (the rest of it then uses own)
        self._preloaded_op = ""  # the op the pool's workers last prepared all at once

    def ask(self, side: Side, state: RowState, cmd: str, **args: Any) -> dict[str, Any] | None:
        """One request; a failure is recorded on the side's row state, never raised (except
        for whole-run errors)."""
        return self.ask_both([(side, state, args)], cmd)[0]

    def ask_both(self, asks: list[tuple[Side, RowState, dict[str, Any]]], cmd: str) -> list[dict[str, Any] | None]:
        """``cmd`` to each side's worker at once (``ask_all``), then each answer (None where that
        side failed, as in ``ask``). Only for what times nothing (preparing a row, a warm-up
        with a known k, finishing): the two workers then overlap on the host's cores instead
        of one waiting for the other, which a row pays at every fresh worker pair."""
        live = [(side, state, args) for side, state, args in asks if state.failure is None]
        got = ask_all([(side.worker, cmd, self.request.row_timeout_s, args) for side, _, args in live])
        by_state = {id(state): answer for (_, state, _), answer in zip(live, got)}
        answers: list[dict[str, Any] | None] = []
        for side, state, _ in asks:
            answer = by_state.get(id(state))
            if answer is None:  # the side had failed before: nothing asked
                answers.append(None)
                continue
            state.call_s[cmd] = state.call_s.get(cmd, 0.0) + answer.seconds
            if answer.error is not None:
                self._record_failure(side, state, answer.error)
            answers.append(answer.result)
        return answers

    def _record_failure(self, side: Side, state: RowState, exc: WorkerFailure | WorkerError) -> None:
        if isinstance(exc, WorkerFailure):
            status = "timeout" if exc.kind == "timeout" else "error"
            state.failure = (status, f"{side.name} worker {exc.reason}")
            side.log.write(f"WORKER_FAILED side={side.name} kind={exc.kind} reason={exc.reason}")
            return
        if exc.kind in ("preflight", "usage"):
            raise UsageError(f"{side.name} worker: {exc}") from None
        state.failure = ("error", f"on the {side.name} side: {exc}")
        if exc.check == "shared_inputs":
            state.sharing_failed = str(exc)

    def pair_row(self, item: PlannedRow, recorded_k: int | None, schedule: PairSchedule,
                 ledger: BudgetLedger) -> tuple[Row, Row]:
        """The row's base and candidate records; ``recorded_k``: the baseline's k for it."""
        base, cand = self._pool.sides["base"], self._pool.sides["candidate"]
        states = {"base": RowState(), "candidate": RowState()}
        for side in (base, cand):
            if side.gave_up:
                states[side.name].failure = ("error", side.gave_up)
        prepared = self.ask_both([(side, states[side.name], self._prepare_args(item, side)) for side in (base, cand)],
                                 "prepare")
        for side, answer in zip((base, cand), prepared):
            states[side.name].prepared = answer
        ok = all(s.failure is None for s in states.values())
        if ok and self._pool.measure_pairs > 1 and item.op != self._preloaded_op:
            self._preload(item)
        same = ok and identical(prepared_row(states["base"].prepared), prepared_row(states["candidate"].prepared))
        if ok and not (same and not self.request.time_identical):
            self._time_row(item, recorded_k, schedule, ledger, states)
        finishing = [(side, states[side.name], {}) for side in (base, cand) if states[side.name].failure is None]
        failed = [side for side in (base, cand) if states[side.name].failure is not None]
        for (side, st, _), answer in zip(finishing, self.ask_both(finishing, "finish")):
            st.finished = answer
        for side in failed:
            if side.worker.alive:
                try:  # close the row's autotune bookkeeping on a worker that is still fine
                    side.worker.call("abort", self.request.row_timeout_s)
                except (WorkerFailure, WorkerError):
                    pass
        for side in (base, cand):
            st = states[side.name]
            spent = " ".join(f"{cmd}={secs:.2f}" for cmd, secs in st.call_s.items())
            side.log.write(f"ROW_SECONDS side={side.name} op={item.op} case={item.case} dtype={item.dtype} "
                           f"worker_pairs={len(set(st.worker_pairs)) or 1} {spent}")
        return (self._build_row(item, base, states, same, schedule),
                self._build_row(item, cand, states, same, schedule))

    def _preload(self, item: PlannedRow) -> None:
        """The op's first row, prepared by the rest of the pool at once (``WorkerPool.preload``),
        once the row's own pair has prepared it: an op that crashes or hangs a worker there
        costs one worker pair, as it did before, not the pool."""
        self._preloaded_op = item.op
        start = time.perf_counter()
        asked, failed = self._pool.preload({"op": item.op, "shape": list(item.shape), "dtype": item.dtype})
        took = time.perf_counter() - start
        first = next(iter(failed.values()), None)
        for side in self._pool.sides.values():
            side.log.write(f"OP_PRELOAD side={side.name} op={item.op} workers={asked} seconds={took:.2f} "
                           f"failed={len(failed)}" + (f" first_failure={first}" if first else ""))

    def _prepare_args(self, item: PlannedRow, side: Side) -> dict[str, Any]:
        return {"op": item.op, "shape": list(item.shape), "dtype": item.dtype,
                "run_dir": str(self._pair_dir / side.name)}

    def _time_row(self, item: PlannedRow, recorded_k: int | None, schedule: PairSchedule,
                  ledger: BudgetLedger, states: dict[str, RowState]) -> None:
        share = self._time_pairs(item, recorded_k, schedule, ledger, states, share=None)
        broken = next((st.sharing_failed for st in states.values() if st.sharing_failed), "")
        if not (share and broken):
            return
        # Sharing failed (CUDA IPC refused by the platform or driver, or torches that disagree): this
        # row and the rest of the run are timed on own inputs, and the run says so.
        self.sharing_off = broken
        message = f"shared inputs failed on {item.op} {item.case} {item.dtype} ({broken}); this row and the " \
                  "rest of the run time each side on its own inputs"
        self._progress(Progress("note", message=message))
        for side in self._pool.sides.values():
            side.log.write(f"INPUTS_OWN_FROM_HERE op={item.op} case={item.case} dtype={item.dtype} why={broken}")
        for name, st in states.items():  # the failed pairs are dropped: each side starts the row's timing afresh
            states[name] = RowState(prepared=st.prepared, call_s=st.call_s)
        self._time_pairs(item, recorded_k, schedule, ledger, states, share=False)

    def _time_pairs(self, item: PlannedRow, recorded_k: int | None, schedule: PairSchedule,
                    ledger: BudgetLedger, states: dict[str, RowState], *, share: bool | None) -> bool:
        """Warm both sides up and run the row's pairs; ``share`` None: share inputs if asked and
        both sides can. Whether the pairs shared their inputs."""
        pool = self._pool
        base, cand = pool.sides["base"], pool.sides["candidate"]
        b, c = states["base"], states["candidate"]
        warm = self.ask(base, b, "warm_up", k=recorded_k)
        if warm is None:
            return False
        cand_warm = self.ask(cand, c, "warm_up", k=int(warm["k"]))
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
            answers = self.ask_both([(side, states[side.name], {}) for side in (base, cand)], "finish")
            if any(answer is None for answer in answers):
                return False
            for side, answer in zip((base, cand), answers):
                states[side.name].parts.append(answer)  # type: ignore[arg-type]
            if pool.measure_pairs > 1:
                m = pool.measure_pairs
                try:
                    if confirming[0] and base.current < m:  # a confirmation begins: the other half
                        pool.use_worker_pair(base.current, confirming=True)
                    else:
                        pool.use_worker_pair(base.current % m + 1, confirming=confirming[0])
                except (MeasurementError, UsageError, PreflightError) as exc:
                    for side in (base, cand):
                        states[side.name].failure = ("error", f"the worker pairs that confirm a call could "
                                                              f"not be started: {exc}")
                    return False
                for side in (base, cand):
                    pool.ensure_alive(side)
                    if side.gave_up:
                        states[side.name].failure = ("error", side.gave_up)
                        return False
                    side.log.write(f"WORKER_PAIR_NEXT side={side.name} pair={side.current} "
                                   f"pid={side.worker.pid} op={item.op} case={item.case} dtype={item.dtype}")
            else:
                for side in (base, cand):
                    why = pool.restart_for_row(side)
                    if why is not None:
                        states[side.name].failure = ("error", why)
                        return False
            if None in self.ask_both([(side, states[side.name], self._prepare_args(item, side))
                                      for side in (base, cand)], "prepare"):
                return False
            if None in self.ask_both([(side, states[side.name], {"k": int(warm["k"])}) for side in (base, cand)],
                                     "warm_up"):
                return False
            worker_pair[0] = base.current if pool.measure_pairs > 1 else worker_pair[0] + 1
            return True

        def measure_pair(i: int) -> bool:
            order = (base, cand) if i % 2 == 0 else (cand, base)
            shared: dict[str, Any] | None = None
            for position, side in enumerate(order):
                st = states[side.name]
                # sharing: the first side builds the pair's inputs, the second reads them
                args = {} if not share else {"inputs": "export"} if position == 0 \
                    else {"inputs": "import", "shared": shared}
                answer = self.ask(side, st, "round", **args)
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
        # a call on fewer pairs than a call needs stays UNCONFIRMED whatever a confirmation
        # says: measuring it again would only spend the run budget other rows need
        full = result.pairs >= schedule.confirm_rounds
        if schedule.confirm_calls and healthy and full and result.pairs and self._would_call(states, target):
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

    def _let_go(self, side: Side, state: RowState, *, release: bool) -> None:
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
            side.log.write(f"UNSHARE_FAILED side={side.name} reason={exc}")

    def _share_inputs(self, item: PlannedRow, warm: dict[str, dict[str, Any]]) -> bool:
        """Whether this row's pairs share their inputs: asked for, and both sides can."""
        if not self.request.share_inputs or self._pool.backend().name != "cuda" or self.sharing_off:
            return False  # (on the host there is no device memory to share; a failure was logged once)
        why = {name: str(answer.get("unshareable", "the worker cannot share inputs")) for name, answer in warm.items()}
        for name, reason in why.items():
            if reason:
                self._pool.sides[name].log.write(
                    f"INPUTS_OWN op={item.op} case={item.case} dtype={item.dtype} side={name} why={reason}")
        return not any(why.values())

    def _spr(self) -> int:
        return int(self._pool.sides["base"].hello.get("measure_config", {}).get("samples_per_round", 5))

    def _reached(self, states: dict[str, RowState], target: float, start: int = 0) -> bool:
        spr = self._spr()
        p = precision_of(states["base"].samples[start * spr:], states["candidate"].samples[start * spr:],
                         target, layout(states["base"], start), spr=spr, policy=self.request.policy)
        return p is not None and p <= target

    def _would_call(self, states: dict[str, RowState], target: float, start: int = 0) -> bool:
        return would_call(states, target, start, spr=self._spr(), policy=self.request.policy)

    def _build_row(self, item: PlannedRow, side: Side, states: dict[str, RowState], same: bool,
                   schedule: PairSchedule) -> Row:
        failure = states[side.name].failure
        if failure is not None:
            return failed_row(item, self._pool.backend(), side.name, failure)
        return build_row(item, side.name, states, same, schedule, policy=self.request.policy,
                         pair_id=self._pair_id, spr=self._spr())
