import json
from pathlib import Path

import pytest

from tritongate.cli import main

from tests.conftest import write_suite


def test_run_prints_the_run_dir_last(tmp_path, capsys):
    assert main(["run", "--suite", "smoke", "--backend", "cpu", "--out", str(tmp_path),
                 "--ops", "add,softmax", "--color", "never"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    (run_dir,) = list(tmp_path.iterdir())
    assert out[-1] == str(run_dir)
    assert run_dir.name.startswith("smoke_")
    assert any("softmax" in line for line in out) and "3 rows" in out[-2]
    # a part of the suite says so: `baseline publish` refuses it as the suite's baseline
    ident = json.loads((run_dir / "run_identity.json").read_text())
    assert ident["selection"] == {"ops": ["add", "softmax"], "dtypes": [], "rows": None}
    assert main(["baseline", "publish", str(run_dir), "--store", str(tmp_path.parent / "store"),
                 "--runner-class", "cpu"]) == 2
    assert "it measured part of suite 'smoke' (--ops add,softmax, 3 rows)" in capsys.readouterr().err


def test_an_ir_capture_prints_no_time_while_running_nor_in_show(tmp_path, capsys, monkeypatch):
    # TRITONGATE_CAPTURE_ONLY=1 executes no kernel: a new user read its progress lines and `show`'s
    # medians as the kernels' times
    from triton.runtime.interpreter import InterpretedFunction

    # the capture replaces the interpreter's launch for the whole process: put it back afterwards
    monkeypatch.setattr(InterpretedFunction, "run", vars(InterpretedFunction)["run"])
    monkeypatch.setenv("TRITONGATE_CAPTURE_ONLY", "1")
    assert main(["run", "--suite", "smoke", "--backend", "cpu", "--out", str(tmp_path), "--ops", "add",
                 "--dtypes", "float32", "--color", "never"]) == 0
    ran = capsys.readouterr()
    (run_dir,) = list(tmp_path.iterdir())
    monkeypatch.delenv("TRITONGATE_CAPTURE_ONLY")
    assert main(["show", str(run_dir), "--color", "never"]) == 0
    shown = capsys.readouterr().out
    for text in (ran.err, ran.out, shown):
        assert "not executed (IR capture)" in text and "µs" not in text and " ms" not in text, text


def test_ops_that_name_every_op_of_the_suite_are_the_whole_suite(tmp_path, capsys):
    suite = write_suite(tmp_path, "shapes: shapes.yaml\nops: {add: {dtypes: [float32]}}\n",
                        "add: {shapes: [[4096]]}\n")
    assert main(["run", "--suite", str(suite), "--backend", "cpu", "--out", str(tmp_path / "o"), "--ops", "add",
                 "--color", "never"]) == 0
    (run_dir,) = list((tmp_path / "o").iterdir())
    assert "selection" not in json.loads((run_dir / "run_identity.json").read_text())


@pytest.mark.parametrize("suite,shapes,check", [
    ("shapes: shapes.yaml\nops: {nosuchop: {}}\n", "nosuchop: {shapes: [[1]]}\n", "unknown_op"),
    ("shapes: shapes.yaml\nops: [add\n", "", "suite_file"),  # malformed YAML
    ("shapes: shapes.yaml\nops: {}\n", "", "suite_empty"),
    ("shapes: shapes.yaml\nops: {softmax: {}}\n", "softmax: {shapes: [[1, 2, 3, 4]]}\n", "shape_arity"),
])
def test_bad_input_is_a_named_preflight_failure(tmp_path, capsys, suite, shapes, check):
    path = str(write_suite(tmp_path, suite, shapes))
    assert main(["run", "--suite", path, "--backend", "cpu", "--out", str(tmp_path / "runs")]) == 3
    err = capsys.readouterr().err
    assert f"!!! PREFLIGHT_FAILED check={check}" in err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_unknown_backend_and_unwritable_out(tmp_path, capsys):
    assert main(["run", "--suite", "smoke", "--backend", "tpu", "--out", str(tmp_path)]) == 3
    assert "check=backend" in capsys.readouterr().err
    (tmp_path / "f").write_text("")
    assert main(["run", "--suite", "smoke", "--backend", "cpu", "--out", str(tmp_path / "f" / "x")]) == 3
    assert "check=out_dir" in capsys.readouterr().err


def test_cuda_backend_without_a_gpu_fails_preflight(tmp_path, capsys, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("TRITON_DISABLE_LINE_INFO", raising=False)  # the GPU path sets it
    assert main(["run", "--suite", "smoke", "--backend", "cuda", "--out", str(tmp_path)]) == 3
    assert "check=device" in capsys.readouterr().err


def test_bad_measurement_option_is_usage_error(tmp_path, capsys):
    # refused by the parser, before anything runs
    assert main(["run", "--suite", "smoke", "--backend", "cpu", "--out", str(tmp_path), "--rounds", "0"]) == 2
    assert "--rounds: expected a whole number >= 1, got '0'" in capsys.readouterr().err


def test_sample_ms_sets_a_records_sample_length_and_a_replay_refuses_it(tmp_path, capsys):
    assert main(["run", "--suite", "smoke", "--backend", "cpu", "--out", str(tmp_path / "r"), "--ops", "add",
                 "--color", "never", "--sample-ms", "2"]) == 0
    out, err = capsys.readouterr()
    record = out.strip().splitlines()[-1]
    assert "note: --sample-ms sets how many CUDA-graph launches make a sample; backend cpu times with the " \
           "host-wall timer, so it changes nothing here" in err
    ident = json.loads((Path(record) / "run_identity.json").read_text())
    assert ident["measure_config"]["target_sample_s"] == 0.002
    assert main(["run", "--suite", "smoke", "--backend", "cpu", "--out", str(tmp_path / "p"), "--ops", "add",
                 "--replay-from", record, "--sample-ms", "2"]) == 2
    assert "--sample-ms with --replay-from: a replay measures each row with its record's launches" in \
        capsys.readouterr().err and not (tmp_path / "p").exists()
    for bad in ("0", "-1", "101", "x"):
        assert main(["run", "--suite", "smoke", "--backend", "cpu", "--out", str(tmp_path / "b"),
                     "--sample-ms", bad]) == 2
        assert "--sample-ms: must be" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["run"], ["pair", "REC"], ["batch"], ["calibrate"]])
@pytest.mark.parametrize("option,value", [("--ops", ","), ("--ops", " , "), ("--dtypes", ",,")])
def test_a_filter_that_names_nothing_is_refused_not_the_whole_suite(tmp_path, capsys, command, option, value):
    # `--ops ,` measured every row of the suite, as if no filter had been given (every command
    # that takes --ops shares the option)
    argv = [str(tmp_path / "rec") if a == "REC" else a for a in command]
    assert main([*argv, "--suite", "smoke", "--backend", "cpu", "--out", str(tmp_path / "out"), option, value]) == 2
    err = capsys.readouterr().err
    assert f"{option}: {value!r} names nothing" in err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("rows,fragment", [
    ([["add", "999", "float32"]], "names 1 row(s) that"),  # none of the suite's: was a complete run of 0 rows, exit 0
    ([["add", "999", "float32"], ["nosuch", "1", "float32"]], "names 2 row(s) that"),
])
def test_only_rows_that_the_suite_lacks_are_refused(tmp_path, capsys, rows, fragment):
    listed = tmp_path / "rows.json"
    listed.write_text(json.dumps(rows))
    out = tmp_path / "out"
    assert main(["run", "--suite", "smoke", "--backend", "cpu", "--out", str(out), "--only-rows", str(listed)]) == 3
    err = capsys.readouterr().err
    assert "check=suite_empty" in err and fragment in err and "add 999 float32" in err
    assert not out.exists() or not [p for p in out.iterdir() if not p.name.startswith(".")]
