import math

import pytest

from tritongate import markers
from tritongate.gate.output import verdict_document
from tritongate.gate.policy import GatePolicy
from tritongate.gate.verdict import IncomparableRunsError, Verdict, run_gate

from tests.gate.helpers import binary, pair, row

POLICY = GatePolicy()


def judge(tmp_path, base_rows, cand_rows, policy=POLICY, **kw):
    base, cand = pair(tmp_path, base_rows, cand_rows, **kw)
    return run_gate(base, cand, policy)


def headline(result):
    """The verdict's one headline (verdict.json, the terminal and the comment share it)."""
    return verdict_document(result)["headline"]


def verdicts(result):
    return {r.key: r.verdict for r in result.rows}


def test_regressed_improved_unchanged(tmp_path):
    base = [row(case="a", median=20, seed=1), row(case="b", median=20, seed=2), row(case="c", median=20, seed=3)]
    cand = [row(case="a", median=21, seed=4), row(case="b", median=19, seed=5), row(case="c", median=20, seed=6)]
    res = judge(tmp_path, base, cand)
    v = {r.case: r for r in res.rows}
    assert v["a"].verdict is Verdict.REGRESSED and v["a"].timing.effect == pytest.approx(0.05, abs=0.005)
    assert v["b"].verdict is Verdict.IMPROVED and v["b"].timing.speedup > 1
    assert v["c"].verdict is Verdict.UNCHANGED
    assert not res.passed and res.exit_code == 1
    assert headline(res).startswith("❌ 1 regression, worst softmax a float16 +5.")


def test_every_row_says_what_it_could_have_detected(tmp_path):
    tight = row(case="tight", median=20, seed=1, round_sd=0.001, within_sd=0.0005)
    noisy = row(case="noisy", median=1.2, seed=2, round_sd=0.03, within_sd=0.01)
    res = judge(tmp_path, [tight, noisy], [row(case="tight", median=20, seed=3, round_sd=0.001, within_sd=0.0005),
                                           row(case="noisy", median=1.2, seed=4, round_sd=0.03, within_sd=0.01)])
    d = {r.case: r.timing.detectable for r in res.rows}
    # two stored runs are two processes: z times each run's process offset (0.3 %), both runs
    prior = math.expm1(4 * math.sqrt(2) * 0.003)
    assert prior <= d["tight"] <= 1.1 * prior
    assert d["noisy"] > 0.05  # a launch-bound, noisy row: "unchanged" proves little
    assert all(r.verdict is Verdict.UNCHANGED for r in res.rows)
    assert {r.case: r.stopped_by for r in res.rows} == {"tight": "unpaired", "noisy": "unpaired"}
    assert res.state == "blind" and headline(res) == "⚠️ No regression found; 2 rows could not resolve 1 %"
    without = run_gate(*pair(tmp_path / "again", [tight, noisy], [row(case="tight", median=20, seed=3, round_sd=0.001,
                                                                     within_sd=0.0005)]), GatePolicy(process_sd=0.0))
    assert without.rows[0].timing.detectable == pytest.approx(0.01, abs=0.002)  # the 1% minimum effect


def test_a_slowdown_inside_the_noise_floor_is_not_called(tmp_path):
    base = [row(median=20, seed=1, round_sd=0.02)]
    cand = [row(median=20.6, seed=2, round_sd=0.02)]  # +3%, rounds scattered by 2%
    (r,) = judge(tmp_path, base, cand).rows
    assert r.verdict is Verdict.UNCHANGED and r.timing.noise_floor > 0.03


def test_identical_binaries(tmp_path):
    res = judge(tmp_path, [row(median=20, variants=[binary("abc")])],
                [row(median=21, seed=9, variants=[binary("abc")])])
    (r,) = res.rows
    assert r.verdict is Verdict.IDENTICAL_BINARY and r.timing.change.value == "slower"
    assert res.passed  # byte-identical kernels cannot differ: the timing difference is noise


def test_changed_binaries_are_timed(tmp_path):
    (r,) = judge(tmp_path, [row(variants=[binary("abc")])], [row(seed=3, variants=[binary("def")])]).rows
    assert r.verdict is Verdict.UNCHANGED


FALLBACK = "AUTOTUNE_REPLAY_FALLBACK reason=key_missing kernel=m.k"
COMPILE_FAILED = "AUTOTUNE_REPLAY_FALLBACK reason=compile_failed kernel=m.k"
NO_GRAPH = "BENCHMARK_DIRECT_NO_CUDAGRAPH phase=capture reason=RuntimeError: capture refused"


@pytest.mark.parametrize("base_kw,cand_kw,reason", [
    ({}, dict(markers=[FALLBACK]), "replay fallback on candidate: key_missing (m.k)"),
    ({}, dict(markers=[NO_GRAPH], timer="cuda-events"), "timer fallback on candidate only (phase capture)"),
    (dict(markers=[markers.make(markers.CORRECTNESS_MISMATCH, reason="3 of 9 elements")]), {},
     "correctness mismatch on base: 3 of 9 elements"),
    ({}, dict(markers=[markers.make(markers.GPU_BUSY, reason="pids 7")]), "GPU busy on candidate: pids 7"),
    ({}, dict(markers=[markers.make(markers.GPU_THROTTLED, reason="hw_thermal")]), "GPU throttled on candidate"),
    (dict(status="error", error="RuntimeError: boom"), {}, "error on base: RuntimeError: boom"),
])
def test_rejected_rows_name_their_marker(tmp_path, base_kw, cand_kw, reason):
    res = judge(tmp_path, [row(**base_kw)], [row(seed=1, **cand_kw)])
    (r,) = res.rows
    assert r.verdict is Verdict.REJECTED
    assert any(x.startswith(reason) for x in r.reasons), r.reasons
    assert not res.failures and not r.fails_policy  # unverified, not failed (without --strict)


@pytest.mark.parametrize("cand_kw,reason", [
    (dict(status="error", error="RuntimeError: boom"), "error on candidate: RuntimeError: boom"),
    (dict(status="timeout", error="600 s"), "timeout on candidate"),
])
def test_a_candidate_failing_where_the_base_ran_fails_the_gate(tmp_path, cand_kw, reason):
    res = judge(tmp_path, [row()], [row(seed=1, **cand_kw)])
    (r,) = res.rows
    assert r.verdict is Verdict.REJECTED and r.fails_policy and not res.passed
    assert any(x.startswith(reason) for x in r.reasons) and "the candidate failed on a row the base ran" in r.reasons
    assert "candidate fails where the base did not" in res.failures[0]


def test_timer_fallback_on_both_sides_is_compared(tmp_path):
    kw = dict(markers=[NO_GRAPH], timer="cuda-events")
    (r,) = judge(tmp_path, [row(**kw)], [row(seed=2, **kw)]).rows
    assert r.verdict is Verdict.UNCHANGED


def test_compile_failed_fails_the_gate_without_strict(tmp_path):
    res = judge(tmp_path, [row()], [row(seed=1, markers=[COMPILE_FAILED])])
    (r,) = res.rows
    assert r.verdict is Verdict.REJECTED and r.fails_policy
    assert res.exit_code == 1 and "no longer compiles" in res.failures[0]


def test_strict_fails_on_unverified_rows(tmp_path):
    base, cand = [row(), row(case="b")], [row(seed=1, markers=[FALLBACK]), row(case="b", seed=2)]
    assert judge(tmp_path / "a", base, cand).exit_code == 0
    assert judge(tmp_path / "b", base, cand, GatePolicy(strict=True)).exit_code == 1


def test_missing_and_new_rows(tmp_path):
    base = [row(case="a"), row(case="gone")]
    cand = [row(case="a", seed=1), row(case="added", seed=2)]
    res = judge(tmp_path / "x", base, cand)
    assert verdicts(res)[("softmax", "gone", "float16")] is Verdict.MISSING
    assert verdicts(res)[("softmax", "added", "float16")] is Verdict.NEW
    assert res.exit_code == 1 and "1 missing row(s)" in res.failures[0]
    assert judge(tmp_path / "y", base, cand, GatePolicy(max_missing=1)).exit_code == 0


def test_different_k_is_not_comparable(tmp_path):
    (r,) = judge(tmp_path, [row(k=25)], [row(k=40, seed=1)]).rows
    assert r.verdict is Verdict.NOT_COMPARABLE and "k=25" in r.reasons[0]


def test_too_few_samples_is_unchanged(tmp_path):
    (r,) = judge(tmp_path, [row(per_round=1)], [row(median=30, per_round=1, seed=1)]).rows
    assert r.verdict is Verdict.UNCHANGED and "too few samples" in r.reasons[0] and r.timing.detectable is None


@pytest.mark.parametrize("field,value", [("device", "NVIDIA H100"), ("backend", "rocm"), ("timer", "cuda-events"),
                                         ("gpu_state_before", {"driver": "570.1"}),
                                         ("codegen_env", {"TRITON_DISABLE_LINE_INFO": "0"}),
                                         ("suite", {"name": "smoke", "digest": "d"})])  # one shared row
def test_identity_mismatch_is_refused(tmp_path, field, value):
    base, cand = pair(tmp_path, [row()], [row(seed=1)], cand_identity={field: value})
    with pytest.raises(IncomparableRunsError, match="not measured alike.*--allow-mismatch"):
        run_gate(base, cand, POLICY)
    res = run_gate(base, cand, POLICY, allow_mismatch=True)
    assert [r.verdict for r in res.rows] == [Verdict.NOT_COMPARABLE]
    # nothing judged: not failed (exit 2, not passed), and failed under --strict
    assert not res.failures and not res.passed and res.exit_code == 2
    assert run_gate(base, cand, GatePolicy(strict=True), allow_mismatch=True).exit_code == 1


def test_geomean_and_per_op_intervals(tmp_path):
    from tritongate.gate.summary import per_op
    base = [row(case="a", median=10), row(case="b", median=10, seed=1), row(op="add", case="c", median=10)]
    cand = [row(case="a", median=10, seed=3), row(case="b", median=9, seed=4), row(op="add", case="c", median=11)]
    res = judge(tmp_path, base, cand)
    table = per_op(res).set_index("op")
    assert table.loc["softmax", "rows"] == 2
    assert table.loc["softmax", "max"] == pytest.approx(10 / 9, rel=0.01)
    assert table.loc["add", "min"] == pytest.approx(10 / 11, rel=0.01)
    assert res.geomean_speedup == pytest.approx((1 * 10 / 9 * 10 / 11) ** (1 / 3), rel=0.01)


def test_a_non_replay_candidate_is_noted(tmp_path):
    from tritongate.gate.comparability import notes
    assert "not a replay run" in notes({}, {"mode": "record"})[0]


def test_a_candidate_that_replayed_another_record_is_noted():
    from tritongate.gate.comparability import notes
    cand = {"mode": "replay", "replay_from": "/runs/other"}
    assert "replayed /runs/other, not this base run" in notes({"mode": "record"}, cand, "/runs/base")[0]
    assert notes({"mode": "record"}, {**cand, "replay_from": "/runs/base"}, "/runs/base") == []


def _paired_rows(tmp_path, base_parts, cand_parts, *, confirm_from=0, worker_pairs=None, confirm_rounds=20,
                 states=None, stopped_by=None):
    """One paired row from parts of samples (each a helpers.samples tuple), measured in that order;
    ``states``: (base, candidate) launch-state readings, one a round."""
    from dataclasses import replace

    from tritongate.schema import PairInfo

    b, c = sum(base_parts, ()), sum(cand_parts, ())
    rounds = len(b) // 5
    wp = worker_pairs or tuple(i // 10 for i in range(rounds))
    rows = []
    for side, s in (("base", b), ("candidate", c)):
        info = PairInfo(pair_id="p", side=side, went_first=tuple((i % 2 == 0) == (side == "base") for i in range(rounds)),
                        target_effect=0.01, min_rounds=5, max_rounds=80, confirm_rounds=confirm_rounds,
                        worker_pairs=wp, confirm_from=confirm_from, stopped_by=stopped_by)
        r = row(median=20)
        readings = () if states is None else tuple(states[side != "base"])
        rows.append(replace(r, samples=s, measurement=replace(r.measurement, pairing=info,
                                                              launch_state_us=readings)))
    return run_gate(*pair(tmp_path, [rows[0]], [rows[1]]), POLICY)


def test_a_call_stands_only_when_its_confirmation_on_fresh_worker_pairs_calls_it_too(tmp_path):
    from tests.gate.helpers import samples

    def part(median, seed):
        return samples(median, rounds=20, seed=seed)
    confirmed = _paired_rows(tmp_path / "c", [part(20, 1), part(20, 2)], [part(21, 3), part(21, 4)], confirm_from=20)
    (r,) = confirmed.rows
    assert r.verdict is Verdict.REGRESSED and not confirmed.passed
    assert any(x.startswith("confirmed on fresh worker pairs: +") and "on the 20 after" in x for x in r.reasons)
    # the first 20 pairs say +5 %, the 20 on fresh worker pairs after them say nothing: shown, not failing
    lost = _paired_rows(tmp_path / "l", [part(20, 1), part(20, 2)], [part(21, 3), part(20, 4)], confirm_from=20)
    (r,) = lost.rows
    assert r.verdict is Verdict.UNCONFIRMED and lost.passed and lost.state == "blind"
    assert "was not confirmed on fresh worker pairs" in r.reasons[-1] and r.reached_target is False
    # the headline does not say "no regression found" of a slowdown it saw and could not confirm
    assert headline(lost) == "⚠️ No regression confirmed (1 call not confirmed); 1 row could not resolve 1 %"
    # the same pairs without a confirmation: the first measurement alone would have failed the gate
    alone = _paired_rows(tmp_path / "a", [part(20, 1), part(20, 2)], [part(21, 3), part(21, 4)])
    assert alone.rows[0].verdict is Verdict.REGRESSED


def test_fail_on_blind_turns_the_warning_into_a_failure(tmp_path):
    from tests.gate.helpers import samples

    few = _paired_rows(tmp_path, [samples(20, rounds=8, seed=1)], [samples(20, rounds=8, seed=2)])
    assert few.state == "blind" and few.passed and few.exit_code == 0
    strict = run_gate(few.base, few.cand, GatePolicy(fail_on_blind=True))
    assert strict.state == "fail" and strict.exit_code == 1
    assert "could not resolve their target under --fail-on-blind" in strict.failures[0]
    assert strict.rows[0].stopped_by == "row_budget" and strict.rows[0].reached_target is False


def test_a_row_on_one_worker_pair_cannot_resolve_one_percent(tmp_path):
    """One worker pair cannot measure its own offset: the policy's process_sd stays in its floor."""
    from tests.gate.helpers import samples

    one = _paired_rows(tmp_path, [samples(20, rounds=80, seed=1)], [samples(20, rounds=80, seed=2)],
                       worker_pairs=(0,) * 80)
    (r,) = one.rows
    assert r.timing.worker_pairs == 1 and r.timing.detectable >= math.expm1(4 * 0.003) and r.reached_target is False
    many = _paired_rows(tmp_path / "m", [samples(20, rounds=80, seed=1)], [samples(20, rounds=80, seed=2)])
    assert many.rows[0].timing.worker_pairs == 8 and many.rows[0].reached_target is True


def test_an_unpaired_gate_says_it_is_not_the_pr_path(tmp_path):
    res = judge(tmp_path, [row(seed=1)], [row(seed=2)])
    assert any("timed unpaired, from two stored runs" in n and "not the PR path" in n for n in res.notes)
    assert res.rows[0].stopped_by == "unpaired" and res.state == "blind"


def test_a_first_call_cut_short_is_not_rescued_by_its_confirmation(tmp_path):
    """10 pairs (a budget stopped them) called +5 %, 20 fresh ones confirmed it: the first call
    had fewer pairs than a call needs, so the row is UNCONFIRMED, as the simulation counts it."""
    from tests.gate.helpers import samples

    short = _paired_rows(tmp_path, [samples(20, rounds=10, seed=1), samples(20, rounds=20, seed=2)],
                         [samples(21, rounds=10, seed=3), samples(21, rounds=20, seed=4)], confirm_from=10,
                         worker_pairs=tuple([0] * 5 + [1] * 5 + [2] * 10 + [3] * 10))
    (r,) = short.rows
    assert r.verdict is Verdict.UNCONFIRMED and short.passed
    assert "the first call has 10 pairs, fewer than the 20 a call needs" in r.reasons[-1]


def test_two_builds_on_the_interpreter_are_said_to_compare_interpreters():
    from tritongate.gate.comparability import notes
    cpu = {"backend": "cpu", "mode": "replay", "replay_from": "/runs/base"}
    said = notes({"backend": "cpu", "mode": "record"}, cpu, "/runs/base")
    assert any("compare the two builds' interpreters and Python code, not the code they would generate" in n
               for n in said)
    assert not any("interpreter" in n for n in notes({"backend": "cuda", "mode": "record"},
                                                     {**cpu, "backend": "cuda"}, "/runs/base"))


def test_a_round_cap_below_the_pairs_a_call_needs_is_said() -> None:
    from tritongate.gate.comparability import notes
    schedule = {"max_rounds": 6, "confirm_rounds": 20, "confirm_calls": True}
    side = {"backend": "cuda", "mode": "replay", "pair": {"pair_id": "p", "schedule": schedule}}
    (said,) = [n for n in notes({**side, "mode": "replay"}, side) if "round cap" in n]
    assert said == ("the round cap (6, --max-rounds) is below the 20 rounds a call needs: any change found stays "
                    "UNCONFIRMED and cannot fail the gate; give --max-rounds 20 or more")
    for fine in ({**schedule, "max_rounds": 20}, {**schedule, "confirm_calls": False}):
        ok = {**side, "pair": {"pair_id": "p", "schedule": fine}}
        assert not any("round cap" in n for n in notes(ok, ok))


def test_a_row_whose_sides_ran_in_different_launch_states_is_named_and_not_called(tmp_path):
    """The candidate's rounds ran in the slower CUDA-graph launch state (a process that made
    its third graph part-way): a call the state could have made (a 1.2 µs kernel +15 %, 0.18
    µs a launch) is shown, never failing. One the state cannot explain stands: far larger than
    the state moves a launch (a 20 µs kernel +10 %, 2 µs), or the other way (a candidate in
    the faster state that measured slower). Jitter is one state: readings of 0.82-0.89 µs
    beside large kernels on an H100, and one stray round (1.1525 beside 0.997s, H100)."""
    from dataclasses import replace

    from tests.gate.helpers import samples

    def sides(base_states, cand_states, sub, median=1.2, effect=0.15, whole=False):
        b, c = row(median=median), row(median=median)
        b = replace(b, samples=samples(median, rounds=8, seed=1),
                    measurement=replace(b.measurement, launch_state_us=base_states))
        c = replace(c, samples=samples(median * (1 + effect), rounds=8, seed=2),
                    measurement=replace(c.measurement, launch_state_us=cand_states))
        result = run_gate(*pair(tmp_path / sub, [b], [c]), POLICY)
        return result if whole else result.rows[0]

    def named(r):
        return any("launch state" in x for x in r.reasons)
    same = sides((1.0,) * 8, (0.99,) * 8, "same")
    assert same.verdict is Verdict.REGRESSED and not named(same)
    slower_state = sides((0.82,) * 8, (1.0,) * 8, "other")
    assert slower_state.verdict is Verdict.UNCONFIRMED
    assert slower_state.reasons[-1].startswith("base and candidate ran in different CUDA-graph launch states (0.820 "
                                               "vs 1.000 µs a node of the reference graph, 0.18 µs apart")
    faster_state = sides((1.0,) * 8, (0.82,) * 8, "faster")  # slower although in the faster state
    assert faster_state.verdict is Verdict.REGRESSED and not named(faster_state)
    flipped = sides((1.0,) * 8, (0.82,) * 3 + (1.0,) * 5, "flip")
    assert flipped.verdict is Verdict.UNCONFIRMED
    assert flipped.reasons[-1].startswith("the candidate's rounds span two CUDA-graph launch states (0.820 and 1.000")
    big = sides((0.82,) * 8, (1.0,) * 8, "big", median=20, effect=0.10)
    assert big.verdict is Verdict.REGRESSED and not named(big)
    jitter = (0.818, 0.822, 0.83, 0.845, 0.86, 0.87, 0.879, 0.888)
    one_state = sides(jitter, (0.818,) * 8, "jitter", effect=0.05)
    assert one_state.verdict is Verdict.REGRESSED and not named(one_state)
    stray = sides((0.997,) * 8, (0.997, 1.1525, 0.996, 0.9965, 0.9965, 0.997, 0.996, 0.997), "stray", effect=0.05)
    assert stray.verdict is Verdict.REGRESSED and not named(stray)
    hidden = sides((1.0,) * 8, (0.82,) * 8, "hidden", effect=0.0)
    assert hidden.verdict is Verdict.UNCHANGED
    assert hidden.reasons[-1].endswith("enough to hide a change of the minimum effect")
    assert hidden.reached_target is False  # unpaired here: what stopped it first is named (below: paired)
    large = sides((1.0,) * 8, (0.82,) * 8, "50us-same", median=50, effect=0.0)
    assert large.verdict is Verdict.UNCHANGED and large.stopped_by != "launch_state" and not named(large)


def test_an_unchanged_paired_row_the_launch_states_could_hide_has_not_resolved_its_target(tmp_path):
    """A paired row that reached its precision, its candidate in the faster state (0.18 µs a launch
    below the base's): a slowdown of its minimum effect could hide in it, so it is listed as not
    resolving, stopped by the states; 2 x 0.18 µs is under 1 % of a 50 µs kernel, which resolves."""
    from dataclasses import replace

    from tests.gate.helpers import paired_run

    def states(median, sub):
        b, c = paired_run(row(median=median, rounds=80), row(median=median, rounds=80, seed=2))
        n = len(b.samples) // b.measurement.samples_per_round
        b = replace(b, measurement=replace(b.measurement, launch_state_us=(1.0,) * n))
        c = replace(c, measurement=replace(c.measurement, launch_state_us=(0.82,) * n))
        return run_gate(*pair(tmp_path / sub, [b], [c]), POLICY)

    small = states(1.2, "small")
    (r,) = small.rows
    assert r.verdict is Verdict.UNCHANGED and r.reached_target is False and r.stopped_by == "launch_state"
    assert small.blind_text() == ("1 row(s) could not resolve their minimum effect: 1 measured with the sides in "
                                  "CUDA-graph launch states far enough apart to hide the minimum effect (run the pair "
                                  "again)")
    (big,) = states(50, "big").rows
    assert big.verdict is Verdict.UNCHANGED and big.reached_target and big.stopped_by is None


def test_a_confirmed_call_is_checked_on_its_confirmation_s_launch_states(tmp_path):
    """A 1.2 µs row +15 % (0.18 µs a launch), confirmed on fresh worker pairs: the state is read
    on the rounds the call stands on. The first 20 pairs' candidate in the slower state, the
    confirmation's in one state with the base: the call stands; the confirmation's candidate
    in the slower state: shown, not failing. A side that read no state is named."""
    from tests.gate.helpers import samples

    def part(median, seed):
        return samples(median, rounds=20, seed=seed)
    base, cand = [part(1.2, 1), part(1.2, 2)], [part(1.38, 3), part(1.38, 4)]
    early = ((0.82,) * 40, (1.0,) * 20 + (0.82,) * 20)
    (r,) = _paired_rows(tmp_path / "early", base, cand, confirm_from=20, states=early).rows
    assert r.verdict is Verdict.REGRESSED and not any("launch state" in x for x in r.reasons)
    late = ((0.82,) * 40, (0.82,) * 20 + (1.0,) * 20)
    (r,) = _paired_rows(tmp_path / "late", base, cand, confirm_from=20, states=late).rows
    assert r.verdict is Verdict.UNCONFIRMED
    assert r.reasons[-1].startswith("base and candidate ran in different CUDA-graph launch states (0.820 vs 1.000")
    one_side = ((0.82,) * 40, ())
    (r,) = _paired_rows(tmp_path / "one", base, cand, confirm_from=20, states=one_side).rows
    assert "the candidate's CUDA-graph launch state was not read: a state difference could not be checked" in r.reasons


def test_a_run_that_did_not_settle_its_launch_state_says_so():
    from tritongate.gate.comparability import notes
    said = notes({"graph_state": {"primed_graphs": 0}}, {"graph_state": {"primed_graphs": 8}})
    assert said == ["the base did not settle its CUDA-graph launch state (TRITONGATE_GRAPH_PRIME=0): a small "
                    "kernel's first rounds in a process may have run ~0.18 µs a launch faster than the rest",
                    "the candidate is not a replay run: autotune may have picked other configs than the base, so "
                    "differences can come from config flips rather than the compiler"]


def test_runs_measured_with_and_without_a_gpu_turn_partner_say_so():
    from tritongate.gate.comparability import notes

    replay = {"mode": "replay"}
    with_one = {**replay, "gpu_turns": {"partner": True, "turns": 900, "failure": None}}
    without = {**replay, "gpu_turns": None}
    stopped = {**replay, "gpu_turns": {"partner": False, "turns": 12, "failure": "the partner exited after 12 turns"}}
    said = notes(without, with_one)
    assert said == ["the base measured without a GPU-turn partner (TRITONGATE_GPU_TURNS=0) and the other side "
                    "with one: small kernels' rounds ran at CUDA-graph launch levels ~0.18 µs a launch apart "
                    "(each round's level is in its launch_state_us)"]
    said = notes(with_one, stopped)
    assert said[0] == ("the candidate's GPU-turn partner stopped (the partner exited after 12 turns): its rounds "
                       "after that ran at the slower CUDA-graph launch level, ~0.18 µs a launch above a paired run's")
    assert "the candidate measured without a GPU-turn partner" in said[1]
    assert notes(with_one, with_one) == notes(without, without) == []
    # a paired run's sides take turns with each other; a run from before partners says nothing
    assert notes({**replay, "pair": {"side": "base"}}, {**replay, "pair": {"side": "candidate"}}) == []
    assert notes(replay, without) == []


def test_worker_pairs_that_all_see_a_slowdown_of_different_sizes_are_not_unchanged(tmp_path):
    """8 worker pairs, the candidate slower in every one by 6-12 % (a change whose size depends
    on the process, as a planted spin converted at a cold clock made it on an H100): the pairs
    disagree on the size, not on the direction, so the row is shown, not passed as unchanged;
    pairs that disagree on the direction stay unchanged."""
    from tests.gate.helpers import samples

    wp = tuple(i // 10 for i in range(80))
    base = [samples(20, rounds=10, seed=i) for i in range(8)]
    slower = [samples(20 * (1.06 + 0.01 * (i % 7)), rounds=10, seed=100 + i) for i in range(8)]
    one_way = _paired_rows(tmp_path / "w", base, slower, worker_pairs=wp)
    (r,) = one_way.rows
    assert r.timing.why.value == "worker_pairs_disagree" and r.timing.one_way
    assert r.verdict is Verdict.UNCONFIRMED and one_way.passed
    assert "every worker pair measured it slower, by amounts that depend on the process" in r.reasons[-1]
    # pairs that disagree on the direction too (two of 40 a little faster): unchanged, as before
    wp40 = tuple(i // 2 for i in range(80))
    base40 = [samples(20, rounds=2, seed=i) for i in range(40)]
    both = [samples(20 * (1.05 if i >= 2 else 0.995), rounds=2, seed=200 + i) for i in range(40)]
    mixed = _paired_rows(tmp_path / "m", base40, both, worker_pairs=wp40)
    (m,) = mixed.rows
    assert m.timing.why.value == "worker_pairs_disagree" and not m.timing.one_way
    assert m.verdict is Verdict.UNCHANGED
