"""Capture and the ttgir/ folder, on real cuda:90 compiles made without a GPU."""

from __future__ import annotations

import pytest

from tritongate.ir.capture import CompiledSeen, describe_compiled, row_ir
from tritongate.ir.index import INDEX, read_index
from tritongate.ir.store import NAMING, IRStore, TTGIR_DIR
from tritongate.ops.kernels.elementwise import add_kernel_fixed

from tests.ir.compiled.aot_kernels import ADD, DIV16, compiled_add

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def seen_of(*kernels) -> CompiledSeen:
    seen = CompiledSeen()
    for k in kernels:
        seen.add(add_kernel_fixed, k)
    return seen


def test_a_compiled_kernel_is_described_by_argument_names():
    v = describe_compiled(compiled_add(), kernel=ADD, case="4096")
    assert v.signature["x_ptr"] == "*fp16" and v.signature["BLOCK"] == "constexpr"
    assert v.constexprs == {"BLOCK": 1024}
    assert v.specialization["n"] == DIV16 and set(v.specialization) == {"x_ptr", "y_ptr", "out_ptr", "n"}
    assert v.options["num_warps"] == 4 and v.options["num_stages"] == 3
    assert v.target == "cuda:90" and v.element_type == "fp16" and len(v.binary_hash) == 16


def test_sweep_losers_are_indexed_without_ir_and_the_winner_keeps_its_ttgir():
    winner, loser = compiled_add(), compiled_add(num_warps=8)
    ir = row_ir(seen_of(winner, loser), {winner.hash: 2}, case="4096", row="add/float16")
    by_hash = {v.compile_hash: v for v in ir.variants}
    assert by_hash[winner.hash].launches == 2 and not by_hash[winner.hash].sweep_loser
    assert by_hash[loser.hash].sweep_loser and by_hash[loser.hash].launches == 0
    assert set(ir.ttgir) == {winner.hash} and ir.ttgir[winner.hash].startswith("#")


def test_a_row_that_crashed_keeps_the_ir_of_everything_it_compiled():
    a, b = compiled_add(), compiled_add(num_warps=8)
    ir = row_ir(seen_of(a, b), None, case="4096", row="add/float16")
    assert set(ir.ttgir) == {a.hash, b.hash} and not any(v.sweep_loser for v in ir.variants)


def test_the_folder_names_files_by_what_differs_and_indexes_every_variant(tmp_path):
    fp16, bf16, loser = compiled_add("fp16"), compiled_add("bf16"), compiled_add("fp16", num_warps=8)
    store = IRStore(tmp_path)
    store.add(row_ir(seen_of(fp16, loser), {fp16.hash: 1}, case="4096", row="add/float16"))
    root = tmp_path / TTGIR_DIR
    assert [p.name for p in root.rglob("*.ttgir")] == ["w4s3.ttgir"]  # one launched variant: options only
    store.add(row_ir(seen_of(bf16), {bf16.hash: 1}, case="4096", row="add/bfloat16"))
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*.ttgir"))
    # the group grew: the same options, told apart by dtype; the earlier file was renamed
    assert files == ["4096/add_kernel_fixed/w4s3__bf16.ttgir",
                     "4096/add_kernel_fixed/w4s3__fp16.ttgir"]
    index = read_index(root / INDEX)
    assert len(index) == 3 and sum(v.sweep_loser for v in index) == 1
    assert {v.file for v in index if not v.sweep_loser} == set(files)
    assert [v.file for v in index if v.sweep_loser] == [""]
    assert (root / "4096/add_kernel_fixed/w4s3__fp16.ttgir").read_text() == fp16.asm["ttgir"]
    assert (root / NAMING).read_text().strip()
    store.close()
    reopened = IRStore(tmp_path)  # a restarted worker continues the same folder
    reopened.add(row_ir(seen_of(fp16), {fp16.hash: 3}, case="4096", row="add/float16"))
    again = {v.compile_hash: v for v in read_index(root / INDEX)}
    assert again[fp16.hash].launches == 4 and len(again) == 3
    reopened.close()
