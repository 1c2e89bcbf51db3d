"""The paired-round schedule: planned looks, budgets, and the precision-only stop."""

from __future__ import annotations

import pytest

from tritongate.pair.schedule import BudgetLedger, PairSchedule, may_extend, run_schedule


def test_looks_double_up_to_the_cap():
    assert PairSchedule(min_rounds=5, max_rounds=20).looks() == [5, 10, 20]
    assert PairSchedule(min_rounds=5, max_rounds=12).looks() == [5, 10, 12]
    assert PairSchedule(min_rounds=4, max_rounds=4).looks() == [4]


@pytest.mark.parametrize("kw", [dict(min_rounds=1), dict(min_rounds=5, max_rounds=4), dict(row_budget_s=-1),
                                dict(confirm_rounds=-1)])
def test_bad_schedules_are_refused(kw):
    with pytest.raises(ValueError):
        PairSchedule(**kw)


def test_extension_must_fit_the_row_and_the_run_budget():
    s = PairSchedule(min_rounds=5, max_rounds=20, row_budget_s=10.0, run_budget_s=100.0)
    ledger = BudgetLedger(100.0)
    assert may_extend(schedule=s, ledger=ledger, done=5, row_elapsed_s=5.0, per_pair_s=1.0) == 10
    assert may_extend(schedule=s, ledger=ledger, done=5, row_elapsed_s=5.5, per_pair_s=1.0) is None  # row
    ledger.spend(96.0)
    assert may_extend(schedule=s, ledger=ledger, done=5, row_elapsed_s=1.0, per_pair_s=1.0) is None  # run
    assert may_extend(schedule=s, ledger=BudgetLedger(100.0), done=20, row_elapsed_s=0, per_pair_s=0) is None


def _run(schedule, reached_after=None, ledger=None, pair_s=1.0, fail_at=None, call=None):
    now = [0.0]
    clock_fn = lambda: now[0]  # noqa: E731
    done = []

    def measure_pair(i):
        if fail_at is not None and i == fail_at:
            return False
        now[0] += pair_s
        done.append(i)
        return True

    def reached():
        return reached_after is not None and len(done) >= reached_after

    ledger = ledger or BudgetLedger(schedule.run_budget_s)
    would_call = None if call is None else (lambda: call(len(done)))
    result = run_schedule(measure_pair=measure_pair, reached=reached, schedule=schedule, ledger=ledger,
                          clock=clock_fn, would_call=would_call)
    return result.pairs, ledger


def test_a_row_that_reaches_its_target_stops_at_the_first_look_that_shows_it():
    s = PairSchedule(min_rounds=5, max_rounds=20, row_budget_s=1e9, run_budget_s=1e9)
    assert _run(s, reached_after=0)[0] == 5
    assert _run(s, reached_after=7)[0] == 10
    n, ledger = _run(s, reached_after=None)
    assert n == 20 and ledger.spent_s == pytest.approx(15.0)  # only the extension draws on the run


def test_budgets_cut_extension_and_a_failure_stops_the_row():
    s = PairSchedule(min_rounds=5, max_rounds=20, row_budget_s=12.0, run_budget_s=1e9)
    assert _run(s)[0] == 10  # 5 -> 10 fits 12 s, 10 -> 20 does not
    assert _run(PairSchedule(min_rounds=5, max_rounds=20, row_budget_s=1e9, run_budget_s=3.0))[0] == 5
    assert _run(PairSchedule(min_rounds=5, max_rounds=20), fail_at=3)[0] == 3


def test_a_row_called_on_fewer_pairs_than_confirm_rounds_gets_the_next_looks_first():
    """The only look at the difference: it can add pairs to a row the rule would call, never
    stop one; the decision is then made on all the pairs."""
    s = PairSchedule(min_rounds=5, max_rounds=80, row_budget_s=1e9, run_budget_s=1e9, confirm_rounds=20)
    assert _run(s, reached_after=0, call=lambda n: True)[0] == 20  # called at 5: looks at 10 and 20 first
    assert _run(s, reached_after=0, call=lambda n: n < 10)[0] == 10  # the call went away at 10: stop there
    assert _run(s, reached_after=0, call=lambda n: False)[0] == 5  # not called: stops as before
    assert _run(s, reached_after=40, call=lambda n: True)[0] == 40  # short of its target anyway
    off = PairSchedule(min_rounds=5, max_rounds=80, row_budget_s=1e9, run_budget_s=1e9)
    assert _run(off, reached_after=0, call=lambda n: True)[0] == 5
    # a budget that stops the row first leaves the call on the pairs it has
    tight = PairSchedule(min_rounds=5, max_rounds=80, row_budget_s=12.0, run_budget_s=1e9, confirm_rounds=20)
    assert _run(tight, reached_after=0, call=lambda n: True)[0] == 10
