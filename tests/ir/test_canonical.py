"""The canonicalisers on lines copied from real cuda:90 compiles (Triton 3.6, an fma kernel and
a row-sum loop): names and debug info only -> equal; any change of code -> still different."""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tritongate.ir.canonical import canonical_llir, canonical_mlir_names, canonical_ptx, canonical_ttgir
from tritongate.ir.levels import ABSENT, DIFFERS, SAME, first_level, title

# the same loop, as line info off prints it (numbered values, locations unknown) and as a
# build with name locations prints it (values named after the source, #loc references)
TTGIR_NUMBERED = textwrap.dedent('''\
    #blocked = #ttg.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
    #loc = loc(unknown)
    module attributes {"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, ttg.target = "cuda:90", "ttg.threads-per-warp" = 32 : i32} {
      tt.func public @rowsum(%x_ptr: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc("x_ptr"), %n: i32 loc("n")) attributes {noinline = false} {
        %cst = arith.constant dense<0.000000e+00> : tensor<256xf32, #blocked> loc(#loc)
        %c0_i32 = arith.constant 0 : i32 loc(#loc)
        %c256_i32 = arith.constant 256 : i32 loc(#loc)
        %1 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32, #blocked> loc(#loc)
        %acc = scf.for %start = %c0_i32 to %n step %c256_i32 iter_args(%acc_0 = %cst) -> (tensor<256xf32, #blocked>)  : i32 {
          %9 = tt.splat %start : i32 -> tensor<256xi32, #blocked> loc(#loc)
          %10 = arith.addi %9, %1 : tensor<256xi32, #blocked> loc(#loc)
          %14 = arith.addf %acc_0, %13 : tensor<256xf32, #blocked> loc(#loc)
          scf.yield %14 : tensor<256xf32, #blocked> loc(#loc)
        } loc(#loc4)
        %8 = "tt.reduce"(%7) <{axis = 0 : i32}> ({
        ^bb0(%arg3: f32 loc(unknown), %arg4: f32 loc(unknown)):
          %9 = arith.addf %arg3, %arg4 : f32 loc(#loc)
      } loc(#loc)
    } loc(#loc)
    ''')
TTGIR_NAMED = textwrap.dedent('''\
    #blocked = #ttg.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
    #loc = loc("/tmp/tg/k.py":10:0)
    #loc20 = loc("x_ptr"(#loc))
    module attributes {"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, ttg.target = "cuda:90", "ttg.threads-per-warp" = 32 : i32} {
      tt.func public @rowsum(%arg0: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc("x_ptr"(#loc)), %arg1: i32 loc("n"(#loc))) attributes {noinline = false} {
        %cst = arith.constant dense<0.000000e+00> : tensor<256xf32, #blocked> loc(#loc1)
        %c0_i32_3 = arith.constant 0 : i32 loc(#loc1)
        %c256_i32 = arith.constant 256 : i32 loc(#loc1)
        %offs = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32, #blocked> loc(#loc27)
        %acc_1 = scf.for %start_2 = %c0_i32_3 to %arg1 step %c256_i32 iter_args(%acc_4 = %cst) -> (tensor<256xf32, #blocked>)  : i32 {
          %offs_5 = tt.splat %start_2 : i32 -> tensor<256xi32, #blocked> loc(#loc28)
          %offs_6 = arith.addi %offs_5, %offs : tensor<256xi32, #blocked> loc(#loc28)
          %acc_7 = arith.addf %acc_4, %13 : tensor<256xf32, #blocked> loc(#loc36)
          scf.yield %acc_7 : tensor<256xf32, #blocked> loc(#loc37)
        } loc(#loc4)
        %8 = "tt.reduce"(%7) <{axis = 0 : i32}> ({
        ^bb3(%arg3: f32 loc(unknown), %arg4: f32 loc(unknown)):
          %offs_5 = arith.addf %arg3, %arg4 : f32 loc(#loc)
      } loc(#loc)
    } loc(#loc)
    #loc27 = loc("offs"(#loc4))
    ''')


def test_ttgir_differing_in_ssa_names_and_locations_is_equal() -> None:
    assert TTGIR_NUMBERED != TTGIR_NAMED
    assert canonical_ttgir(TTGIR_NUMBERED) == canonical_ttgir(TTGIR_NAMED)
    canon = canonical_ttgir(TTGIR_NAMED)
    assert "loc(" not in canon and "%offs" not in canon and "^bb0(%" in canon
    assert "arith.constant 256 : i32" in canon and "dense<0.000000e+00>" in canon  # constants stay
    assert canonical_ttgir(canon) == canon


@pytest.mark.parametrize("old, new", [
    ("%10 = arith.addi %9, %1", "%10 = arith.addi %1, %9"),  # operands swapped
    ("arith.constant 256 : i32", "arith.constant 128 : i32"),  # a constant
    ('"ttg.num-warps" = 4', '"ttg.num-warps" = 8'),  # an attribute
    ("%14 = arith.addf %acc_0, %13", "%14 = arith.addf %acc_0, %cst"),  # another value used
])
def test_ttgir_code_changes_stay_different(old: str, new: str) -> None:
    assert old in TTGIR_NUMBERED
    assert canonical_ttgir(TTGIR_NUMBERED.replace(old, new)) != canonical_ttgir(TTGIR_NUMBERED)


def test_strings_are_never_renamed() -> None:
    line = '%0 = tt.elementwise_inline_asm "mov.b32 %r1, $1; // %5" {pure = true} %c1 : i32 -> i32\n'
    assert canonical_mlir_names(line) == '%0 = tt.elementwise_inline_asm "mov.b32 %r1, $1; // %5" {pure = true} %1 : i32 -> i32\n'


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["%0", "%1", "%acc", "%acc_1", "%acc_1_2", "%a", "%arg0", "%c1_i32", "%c1_i32_0"]),
                min_size=1, max_size=8))
def test_renaming_never_merges_two_names(tokens: list[str]) -> None:
    """A bijection: the distinct names of a text stay distinct, in the same pattern."""
    out = canonical_mlir_names(" ".join(tokens)).split(" ")
    assert [tokens.index(t) for t in tokens] == [out.index(o) for o in out]


LLIR = textwrap.dedent('''\
    ; ModuleID = 'LLVMDialectModule'
    source_filename = "LLVMDialectModule"
    target datalayout = "e-p3:32:32-p4:32:32-p5:32:32-p6:32:32-p7:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"

    ; Function Attrs: nounwind
    define ptx_kernel void @rowsum(ptr addrspace(1) %0, ptr addrspace(1) %1, i32 %2) local_unnamed_addr #0 {
      %6 = tail call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
      %12 = icmp sgt i32 %2, 0
      br i1 %12, label %.lr.ph, label %._crit_edge

    .lr.ph:                                           ; preds = %5, %.lr.ph
      %13 = phi float [ %28, %.lr.ph ], [ 0.000000e+00, %5 ]
      %28 = fadd float %13, %6
      br i1 %12, label %.lr.ph, label %._crit_edge

    ._crit_edge:                                      ; preds = %.lr.ph, %5
      ret void
    }

    attributes #0 = { nounwind "nvvm.reqntid"="128" }
    attributes #1 = { nounwind }

    !llvm.module.flags = !{!0, !1}

    !0 = !{i32 2, !"Debug Info Version", i32 3}
    !1 = !{i32 4, !"nvvm-reflect-ftz", i32 1}
    ''')


def with_debug_info(text: str) -> str:
    """The same module as line info on prints it (lines of a real compile with line info)."""
    text = text.replace("local_unnamed_addr #0 {", "local_unnamed_addr #0 !dbg !4 {")
    text = text.replace("%12 = icmp sgt i32 %2, 0", "%12 = icmp sgt i32 %2, 0, !dbg !8")
    text = text.replace("!llvm.module.flags = !{!0, !1}", "!llvm.module.flags = !{!0, !1}\n!llvm.dbg.cu = !{!2}")
    return text + textwrap.dedent('''\
        !2 = distinct !DICompileUnit(language: DW_LANG_C, file: !3, producer: "triton", isOptimized: true, runtimeVersion: 0, emissionKind: LineTablesOnly)
        !3 = !DIFile(filename: "k.py", directory: "/tmp/tg")
        !4 = distinct !DISubprogram(name: "rowsum", linkageName: "rowsum", scope: !3, file: !3, line: 10, type: !5, scopeLine: 10, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !2)
        !5 = !DISubroutineType(cc: DW_CC_normal, types: !6)
        !6 = !{}
        !8 = !DILocation(line: 12, column: 27, scope: !4)
        ''')


def test_llvm_ir_renumbered_without_debug_info_is_equal() -> None:
    renumbered = LLIR.replace("%13", "%113").replace("%28", "%14").replace("%5,", "%7,").replace("%5 ]", "%7 ]")
    assert canonical_llir(renumbered) == canonical_llir(LLIR)
    assert canonical_llir(with_debug_info(LLIR)) == canonical_llir(LLIR)
    canon = canonical_llir(LLIR)
    assert ";" not in canon and "source_filename" not in canon and "!dbg" not in canon
    assert "%5 = phi float [ %6, %.lr.ph ], [ 0.000000e+00, %7 ]" in canon  # first appearance order
    assert canonical_llir(canon) == canon


@pytest.mark.parametrize("old, new", [
    ("%28 = fadd float %13, %6", "%28 = fmul float %13, %6"),
    ("icmp sgt i32 %2, 0", "icmp sge i32 %2, 0"),
    ('"nvvm.reqntid"="128"', '"nvvm.reqntid"="256"'),
    ('!"nvvm-reflect-ftz", i32 1', '!"nvvm-reflect-ftz", i32 0'),
])
def test_llvm_ir_code_changes_stay_different(old: str, new: str) -> None:
    assert canonical_llir(LLIR.replace(old, new)) != canonical_llir(LLIR)


PTX = textwrap.dedent('''\
    //
    // Generated by LLVM NVPTX Back-End
    //

    .version 8.7
    .target sm_90a
    .address_size 64

    	// .globl	fma_kernel              // -- Begin function fma_kernel
                                            // @fma_kernel
    .visible .entry fma_kernel(
    	.param .u64 .ptr .global .align 1 fma_kernel_param_0,
    	.param .u32 fma_kernel_param_4
    )
    .reqntid 128
    {
    	.reg .pred 	%p<9>;
    	.reg .b32 	%r<55>;
    	.reg .b64 	%rd<38>;

    // %bb.0:
    	ld.param.b64 	%rd33, [fma_kernel_param_0];
    	mov.u32 	%r33, %ctaid.x;
    	shl.b32 	%r34, %r33, 10;
    	ld.param.b32 	%r37, [fma_kernel_param_4];
    	setp.lt.s32 	%p1, %r34, %r37;
    	mul.wide.s32 	%rd37, %r34, 4;
    	add.s64 	%rd1, %rd33, %rd37;
    	// begin inline asm
    	mov.u32 %r1, 0x0;
    	@%p1 ld.global.b32 { %r1 }, [ %rd1 + 0 ];
    	// end inline asm
    	fma.rn.f32 	%r47, %r1, %r1, %r34;
    	ret;
                                            // -- End function
    }
    ''')


def test_ptx_registers_renumbered_per_class_by_first_use() -> None:
    shifted = PTX.replace("%r3", "%r13").replace("%rd33", "%rd3").replace("%p1", "%p2").replace("8.7", "8.8")
    assert canonical_ptx(shifted) == canonical_ptx(PTX)
    canon = canonical_ptx(PTX)
    assert "//" not in canon and "mov.u32 \t%r1, %ctaid.x;" in canon and "ld.param.b64 \t%rd1," in canon
    assert ".reg .b32 \t%r<55>;" in canon  # the declarations stay: their counts are code
    assert canonical_ptx(canon) == canon


@pytest.mark.parametrize("old, new", [
    (".reg .b32 \t%r<55>;", ".reg .b32 \t%r<71>;"),  # more registers
    ("fma.rn.f32 \t%r47, %r1, %r1, %r34;", "mul.rn.f32 \t%r47, %r1, %r34;"),
    ("%ctaid.x", "%tid.x"),  # special registers are names, not numbers
    ("fma.rn.f32 \t%r47, %r1, %r1, %r34;", "fma.rn.f32 \t%r47, %r1, %r34, %r1;"),
])
def test_ptx_code_changes_stay_different(old: str, new: str) -> None:
    assert old in PTX
    assert canonical_ptx(PTX.replace(old, new)) != canonical_ptx(PTX)


def test_first_level_walks_top_down_and_stops_where_a_level_is_not_kept() -> None:
    same = dict.fromkeys(("ttgir", "llir", "ptx", "sass", "cubin"), SAME)
    assert first_level(same) == ""
    assert first_level({**same, "ptx": DIFFERS, "sass": DIFFERS, "cubin": DIFFERS}) == "ptx"
    assert first_level({**same, "cubin": DIFFERS}) == "cubin"
    assert first_level({**same, "ttgir": DIFFERS, "llir": ABSENT}) == "ttgir"
    gpu_run = {"ttgir": SAME, "llir": ABSENT, "ptx": ABSENT, "sass": ABSENT}
    assert first_level({**gpu_run, "cubin": DIFFERS}) == "below_ttgir"
    assert first_level({**gpu_run, "cubin": SAME}) == ""
    assert first_level({**same, "sass": ABSENT, "cubin": DIFFERS}) == "below_ptx"
    assert [title(x) for x in ("llir", "cubin", "below_ttgir", "")] == [
        "LLVM IR", "binary only", "below TTGIR (lower IR not kept)", "identical"]
