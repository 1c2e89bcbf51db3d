"""The smoke suite, for real, under the Triton interpreter."""

import json

import pytest
import torch
import yaml

from tritongate import markers
from tritongate.backends import BACKENDS, CPU_MEASURE
from tritongate.ops.builtin import REGISTRY
from tritongate.ops.registry import Case, OpSpec
from tritongate.rundir import load_run
from tritongate.rowcase import row_seed
from tritongate.runner import RunRequest, run_suite
from tritongate.schema import RowStatus

from tests.conftest import write_suite

CPU = BACKENDS["cpu"]


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    events = []
    outcome = run_suite(RunRequest(suite="smoke", backend=CPU, out=out), events.append)
    return outcome, events


@pytest.mark.slow
def test_smoke_run_writes_a_complete_valid_run_dir(smoke_run):
    outcome, _ = smoke_run
    run = load_run(outcome.path)  # validates schema and completeness
    assert run.complete and run.mode == "record"
    ops = {r.op for r in run.rows}
    assert ops == {"add", "silu_mul", "softmax", "rmsnorm", "matmul", "attention", "attention_causal"}
    for row in run.rows:
        assert row.status is RowStatus.OK, row.error
        assert row.correctness.ok, (row.key, row.correctness)
        assert row.timer == "host-wall" and not row.markers
        assert len(row.samples) == CPU_MEASURE.rounds * CPU_MEASURE.samples_per_round
        assert row.variants and all(v.launches >= 1 for v in row.variants)
        assert row.params["seed"] == row_seed(row.op, row.case, row.dtype)


def test_autotuned_kernels_record_the_chosen_variant(smoke_run):
    run = load_run(smoke_run[0].path)
    mm = next(r for r in run.rows if r.op == "matmul")
    (variant,) = mm.variants
    assert variant.kernel == "tritongate.ops.kernels.matmul.matmul_kernel_fixed"
    assert "BLOCK_M=" in variant.name and " w" in f" {variant.name}"


def test_identity_log_and_shapes(smoke_run):
    path = smoke_run[0].path
    ident = json.loads((path / "run_identity.json").read_text())
    assert ident["backend"] == "cpu" and ident["timer"] == "host-wall"
    assert ident["software"]["triton"]["version"] and ident["suite"]["name"] == "smoke"
    assert ident["codegen_env"]["TRITON_INTERPRET"] == "1"
    assert ident["wall_s"] > 0
    assert "selection" not in ident  # the whole suite: publishable as its baseline
    shapes = yaml.safe_load((path / "shapes.yaml").read_text())
    assert shapes["softmax"] == {"shapes": [[8, 256]]}
    log = (path / "run.log").read_text()
    assert log.startswith("tritongate run  mode=record  suite=smoke  backend=cpu")
    assert log.count("\nSUCCESS ") == 8 and "RUN_COMPLETE rows=8 flagged=0" in log
    assert "\x1b[" not in log


def test_progress_events(smoke_run):
    kinds = [e.kind for e in smoke_run[1]]
    assert kinds[0] == "start" and kinds[-1] == "finish"
    assert kinds.count("row_done") == 8


def _register(monkeypatch, name, build):
    spec = OpSpec(name, "test op", "[n]", (1,), ("float32",), build, bytes=lambda s, e: 1.0)
    monkeypatch.setitem(REGISTRY._ops, name, spec)


def test_wrong_results_and_failing_rows_are_kept_and_marked(tmp_path, monkeypatch):
    def wrong(shape, dtype, device, gen):
        x = torch.ones(shape)
        return Case(lambda: None, lambda: x, lambda: x * 2, (x,))

    def broken(shape, dtype, device, gen):
        def launch():
            raise RuntimeError("kernel exploded")
        return Case(launch, lambda: None, lambda: None)

    _register(monkeypatch, "t_wrong", wrong)
    _register(monkeypatch, "t_broken", broken)
    suite = write_suite(tmp_path, "shapes: shapes.yaml\ndtypes: [float32]\nops: {t_wrong: {}, t_broken: {}, add: {}}\n",
                        "t_wrong: {shapes: [[8]]}\nt_broken: {shapes: [[8]]}\nadd: {shapes: [[64]]}\n")
    outcome = run_suite(RunRequest(suite=str(suite), backend=CPU, out=tmp_path / "runs"))
    run = load_run(outcome.path)
    rows = {r.op: r for r in run.rows}
    assert len(run.rows) == 3  # the broken row did not stop the run
    assert markers.kinds(list(rows["t_wrong"].markers)) == {markers.CORRECTNESS_MISMATCH}
    assert not rows["t_wrong"].correctness.ok and rows["t_wrong"].samples
    assert rows["t_broken"].status is RowStatus.ERROR and "kernel exploded" in rows["t_broken"].error
    assert markers.kinds(list(rows["t_broken"].markers)) == {markers.ROW_ERROR}
    assert rows["add"].status is RowStatus.OK
    log = (outcome.path / "run.log").read_text()
    assert "FAILED t_broken" in log and "CORRECTNESS_MISMATCH reason=8 of 8 elements" in log


def test_interrupted_run_loads_as_incomplete(tmp_path, monkeypatch):
    from tritongate.errors import IncompleteRunError

    def interrupt(shape, dtype, device, gen):
        raise KeyboardInterrupt

    _register(monkeypatch, "t_ctrl_c", interrupt)
    suite = write_suite(tmp_path, "shapes: shapes.yaml\ndtypes: [float32]\nops: {add: {}, t_ctrl_c: {}}\n",
                        "add: {shapes: [[64]]}\nt_ctrl_c: {shapes: [[8]]}\n")
    with pytest.raises(KeyboardInterrupt) as stopped:
        run_suite(RunRequest(suite=str(suite), backend=CPU, out=tmp_path / "runs"))
    (path,) = (tmp_path / "runs").iterdir()
    assert stopped.value.__notes__ == [f"partial run directory (loads as incomplete): {path}"]
    with pytest.raises(IncompleteRunError, match=r"failed, 1 rows\): KeyboardInterrupt\. Re-run"):
        load_run(path)
    assert "RUN_FAILED KeyboardInterrupt" in (path / "run.log").read_text()


@pytest.mark.slow
def test_replay_of_the_smoke_record_tunes_nothing(smoke_run, tmp_path):
    record = smoke_run[0].path
    records = sorted(p.name for p in (record / "autotune_records").iterdir())
    assert "meta.json" in records and "matmul.json" in records
    meta = json.loads((record / "autotune_records" / "meta.json").read_text())
    assert meta["backend"] == "cpu" and meta["triton"]["version"]
    recorded_rows = {r.key: r for r in load_run(record).rows}
    assert all(r.autotune.mode == "record" for r in recorded_rows.values())
    assert recorded_rows[("matmul", "64x64x64", "float16")].autotune.sweep_benchmarks > 0

    outcome = run_suite(RunRequest(suite="smoke", backend=CPU, out=tmp_path, replay_from=record))
    replay = load_run(outcome.path)
    assert replay.mode == "replay" and not (outcome.path / "autotune_records").exists()
    ident = json.loads((outcome.path / "run_identity.json").read_text())
    assert ident["mode"] == "replay" and ident["replay_from"] == str(record.resolve())
    assert ident["tuner_cache"]["mode"] == "shared"
    assert "mode=replay" in (outcome.path / "run.log").read_text().splitlines()[0]
    for row in replay.rows:
        assert row.autotune.mode == "replay" and row.autotune.sweep_benchmarks == 0
        assert row.measurement.launches_per_sample == recorded_rows[row.key].measurement.launches_per_sample
        assert not row.markers, row.markers
        want = {(k["kernel"], str(k["key"])): k["config"] for k in recorded_rows[row.key].autotune.kernels}
        got = {(k["kernel"], str(k["key"])): k["config"] for k in row.autotune.kernels}
        assert got == want and all(k["source"] == "replayed" for k in row.autotune.kernels)


def test_a_row_that_will_be_slow_on_the_interpreter_is_announced_before_it_runs(tmp_path):
    class Stop(Exception):
        pass

    events = []

    def progress(ev):
        events.append(ev)
        if ev.kind == "row_start":
            raise Stop  # the note must already be out: the row itself would take minutes

    suite = write_suite(tmp_path, "shapes: shapes.yaml\nops: {matmul: {dtypes: [float16]}}\n",
                        "matmul: {shapes: [[1024, 1024, 1024]]}\n")
    with pytest.raises(Stop):
        run_suite(RunRequest(suite=str(suite), backend=CPU, out=tmp_path / "out"), progress)
    notes = [ev.message for ev in events if ev.kind == "note"]
    assert len(notes) == 1 and "slow on the interpreter: matmul 1024x1024x1024 float16" in notes[0]
    assert [ev.kind for ev in events][:2] == ["start", "note"]
    (run_dir,) = (tmp_path / "out").iterdir()
    assert "NOTE slow on the interpreter" in (run_dir / "run.log").read_text()


def test_an_ops_own_sample_length_reaches_its_rows_measurement(tmp_path, monkeypatch):
    """The suite's `sample_ms` of an op is the least device time its rows' samples aim at; the
    other ops keep the run's (here 2 ms, as --sample-ms 2 gives), and a longer run's length is
    every op's; a replay keeps its record's k. The identity keeps the suite's lengths."""
    import dataclasses

    import tritongate.runner as runner

    calls: list[tuple[str, float, int | None]] = []
    real_row = runner.Runner._run_row

    def spy_row(self, item, device, config, launches_per_sample=None):
        calls.append((item.op, config.target_sample_s, launches_per_sample))
        return real_row(self, item, device, config, launches_per_sample)

    monkeypatch.setattr(runner.Runner, "_run_row", spy_row)
    suite = write_suite(tmp_path, "shapes: shapes.yaml\ndtypes: [float32]\nops: {add: {sample_ms: 3}, softmax: {}}\n",
                        "add: {shapes: [[16]]}\nsoftmax: {shapes: [[2, 8]]}\n")
    config = dataclasses.replace(CPU_MEASURE, rounds=1, samples_per_round=1, target_sample_s=0.002)
    record = run_suite(RunRequest(suite=str(suite), backend=CPU, out=tmp_path / "runs", config=config))
    assert calls == [("add", 0.003, None), ("softmax", 0.002, None)]
    ident = json.loads((record.path / "run_identity.json").read_text())
    assert ident["suite"]["sample_ms"] == {"add": 3.0}
    calls.clear()
    longer = dataclasses.replace(config, target_sample_s=0.004)  # --sample-ms 4: the jittery op is not cut to 3
    run_suite(RunRequest(suite=str(suite), backend=CPU, out=tmp_path / "runs4", config=longer))
    assert calls == [("add", 0.004, None), ("softmax", 0.004, None)]
    calls.clear()
    run_suite(RunRequest(suite=str(suite), backend=CPU, out=tmp_path / "runs", replay_from=record.path,
                         config=config))
    recorded = {r.op: r.measurement.launches_per_sample for r in load_run(record.path).rows}
    assert [(op, k) for op, _, k in calls] == [("add", recorded["add"]), ("softmax", recorded["softmax"])]


@pytest.mark.parametrize("code", [0, None, 1, "the compiler gave up"])
def test_a_row_whose_code_calls_sys_exit_is_an_error_row_not_the_end_of_the_run(tmp_path, monkeypatch, capsys, code):
    # The op's (or the compiler's) code is the code under test: sys.exit in it is that row's
    # failure, as an exception is; before, it left the run "failed" and `tritongate run`
    # exited 0 (sys.exit(0)) or 1 (the gate-failed code), with no partial-run note.
    import sys

    from tritongate.cli import main

    def quits(shape, dtype, device, gen):
        sys.exit(code)

    _register(monkeypatch, "t_quits", quits)
    suite = write_suite(tmp_path, "shapes: shapes.yaml\ndtypes: [float32]\nops: {t_quits: {}, add: {}}\n",
                        "t_quits: {shapes: [[8]]}\nadd: {shapes: [[64]]}\n")
    assert main(["run", "--suite", str(suite), "--backend", "cpu", "--out", str(tmp_path / "runs")]) == 0
    (path,) = (tmp_path / "runs").iterdir()
    run = load_run(path)  # complete: the run went on past the row
    rows = {r.op: r for r in run.rows}
    assert rows["t_quits"].status is RowStatus.ERROR and "SystemExit" in rows["t_quits"].error
    assert rows["add"].status is RowStatus.OK
