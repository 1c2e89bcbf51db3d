"""The paired-round schedule: planned looks, budgets, and the precision-only stop."""

from __future__ import annotations

import pytest

from tritongate.pair.schedule import BudgetLedger, PairSchedule, ledger_for, may_extend, run_schedule


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
    # a call on the pairs a confirmation needs stands, short of its target or not: more pairs
    # could only take it back (so the adaptive schedule calls at least what 20 fixed pairs call)
    assert _run(s, reached_after=40, call=lambda n: True)[0] == 20
    assert _run(s, reached_after=40, call=lambda n: n >= 40)[0] == 40  # not called at 20: on to its target
    off = PairSchedule(min_rounds=5, max_rounds=80, row_budget_s=1e9, run_budget_s=1e9)
    assert _run(off, reached_after=0, call=lambda n: True)[0] == 5
    # with confirmations off a call stops nothing: the row goes on to its precision (a
    # calibration's check measures a spin's size, which is always a call)
    assert _run(off, reached_after=40, call=lambda n: True)[0] == 40
    # the row budget does not stop a would-be call: it goes on to 20 pairs on the run budget ...
    tight = PairSchedule(min_rounds=5, max_rounds=80, row_budget_s=12.0, run_budget_s=1e9, confirm_rounds=20)
    assert _run(tight, reached_after=0, call=lambda n: True)[0] == 20
    # ... while a row only short of its target stops at it (10 s + 10 more > 12 s)
    assert _run(tight, reached_after=40, call=lambda n: False)[0] == 10
    # the run budget (reserve included) stops the call: 5 more pairs fit its 6 s, 10 more do not
    spent = PairSchedule(min_rounds=5, max_rounds=80, row_budget_s=12.0, run_budget_s=6.0, confirm_rounds=20)
    assert _run(spent, reached_after=0, call=lambda n: True)[0] == 10


def test_a_confirmation_gets_the_pairs_a_call_needs_past_its_row_budget():
    """Cut short, a confirmation cannot confirm: it measures up to ``confirm_rounds`` pairs on
    the run budget whether or not its first pairs call, then the row budget holds again."""
    s = PairSchedule(min_rounds=5, max_rounds=80, row_budget_s=12.0, run_budget_s=1e9, confirm_rounds=20)
    now = [0.0]

    def measure(i):
        now[0] += 1.0
        return True
    res = run_schedule(measure_pair=measure, reached=lambda: False, schedule=s, ledger=BudgetLedger(1e9),
                       clock=lambda: now[0], would_call=lambda: False, confirming=True)
    assert (res.pairs, res.stopped_by) == (20, "row_budget")
    now[0] = 0.0
    res = run_schedule(measure_pair=measure, reached=lambda: False, schedule=s, ledger=BudgetLedger(1e9),
                       clock=lambda: now[0], would_call=lambda: False)  # not a confirmation: 10 pairs
    assert (res.pairs, res.stopped_by) == (10, "row_budget")


def test_the_schedule_says_what_stopped_a_row_short():
    def stop(schedule, **kw):
        ledger = kw.pop("ledger", None) or BudgetLedger(schedule.run_budget_s)
        now = [0.0]
        done = []

        def measure(i):
            now[0] += 1.0
            done.append(i)
            return True
        return run_schedule(measure_pair=measure, reached=lambda: False, schedule=schedule, ledger=ledger,
                            clock=lambda: now[0], **kw).stopped_by
    assert stop(PairSchedule(min_rounds=5, max_rounds=20, row_budget_s=1e9, run_budget_s=1e9)) == "round_cap"
    assert stop(PairSchedule(min_rounds=5, max_rounds=20, row_budget_s=12.0, run_budget_s=1e9)) == "row_budget"
    assert stop(PairSchedule(min_rounds=5, max_rounds=20, row_budget_s=1e9, run_budget_s=3.0)) == "run_budget"


def test_confirmations_may_spend_the_reserve_that_rows_short_of_their_target_may_not():
    s = PairSchedule(min_rounds=5, max_rounds=20, row_budget_s=1e9, run_budget_s=20.0, confirm_rounds=20,
                     confirm_reserve=0.5)
    ledger = ledger_for(s)
    assert ledger.reserve_s == 10.0
    # 8 s of extensions spent: 12 s left, 2 s of it free for ordinary extensions, all 12 for confirmations
    ledger.spend(8.0)
    assert ledger.left_for(confirming=False) == 2.0 and ledger.left_for(confirming=True) == 12.0
    assert may_extend(schedule=s, ledger=ledger, done=5, row_elapsed_s=5, per_pair_s=1.0) is None
    assert may_extend(schedule=s, ledger=ledger, done=5, row_elapsed_s=5, per_pair_s=1.0, confirming=True) == 10


def test_a_rows_pairs_spread_over_fresh_worker_pairs_of_similar_size():
    s = PairSchedule(min_rounds=5, max_rounds=80, max_worker_pairs=8, worker_pair_rounds=10, row_budget_s=1e9,
                     run_budget_s=1e9)
    assert s.worker_pair_starts() == [5, 15, 25, 35, 45, 55, 65]
    assert s.worker_pair_of(20) == (0,) * 5 + (1,) * 10 + (2,) * 5
    assert PairSchedule(min_rounds=6, max_rounds=24, max_worker_pairs=2).worker_pair_starts() == [6]
    assert PairSchedule(min_rounds=5, max_rounds=20).worker_pair_starts() == []  # one worker pair
    calls = []
    now = [0.0]

    def measure(i):
        now[0] += 1.0
        return True
    run_schedule(measure_pair=measure, reached=lambda: False, schedule=s, ledger=BudgetLedger(1e9),
                 clock=lambda: now[0], new_worker_pair=lambda i: calls.append(i) or True)
    assert calls == [5, 15, 25, 35, 45, 55, 65]
