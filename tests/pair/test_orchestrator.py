"""The paired run's logic with scripted devices per side (in-process workers): drift shared by
both sides cancels, a shift on one side is caught, identical binaries are not timed, and
rows short of their precision target get more pairs within their budgets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tritongate.gate.policy import GatePolicy
from tritongate.gate.verdict import Verdict, run_gate
from tritongate.pair.build import CompilerBuild
from tritongate.pair.orchestrator import PairRequest, run_pair
from tritongate.pair.schedule import PairSchedule
from tritongate.rundir import load_run
from tritongate.schema import SkipReason

from tests.pair.fakes import InProcessWorker, ScriptedExecutor, World


def _spawner(world: World, made: dict[str, InProcessWorker] | None = None):
    def spawn(spec):
        worker = InProcessWorker(spec.side, lambda settings, spec=spec: ScriptedExecutor(
            settings, world=world, env=spec.env, side=spec.side))
        if made is not None:
            made[spec.side] = worker
        return worker
    return spawn


def _request(tmp_path: Path, *, cand_env=None, base_env=None, **kw) -> PairRequest:
    """Every candidate binary differs (a compiler change) unless the test says otherwise."""
    return PairRequest(baseline=tmp_path / "baseline", suite="scripted", out=tmp_path / "out",
                       base=CompilerBuild("base", env=base_env or {}),
                       cand=CompilerBuild("candidate", env={"TG_BINARY": "new", **(cand_env or {})}),
                       executor="tests.pair.fakes:ScriptedExecutor", **kw)


def _verdicts(outcome) -> dict[str, Verdict]:
    return {r.op: r.verdict for r in outcome.result.rows}


def _ramp(r: int) -> float:
    return 1 + 0.002 * r  # +0.2 % per round started: 2 % over a 5-pair row, 6 % over 30 rounds


def _step(r: int) -> float:
    return 1.0 if r % 10 < 6 else 1.08  # an 8 % step in the middle of a pair, in every row


@pytest.mark.parametrize("drift", [_ramp, _step], ids=["slow ramp", "step mid-row"])
def test_drift_shared_by_both_sides_gives_no_verdict(tmp_path, drift):
    outcome = run_pair(_request(tmp_path), spawn=_spawner(World(drift=drift)))
    assert set(_verdicts(outcome).values()) == {Verdict.UNCHANGED}
    assert outcome.result.exit_code == 0
    assert all(r.timing.paired and r.timing.pairs >= 5 for r in outcome.result.rows)


def test_the_same_drift_measured_one_side_after_the_other_is_a_false_verdict(tmp_path):
    """What pairing buys: the same ramp, with the candidate measured after the base (another
    process, minutes later: 30 rounds on), reads as a slowdown."""
    world = World(drift=_ramp)
    outcome = run_pair(_request(tmp_path), spawn=_spawner(world))
    base = load_run(outcome.base_path)
    # the same scripted rows, but each side measured in one go: base rounds 0-4, candidate 5-9
    from tests.pair.fakes import ScriptedExecutor as Ex
    sequential = World(drift=_ramp)
    ex_b = Ex({}, world=sequential, env={}, side="base")
    ex_c = Ex({}, world=sequential, env={}, side="candidate")
    effects = []
    for row in base.rows:
        meds = []
        for ex in (ex_b, ex_c):
            if ex is ex_c:
                sequential.rounds_started += 30
            ex.prepare(row.op, list(row.params["shape"]), row.dtype)
            ex.warm_up(k=row.measurement.launches_per_sample)
            samples = [s for _ in range(5) for s in ex.round()["samples"]]
            ex.finish()
            meds.append(sorted(samples)[len(samples) // 2])
        effects.append(meds[1] / meds[0] - 1)
    assert min(effects) > 0.04  # every row looks > 4 % slower when not paired


def test_a_three_percent_shift_on_one_side_is_caught(tmp_path):
    outcome = run_pair(_request(tmp_path, cand_env={"TG_FACTOR": "1.03"}), spawn=_spawner(World(drift=_ramp)))
    assert set(_verdicts(outcome).values()) == {Verdict.REGRESSED}
    for r in outcome.result.rows:
        assert r.timing.paired and r.timing.effect == pytest.approx(0.03, abs=0.01)
        assert r.timing.pairs >= 20 and r.timing.worker_pairs >= 3  # a call rests on 20 pairs, 3 worker pairs
        # ... and on the same again, measured afresh: the call made on the first pairs, then confirmed
        start = r.pairing.confirm_from
        assert start >= 20 and r.rounds >= start + 20 and any("confirmed on fresh worker pairs" in x for x in r.reasons)
        assert len(set(r.pairing.worker_pairs[:start]) & set(r.pairing.worker_pairs[start:])) == 0
    assert outcome.result.exit_code == 1
    ident = json.loads((outcome.cand_path / "run_identity.json").read_text())
    assert ident["pair"]["schedule"]["confirm_rounds"] == 20


def test_a_call_the_run_budget_cut_short_is_not_measured_again(tmp_path):
    # no run budget for extensions: the call stops at its first 5 pairs, fewer than the 20 a
    # call needs, so it is UNCONFIRMED whatever a confirmation would say, and none is run
    outcome = run_pair(_request(tmp_path, cand_env={"TG_FACTOR": "1.15"}, schedule_overrides={"run_budget_s": 0.0}),
                       spawn=_spawner(World()))
    (r,) = [r for r in outcome.result.rows if r.op == "add"]  # (the scripted softmax and matmul are too noisy)
    assert r.verdict is Verdict.UNCONFIRMED and r.pairing.confirm_from == 0 and r.rounds == 5
    assert r.pairing.stopped_by == "run_budget" and len(set(r.pairing.worker_pairs)) == 1
    assert r.reasons[-1].startswith("called on 5 pairs, fewer than the 20 a confirmation needs "
                                    "(stopped by the run budget)")


def test_a_slow_rows_short_call_leaves_the_run_budget_to_the_rows_after_it(tmp_path, monkeypatch):
    """+15 % on every row; add takes 4 s a pair, the others 0.5 s, 50 s of run budget. add's
    call, cut short by the run budget, is not measured again: softmax and matmul still get
    the pairs their calls need and fail the gate (confirming add's short call too spent the
    budget and left them UNCHANGED on 5 pairs)."""
    from tritongate.pair.orchestrator import PairRunner
    now = [0.0]
    scripted_round = ScriptedExecutor.round

    def timed_round(self, *a, **kw):
        now[0] += {"add": 2.0}.get(self._op, 0.25)
        return scripted_round(self, *a, **kw)
    monkeypatch.setattr(ScriptedExecutor, "round", timed_round)
    req = _request(tmp_path, cand_env={"TG_FACTOR": "1.15"}, schedule_overrides={"run_budget_s": 50.0})
    outcome = PairRunner(req, None, spawn=_spawner(World()), clock=lambda: now[0]).run()
    rows = {r.op: r for r in outcome.result.rows}
    assert rows["add"].verdict is Verdict.UNCONFIRMED and rows["add"].pairing.confirm_from == 0
    assert rows["softmax"].verdict is rows["matmul"].verdict is Verdict.REGRESSED
    assert outcome.result.exit_code == 1


def test_identical_binaries_are_not_timed_unless_asked(tmp_path):
    made: dict[str, InProcessWorker] = {}
    outcome = run_pair(_request(tmp_path, cand_env={"TG_BINARY": "same"}), spawn=_spawner(World(), made))
    assert set(_verdicts(outcome).values()) == {Verdict.IDENTICAL_BINARY}
    assert "round" not in made["base"].calls and "warm_up" not in made["candidate"].calls
    for base, cand in outcome.rows:
        assert base.skipped is cand.skipped is SkipReason.IDENTICAL_BINARY and not cand.samples
    # a changed binary on the candidate side is timed
    outcome = run_pair(_request(tmp_path), spawn=_spawner(World()))
    assert set(_verdicts(outcome).values()) == {Verdict.UNCHANGED}
    # --time-identical times them anyway: the verdict stays IDENTICAL_BINARY, with the timing
    outcome = run_pair(_request(tmp_path, cand_env={"TG_BINARY": "same"}, time_identical=True),
                       spawn=_spawner(World()))
    for r in outcome.result.rows:
        assert r.verdict is Verdict.IDENTICAL_BINARY and r.timing is not None and r.timing.paired


def test_both_run_dirs_are_ordinary_runs_the_gate_reads_as_paired(tmp_path):
    outcome = run_pair(_request(tmp_path), spawn=_spawner(World()))
    base, cand = load_run(outcome.base_path), load_run(outcome.cand_path)
    assert base.complete and cand.complete and base.mode == cand.mode == "replay"
    again = run_gate(base, cand, GatePolicy())
    assert [r.verdict for r in again.rows] == [r.verdict for r in outcome.result.rows]
    for b, c in zip(base.rows, cand.rows):
        bp, cp = b.measurement.pairing, c.measurement.pairing
        assert bp.pair_id == cp.pair_id == outcome.path.name
        assert b.measurement.launches_per_sample == c.measurement.launches_per_sample  # one k for both
        # who goes first swaps every pair
        n = len(b.samples) // b.measurement.samples_per_round
        assert n >= 5 and list(bp.went_first) == [i % 2 == 0 for i in range(n)]
        assert list(cp.went_first) == [i % 2 == 1 for i in range(n)]
    assert (outcome.path / "verdict" / "verdict.md").is_file()


def test_rows_short_of_their_target_get_more_pairs_within_the_budget(tmp_path):
    noisy = World(drift=lambda r: 1 + 0.02 * ((r * 7919) % 5 - 2))  # ±4 % round-to-round, shared
    # the step in the shared drift lands between the two rounds of a pair -> noisy log ratios
    schedule = PairSchedule(min_rounds=5, max_rounds=20, row_budget_s=1e9, run_budget_s=1e9)
    outcome = run_pair(_request(tmp_path, schedule=schedule), spawn=_spawner(noisy))
    rounds = [len(c.samples) // c.measurement.samples_per_round for _, c in outcome.rows]
    assert all(n in (5, 10, 20) for n in rounds) and max(rounds) > 5
    for _, c in outcome.rows:
        p = c.measurement.pairing
        assert p.target_effect == 0.01 and p.max_rounds == 20 and p.detectable_effect is not None
        n = len(c.samples) // c.measurement.samples_per_round
        assert p.target_reached is (p.detectable_effect <= 0.01)
        assert p.target_reached or n == 20  # stopped early only when the target was reached
    # with no budget for extra pairs every row keeps the minimum, and says it fell short
    tight = PairSchedule(min_rounds=5, max_rounds=20, row_budget_s=1e9, run_budget_s=0.0)
    outcome = run_pair(_request(tmp_path, schedule=tight), spawn=_spawner(noisy))
    assert all(len(c.samples) == 25 for _, c in outcome.rows)
    short = [r for r in outcome.result.blind_rows if r.pairing is not None]
    assert short and all(r.pairing.target_reached is False for r in short)


def test_a_row_error_on_one_side_is_rejected_naming_the_side(tmp_path):
    outcome = run_pair(_request(tmp_path, cand_env={"TG_ROW_ERROR": "softmax"}), spawn=_spawner(World()))
    v = {r.op: r for r in outcome.result.rows}
    assert v["softmax"].verdict is Verdict.REJECTED
    assert "candidate" in "; ".join(v["softmax"].reasons) and "does not support" in "; ".join(v["softmax"].reasons)
    assert v["add"].verdict is v["matmul"].verdict is Verdict.UNCHANGED
    base_softmax = next(b for b, _ in outcome.rows if b.op == "softmax")
    assert base_softmax.skipped is SkipReason.OTHER_SIDE_FAILED


def test_workers_on_different_devices_are_refused(tmp_path):
    from tritongate.errors import PreflightError

    with pytest.raises(PreflightError) as err:
        run_pair(_request(tmp_path, cand_env={"TG_UUID": "GPU-other"}), spawn=_spawner(World()))
    assert err.value.check == "same_device" and "GPU-other" in str(err.value)


def test_a_timer_fallback_mid_row_stops_the_row_and_rejects_it(tmp_path):
    # the candidate takes k from the base, so its captures are one per round: round 2 falls back
    # (within the first worker pair: a fresh worker counts its captures afresh)
    outcome = run_pair(_request(tmp_path, cand_env={"TG_CAPTURE_FAIL_AT": "2"}), spawn=_spawner(World()))
    first = outcome.result.rows[0]
    assert first.verdict is Verdict.REJECTED
    assert any("timer fallback on candidate only" in r for r in first.reasons)
    base, cand = outcome.rows[0]
    assert cand.timer == "cuda-events" and base.timer == "cuda-graph"
    # the row stopped at the pair where it happened, and no precision is claimed for it
    assert len(base.samples) == 2 * 5 and cand.measurement.pairing.target_reached is None
    assert len(cand.samples) == 5  # the fallback dropped the candidate's graph-timed rounds


def test_bad_schedule_options_are_usage_errors(tmp_path):
    from tritongate.errors import UsageError

    with pytest.raises(UsageError, match="bad pairing schedule"):
        run_pair(_request(tmp_path, schedule_overrides={"max_rounds": 1}), spawn=_spawner(World()))
    # a minimum above the default cap raises the cap instead of failing
    from tritongate.pair.orchestrator import default_schedule
    assert default_schedule("cuda", 5).max_rounds == 80 and default_schedule("cuda", 100).max_rounds == 100
    assert default_schedule("cpu", 6).max_rounds == 24
    assert default_schedule("cuda", 5).confirm_rounds == 20 and default_schedule("cpu", 6).confirm_rounds == 20
    assert default_schedule("cuda", 20).confirm_rounds == 40  # a first look past 20 pairs: one more look
    with pytest.raises(UsageError, match="schedule_scale must be >= 1"):
        run_pair(_request(tmp_path, schedule_scale=0), spawn=_spawner(World()))


def test_the_verdict_names_each_side_by_pair_and_side(tmp_path):
    outcome = run_pair(_request(tmp_path), spawn=_spawner(World()))
    text = outcome.verdict_md.read_text()
    ran = next(line for line in text.splitlines() if line.startswith("Ran on "))
    assert " · base: " in ran and " · candidate: " in ran  # both builds, by side, on the one where-line
    doc = json.loads((outcome.verdict_json).read_text())  # and each side's run directory in verdict.json
    assert doc["base"]["run"] == f"{outcome.path.name}/base" and doc["candidate"]["run"] == f"{outcome.path.name}/candidate"
    assert doc["base"]["path"].endswith(f"{outcome.path.name}/base")


def test_the_verdict_cites_the_calibration_it_was_given(tmp_path):
    import json

    from tests.gate.helpers import CALIBRATION, calibration_summary

    outcome = run_pair(_request(tmp_path, calibration=calibration_summary(device="Scripted GPU")),
                       spawn=_spawner(World()))
    text = outcome.verdict_md.read_text()
    assert "<sub>Calibrated on this runner 2026-11-30 (`tritongate calibrate`): 0 false verdicts" in text
    doc = json.loads(outcome.verdict_json.read_text())
    assert doc["calibration"] == {**CALIBRATION, "device": "Scripted GPU"}


def test_a_candidate_twice_as_slow_regresses_every_row_on_a_scripted_device(tmp_path):
    """The decision behind ``tests/cli/test_pair.py``'s double-work check, on a device whose
    timings do not depend on how busy the machine is."""
    outcome = run_pair(_request(tmp_path, cand_env={"TG_FACTOR": "2.0"}), spawn=_spawner(World()))
    assert set(_verdicts(outcome).values()) == {Verdict.REGRESSED} and outcome.result.exit_code == 1
    for r in outcome.result.rows:
        assert r.timing.effect == pytest.approx(1.0, abs=0.05) and r.pairing.confirm_from > 0


def test_a_planted_delay_regresses_exactly_the_candidate_on_a_scripted_device(tmp_path):
    from tests.pair.fakes import COST_US, ROWS
    from tritongate.ops.registry import case_id
    from tritongate.ops.planting import row_key, write_plan

    # each row's launch made 90 % of its cost longer, on the candidate only
    delays = {row_key(op, case_id(shape), dtype): int(0.9 * COST_US[op] * 1000) for op, shape, dtype in ROWS}
    plan = write_plan(tmp_path / "plan.json", 0.9, delays)
    outcome = run_pair(_request(tmp_path, cand_env={"TRITONGATE_PLANTED_DELAY": str(plan)}), spawn=_spawner(World()))
    assert set(_verdicts(outcome).values()) == {Verdict.REGRESSED}
    for r in outcome.result.rows:
        assert r.timing.effect == pytest.approx(0.9, rel=0.2)
    base, cand = outcome.rows[0]
    assert "planted_delay_ns" in cand.params and "planted_delay_ns" not in base.params


def test_the_worker_pool_is_started_once_and_rows_rotate_over_it(tmp_path):
    """Worker pairs are kept for the run: a row's fresh worker pairs are the pool's others (a
    prepare and a warm-up), not new processes; a call's confirmation runs on a second set,
    started the first time a call needs one."""
    from tritongate.pair.request import GPU_POOL_PAIRS

    made: dict[str, InProcessWorker] = {}
    outcome = run_pair(_request(tmp_path, cand_env={"TG_FACTOR": "1.03"}), spawn=_spawner(World(), made))
    m = GPU_POOL_PAIRS  # the scripted device is a GPU
    assert sorted(made) == sorted(["base", "candidate"] + [f"{s}-{j}" for s in ("base", "candidate")
                                                           for j in range(1, 2 * m)])
    assert all(w.starts == 1 for w in made.values())  # no worker was started twice
    rows = outcome.result.rows
    firsts = {r.pairing.worker_pairs[0] for r in rows}
    assert firsts == set(range(min(m, len(rows))))  # rows begin on the measuring pairs in turn
    for r in rows:
        start = r.pairing.confirm_from
        assert start > 0 and set(r.pairing.worker_pairs[:start]) <= set(range(m))
        assert set(r.pairing.worker_pairs[start:]) <= set(range(m, 2 * m))


def test_a_run_without_calls_starts_only_the_measuring_pairs(tmp_path):
    from tritongate.pair.request import GPU_POOL_PAIRS

    made: dict[str, InProcessWorker] = {}
    outcome = run_pair(_request(tmp_path), spawn=_spawner(World(), made))
    assert set(_verdicts(outcome).values()) == {Verdict.UNCHANGED}
    assert len(made) == 2 * GPU_POOL_PAIRS


def test_a_pool_of_one_restarts_its_workers_for_each_fresh_worker_pair(tmp_path):
    made: dict[str, InProcessWorker] = {}
    outcome = run_pair(_request(tmp_path, worker_pool=1), spawn=_spawner(World(), made))
    assert sorted(made) == ["base", "candidate"]
    assert made["base"].starts > 1 and all(len(set(r.pairing.worker_pairs)) >= 2 for r in outcome.result.rows)


@pytest.mark.slow
def test_a_stretched_check_spreads_its_rows_over_that_many_times_the_worker_pairs(tmp_path):
    """A calibration's check (schedule_scale 4) sizes a spin to a quarter of itself: its
    between-process error shrinks only with more processes, so its pool and each row's worker
    pairs grow with the scale (on a GPU); a row that must grow spreads over all of them."""
    from tritongate.pair.request import GPU_POOL_PAIRS, MAX_POOL_PAIRS

    made: dict[str, InProcessWorker] = {}
    noisy = {"TG_NOISE": "add:0.05"}  # a target the row does not reach early
    outcome = run_pair(_request(tmp_path, schedule_scale=4, base_env=noisy, cand_env=noisy, only_ops=("add",),
                                policy=GatePolicy(min_effect=0.001)),
                       spawn=_spawner(World(), made))
    pool = min(4 * GPU_POOL_PAIRS, MAX_POOL_PAIRS)
    assert pool > GPU_POOL_PAIRS and len(made) == 2 * pool
    r = outcome.result.rows[0]
    assert r.reached_target is False and len(set(r.pairing.worker_pairs)) == pool


def test_a_pair_directory_removed_mid_run_is_named_not_blamed_on_the_build(tmp_path):
    """The out folder deleted while the pair ran takes the workers' package link with it: a
    worker started then fails its preflight ("no suite named ...", "cannot import ...; install
    torch ..."), which would send the user to fix the build. The error names the folder."""
    import shutil

    from tritongate.errors import PreflightError

    inner = _spawner(World())

    def vanished(settings):
        shutil.rmtree(next((tmp_path / "out").glob("pair-*")))
        raise PreflightError("suite_file", "no suite named 'scripted' in .../workers/pythonpath")

    def spawn(spec):  # the candidate's worker starts after its folder went
        return InProcessWorker(spec.side, vanished) if spec.side == "candidate" else inner(spec)

    with pytest.raises(FileNotFoundError) as caught:
        run_pair(_request(tmp_path), spawn=spawn)
    assert "the pair directory was removed while the paired run used it" in caught.value.strerror
    assert "no suite named 'scripted'" in caught.value.strerror
    assert Path(caught.value.filename).parent == tmp_path / "out"
