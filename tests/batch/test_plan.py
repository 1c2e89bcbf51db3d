"""The plan (which ops, which shard, which dtypes), the per-op command and environment, and
the small rules that decide an attempt's fate (what is retried, what is a declared skip)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.batch.fake_ops import write_suite
from tritongate.batch.opflow import declared_skip, retryable
from tritongate.batch.plan import (BatchRequest, OpInvocation, RunOptions, op_environment, parse_devices,
                                   parse_shard, plan_batch, replay_source, tritongate_run, visibility_var)
from tritongate.batch.status import Attempt, OpResult, OpStatus, write_op_result
from tritongate.errors import UsageError


def test_shards_take_every_nth_op_of_the_plan(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.yaml", {f"op{i}": ["float32"] for i in range(7)})
    shares = [[p.op for p in plan_batch(BatchRequest(suite=str(suite), out=tmp_path, shard=(i, 3))).ops]
              for i in (1, 2, 3)]
    assert shares == [["op0", "op3", "op6"], ["op1", "op4"], ["op2", "op5"]]
    only = plan_batch(BatchRequest(suite=str(suite), out=tmp_path, ops=("op5", "op1", "op3"), shard=(2, 2)))
    assert only.planned == ("op1", "op3", "op5") and [p.op for p in only.ops] == ["op3"]  # suite order


def test_dtypes_narrow_each_op_or_fall_back_to_its_own(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.yaml", {"a": ["float32", "float16"], "b": ["float32"], "c": ["float16"]})
    plan = plan_batch(BatchRequest(suite=str(suite), out=tmp_path, dtypes=("float16",)))
    a, b, c = plan.ops
    assert (a.dtypes, a.restricted, a.ask) == (("float16",), True, ("float16",))
    assert (b.dtypes, b.restricted, b.ask) == (("float32",), False, None) and b.notes[0].startswith("dtype_fallback")
    assert (c.dtypes, c.restricted, c.ask) == (("float16",), False, None)  # all it has: no --dtypes needed
    free = plan_batch(BatchRequest(suite=str(suite), out=tmp_path)).ops[0]
    assert free.ask is None and free.dtypes == ("float32", "float16")


def test_the_real_command_and_the_op_environment(tmp_path: Path, monkeypatch) -> None:
    inv = OpInvocation(op="add", suite="/s.yaml", dtypes=("float16",), out=tmp_path / "ops" / "add",
                       replay_from=Path("/rec"), options=RunOptions(backend="cuda", rounds=3, isolate_tuner_cache=True))
    argv = tritongate_run("/venv/bin/python")(inv)
    assert argv[:4] == ["/venv/bin/python", "-m", "tritongate", "run"]
    assert argv[argv.index("--ops") + 1] == "add" and argv[argv.index("--out") + 1] == str(tmp_path / "ops" / "add")
    assert ["--backend", "cuda", "--rounds", "3", "--isolate-tuner-cache"] == argv[argv.index("--backend"):argv.index("--backend") + 5]
    assert argv[-4:] == ["--dtypes", "float16", "--replay-from", "/rec"]
    assert RunOptions(sample_ms=2.0).args() == ["--backend", "auto", "--sample-ms", "2.0"]
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    req = BatchRequest(suite="s", out=tmp_path, options=RunOptions(backend="rocm"), env={"K": "V"})
    env = op_environment(req, "3", tmp_path / "pp")
    assert env["HIP_VISIBLE_DEVICES"] == "3" and env["K"] == "V" and env["PYTHONPATH"].startswith(str(tmp_path / "pp"))
    assert env["PYTHONPATH"].endswith("/elsewhere")
    monkeypatch.delenv("HIP_VISIBLE_DEVICES", raising=False)
    assert "HIP_VISIBLE_DEVICES" not in op_environment(req, "", None)  # no --devices: left as it is
    assert visibility_var("auto") == visibility_var("nvidia") == "CUDA_VISIBLE_DEVICES"
    assert visibility_var("cpu") == "" and visibility_var("nonsense") == ""


def test_replay_source_prefers_the_ops_own_record(tmp_path: Path) -> None:
    batch = tmp_path / "b"
    (batch / "ops" / "add" / "rec").mkdir(parents=True)
    (batch / "batch.json").write_text("{}")
    assert replay_source(batch, "add") is None  # no result, no merged run: nothing to replay
    (batch / "run").mkdir()
    (batch / "run" / "results.json").write_text("{}")
    assert replay_source(batch, "add") == batch / "run"
    write_op_result(batch / "ops" / "add", OpResult("add", OpStatus.PASS, runs=("ops/add/rec",)))
    assert replay_source(batch, "add") == batch / "ops" / "add" / "rec"
    write_op_result(batch / "ops" / "add", OpResult("add", OpStatus.PASS, runs=("ops/add/rec", "ops/add/rec2")))
    assert replay_source(batch, "add") == batch / "run"  # rescued per dtype: the merged run has them all
    assert replay_source(batch / "run", "add") == batch / "run"  # a run directory is its own record


@pytest.mark.parametrize("error, skip", [
    ("NotImplementedError: no fp8 on this device", True),
    ("SkipTest: needs sm90", True),
    ("RuntimeError: bfloat16 is not supported on this backend", True),
    ("AssertionError: dtype can't be supported by this op", True),
    ("CompilationError: unsupported layout conversion", False),  # a compiler regression stays a failure
    ("RuntimeError: CUDA error: an illegal memory access was encountered", False),
])
def test_declared_skips(error: str, skip: bool) -> None:
    assert declared_skip(error) is skip


@pytest.mark.parametrize("rc, outcome, retry", [
    (1, OpStatus.FAIL, True), (-6, OpStatus.FAIL, True), (-11, OpStatus.FAIL, True), (134, OpStatus.FAIL, True),
    (2, OpStatus.FAIL, False), (3, OpStatus.FAIL, False), (4, OpStatus.FAIL, False),
    (-9, OpStatus.TIMEOUT, False), (0, OpStatus.PASS, False),
])
def test_what_is_retried(rc: int, outcome: OpStatus, retry: bool) -> None:
    a = Attempt(number=1, dtypes=None, outcome=outcome, signature="", reason="", rc=rc, wall_s=0.0, run=None,
                stdout_log="", stderr_log="")
    assert retryable(a) is retry


def test_request_and_argument_checks(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="either an output folder"):
        BatchRequest(suite="s")
    with pytest.raises(UsageError, match="1 <= I <= N"):
        BatchRequest(suite="s", out=tmp_path, shard=(0, 2))
    with pytest.raises(UsageError, match="named twice"):
        BatchRequest(suite="s", out=tmp_path, devices=("0", "0"))
    assert parse_shard("2/4") == (2, 4) and parse_devices("0, 1,GPU-abc") == ("0", "1", "GPU-abc")
    for bad in ("4/2", "x", "1/0"):
        with pytest.raises(UsageError):
            parse_shard(bad)
