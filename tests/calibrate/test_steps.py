"""A calibration on scripted devices with known noise: the real paired runs and gate rule,
the real plan files, the real aim step through a worker; the device adds the planted spin to
each launch as the test scripts it (times several waves, partly hidden, or a fixed cost)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tritongate.calibrate.run import run_calibration
from tritongate.model.calibration import CALIBRATION_JSON, load_summary
from tritongate.pair.build import CompilerBuild
from tritongate.pair.orchestrator import PairRequest, run_pair
from tritongate.pair.request import MAX_POOL_PAIRS

from tests.pair.fakes import InProcessWorker, ScriptedExecutor, World


def _run(tmp_path: Path, out: Path, env: dict | None, fractions, aa_runs: int):
    """run_calibration into ``out`` on scripted devices, counting the paired runs and workers."""
    world, spawned, pairs = World(), [], []

    def spawn(spec):
        spawned.append(spec.side)
        return InProcessWorker(spec.side, lambda settings, spec=spec: ScriptedExecutor(
            settings, world=world, env=spec.env, side=spec.side))

    def run(request):
        pairs.append(Path(request.out).name)
        return run_pair(request, spawn=spawn)

    template = PairRequest(baseline=tmp_path / "baseline", suite="scripted", out=tmp_path / "unused",
                           base=CompilerBuild("base", env=env or {}), cand=CompilerBuild("candidate", env=env or {}),
                           executor="tests.pair.fakes:ScriptedExecutor")
    log: list[str] = []
    cal, md, png = run_calibration(template, suite="scripted", out=out, fractions=fractions, aa_runs=aa_runs,
                                   run=run, log=log.append, plantable=frozenset({"add", "softmax", "matmul"}),
                                   spawn=spawn)
    return cal, md, png, pairs, spawned, log


def _calibrate(tmp_path: Path, env: dict | None = None, fractions=(0.01, 0.02, 0.05), aa_runs: int = 1):
    out = tmp_path / "cal"
    out.mkdir()
    cal, md, png, _pairs, _spawned, log = _run(tmp_path, out, env, fractions, aa_runs)
    return cal, md, png, out, log


def _again(tmp_path, out, fractions=(0.02, 0.05), env=None):
    """run_calibration once more on ``out`` (a resume), counting the paired runs and workers."""
    cal, _md, _png, pairs, spawned, log = _run(tmp_path, out, env, fractions, aa_runs=1)
    return cal, pairs, spawned, log


@pytest.mark.slow
def test_a_quiet_device_catches_every_planted_slowdown_of_2_and_5_percent(tmp_path):
    """matmul's launches gain 4 ns per ns spun (several waves); softmax hides the first 300 ns of
    a spin under its memory traffic: the aim step times that, and plants each size right."""
    cal, md, png, out, log = _calibrate(tmp_path, env={"TG_GAIN": "matmul:4", "TG_HIDE": "softmax:300"}, aa_runs=2)
    steps = [line.split(":")[0].split(" ")[0] for line in log]
    assert steps[:3] == ["A/A", "A/A", "aim"] and steps[-3:] == ["planted", "planted", "planted"]
    assert sum(s == "aim" for s in steps) == 4  # announced, then one line per row
    rows = {r.op: r for r in cal.rows}
    assert {op: r.size_class for op, r in rows.items()} == {"add": "< 3 µs", "softmax": "3–10 µs",
                                                           "matmul": "10–100 µs"}
    assert cal.aa_rows == 6 and cal.aa_false == 0
    spins = {op: {k: o.delay_ns for k, o in r.planted.items()} for op, r in rows.items()}
    for f in (0.01, 0.02, 0.05):  # what the script says each size takes, within the aim's tolerance
        k = f"{f:g}"
        assert spins["add"][k] == pytest.approx(f * 2000, rel=0.25)
        assert spins["softmax"][k] == pytest.approx(300 + f * 6000, rel=0.25)
        assert spins["matmul"][k] == pytest.approx(f * 40_000 / 4, rel=0.25)
    for f in (0.02, 0.05):
        assert cal.rate(f).caught == cal.rate(f).rows == 3
        for r in rows.values():  # the gate's estimate is the planted size, as the aim measured it
            o = r.planted[f"{f:g}"]
            # two estimates of one size, each with its own noise (about 0.2 % here)
            assert abs(o.aimed - f) <= 0.25 * f and o.effect == pytest.approx(o.aimed, abs=0.006)
    assert all(g.met for g in cal.goals())
    doc = json.loads((out / CALIBRATION_JSON).read_text())
    assert doc["schema"] == 2 and doc["aa"] == {"rows": 6, "false_verdicts": 0}
    assert {k: v for k, v in doc["catch"]["0.05"].items() if k != "measured"} == {
        "rows": 3, "caught": 3, "rate": 1.0, "unplanted": 0, "on_size": True}
    # every paired step names its physical GPU; one GPU here: a calibration of that GPU
    assert {s["gpu_uuid"] for s in doc["steps"]} == {"GPU-scripted"}  # the aim's worker too
    assert doc["runner"]["gpus"] == ["GPU-scripted"] and doc["runner"]["scope"] == "one GPU"
    assert [c["rows"] for c in doc["classes"]] == [1, 1, 1, 0]
    names = [s["name"] for s in doc["steps"]]  # a size the aim was unsure of is checked by a paired run
    assert names[:3] == ["aa-1", "aa-2", "aim"] and names[-3:] == ["planted-0.01", "planted-0.02", "planted-0.05"]
    assert all(n.startswith("check-") for n in names[3:-3])
    softmax = next(r for r in doc["rows"] if r["op"] == "softmax")
    spins = [point[0] for point in softmax["aim"]["points"]]  # [spin, effect, timings], the hidden 300 ns in it
    assert len(spins) >= 5 and min(spins) < 300 < max(spins) and softmax["aim"]["zero_us"] > 0
    # each step is an ordinary pair directory; the candidate of a planted step says it was planted
    planted = json.loads(next((out / "planted-0.05").glob("pair-*/candidate/run_identity.json")).read_text())
    assert planted["planted_delay"]["fraction"] == 0.05
    text = md.read_text()
    assert "**A/A: 0 false verdicts in 6 rows**" in text and "| 10–100 µs | 1 |" in text and "(planted +" in text
    assert png is not None and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = load_summary(out)
    assert (summary.aa_false, summary.caught, summary.planted_rows, summary.fraction) == (0, 3, 3, 0.02)


@pytest.mark.slow
def test_a_noisy_row_misses_what_its_noise_hides_and_the_classes_say_so(tmp_path):
    """matmul with 10 % placement noise per round: its A/A detectable effect is above 5 %, and
    its planted 2 % is not caught; the quiet rows still catch 2 % and 5 %. (Its 5 % may be: the
    planted run's own pairs decide that, and the goals count it either way.)"""
    cal, _md, _png, _out, _log = _calibrate(tmp_path, env={"TG_NOISE": "matmul:0.1"}, fractions=(0.02, 0.05))
    rows = {r.op: r for r in cal.rows}
    assert rows["matmul"].detectable > 0.05 and rows["matmul"].smallest_caught != 0.02
    assert not rows["matmul"].planted.get("0.02") or not rows["matmul"].planted["0.02"].caught
    assert rows["add"].smallest_caught == rows["softmax"].smallest_caught == 0.02
    assert cal.rate(0.02, size="10–100 µs").caught == 0
    assert cal.rate(0.05).caught == 2 + bool(rows["matmul"].planted.get("0.05") and rows["matmul"].planted["0.05"].caught)
    assert not cal.goals()[0].met  # 2 % on rows >= 10 µs: 0 of 1
    assert cal.aa_false == 0


def test_a_row_whose_spin_costs_a_fixed_time_is_not_planted_at_sizes_below_it_and_says_why(tmp_path):
    """add pays 500 ns (25 % of its 2 µs) once any spin runs: no size up to 5 % can be planted
    there, so it is left out of the catch rates, noted, and counted as a miss by the goals."""
    cal, md, _png, _out, _log = _calibrate(tmp_path, env={"TG_FIXED": "add:500"}, fractions=(0.02, 0.05))
    rows = {r.op: r for r in cal.rows}
    assert rows["add"].planted == {} and set(rows["add"].aim["missed"]) == {"0.02", "0.05"}
    assert any(n.startswith("add/4096/float16 not planted at 2%: no spin lands within ±25% of 2%") for n in cal.notes)
    assert cal.rate(0.05).rows == 2 and cal.rate(0.05).unplanted == 1 and cal.rate(0.05).caught == 2
    assert cal.goals()[1].text() == ("5% caught on ≥ 95% of all rows: 2 of 3 (67%), counting 1 that could not be "
                                     "planted at 5% as missed")
    assert ("Not plantable (no spin timed within ±25 % of the size; left out of the table's rates, counted as missed "
            "by a goal above that covers them): 2% on 1 rows, 5% on 1 rows.") \
        in md.read_text()


@pytest.mark.slow
def test_a_row_whose_time_moves_in_one_process_is_sized_by_paired_checks_and_caught(tmp_path):
    """matmul moves 3 % a round in the aim's worker only (a power-capped kernel): the aim is
    unsure of its sizes, so paired runs of its spin measure them; the planted runs that follow
    plant those sizes and catch them."""
    cal, md, _png, out, log = _calibrate(tmp_path, env={"TG_AIM_NOISE": "matmul:0.03"}, fractions=(0.02, 0.05))
    matmul = next(r for r in cal.rows if r.op == "matmul")
    assert set(matmul.aim["unsure"]) == {"0.02", "0.05"} and set(matmul.aim["checked"]) == {"0.02", "0.05"}
    assert any(line.startswith("check 2% (1/3): 1 rows") for line in log)
    for f in (0.02, 0.05):
        o = matmul.planted[f"{f:g}"]
        spin, effect = min(matmul.aim["checked"][f"{f:g}"], key=lambda c: abs(c[1] - f))
        assert (o.delay_ns, o.aimed) == (spin, effect) and abs(effect - f) <= 0.25 * f  # the check's size
        assert o.delay_ns == pytest.approx(f * 40_000, rel=0.3) and o.caught  # what the script says it takes
    checks = [s for s in json.loads((out / CALIBRATION_JSON).read_text())["steps"] if s["name"].startswith("check-")]
    assert checks and all(Path(s["path"]).name.startswith("pair-") for s in checks)
    planted = json.loads(next((out / "planted-0.05").glob("pair-*/base/run_identity.json")).read_text())
    for s in checks:  # a check runs the rows it checks, not every row of their ops, and may grow 4x longer
        ident = json.loads((Path(s["path"]) / "base" / "run_identity.json").read_text())
        assert ident["pair"]["only_rows"] == [matmul.key]
        check_schedule, run_schedule = ident["pair"]["schedule"], planted["pair"]["schedule"]
        assert check_schedule["max_rounds"] == 4 * run_schedule["max_rounds"]
        assert check_schedule["row_budget_s"] == 4 * run_schedule["row_budget_s"]
        # over four times the worker pairs, never confirmed (a check's call is no verdict)
        assert check_schedule["max_worker_pairs"] == 4 * run_schedule["max_worker_pairs"]
        assert check_schedule["worker_pool"] == MAX_POOL_PAIRS > run_schedule["worker_pool"]
        assert run_schedule["confirm_calls"] and not check_schedule["confirm_calls"]
        assert run_schedule["confirm_rounds"] > 0 and check_schedule["confirm_rounds"] == 0  # a call stops nothing
    assert all(g.met for g in cal.goals())


@pytest.mark.slow
def test_a_suite_without_builtin_ops_is_refused_before_anything_runs(tmp_path, monkeypatch):
    from tritongate.calibrate.run import plantable_ops
    from tritongate.errors import UsageError
    from tritongate.suites import ops_dir

    example = ops_dir() / "examples"
    # beside a copy of the example module under a name of its own (the suite's folder is searched;
    # the example's own module name stays the example's for the tests that import it)
    suite = tmp_path / "mine.yaml"
    (tmp_path / "calibrate_user_op.py").write_text((example / "scale_shift.py").read_text())
    monkeypatch.delitem(sys.modules, "calibrate_user_op", raising=False)
    suite.write_text("description: user ops only\nmodules: [calibrate_user_op]\n"
                     "dtypes: [float32]\nops:\n  scale_shift: {shapes: [[4096]]}\n")
    with pytest.raises(UsageError, match="none of its ops takes the planted slowdown"):
        plantable_ops(str(suite))
    monkeypatch.delitem(sys.modules, "calibrate_user_op", raising=False)
    had_example = "scale_shift" in sys.modules
    assert plantable_ops(str(example / "user_ops.yaml")) == frozenset({"add"})
    if not had_example:  # leave the import state as it was for the user-op tests
        sys.modules.pop("scale_shift", None)


@pytest.mark.slow
def test_a_calibration_stopped_part_way_resumes_without_measuring_a_finished_step_again(tmp_path):
    """The last planted step never finished (no step.json): a second run_calibration on the same
    folder reads back the A/A runs, the aim and the other planted steps, and runs only that one."""
    cal, _md, _png, out, _log = _calibrate(tmp_path, env={"TG_GAIN": "matmul:4"}, fractions=(0.02, 0.05))
    assert (out / "aim.json").is_file() and all((out / s / "step.json").is_file()
                                               for s in ("aa-1", "planted-0.02", "planted-0.05"))
    (out / "planted-0.05" / "step.json").unlink()
    again, pairs, spawned, log = _again(tmp_path, out, env={"TG_GAIN": "matmul:4"})
    assert pairs == ["planted-0.05"] and "aim" not in spawned  # the rest was read back
    assert "aim: finished before, read back from aim.json" in log  # run_calibration: detail defaults to log
    assert any(line.startswith("aa-1: finished before, read back from ") for line in log)
    assert [r.aa_verdicts for r in again.rows] == [r.aa_verdicts for r in cal.rows]
    assert [{k: o.delay_ns for k, o in r.planted.items()} for r in again.rows] == \
        [{k: o.delay_ns for k, o in r.planted.items()} for r in cal.rows]
    assert [s["wall_s"] for s in again.steps][:2] == [s["wall_s"] for s in cal.steps][:2]  # the cost it had
    assert again.rate(0.05).caught == again.rate(0.05).rows == 3


def test_a_row_whose_aim_fails_is_a_miss_at_every_size_not_left_out(tmp_path):
    cal, _md, _png, _out, log = _calibrate(tmp_path, env={"TG_AIM_ERROR": "softmax"}, fractions=(0.02, 0.05))
    softmax = next(r for r in cal.rows if r.op == "softmax")
    assert softmax.planted == {} and "softmax failed in the aim's worker" in softmax.aim["failed"]
    assert set(softmax.aim["missed"]) == {"0.02", "0.05"}
    assert cal.rate(0.05).unplanted == 1 and cal.goals()[1].counted == 3  # counted against the goal
    assert any(n.startswith("not aimed, so not planted (a miss at every size): softmax/64x512/float16") for n in cal.notes)
    assert any("aim 2/3 softmax/64x512/float16: not aimed (" in line for line in log)


@pytest.mark.slow
def test_an_aim_stopped_part_way_goes_on_from_the_rows_it_had(tmp_path):
    from tritongate.calibrate.resume import AimProgress, load_aims, save_aims

    cal, _md, _png, out, _log = _calibrate(tmp_path, fractions=(0.02, 0.05))
    done = load_aims(out)
    first = sorted(done.aims)[0]
    save_aims(out, AimProgress({first: done.aims[first]}, {}, 1.5, complete=False, gpus=("GPU-earlier",)))
    for step in ("planted-0.02", "planted-0.05"):
        (out / step / "step.json").unlink()
    again, pairs, spawned, log = _again(tmp_path, out)
    assert spawned.count("aim") == 1 and pairs == ["planted-0.02", "planted-0.05"]
    assert "aim: 1 row aimed before, read back from aim.json" in log
    assert not any(line.startswith("aim ") and f" {first}:" in line for line in log)  # not aimed again
    assert load_aims(out).complete and set(load_aims(out).aims) == {r.key for r in cal.rows}
    # the first part's GPU kept in aim.json, the resumed part's added: the spins were sized on both
    assert load_aims(out).gpus == ("GPU-earlier", "GPU-scripted")
    assert again.runner["gpus"] == ["GPU-earlier", "GPU-scripted"] and again.runner["scope"] == "runner class (2 GPUs)"


@pytest.mark.slow
def test_damaged_or_missing_resume_files_name_themselves_and_the_fix(tmp_path):
    import shutil

    from tritongate.errors import UsageError

    _cal, _md, _png, out, _log = _calibrate(tmp_path, fractions=(0.05,))
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    shutil.rmtree(next((out / "aa-1").glob("pair-*")))  # the original's pair is gone ...
    (copy / "calibration.json").unlink()
    _again(tmp_path, copy, fractions=(0.05,))  # ... a copy reads its own pairs (step.json is relative)
    with pytest.raises(UsageError, match=r"aa-1: its finished paired run .* cannot be read back .*delete .*step.json"):
        _again(tmp_path, out, fractions=(0.05,))
    (copy / "aa-1" / "step.json").write_text("{")
    with pytest.raises(UsageError, match=r"step.json: damaged .*delete .* to measure the step again"):
        _again(tmp_path, copy, fractions=(0.05,))
    (copy / "aa-1" / "step.json").unlink()
    (copy / "aim.json").write_text(json.dumps({"kind": "tritongate-calibration-aim", "schema": 1, "rows": {}}))
    with pytest.raises(UsageError, match=r"aim.json: damaged \(KeyError: 'failed'\); delete it to aim again"):
        _again(tmp_path, copy, fractions=(0.05,))


def test_settings_with_unknown_keys_or_behind_a_link_are_refused(tmp_path):
    from tritongate.calibrate.resume import SETTINGS, Settings, load_settings
    from tritongate.errors import UsageError

    folder = tmp_path / "cal"
    folder.mkdir()
    Settings(suite="pr", fractions=(0.02,), aa_runs=1, record="/r").write(folder)
    assert load_settings(folder).suite == "pr"
    doc = json.loads((folder / SETTINGS).read_text())
    (folder / SETTINGS).write_text(json.dumps({**doc, "max_pairs": 9}))  # a key a later version might add
    with pytest.raises(UsageError, match=r"settings.json has keys this tritongate does not know \(max_pairs\)"):
        load_settings(folder)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps(doc))
    (folder / SETTINGS).unlink()
    (folder / SETTINGS).symlink_to(elsewhere)
    with pytest.raises(UsageError, match=r"--resume .*a calibration's settings are a file in its folder"):
        load_settings(folder)


def test_steps_on_several_gpus_make_a_runner_class_calibration():
    """The H200 calibration's steps ran on four physical GPUs; it calibrated what PRs meet (a
    class of runner), and says so."""
    from tritongate.calibrate.analysis import Step, StepRow, analyse

    rows = (StepRow("add", "4096", "float32", "UNCHANGED", 0.0, 0.01, 2.0),)
    aa = [Step("aa-1", None, rows, 1.0, gpu_uuid="GPU-a"), Step("aa-2", None, rows, 1.0, gpu_uuid="GPU-b")]
    planted = [Step("planted-0.02", 0.02, rows, 1.0, delays_ns={}, gpu_uuid="GPU-b")]
    cal = analyse(created_utc="2026-12-05T00:00:00+00:00", suite="pr", runner={"device": "NVIDIA H200"}, aa=aa,
                  fractions=(0.02,), aims={}, aim_s=0.0, planted=planted)
    assert cal.runner["gpus"] == ["GPU-a", "GPU-b"] and cal.runner["scope"] == "runner class (2 GPUs)"
    assert [s["gpu_uuid"] for s in cal.steps] == ["GPU-a", "GPU-b", None, "GPU-b"]  # an aim whose GPU is unknown
    # the aim's worker on a third GPU: its spins were sized there, so the calibration spans three
    cal = analyse(created_utc="2026-12-05T00:00:00+00:00", suite="pr", runner={"device": "NVIDIA H200"}, aa=aa,
                  fractions=(0.02,), aims={}, aim_s=0.0, planted=planted, aim_gpus=("GPU-c",))
    assert cal.runner["scope"] == "runner class (3 GPUs)" and cal.steps[2]["gpu_uuid"] == "GPU-c"
