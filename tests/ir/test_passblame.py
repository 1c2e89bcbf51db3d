"""Per-pass dumps (``ir.passdumps``) and the first pass two builds part at (``ir.passblame``).

The real compiles run in a child process of this interpreter (as a build's would), without
the interpreter, for cuda:90; each test compiles at most two kernels (shared by a module
fixture). The kernel is this module's own ``fma_kernel`` (``a * b + c``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import triton
import triton.language as tl

from tritongate.errors import UsageError
from tritongate.ir.index import CompiledVariant
from tritongate.ir.passblame import BELOW, INPUT, NONE, PASS, PIPELINE, blame_variant, first_difference
from tritongate.ir.passdumps import (PassDump, PassDumps, _stage_hook, canonical_names, compile_with_dumps,
                                     load_dumps, normalize_pass_text, parse_dump_stream)


@triton.jit
def fma_kernel(a, b, c, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(a + offs, mask=m)
    y = tl.load(b + offs, mask=m)
    z = tl.load(c + offs, mask=m)
    tl.store(out + offs, x * y + z, mask=m)


# the same kernel, arguments renamed, for a module of its own in another folder
RENAMED = '''import triton
import triton.language as tl


@triton.jit
def fma_kernel(p, q, r, dst, count, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < count
    x = tl.load(p + offs, mask=m)
    y = tl.load(q + offs, mask=m)
    z = tl.load(r + offs, mask=m)
    tl.store(dst + offs, x * y + z, mask=m)
'''


def variant(kernel: str = f"{__name__}.fma_kernel", names: tuple[str, ...] = ("a", "b", "c", "out", "n"),
            **options: object) -> CompiledVariant:
    sig = {k: "*fp32" for k in names[:4]} | {names[4]: "i32", "BLOCK": "constexpr"}
    return CompiledVariant(case="4096", kernel=kernel, signature=sig, constexprs={"BLOCK": 1024},
                           specialization={k: [["tt.divisibility", 16]] for k in names[:4]},
                           options=options or {"num_warps": 4}, compile_hash="test")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory):
    """name -> PassDumps, each compiled once for the whole module."""
    made: dict[str, PassDumps] = {}
    root = tmp_path_factory.mktemp("passdumps")

    def get(name: str, v: CompiledVariant | None = None, env: dict[str, str] | None = None) -> PassDumps:
        if name not in made:
            made[name] = compile_with_dumps(sys.executable, v or variant(), "cuda:90", root / name, env=env)
        return made[name]
    return get


# ----------------------------------------------------------------------------- real dumps

def test_a_real_compile_parses_into_every_pass_by_stage_and_level(compiled) -> None:
    d = compiled("base")
    stages = [p.stage for p in d.passes]
    assert stages == sorted(stages, key=["ttir", "ttgir", "llir", "ptx"].index)  # run order, markers honoured
    by = {(p.stage, p.level) for p in d.passes}
    assert {("ttir", "mlir"), ("ttgir", "mlir"), ("llir", "mlir"), ("llir", "llvm"), ("ptx", "llvm"),
            ("ptx", "mir")} <= by
    mlir = [p.name for p in d.passes if p.level == "mlir"]
    assert mlir[0] == "inline" and 60 <= len(mlir) <= 90
    assert mlir.index("convert-triton-to-tritongpu") < mlir.index("tritongpu-coalesce") < \
        mlir.index("convert-triton-gpu-to-llvm")
    assert "tt.func public @fma_kernel" in d.input and "ttg.num-warps" not in d.input
    # a stage's last pass's output (the module as the stage left it) is the next stage's input
    for i, p in enumerate(d.passes):
        if i and p.input is not None:
            assert d.passes[i - 1].normalized == normalize_pass_text(p.input), (d.passes[i - 1].name, p.name)
    last = {p.stage: p for p in d.passes if p.level == "mlir"}
    assert last["ttgir"].normalized == normalize_pass_text(d.finals["ttgir"])
    # the raw stream is kept gzipped (tens of MB a large kernel), and reads back the same
    folder = Path(d.meta["folder"])
    assert (folder / "dumps.log.gz").is_file() and not (folder / "dumps.log").exists()
    assert load_dumps(folder).passes == d.passes
    assert last["ttir"].normalized == normalize_pass_text(d.finals["ttir"])
    assert d.meta["stage_markers"] is True and d.meta["bytes"] > 20_000 and len(d.cubin_sha256) == 64
    assert not any(Path(d.meta["folder"]).glob("triton-cache"))


def test_two_compiles_of_one_kernel_from_two_places_are_equal_once_normalised(tmp_path, compiled) -> None:
    """Line info on (source paths in locations, LLVM debug info, PTX .loc) and the arguments
    renamed: the raw dumps differ, the normalised ones do not."""
    (tmp_path / "pb_fma_renamed.py").write_text(RENAMED, encoding="utf-8")
    on = {"TRITON_DISABLE_LINE_INFO": "0"}
    here = compiled("line-info", env=on)
    there = compiled("renamed", variant("pb_fma_renamed.fma_kernel", ("p", "q", "r", "dst", "count")),
                     env=on | {"PYTHONPATH": str(tmp_path)})
    raw_differs = [p.name for p, q in zip(here.passes, there.passes) if p.text != q.text]
    assert "inline" in raw_differs and "tritongpu-coalesce" in raw_differs  # locations, names
    blame = first_difference(here, there)
    # the cubin keeps the source path in its DWARF; everything the normaliser sees is equal
    assert blame.kind in (NONE, BELOW) and blame.first_level in ("", "cubin"), blame.summary()
    assert dict(blame.levels) | {"cubin": False} == {k: False for k in ("ttir", "ttgir", "llir", "ptx", "cubin")}
    assert not blame.added and not blame.removed


def test_num_warps_first_changes_the_conversion_to_tritongpu(compiled) -> None:
    blame = first_difference(compiled("base"), compiled("warps8", variant(num_warps=8)))
    assert (blame.kind, blame.pass_name, blame.stage, blame.level) == \
        (PASS, "convert-triton-to-tritongpu", "ttgir", "mlir")
    assert blame.input_equal is True and not blame.added and not blame.removed
    assert dict(blame.levels) == {"ttir": False, "ttgir": True, "llir": True, "ptx": True, "cubin": True}
    assert '"ttg.num-warps" = 8' in blame.excerpt and len(blame.excerpt.splitlines()) <= 20
    assert blame.summary() == "first differs after `convert-triton-to-tritongpu` (ttgir, input equal)"


def test_fp_fusion_off_first_changes_instruction_selection_below_llvm_ir(compiled) -> None:
    """TRITON_DEFAULT_FP_FUSION=0: every MLIR and LLVM IR pass agrees; NVPTX's instruction
    selection makes FMUL + FADD where it made FMA (and ptxas gets --fmad=false)."""
    base, cand = compiled("base"), compiled("nofusion", env={"TRITON_DEFAULT_FP_FUSION": "0"})
    blame = first_difference(base, cand)
    assert (blame.kind, blame.pass_name, blame.stage, blame.level, blame.input_equal) == \
        (PASS, "nvptx-isel", "ptx", "mir", True)
    assert dict(blame.levels) == {"ttir": False, "ttgir": False, "llir": False, "ptx": True, "cubin": True}
    fused, unfused = base.passes[blame.index_base].normalized, cand.passes[blame.index_cand].normalized
    assert "FMA_F32" in fused and "FMA_F32" not in unfused and "FMUL" in unfused
    assert blame.excerpt.startswith("--- base/nvptx-isel@ptx\n+++ cand/nvptx-isel@ptx\n")
    json.dumps(blame.to_dict())


@pytest.mark.slow
def test_a_side_s_fusion_setting_overrides_the_recorded_option_as_in_ir(tmp_path) -> None:
    """A GPU run's index records enable_fp_fusion; `tritongate ir` under TRITON_DEFAULT_FP_FUSION=0
    leaves it to the setting, and so must the blame's compile of that side (ir-diff passes the
    side's aot.json settings, the pre-screen its --cand-env): else both fuse, "no difference"."""
    recorded = variant(num_warps=4, enable_fp_fusion=True)
    blame = blame_variant(sys.executable, sys.executable, recorded, "cuda:90", tmp_path,
                          cand_env={"TRITON_DEFAULT_FP_FUSION": "0"})
    assert (blame.kind, blame.pass_name, blame.stage) == (PASS, "nvptx-isel", "ptx"), blame.summary()
    assert dict(blame.levels)["ptx"] is True
    base, cand = (json.loads((tmp_path / side / "compiled.json").read_text()) for side in ("base", "cand"))
    assert base["options"]["enable_fp_fusion"] is True and "enable_fp_fusion" not in cand["options"]
    assert "fma.rn.f32" in (tmp_path / "base" / "final.ptx").read_text()
    assert "fma.rn.f32" not in (tmp_path / "cand" / "final.ptx").read_text()
    assert json.loads((tmp_path / "cand" / "spec.json").read_text())["drop_options"] == ["enable_fp_fusion"]


# ----------------------------------------------------------------------------- the parser

STREAM = """// tritongate-passdumps: stage ttir begin
// -----// IR Dump Before Inliner (inline) ('builtin.module' operation) //----- //
module {
  tt.func @k(%arg0: i32 loc("x")) { tt.return loc(#loc1) } loc(#loc)
} loc(#loc)
#loc = loc("/home/me/k.py":3:0)
#loc1 = loc("/home/me/k.py":4:4)
// -----// IR Dump Before Canonicalizer (canonicalize) ('tt.func' operation: @k) //----- //
module {
  tt.func @k(%arg0: i32) { %c1_i32 = arith.constant 1 : i32 tt.return }
}
// tritongate-passdumps: stage ttir mlir-output
module {
  tt.func @k(%x: i32) { %c1_i32 = arith.constant 1 : i32 tt.return }
}
// tritongate-passdumps: stage ttir end
// tritongate-passdumps: stage ttgir begin
// -----// IR Dump Before TritonGPUPipeline (tritongpu-pipeline) ('builtin.module' operation) //----- //
#blocked = #ttg.blocked<{order = [0]}>
module { %0 = foo : tensor<4xi32, #blocked> }
// -----// SoftwarePipeliner internal IR Dump After: LowerLoops
module { %0 = lowered }
// tritongate-passdumps: stage ttgir mlir-output
module { %0 = piped }
// tritongate-passdumps: stage ttgir end
// tritongate-passdumps: stage llir begin
; *** IR Dump After InstCombinePass on k ***
define void @k(i32 %0) {
  ret void, !dbg !7
}
// tritongate-passdumps: stage llir end
// tritongate-passdumps: stage ptx begin
*** IR Dump After Global Value Numbering (gvn) ***
define void @k() { ret void }
# *** IR Dump After NVPTX DAG->DAG Pattern Instruction Selection (nvptx-isel) ***:
# Machine code for function k: IsSSA
  %0:b32 = MOV_B32_i 1
"""


def test_the_parser_names_each_pass_its_stage_level_output_and_internal_steps() -> None:
    first, passes = parse_dump_stream(STREAM)
    assert [(p.name, p.stage, p.level) for p in passes] == [
        ("inline", "ttir", "mlir"), ("canonicalize", "ttir", "mlir"), ("tritongpu-pipeline", "ttgir", "mlir"),
        ("InstCombinePass", "llir", "llvm"), ("gvn", "ptx", "llvm"), ("nvptx-isel", "ptx", "mir")]
    inline, canon, pipe, combine = passes[:4]
    assert "loc(" in first and canon.input is None and pipe.input is not None
    assert inline.text.strip().startswith("module {\n  tt.func @k(%arg0: i32) { %c1_i32")  # the next dump
    assert canon.normalized == normalize_pass_text(inline.text)  # %x vs %arg0: positional names
    assert pipe.internal[0][0] == "LowerLoops" and "piped" in pipe.text
    assert "#ttg.blocked<{order = [0]}>" in normalize_pass_text(pipe.input) and "#blocked" not in \
        normalize_pass_text(pipe.input)
    assert combine.title == "on k" and "!dbg" not in combine.normalized
    assert normalize_pass_text(first) == "module {\n  tt.func @k(%v0: i32) { tt.return }\n}\n"


# headers as Triton 3.8.0's MLIR prints them (copied from a real cuda:90 compile of fma_kernel)
STREAM_38 = """// tritongate-passdumps: stage ttir begin
// -----// IR Dump Before InlinerPass: inline{default-pipeline=canonicalize inlining-threshold=4294967295 max-iterations=4 } ('builtin.module' operation) //----- //
module { tt.func @k() { tt.return } }
// -----// IR Dump Before CanonicalizerPass: canonicalize{cse-between-iterations=false    max-iterations=10 max-num-rewrites=-1 region-simplify=normal test-convergence=false top-down=true} ('tt.func' operation: @fma_kernel) //----- //
module { tt.func @k() { tt.return } }
// -----// IR Dump Before TritonCombineOps: triton-combine ('builtin.module' operation) //----- //
module { tt.func @k() { tt.return } }
// tritongate-passdumps: stage ttir mlir-output
module { tt.func @k() { tt.return } }
// tritongate-passdumps: stage ttir end
"""


def test_triton_38_headers_name_the_pass_by_its_argument() -> None:
    # 3.8 prints "Before <Class>: <argument>{options} (...)"; 3.6 "Before <Class> (<argument>) (...)"
    _, passes = parse_dump_stream(STREAM_38)
    assert [(p.name, p.stage, p.level) for p in passes] == [
        ("inline", "ttir", "mlir"), ("canonicalize", "ttir", "mlir"), ("triton-combine", "ttir", "mlir")]
    assert passes[1].title == "CanonicalizerPass 'tt.func' operation: @fma_kernel"


def test_the_stage_hook_answers_triton_37s_cache_key_call() -> None:
    # Triton >= 3.7 calls the hook with no arguments first (key, hash = hook()), then with the stages
    key, digest = _stage_hook()
    assert key and len(digest) == 64
    stages = {"ttir": lambda src, metadata: src + "!"}
    assert _stage_hook(None, stages, None, None, None) is None
    assert stages["ttir"]("ir", {}) == "ir!"  # wrapped, and still the stage


def test_names_are_positional_and_strings_untouched() -> None:
    assert canonical_names('%a = f %arg3, %a ^bb1 "%d %s" %0#1') == '%v0 = f %v1, %v0 ^b2 "%d %s" %v3#1'
    assert canonical_names("5:\n  br label %5") == "%v0:\n  br label %v0"


# ----------------------------------------------------------------------------- synthetic blames

def p(name: str, text: str, stage: str = "ttgir", level: str = "mlir", **kw: object) -> PassDump:
    return PassDump(name=name, stage=stage, level=level, text=text, **kw)


BASE = [p("a", "x\n"), p("b", "y\n"), p("c", "z\n")]


def test_equal_all_through_is_no_difference() -> None:
    blame = first_difference(BASE, list(BASE), base_input="in", cand_input="in",
                             base_finals={"ptx": "k"}, cand_finals={"ptx": "k"})
    assert blame.kind == NONE and blame.summary() == "no difference" and blame.first_level == ""


def test_a_removed_pass_whose_work_is_missed_is_blamed() -> None:
    cand = [p("a", "x\n"), p("c", "x2\n")]  # "b" gone; "c" then sees x, not y
    blame = first_difference(BASE, cand, base_input="in", cand_input="in")
    assert (blame.kind, blame.pass_name, blame.index_base, blame.index_cand) == (PIPELINE, "b", 1, -1)
    assert blame.removed == ("b@ttgir",) and blame.next_pass == "c@ttgir"
    assert blame.summary().startswith("first differs after removed pass `b` (ttgir, `c@ttgir` after it differs)")


def test_an_added_pass_that_changes_nothing_is_listed_and_the_real_change_blamed() -> None:
    cand = [p("a", "x\n"), p("new", "x\n", level="mlir"), p("b", "y\n"), p("c", "w\n")]
    blame = first_difference(BASE, cand)
    assert (blame.kind, blame.pass_name, blame.input_equal) == (PASS, "c", True)
    assert blame.added == ("new@ttgir",) and blame.summary().endswith("[pipeline: 1 pass added]")
    assert blame.excerpt.splitlines()[-2:] == ["-z", "+w"]


def test_a_pass_fed_a_different_input_says_so() -> None:
    cand = [p("a", "x\n"), p("b", "y\n", input="other\n"), p("c", "q\n")]
    blame = first_difference(BASE, cand)
    assert (blame.kind, blame.pass_name, blame.input_equal) == (PASS, "c", True)
    cand = [p("a", "x\n"), p("b", "y2\n", input="other\n"), p("c", "q\n")]
    assert first_difference(BASE, cand).input_equal is False


def test_a_different_pipeline_input_is_the_frontends() -> None:
    cand = [p("a", "x2\n"), p("b", "y2\n"), p("c", "z2\n")]  # different from the input on
    blame = first_difference(BASE, cand, base_input="module {}", cand_input="module { x }")
    assert blame.kind == INPUT and "frontend" in blame.summary()


def test_an_input_difference_the_first_passes_absorb_is_not_blamed() -> None:
    # 3.6 vs 3.7.1: the TTIR differs only in an inlined helper's mangled name, equal after `inline`;
    # the code first differs at a later pass, which is the one to blame
    cand = [p("a", "x with @cdiv__i32_c64\n"), p("b", "y\n"), p("c", "z2\n")]  # "a" still differs, "b" not
    blame = first_difference(BASE, cand, base_input="call @cdiv__i32__(1,)", cand_input="call @cdiv__i32_c64")
    assert (blame.kind, blame.pass_name, blame.input_equal) == (PASS, "c", True)
    assert first_difference(BASE, list(BASE), base_input="call @f_a", cand_input="call @f_b").kind == NONE


def test_equal_passes_and_different_finals_point_below_the_dumps() -> None:
    same = {"ttir": "t", "ttgir": "g", "llir": "l"}
    blame = first_difference(BASE, BASE, base_finals=same | {"ptx": "a"}, cand_finals=same | {"ptx": "b"},
                             base_cubin="1", cand_cubin="2")
    assert (blame.kind, blame.first_level) == (BELOW, "ptx")
    assert blame.to_dict()["levels"] == {"ttir": False, "ttgir": False, "llir": False, "ptx": True, "cubin": True}
    only_cubin = first_difference(BASE, BASE, base_finals=same, cand_finals=same, base_cubin="1", cand_cubin="2")
    assert only_cubin.first_level == "cubin" and "(ptxas)" in only_cubin.summary()


def test_the_excerpt_is_at_most_twenty_lines() -> None:
    big = "".join(f"line {i}\n" for i in range(200))
    blame = first_difference([p("a", big)], [p("a", big.replace("line", "LINE"))])
    lines = blame.excerpt.splitlines()
    assert len(lines) == 20 and lines[-1].startswith("... ") and json.loads(json.dumps(blame.to_dict()))


def test_without_stage_markers_passes_still_chain_and_the_last_output_is_unknown() -> None:
    """A Triton without ``add_stages_inspection_hook``: no stages, each output the next dump."""
    stream = "\n".join(line for line in STREAM.splitlines() if not line.startswith("// tritongate-passdumps"))
    _, passes = parse_dump_stream(stream)
    mlir = [q for q in passes if q.level == "mlir"]
    assert {q.stage for q in passes} == {""} and [q.name for q in mlir] == ["inline", "canonicalize",
                                                                              "tritongpu-pipeline"]
    assert "%0 = foo" in mlir[1].text and mlir[2].text == ""


def test_dumps_go_into_a_fresh_folder_only(tmp_path) -> None:
    (tmp_path / "old.log").write_text("x")
    with pytest.raises(UsageError, match="fresh folder"):
        compile_with_dumps(sys.executable, variant(), "cuda:90", tmp_path)


@pytest.mark.parametrize("overlay, parent, dropped", [
    ({}, {}, []),
    ({"TRITON_DEFAULT_FP_FUSION": "0"}, {}, ["enable_fp_fusion"]),  # a side's setting (--cand-env, aot.json)
    ({}, {"TRITON_DEFAULT_FP_FUSION": "1"}, ["enable_fp_fusion"]),  # inherited, as `ir`'s process inherits it
])
def test_the_child_leaves_to_a_setting_the_option_it_overrides(tmp_path, monkeypatch, overlay, parent,
                                                               dropped) -> None:
    """The options a compile with dumps drops follow the child's environment by `ir`'s rule
    (``aot.options_overridden_by``), the ones the caller drops kept first."""
    from tritongate.ir import passdumps
    from tritongate.ir.aot import options_overridden_by

    monkeypatch.delenv("TRITON_DEFAULT_FP_FUSION", raising=False)
    for k, v in parent.items():
        monkeypatch.setenv(k, v)

    def stop(cmd, **kw):  # nothing compiled: the spec is written before the child starts
        assert options_overridden_by(kw["env"]) == tuple(dropped)
        raise RuntimeError("stop here")

    monkeypatch.setattr(passdumps.subprocess, "run", stop)
    with pytest.raises(RuntimeError, match="stop here"):
        compile_with_dumps(sys.executable, variant(enable_fp_fusion=True), "cuda:90", tmp_path / "d", env=overlay,
                           drop_options=("maxnreg",))
    assert json.loads((tmp_path / "d" / "spec.json").read_text())["drop_options"] == ["maxnreg", *dropped]
