"""How many paired rounds a row gets.

Every timed row gets ``min_rounds`` pairs. Then, at planned looks (``min_rounds``, twice
that, four times ..., up to ``max_rounds``), the row's detectable effect is compared with
its target (the op's minimum effect); a row that has not reached it gets the next block
of pairs if the row's and the run's time budgets allow. The look uses the row's
*precision* only (spreads: the noise floor and the IQR widths), never the difference of
the medians, and the verdict is decided once, at the end: so adding rounds cannot steer a
row towards a verdict, and an A/A row stays as unlikely to be called as with a fixed count
(``bench.sim.simulate`` measures it).

One exception, which can only take calls away: a row that would be called with fewer than
``confirm_rounds`` pairs gets the next looks first, and is decided on all its pairs. A few
pairs can sit in one state of a row that switches between two (rmsnorm 16×8192 on the H200
runs 1.755 or 1.780 µs, a state lasting several rounds): five such pairs agree so well that
their noise floor is tiny, and an A/A row was called 1.2 % faster. Its call now needs pairs
enough to see the state change; a call that a budget stops first is UNCONFIRMED (shown, never
failing the gate), and a share of the run budget (``confirm_reserve``) is kept for such
confirmations: rows short of their target may not spend it. Such a row may also run past its
own row budget, on the run budget: a call cut short would let a real slowdown pass. So may
its confirmation, up to the pairs a call needs; a call made on fewer is not confirmed at all
(it stays UNCONFIRMED whatever a confirmation says).

Worker pairs: two processes of one build can differ persistently (placement, a kernel's
speed state), and more pairs from the same two processes cannot shrink that. So a row's
pairs are spread over fresh worker pairs (``worker_pair_starts``): one at the end of the first
block, then one every ``worker_pair_rounds`` pairs, up to ``max_worker_pairs``; a
confirmation thus always runs on worker pairs the call was not made on. ``run_schedule`` reports what stopped
a row short (``row_budget``, ``run_budget``, ``round_cap``) for the verdict to name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class PairSchedule:
    min_rounds: int = 5  # pairs every timed row gets
    max_rounds: int = 20  # pairs a row may grow to while short of its target
    row_budget_s: float = 30.0  # wall seconds one row's timing may take, extensions included (a call
    # on fewer pairs than it needs, and its confirmation, may pass it on the run budget)
    run_budget_s: float = 600.0  # wall seconds the whole run may spend on extension rounds
    confirm_rounds: int = 0  # a row called with fewer pairs gets the next looks first (0: off)
    max_worker_pairs: int = 1  # fresh worker pairs a row's pairs are spread over (1: the run's one pair)
    worker_pair_rounds: int = 10  # past the first block, a fresh worker pair every this many pairs
    confirm_reserve: float = 0.25  # share of the run budget only confirmations may spend
    # a row the rule calls is measured again on fresh worker pairs, and stands only if that
    # independent measurement calls it too (a deep scan of 1,232 rows cannot afford the
    # per-row false-call rate of one measurement)
    confirm_calls: bool = False

    def __post_init__(self) -> None:
        if self.worker_pair_rounds < 1:
            raise ValueError(f"worker_pair_rounds must be >= 1, got {self.worker_pair_rounds}")
        if self.max_worker_pairs < 1:
            raise ValueError(f"max_worker_pairs must be >= 1, got {self.max_worker_pairs}")
        if not 0 <= self.confirm_reserve <= 1:
            raise ValueError(f"confirm_reserve must be in [0, 1], got {self.confirm_reserve}")
        if self.confirm_rounds < 0:
            raise ValueError(f"confirm_rounds must be >= 0, got {self.confirm_rounds}")
        if self.min_rounds < 2:
            raise ValueError(f"min_rounds must be >= 2 (a noise floor needs two pairs), got {self.min_rounds}")
        if self.max_rounds < self.min_rounds:
            raise ValueError(f"max_rounds ({self.max_rounds}) must be at least min_rounds ({self.min_rounds})")
        if self.row_budget_s < 0 or self.run_budget_s < 0:
            raise ValueError("time budgets must be >= 0")

    def looks(self) -> list[int]:
        """Round counts at which precision is checked: min, 2·min, 4·min, ..., max."""
        out, n = [self.min_rounds], self.min_rounds
        while n < self.max_rounds:
            n = min(2 * n, self.max_rounds)
            out.append(n)
        return out

    def next_look(self, done: int) -> int | None:
        return next((n for n in self.looks() if n > done), None)

    def worker_pair_starts(self) -> list[int]:
        """Pair indices at which a fresh worker pair takes over: at the end of the first block,
        then every ``worker_pair_rounds`` pairs: worker pairs of similar size, so that no one
        of them decides the row alone, and none so small that one outlier round is its
        estimate (a trimmed mean of fewer than five pairs trims nothing). A row on one worker
        pair cannot reach a 1 % target (its floor carries ``process_sd`` whole), so every
        row that ends on its precision rests on two or more."""
        if self.max_worker_pairs < 2:
            return []
        starts = range(self.min_rounds, self.max_rounds, self.worker_pair_rounds)
        return sorted(set(s for s in starts if 0 < s < self.max_rounds))[:self.max_worker_pairs - 1]

    def worker_pair_of(self, n: int) -> tuple[int, ...]:
        """The worker pair of each of the first ``n`` pairs."""
        starts = self.worker_pair_starts()
        return tuple(sum(1 for s in starts if s <= i) for i in range(n))


@dataclass(frozen=True)
class ScheduleResult:
    pairs: int
    stopped_by: str | None = None  # row_budget | run_budget | round_cap: short of target or confirmation


@dataclass
class BudgetLedger:
    """The run-wide budget for extension rounds, drawn down row by row; ``reserve_s`` of it
    only confirmations may spend."""

    run_budget_s: float
    spent_s: float = 0.0
    reserve_s: float = 0.0

    @property
    def left_s(self) -> float:
        return max(0.0, self.run_budget_s - self.spent_s)

    def left_for(self, *, confirming: bool) -> float:
        return self.left_s if confirming else max(0.0, self.left_s - self.reserve_s)

    def spend(self, seconds: float) -> None:
        self.spent_s += max(0.0, seconds)


def ledger_for(schedule: PairSchedule) -> BudgetLedger:
    return BudgetLedger(run_budget_s=schedule.run_budget_s, reserve_s=schedule.run_budget_s * schedule.confirm_reserve
                        if math.isfinite(schedule.run_budget_s) else 0.0)


def extension(*, schedule: PairSchedule, ledger: BudgetLedger, done: int, row_elapsed_s: float,
              per_pair_s: float, confirming: bool = False, toward_call: bool = False) -> tuple[int | None, str | None]:
    """(the round count to extend to, None) or (None, what stops it). ``toward_call``: the
    row would be called on fewer pairs than a call needs, or is a confirmation short of them;
    it may run past its row budget on the run budget (its reserve included), since a call cut
    short is UNCONFIRMED and cannot fail the gate: the one row where more time decides the
    outcome."""
    target = schedule.next_look(done)
    if target is None:
        return None, "round_cap"
    cost = (target - done) * per_pair_s
    if row_elapsed_s + cost > schedule.row_budget_s and not toward_call:
        return None, "row_budget"
    if cost > ledger.left_for(confirming=confirming):
        return None, "run_budget"
    return target, None


def may_extend(*, schedule: PairSchedule, ledger: BudgetLedger, done: int, row_elapsed_s: float,
               per_pair_s: float, confirming: bool = False) -> int | None:
    """The round count to extend to, or None when the next block does not fit a budget."""
    return extension(schedule=schedule, ledger=ledger, done=done, row_elapsed_s=row_elapsed_s,
                     per_pair_s=per_pair_s, confirming=confirming)[0]


def run_schedule(*, measure_pair: Callable[[int], bool], reached: Callable[[], bool], schedule: PairSchedule,
                 ledger: BudgetLedger, clock: Callable[[], float],
                 would_call: Callable[[], bool] | None = None,
                 new_worker_pair: Callable[[int], bool] | None = None,
                 confirming: bool = False) -> ScheduleResult:
    """Measure pairs (``measure_pair(i)``; False stops the row) up to the minimum, then block
    by block while the row is short of its target (``reached()``: precision only), or would
    be called (``would_call()``) on fewer than ``confirm_rounds`` pairs, and the next block
    fits the budgets (a would-be call, or a confirmation short of ``confirm_rounds``, only the
    run budget's). ``new_worker_pair(i)`` is called before pair ``i`` wherever the schedule
    starts a fresh worker pair (False stops the row). ``confirming``: the row measures a call
    again, and may spend the run budget's reserve. Returns the pairs measured and, for a row
    left short, what stopped it."""
    t0 = clock()
    done, goal, block_start = 0, schedule.min_rounds, t0
    starts = set(schedule.worker_pair_starts()) if new_worker_pair is not None else set()
    while True:
        while done < goal:
            if done in starts and not new_worker_pair(done):  # type: ignore[misc]
                return ScheduleResult(done)
            if not measure_pair(done):
                return ScheduleResult(done)
            done += 1
        now = clock()
        if goal > schedule.min_rounds:
            ledger.spend(now - block_start)  # only extension rounds draw on the run budget
        block_start = now
        calls = would_call is not None and would_call()
        unconfirmed = calls and done < schedule.confirm_rounds
        # a call on the pairs a confirmation needs stands: more pairs could only take it back,
        # so an adaptive row is never called less often than one stopped at that count
        if (reached() and not unconfirmed) or (calls and not unconfirmed and schedule.confirm_rounds > 0):
            return ScheduleResult(done)
        # a confirmation gets the pairs a call needs, called yet or not: cut short, it cannot confirm
        nxt, why = extension(schedule=schedule, ledger=ledger, done=done, row_elapsed_s=now - t0,
                             per_pair_s=(now - t0) / done, confirming=unconfirmed or confirming,
                             toward_call=unconfirmed or (confirming and done < schedule.confirm_rounds))
        if nxt is None:
            return ScheduleResult(done, why)
        goal = nxt
