"""``tritongate batch`` end to end with the real ``python -m tritongate run`` (cpu backend, one
small builtin op of the smoke suite), then its resume, and the usage errors of both commands."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tritongate.cli.batch import main
from tritongate.batch.status import read_csv
from tritongate.gate.policy import GatePolicy
from tritongate.gate.verdict import run_gate
from tritongate.rundir import load_run


@pytest.fixture(scope="module")
def real_batch(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli")
    proc = subprocess.run([sys.executable, "-m", "tritongate.batch", "batch", "--suite", "smoke", "--ops", "add",
                           "--dtypes", "float32", "--backend", "cpu", "--out", str(tmp / "out"), "--devices", "0"],
                          capture_output=True, text=True, timeout=120)
    return proc, tmp


@pytest.mark.slow
def test_a_real_batch_of_one_builtin_op_on_the_cpu(real_batch) -> None:
    proc, tmp = real_batch
    assert proc.returncode == 0, proc.stderr
    batch = Path(proc.stdout.splitlines()[-1])
    assert batch.parent == tmp / "out" and batch.name.startswith("batch-smoke_")
    assert "[1/1] PASS" in proc.stderr and "add" in proc.stderr
    status = read_csv(batch / "ops_status.csv")
    assert [(s["op"], s["status"], s["backend"], s["timer"], s["dtypes"]) for s in status] == \
        [("add", "PASS", "cpu", "host-wall", "float32")]
    argv = (batch / "ops" / "add" / "logs" / "attempt-01.argv").read_text()
    assert "-m tritongate run" in argv and "--dtypes float32" in argv and "--backend cpu" in argv
    op_run = load_run(batch / status[0]["run"])
    merged = load_run(batch / "run")
    assert merged.complete and [r.key for r in merged.rows] == [r.key for r in op_run.rows] == [("add", "4096", "float32")]
    assert merged.identity["batch"]["ops"]["add"][0]["device"] == "0"
    assert op_run.identity["codegen_env"]["CUDA_VISIBLE_DEVICES"] is None  # cpu has no visibility variable
    assert (batch / "run" / "autotune_records" / "add.json").is_file()
    summary = read_csv(batch / "summary.csv")
    assert len(summary) == 1 and summary[0]["dtype"] == "float32" and float(summary[0]["latency_us"]) > 0
    assert run_gate(op_run, merged, GatePolicy()).exit_code == 0
    # one op, one dtype of smoke: the merged run says it is a part (never published as the suite's baseline)
    assert merged.identity["selection"] == {"ops": ["add"], "dtypes": ["float32"], "rows": 1}


@pytest.mark.slow
def test_a_batch_of_every_op_of_its_suite_merges_into_a_run_of_the_whole_suite(tmp_path) -> None:
    """Each op runs alone (`run --ops OP`, a part of the suite); the merged run covers all of it and
    is publishable as the suite's baseline, where each op's own run is not."""
    from tritongate.baselines import BaselineError, publish

    (tmp_path / "shapes.yaml").write_text("add: {shapes: [[4096]]}\nsoftmax: {shapes: [[8, 256]]}\n")
    suite = tmp_path / "mini.yaml"
    suite.write_text("shapes: shapes.yaml\nops: {add: {dtypes: [float32]}, softmax: {dtypes: [float32]}}\n")
    proc = subprocess.run([sys.executable, "-m", "tritongate.batch", "batch", "--suite", str(suite), "--backend", "cpu",
                           "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    batch = Path(proc.stdout.splitlines()[-1])
    merged = load_run(batch / "run")
    assert "selection" not in merged.identity and len(merged.rows) == 2
    add_run = next(p.parent for p in (batch / "ops" / "add").rglob("run_identity.json"))
    assert load_run(add_run).identity["selection"] == {"ops": ["add"], "dtypes": [], "rows": None}
    with pytest.raises(BaselineError, match="it measured part of suite 'mini'"):
        publish(tmp_path / "store", add_run, runner_class="cpu")
    assert publish(tmp_path / "store", batch / "run", runner_class="cpu").manifest.rows == 2


def test_resuming_a_finished_batch_reuses_every_op(real_batch, capsys) -> None:
    proc, _ = real_batch
    batch = Path(proc.stdout.splitlines()[-1])
    assert main(["batch", "--resume", str(batch)]) == 0
    out, err = capsys.readouterr()
    assert "(reused)" in err and out.splitlines()[-1] == str(batch)
    assert load_run(batch / "run").complete
    assert main(["batch", "--resume", str(batch), "--dtypes", "float16"]) == 2
    assert "planned differently" in capsys.readouterr().err
    assert main(["batch", "--resume", str(batch), "--out", str(batch)]) == 2
    assert "a resumed batch stays in its own directory" in capsys.readouterr().err


@pytest.mark.parametrize("argv, code, message", [
    (["batch", "--suite", "smoke", "--out", "x", "--shard", "3/2"], 2, "expected I/N with 1 <= I <= N"),
    (["batch", "--suite", "smoke", "--out", "x", "--devices", "0,,1"], 2, "expected device ids"),
    (["batch", "--suite", "smoke", "--out", "x", "--devices", "0,0"], 2, "named twice"),
    (["batch", "--suite", "smoke", "--out", "x", "--op-timeout", "-1"], 2, "seconds >= 0"),
    (["batch", "--suite", "", "--out", "x"], 2, "must not be empty"),
    (["batch", "--out", "x"], 2, "needs --suite and --out"),
    (["batch", "--suite", "smoke", "--out", "x", "--ops", "nope"], 2, "does not list"),
    (["batch", "--suite", "smoke", "--out", "x", "--dtypes", "flaot16"], 2, "check the spelling"),
    (["batch", "--suite", "smoke", "--out", "x", "--replay-root", "."], 2, "neither a batch directory"),
    (["batch", "--suite", "no/such/suite.yaml", "--out", "x"], 3, "PREFLIGHT_FAILED check=suite_file"),
    (["batch", "--resume", "no/such/batch"], 2, "not a directory"),
    (["batch", "--suite", "smoke", "--out", "x", "--python", "/no/such/python"], 2, "not an executable file"),
    (["batch", "--suite", "smoke", "--out", "x", "--env", "1X=2"], 2, "expected NAME=VALUE"),
    (["batch-merge", "--out", "x"], 2, "required"),
    (["batch-merge", "no/such/batch", "--out", "x"], 2, "not a directory"),
])
def test_usage_errors_are_one_line_and_exit_2_or_3(argv, code, message, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == code
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x").exists()  # nothing was started


def test_help_lists_the_exit_codes(capsys) -> None:
    assert main(["batch", "--help"]) == 0
    out = capsys.readouterr().out
    assert "130  interrupted" in out and "1    the batch completed, some op FAIL or TIMEOUT" in out
    assert main(["batch-merge", "--help"]) == 0
    assert "--allow-partial" in capsys.readouterr().out


@pytest.mark.parametrize("ops, shard, message", [
    ({"skip_a": ["float32"], "skip_b": ["float32"]}, (1, 1),
     r"nothing was measured: every one of its 2 ops was SKIP \(the op says it cannot run here\); .*ops_status\.csv "
     r"gives each one's reason"),
    ({"ok_a": ["float32"]}, (2, 2), r"nothing was measured: shard 2/2 holds no op of the suite; the batch directory "
                                    r"is .*batch-fake-shard2of2_\w+; use fewer shards than the suite has ops"),
])
def test_a_batch_that_measured_nothing_exits_2(ops, shard, message, tmp_path, capsys) -> None:
    """As `run` measuring no row: a batch of which no op passed, and none failed, is no success."""
    import io
    import re

    from tests.batch.fake_ops import fake_command, write_suite
    from tritongate.batch import BatchRequest
    from tritongate.cli.batch import dispatch, execute

    suite = write_suite(tmp_path / "fake.yaml", ops)
    out = io.StringIO()
    request = BatchRequest(suite=str(suite), out=tmp_path / "out", shard=shard, command=fake_command(tmp_path / "s"))
    assert dispatch(lambda: execute(request, out=out, err=io.StringIO())) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert re.search(message, line), line
    assert (Path(out.getvalue().splitlines()[-1]) / "ops_status.csv").is_file()  # the batch is still written
