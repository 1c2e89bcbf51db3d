"""Which rows a compiler change touches, known without a GPU: a record's launched variants
(a dot kernel and an elementwise one, compiled for cuda:90) recompiled under two codegen
configurations that differ in one option (DISABLE_MMA_V3), diffed, and handed to a paired
run that then skips the rows whose kernels did not change."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tritongate.cli import main
from tritongate.gate.verdict import Verdict
from tritongate.ir.capture import CompiledSeen, row_ir
from tritongate.ir.changed import load_changed_rows
from tritongate.ir.store import IRStore
from tritongate.ops.kernels.elementwise import add_kernel_fixed
from tritongate.ops.kernels.matmul import matmul_kernel_fixed
from tritongate.pair.build import CompilerBuild
from tritongate.pair.orchestrator import PairRequest, run_pair
from tritongate.rundir import RunWriter
from tritongate.schema import SkipReason

from tests.ir.compiled.aot_kernels import DIV16, compiled_add
from tests.pair.fakes import InProcessWorker, ScriptedExecutor, World

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

MATMUL_CASE = "64x64x64"  # the scripted paired run's rows: add 4096, softmax 64x512, matmul 64x64x64


def compiled_matmul():
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    fn = matmul_kernel_fixed
    sig = {n: "*fp16" for n in ("a_ptr", "b_ptr", "c_ptr")}
    sig.update({n: "i32" for n in fn.arg_names[3:12]})
    sig.update(plant_cycles="i64")
    sig.update({n: "constexpr" for n in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "PLANT")})
    consts = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "PLANT": False}
    attrs = {(i,): DIV16 for i in (0, 1, 2, 3, 4, 5, 6, 8, 10)}
    return triton.compile(ASTSource(fn=fn, signature=sig, constexprs=consts, attrs=attrs),
                          target=GPUTarget("cuda", 90, 32), options={"num_warps": 4, "num_stages": 3})


@pytest.fixture
def record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TRITON_DISABLE_LINE_INFO", "1")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache-record"))
    run = tmp_path / "record"
    RunWriter(run, {"backend": "cuda", "codegen_env": {"TRITON_DISABLE_LINE_INFO": "1"}}).finish()
    store = IRStore(run)
    for fn, k, case, row in ((add_kernel_fixed, compiled_add(), "4096", "add/float16"),
                             (matmul_kernel_fixed, compiled_matmul(), MATMUL_CASE, "matmul/float16")):
        seen = CompiledSeen()
        seen.add(fn, k)
        store.add(row_ir(seen, {k.hash: 1}, case=case, row=row))
    store.close()
    return run


def test_one_codegen_option_changes_exactly_the_dot_kernel_and_pair_skips_the_rest(
        tmp_path: Path, record: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache-base"))
    assert main(["ir", "--from", str(record), "--target", "cuda:90", "--out", str(tmp_path / "base_ir")]) == 0
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache-cand"))
    monkeypatch.setenv("DISABLE_MMA_V3", "1")  # the candidate "compiler": Hopper MMA off
    assert main(["ir", "--from", str(record), "--target", "cuda:90", "--out", str(tmp_path / "cand_ir")]) == 0
    monkeypatch.delenv("DISABLE_MMA_V3")
    assert main(["ir-diff", str(tmp_path / "base_ir"), str(tmp_path / "cand_ir"), "--out", str(tmp_path / "d")]) == 0
    capsys.readouterr()

    with open(tmp_path / "d" / "index.tsv", encoding="utf-8", newline="") as f:
        status = {(r["case"], r["kernel"].rsplit(".", 1)[1]): r["status"] for r in csv.DictReader(f, delimiter="\t")}
    assert status == {("4096", "add_kernel_fixed"): "identical", (MATMUL_CASE, "matmul_kernel_fixed"): "changed"}
    diff = next((tmp_path / "d" / MATMUL_CASE).rglob("*.diff")).read_text()
    assert "warp_group_dot" in diff and "loc(" not in diff  # wgmma in the base, mma v2 in the candidate

    changed = load_changed_rows(tmp_path / "d", record=record)
    assert changed.unchanged == {("add", "4096", "float16")}
    assert changed.changed == {("matmul", MATMUL_CASE, "float16")}

    # the paired run on scripted devices: every binary differs (as in a real compiler PR),
    # yet the add row is known unchanged and never reaches a worker; softmax, unknown to the
    # diff, is measured like matmul
    made: dict[str, InProcessWorker] = {}

    def spawn(spec):
        made[spec.side] = InProcessWorker(spec.side, lambda settings, spec=spec: ScriptedExecutor(
            settings, world=World(), env=spec.env, side=spec.side))
        return made[spec.side]

    request = PairRequest(baseline=tmp_path / "baseline", suite="scripted", out=tmp_path / "out",
                          base=CompilerBuild("base"), cand=CompilerBuild("candidate", env={"TG_BINARY": "new"}),
                          executor="tests.pair.fakes:ScriptedExecutor", changed_from=changed)
    outcome = run_pair(request, spawn=spawn)
    verdicts = {r.op: r for r in outcome.result.rows}
    assert verdicts["add"].verdict is Verdict.IDENTICAL_BINARY and "ahead of time" in verdicts["add"].reasons[0]
    assert verdicts["matmul"].verdict is Verdict.UNCHANGED and verdicts["matmul"].timing.paired
    assert verdicts["softmax"].verdict is Verdict.UNCHANGED
    for side in ("base", "candidate"):
        # every worker of the side's pool (the spec's label: base, base-1, ...) prepared only timed rows
        prepared = [args["op"] for name, w in made.items() if name.split("-")[0] == side
                    for cmd, args in w.log if cmd == "prepare"]
        assert sorted(set(prepared)) == ["matmul", "softmax"]
    add_rows = [r for pair in outcome.rows for r in pair if r.op == "add"]
    assert [r.skipped for r in add_rows] == [SkipReason.UNCHANGED_AHEAD_OF_TIME] * 2
    import json

    doc = json.loads(outcome.verdict_md.with_name("verdict.json").read_text())
    (add,) = [r for r in doc["rows"] if r["op"] == "add"]
    assert add["verdict"] == "IDENTICAL_BINARY" and not add["timed"] and "ahead of time" in add["reasons"][0]
    # the scripted runs keep no TTGIR (as interpreter runs): the ahead-of-time diff is the verdict's IR
    (matmul,) = [r for r in doc["rows"] if r["op"] == "matmul"]
    assert matmul["ir"]["changed"] == 1 and matmul["ir"]["diff"].startswith(f"ir-diff/{MATMUL_CASE}/")
    assert (outcome.verdict_md.parent / matmul["ir"]["diff"]).is_file()
    assert doc["ir"]["folder"] == "ir-diff" and doc["ir"]["note"].startswith("IR compared ahead of time")
    assert "🔎 IR changed, time unchanged (1)" in outcome.verdict_md.read_text()
