"""How many paired rounds a row gets.

Every timed row gets ``min_rounds`` pairs. Then, at planned looks (``min_rounds``, twice
that, four times ..., up to ``max_rounds``), the row's detectable effect is compared with
its target (the op's minimum effect); a row that has not reached it gets the next block
of pairs if the row's and the run's time budgets allow. The look uses the row's
*precision* only (spreads: the noise floor and the IQR widths), never the difference of
the medians, and the verdict is decided once, at the end: so adding rounds cannot steer a
row towards a verdict, and an A/A row stays as unlikely to be called as with a fixed count
(``tritongate.gate.simulate`` measures it).

One exception, which can only take calls away: a row that would be called with fewer than
``confirm_rounds`` pairs gets the next looks first, and is decided on all its pairs. A few
pairs can sit in one state of a row that switches between two (rmsnorm 16×8192 on the H200
runs 1.755 or 1.780 µs, a state lasting several rounds): five such pairs agree so well that
their noise floor is tiny, and an A/A row was called 1.2 % faster. Its call now needs pairs
enough to see the state change; a call stands when a budget stops the row first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class PairSchedule:
    min_rounds: int = 5  # pairs every timed row gets
    max_rounds: int = 20  # pairs a row may grow to while short of its target
    row_budget_s: float = 30.0  # wall seconds one row's timing may take, extensions included
    run_budget_s: float = 600.0  # wall seconds the whole run may spend on extension rounds
    confirm_rounds: int = 0  # a row called with fewer pairs gets the next looks first (0: off)

    def __post_init__(self) -> None:
        if self.confirm_rounds < 0:
            raise ValueError(f"confirm_rounds must be >= 0, got {self.confirm_rounds}")
        if self.min_rounds < 2:
            raise ValueError(f"min_rounds must be >= 2 (a noise floor needs two pairs), got {self.min_rounds}")
        if self.max_rounds < self.min_rounds:
            raise ValueError(f"max_rounds ({self.max_rounds}) < min_rounds ({self.min_rounds})")
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


@dataclass
class BudgetLedger:
    """The run-wide budget for extension rounds, drawn down row by row."""

    run_budget_s: float
    spent_s: float = 0.0

    @property
    def left_s(self) -> float:
        return max(0.0, self.run_budget_s - self.spent_s)

    def spend(self, seconds: float) -> None:
        self.spent_s += max(0.0, seconds)


def may_extend(*, schedule: PairSchedule, ledger: BudgetLedger, done: int, row_elapsed_s: float,
               per_pair_s: float) -> int | None:
    """The round count to extend to, or None when the next block does not fit a budget."""
    target = schedule.next_look(done)
    if target is None:
        return None
    cost = (target - done) * per_pair_s
    if row_elapsed_s + cost > schedule.row_budget_s or cost > ledger.left_s:
        return None
    return target


def run_schedule(*, measure_pair: Callable[[int], bool], reached: Callable[[], bool], schedule: PairSchedule,
                 ledger: BudgetLedger, clock: Callable[[], float],
                 would_call: Callable[[], bool] | None = None) -> int:
    """Measure pairs (``measure_pair(i)``; False stops the row) up to the minimum, then block
    by block while the row is short of its target (``reached()``: precision only), or would
    be called (``would_call()``) on fewer than ``confirm_rounds`` pairs, and the next block
    fits the budgets. Returns the number of pairs measured."""
    t0 = clock()
    done, goal, block_start = 0, schedule.min_rounds, t0
    while True:
        while done < goal:
            if not measure_pair(done):
                return done
            done += 1
        now = clock()
        if goal > schedule.min_rounds:
            ledger.spend(now - block_start)  # only extension rounds draw on the run budget
        block_start = now
        unconfirmed = would_call is not None and done < schedule.confirm_rounds and would_call()
        if reached() and not unconfirmed:
            return done
        nxt = may_extend(schedule=schedule, ledger=ledger, done=done, row_elapsed_s=now - t0,
                         per_pair_s=(now - t0) / done)
        if nxt is None:
            return done
        goal = nxt
