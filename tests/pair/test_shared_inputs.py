"""Shared inputs in a paired run (scripted devices, in-process workers): in each pair the side
timed first builds the inputs and the side timed second reads them, so a row whose time moves
with its memory placement no longer carries two placements per pair."""

from __future__ import annotations

import json
import math
import statistics

import pytest

from tritongate.pair.client import WorkerFailure
from tritongate.pair.orchestrator import run_pair
from tritongate.rundir import load_run

from tests.pair.fakes import InProcessWorker, World
from tests.pair.test_orchestrator import _request as _any_request
from tests.pair.test_orchestrator import _spawner


def _request(tmp_path, **kw):
    """These tests follow the inputs through one worker pair's rounds: a pool of one."""
    return _any_request(tmp_path, worker_pool=1, **kw)

SHARE = {"TG_SHARE": "1"}


def _paired_sd(outcome, op: str) -> float:
    """SD of the per-pair log ratios of round medians of one row."""
    base, cand = (next(r for r in load_run(p).rows if r.op == op) for p in (outcome.base_path, outcome.cand_path))
    spr = base.measurement.samples_per_round
    meds = [[statistics.median(r.samples[i:i + spr]) for i in range(0, len(r.samples), spr)] for r in (base, cand)]
    return statistics.stdev(math.log(c / b) for b, c in zip(*meds))


def _round_calls(worker: InProcessWorker) -> list[tuple[str, dict]]:
    return [(cmd, args) for cmd, args in worker.log if cmd in ("round", "unshare")]


def test_the_second_side_of_each_pair_reads_the_first_sides_inputs(tmp_path):
    made: dict[str, InProcessWorker] = {}
    outcome = run_pair(_request(tmp_path, base_env=SHARE, cand_env=SHARE), spawn=_spawner(World(), made))
    for base, cand in outcome.rows:
        assert base.measurement.pairing.inputs == cand.measurement.pairing.inputs == "shared"
    assert {r.measurement.pairing.inputs for r in load_run(outcome.cand_path).rows} == {"shared"}  # as stored
    verdict = json.loads(outcome.verdict_json.read_text())
    assert {r["inputs"] for r in verdict["rows"]} == {"shared"}  # and in verdict.json
    # per row: pair i's first side exports, the second imports what it was given, then the first lets go
    base_calls, cand_calls = _round_calls(made["base"]), _round_calls(made["candidate"])
    kinds = lambda calls: [args.get("inputs", cmd) for cmd, args in calls[:5]]  # noqa: E731
    # pair 0: the base first (exports), pair 1: the candidate first, ...
    assert kinds(base_calls) == ["export", "unshare", "import", "export", "unshare"]
    assert kinds(cand_calls) == ["import", "export", "unshare", "import", "export"]
    assert set(cand_calls[0][1]["shared"]) == {"offset"}
    # the first side alternates, so each side builds the inputs of every other pair, and lets
    # go of each after the other side has timed on them
    exports = {name: sum(args.get("inputs") == "export" for _, args in _round_calls(w)) for name, w in made.items()}
    pairs = [len(b.samples) // b.measurement.samples_per_round for b, _ in outcome.rows]
    assert exports["base"] == sum((n + 1) // 2 for n in pairs) and exports["candidate"] == sum(n // 2 for n in pairs)
    assert all(w.calls.count("unshare") == exports[name] for name, w in made.items())
    ident = (outcome.base_path / "run_identity.json").read_text()
    assert '"share_inputs": true' in ident


def test_shared_inputs_take_placement_out_of_the_pair(tmp_path):
    """A row whose placement moves it 3 % a round: with shared inputs the pair's log ratios
    keep only the per-launch jitter; each side's own inputs leave both placements in them."""
    noisy = {"TG_NOISE": "matmul:0.03"}
    shared = run_pair(_request(tmp_path / "s", base_env={**SHARE, **noisy}, cand_env={**SHARE, **noisy}),
                      spawn=_spawner(World()))
    own = run_pair(_request(tmp_path / "o", base_env=noisy, cand_env=noisy), spawn=_spawner(World()))
    sd_shared, sd_own = _paired_sd(shared, "matmul"), _paired_sd(own, "matmul")
    assert sd_own > 0.02  # two independent 3 % placements per pair
    assert sd_shared < 0.2 * sd_own
    by_op = {r.op: r for r in shared.result.rows}
    assert by_op["matmul"].timing.pairs < {r.op: r for r in own.result.rows}["matmul"].timing.pairs


def test_asked_not_to_share_every_side_builds_its_own(tmp_path):
    made: dict[str, InProcessWorker] = {}
    outcome = run_pair(_request(tmp_path, base_env=SHARE, cand_env=SHARE, share_inputs=False),
                       spawn=_spawner(World(), made))
    assert all(args == {} for w in made.values() for cmd, args in _round_calls(w))
    assert "unshare" not in made["base"].calls
    assert {b.measurement.pairing.inputs for b, _ in outcome.rows} == {"own"}
    assert '"share_inputs": false' in (outcome.base_path / "run_identity.json").read_text()


def test_a_row_that_cannot_share_uses_its_own_and_the_log_says_why(tmp_path):
    env = {**SHARE, "TG_NO_SHARE": "softmax"}
    outcome = run_pair(_request(tmp_path, base_env=env, cand_env=SHARE), spawn=_spawner(World()))
    inputs = {b.op: b.measurement.pairing.inputs for b, _ in outcome.rows}
    assert inputs == {"add": "shared", "softmax": "own", "matmul": "shared"}
    log = (outcome.base_path / "run.log").read_text()
    assert "INPUTS_OWN op=softmax case=64x512 dtype=float16 side=base why=scripted softmax" in log
    assert "INPUTS_OWN op=add" not in log


def test_inputs_that_cannot_be_shared_are_let_go_and_the_rest_of_the_run_uses_own(tmp_path):
    """CUDA IPC refused (a MIG slice, torches that disagree): the row that found out is timed
    again on own inputs, and so is every later row; the run says so."""
    made: dict[str, InProcessWorker] = {}
    notes: list[str] = []
    env = {**SHARE, "TG_SHARE_FAIL": "softmax"}
    outcome = run_pair(_request(tmp_path, base_env=env, cand_env=env), spawn=_spawner(World(), made),
                       progress=lambda ev: notes.append(ev.message) if ev.kind == "note" else None)
    inputs = {b.op: (b.measurement.pairing.inputs, c.measurement.pairing.inputs) for b, c in outcome.rows}
    assert inputs == {"add": ("shared", "shared"), "softmax": ("own", "own"), "matmul": ("own", "own")}
    assert all(b.status.value == c.status.value == "ok" for b, c in outcome.rows)
    assert len(notes) == 1 and notes[0].startswith("shared inputs failed on softmax 64x512 float16 (")
    assert "differs between the sides" in notes[0] and notes[0].endswith("time each side on its own inputs")
    ident = json.loads((outcome.cand_path / "run_identity.json").read_text())
    assert "differs between the sides" in ident["shared_inputs_failed"]
    assert "INPUTS_OWN_FROM_HERE op=softmax" in (outcome.base_path / "run.log").read_text()
    # pair 0: the base exported, the candidate refused; the base let go, then both warmed up again
    calls = [(cmd, args.get("inputs")) for cmd, args in _row_calls(made["base"], "softmax")]
    assert calls[:5] == [("prepare", None), ("warm_up", None), ("round", "export"), ("unshare", None),
                         ("warm_up", None)]
    # (until its worker pair hands the row to a fresh one: finish, then a new worker's init)
    assert all(inputs is None for cmd, inputs in calls[5:]) and ("finish", None) in calls
    assert not any(args for cmd, args in _row_calls(made["candidate"], "matmul") if cmd == "round")


def _row_calls(worker: InProcessWorker, op: str) -> list[tuple[str, dict]]:
    log = worker.log
    start = next(i for i, (cmd, args) in enumerate(log) if cmd == "prepare" and args["op"] == op)
    end = next((i for i, (cmd, _) in enumerate(log) if i > start and cmd == "prepare"), len(log))
    return log[start:end]


def test_a_first_side_that_fails_after_exporting_gives_the_inputs_back_itself(tmp_path):
    """The payload never reached the other side: the parent does not ask the failed side to
    let go, and the worker's abort gives the holds back (the real executor releases them)."""
    made: dict[str, InProcessWorker] = {}
    env = {**SHARE, "TG_EXPORT_FAIL": "softmax"}
    outcome = run_pair(_request(tmp_path, base_env=env, cand_env=SHARE), spawn=_spawner(World(), made))
    base, cand = next((b, c) for b, c in outcome.rows if b.op == "softmax")
    assert base.status.value == "error" and "failed after it exported" in base.error and cand.samples == ()
    assert [cmd for cmd, _ in _row_calls(made["base"], "softmax")] == ["prepare", "warm_up", "round", "abort"]
    assert [cmd for cmd, _ in _row_calls(made["candidate"], "softmax")] == ["prepare", "warm_up", "finish"]


def test_a_second_side_whose_worker_dies_has_the_first_side_give_the_holds_back(tmp_path):
    made: dict[str, InProcessWorker] = {}

    def spawn(spec):
        worker = _spawner(World(), made)(spec)
        if spec.side == "candidate":
            call = worker.call

            def dying(cmd, timeout_s, **args):
                if cmd == "round" and args.get("inputs") == "import" and worker.executor._op == "softmax":
                    worker.executor = None
                    raise WorkerFailure("candidate", "died (SIGSEGV)", kind="died")
                return call(cmd, timeout_s, **args)
            worker.call = dying
        return worker

    outcome = run_pair(_request(tmp_path, base_env=SHARE, cand_env=SHARE), spawn=spawn)
    cand = next(c for b, c in outcome.rows if c.op == "softmax")
    assert cand.status.value == "error" and "SIGSEGV" in cand.error
    assert ("unshare", {"release": True}) in _row_calls(made["base"], "softmax")
    # the other rows let go as usual: the other side gave back what it opened
    assert all(args == {"release": False} for cmd, args in _row_calls(made["base"], "add") if cmd == "unshare")


def test_ctrl_c_during_an_exporting_round_does_not_wait_on_that_worker(tmp_path):
    made: dict[str, InProcessWorker] = {}
    env = {**SHARE, "TG_EXPORT_INTERRUPT": "softmax"}
    with pytest.raises(KeyboardInterrupt):
        run_pair(_request(tmp_path, base_env=env, cand_env=env), spawn=_spawner(World(), made))
    calls = _row_calls(made["base"], "softmax")
    assert calls[-1] == ("round", {"inputs": "export"})  # nothing was sent to it after the interrupt
