"""A row measured by one base and one candidate process cannot tell those processes' own
levels from a change: such a call is shown, never failing (as on the cpu backend, whose rows
keep one worker pair)."""

from __future__ import annotations

from tritongate.gate.verdict import Verdict
from tritongate.pair.orchestrator import run_pair
from tritongate.pair.schedule import PairSchedule

from tests.pair.fakes import World
from tests.pair.test_orchestrator import _request, _spawner


def test_a_call_resting_on_one_worker_pair_is_unconfirmed(tmp_path):
    # the same build on both sides (a compiler change in name only); each process runs some per cent off
    # its build's level, drawn anew at every start
    offsets = {"TG_PROCESS_SD": "0.06"}
    one_pair = PairSchedule(min_rounds=5, max_rounds=20, confirm_rounds=20, max_worker_pairs=1, confirm_calls=False)
    outcome = run_pair(_request(tmp_path, worker_pool=1, schedule=one_pair, base_env=offsets, cand_env=offsets),
                       spawn=_spawner(World()))
    rows = outcome.result.rows
    assert {r.verdict for r in rows} <= {Verdict.UNCONFIRMED, Verdict.UNCHANGED}
    shown = [r for r in rows if r.verdict is Verdict.UNCONFIRMED]
    assert shown and all(r.timing.worker_pairs == 1 for r in shown)
    assert all(any("called on one worker pair" in x for x in r.reasons) for r in shown)
    assert outcome.result.passed
