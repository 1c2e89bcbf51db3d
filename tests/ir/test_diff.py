"""The diff of canonical IR, on hand-written TTGIR, LLVM IR and PTX: a line that differs from its
counterpart only because an op added or removed earlier shifted the numbering is context; a
rewired operand, a changed string or special register and a new register count still show;
whether a variant changed is still the canonical texts' equality."""

from __future__ import annotations

import difflib
import re
import textwrap
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tritongate.ir.canonical import canonical_llir, canonical_ptx, canonical_ttgir, renumbered_names
from tritongate.ir.align import renumbering_opcodes, unified_diff
from tritongate.ir.diff import CHANGED, IDENTICAL, diff_trees
from tritongate.ir.index import CompiledVariant, index_text, level_file

KERNEL = textwrap.dedent('''\
    #blocked = #ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
    module attributes {"ttg.num-warps" = 4 : i32} {
      tt.func public @k(%x_ptr: !tt.ptr<f32>, %n: i32) attributes {noinline = false} {
        %c4_i32 = arith.constant 4 : i32
        %c3_i32 = arith.constant 3 : i32
        %pid = tt.get_program_id x : i32
        %a = arith.muli %pid, %n : i32
        %b = arith.addi %a, %c3_i32 : i32
        %c = arith.subi %b, %a : i32
        %d = arith.cmpi sge, %c, %c4_i32 : i32
        %p = tt.addptr %x_ptr, %c : !tt.ptr<f32>, i32
        %s = tt.elementwise_inline_asm "mov.b32 $0, %r1;" {pure = true} %c : i32 -> i32
        tt.store %p, %s, %d : !tt.ptr<f32>
        tt.return
      }
    }
    ''')
# one op more near the top: every later value is renumbered
INSERTED = KERNEL.replace("    %pid = tt.get", "    %z = arith.constant 0 : i32\n    %pid = tt.get")


def ttgir_diff(base: str, cand: str) -> tuple[str, int, int]:
    b, c = canonical_ttgir(base), canonical_ttgir(cand)
    return unified_diff(b, c, "k/v.ttgir", "k/v.ttgir", renumbered_names("ttgir", b, c))


def changes(text: str) -> list[str]:
    """The added and removed lines of a diff, without its ---/+++ header."""
    return [line for line in text.splitlines()[2:] if line[:1] in "+-"]


def test_an_inserted_op_is_one_added_line_not_every_later_one() -> None:
    b, c = canonical_ttgir(KERNEL), canonical_ttgir(INSERTED)
    plain = [x for x in difflib.unified_diff(b.splitlines(), c.splitlines(), lineterm="")][2:]
    assert sum(x.startswith("+") for x in plain) == 9  # the shift: the op and every later line
    text, added, removed = ttgir_diff(KERNEL, INSERTED)
    assert (added, removed) == (1, 0)
    assert changes(text) == ["+    %4 = arith.constant 0 : i32"]
    # context lines are the candidate's, as it numbers them
    assert "\n     %5 = tt.get_program_id x : i32\n" in text and "%4 = tt.get_program_id" not in text
    assert text.startswith("--- a/k/v.ttgir\n+++ b/k/v.ttgir\n@@ -3,6 +3,7 @@\n")


def test_a_removed_op_is_one_removed_line() -> None:
    text, added, removed = ttgir_diff(INSERTED, KERNEL)
    assert (added, removed) == (0, 1)
    assert changes(text) == ["-    %4 = arith.constant 0 : i32"]


def test_a_rewired_operand_still_shows_shifted_or_not() -> None:
    rewired = "%c = arith.subi %a, %b"
    text, added, removed = ttgir_diff(KERNEL, KERNEL.replace("%c = arith.subi %b, %a", rewired))
    assert (added, removed) == (1, 1)
    assert changes(text) == ["-    %7 = arith.subi %6, %5 : i32", "+    %7 = arith.subi %5, %6 : i32"]
    text, added, removed = ttgir_diff(KERNEL, INSERTED.replace("%c = arith.subi %b, %a", rewired))
    assert (added, removed) == (2, 1)
    assert changes(text) == ["+    %4 = arith.constant 0 : i32",
                             "-    %7 = arith.subi %6, %5 : i32", "+    %8 = arith.subi %6, %7 : i32"]


def test_a_line_that_reads_the_same_but_uses_another_value_is_a_change() -> None:
    """The constant 4 goes, a 0 comes, and the compare takes the 3 (as dropping a pipeline stage
    did to a matmul): in canonical form the compare's text is the same on both sides, the 3
    numbered where the 4 was, but its operand is another value."""
    cand = KERNEL.replace("    %c4_i32 = arith.constant 4 : i32\n", "").replace("%c, %c4_i32", "%c, %c3_i32")
    cand = cand.replace("    %pid = tt.get", "    %c0_i32 = arith.constant 0 : i32\n    %pid = tt.get")
    b, c = canonical_ttgir(KERNEL), canonical_ttgir(cand)
    compare = "    %8 = arith.cmpi sge, %7, %2 : i32"
    assert compare in b.splitlines() and compare in c.splitlines()  # the plain diff calls it context
    text, added, removed = ttgir_diff(KERNEL, cand)
    assert changes(text) == ["-    %2 = arith.constant 4 : i32", "+    %3 = arith.constant 0 : i32",
                             "-" + compare, "+" + compare]
    assert (added, removed) == (2, 2)


def test_a_changed_string_or_attribute_under_a_shift_still_shows() -> None:
    cand = INSERTED.replace("%r1;", "%r2;").replace('"ttg.num-warps" = 4', '"ttg.num-warps" = 8')
    text, added, removed = ttgir_diff(KERNEL, cand)
    assert (added, removed) == (3, 2)
    assert '+    %11 = tt.elementwise_inline_asm "mov.b32 $0, %r2;" {pure = true} %8 : i32 -> i32' in changes(text)
    assert '-module attributes {"ttg.num-warps" = 4 : i32} {' in changes(text)


def test_names_the_alignment_cannot_tell_apart_fall_back_to_the_plain_diff() -> None:
    """Texts that are not canonical (the names are not numbered by first appearance) can match
    everywhere once names are set aside and still differ: the plain diff shows the difference."""
    text, added, removed = unified_diff("x %5\n", "x %7\n", "a", "b", renumbered_names("ttgir", "", ""))
    assert (added, removed) == (1, 1) and changes(text) == ["-x %5", "+x %7"]
    assert unified_diff("x %5\n", "x %5\n", "a", "b", renumbered_names("ttgir", "", "")) == ("", 0, 0)


def test_a_long_run_of_lines_alike_is_aligned_in_bounded_time() -> None:
    """20,000 lines alike once names are set aside: compared place by place that is 4 * 10**8
    pairs (minutes); difflib's autojunk heuristic keeps it to a fraction of a second."""
    body = "".join(f"    %v{i} = arith.addi %a, %b : i32\n" for i in range(20_000))
    base = f"tt.func @k(%a: i32, %b: i32) {{\n{body}    tt.return\n}}\n"
    text, added, removed = ttgir_diff(base, base.replace("{\n", "{\n    %z = arith.muli %a, %b : i32\n", 1))
    assert (added, removed) == (1, 0) and changes(text) == ["+    %2 = arith.muli %0, %1 : i32"]


LLIR = textwrap.dedent('''\
    define ptx_kernel void @k(ptr addrspace(1) %0, i32 %1) local_unnamed_addr #0 {
      %3 = tail call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
      %4 = shl i32 %3, 7
      %5 = icmp slt i32 %4, %1
      br i1 %5, label %6, label %9

    6:                                                ; preds = %2
      %7 = getelementptr float, ptr addrspace(1) %0, i32 %4
      %8 = load float, ptr addrspace(1) %7, align 4, !tbaa !3
      store float %8, ptr addrspace(1) %7, align 4
      br label %9

    9:
      ret void
    }

    attributes #0 = { nounwind }

    !3 = !{!4, !4, i64 0}
    !4 = !{!"float", !5, i64 0}
    !5 = !{!"omnipotent char"}
    ''')
LLIR_INSERTED = LLIR.replace("  %5 = icmp", "  %44 = add i32 %4, 1\n  %5 = icmp")

PTX = textwrap.dedent('''\
    .visible .entry k(
    \t.param .u64 k_param_0
    )
    {
    \t.reg .pred \t%p<2>;
    \t.reg .b32 \t%r<6>;
    \t.reg .b64 \t%rd<3>;

    \tld.param.u64 \t%rd1, [k_param_0];
    \tmov.u32 \t%r1, %ctaid.x;
    \tshl.b32 \t%r2, %r1, 7;
    \tsetp.lt.s32 \t%p1, %r2, 1024;
    \tmul.wide.s32 \t%rd2, %r2, 4;
    \tld.global.b32 \t%r3, [%rd2];
    \tadd.s32 \t%r4, %r3, %r2;
    \tst.global.b32 \t[%rd2], %r4;
    \tmov.u32 \t%r5, %envreg3;
    \tret;
    }
    ''')
PTX_INSERTED = PTX.replace("%r<6>", "%r<7>").replace("\tshl.b32", "\tmov.u32 \t%r9, %tid.x;\n\tshl.b32")


def test_llvm_ir_values_labels_and_metadata_shifted_by_one_instruction() -> None:
    b, c = canonical_llir(LLIR), canonical_llir(LLIR_INSERTED)
    names = renumbered_names("llir", b, c)
    text, added, removed = unified_diff(b, c, "v.llir", "v.llir", names)
    assert (added, removed) == (1, 0) and changes(text) == ["+  %4 = add i32 %3, 1"]
    # the store now writes through the new value: shown, though the shift alone would not be
    store = "store float %8, ptr addrspace(1) %7"
    c = canonical_llir(LLIR_INSERTED.replace(store, store.replace("%7", "%44")))
    text, added, removed = unified_diff(b, c, "v.llir", "v.llir", names)
    assert (added, removed) == (2, 1)
    assert changes(text)[1:] == ["-  store float %8, ptr addrspace(1) %7, align 4",
                                 "+  store float %9, ptr addrspace(1) %4, align 4"]
    # labels are numbered with the values: branch targets swapped renumber the blocks (first
    # appearance), and the blocks then show as changed
    c = canonical_llir(LLIR_INSERTED.replace("br i1 %5, label %6, label %9", "br i1 %5, label %9, label %6"))
    text, added, removed = unified_diff(b, c, "v.llir", "v.llir", names)
    assert (added, removed) == (4, 3) and changes(text)[1:3] == ["-5:", "+7:"]


def test_ptx_registers_shifted_by_one_instruction_and_special_registers_kept() -> None:
    b, c = canonical_ptx(PTX), canonical_ptx(PTX_INSERTED)
    text, added, removed = unified_diff(b, c, "v.ptx", "v.ptx", renumbered_names("ptx", b, c))
    assert (added, removed) == (2, 1)  # the register count, and the instruction
    assert changes(text) == ["-\t.reg .b32 \t%r<6>;", "+\t.reg .b32 \t%r<7>;", "+\tmov.u32 \t%r2, %tid.x;"]
    c = canonical_ptx(PTX_INSERTED.replace("%envreg3", "%envreg4"))  # a special register is a name
    text, added, removed = unified_diff(b, c, "v.ptx", "v.ptx", renumbered_names("ptx", b, c))
    assert (added, removed) == (3, 2) and "+\tmov.u32 \t%r6, %envreg4;" in changes(text)


def test_ptx_renumbers_only_the_classes_both_sides_declare() -> None:
    names = renumbered_names("ptx", PTX, PTX.replace("\t.reg .b64 \t%rd<3>;\n", ""))
    assert names is not None
    found = [m.group() for m in names.finditer("add %r1, %rd2, %p1, %envreg3, %tid.x") if m.group("name")]
    assert found == ["%r1", "%p1"]
    assert renumbered_names("ptx", "ret;\n", PTX) is None and renumbered_names("sass", PTX, PTX) is None


def variant(name: str) -> CompiledVariant:
    return CompiledVariant(case="n1", kernel="m.k", signature={"x_ptr": "*fp32"}, constexprs={}, specialization={},
                           options={"num_warps": 4}, compile_hash=f"h-{name}", name=name, file=f"n1/k/{name}.ttgir",
                           rows=("add/fp32",), launches=3)


def write_tree(root: Path, files: dict[str, dict[str, str]]) -> Path:
    """A ttgir/ folder: variant name -> level -> text (``ttgir`` required)."""
    for name, levels in files.items():
        for level, text in levels.items():
            path = root / (variant(name).file if level == "ttgir" else level_file(variant(name).file, level))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    (root / "index.tsv").write_text(index_text([variant(name) for name in files]), encoding="utf-8")
    return root


def test_status_is_still_canonical_equality_only_the_counts_change(tmp_path: Path) -> None:
    named = (KERNEL.replace("%pid", "%pid_3").replace("%a,", "%a_1,").replace("%a ", "%a_1 ")
             .replace("%a :", "%a_1 :").replace("@k(%x_ptr", "@k(%arg0").replace("%x_ptr,", "%arg0,"))
    assert named != KERNEL and canonical_ttgir(named) == canonical_ttgir(KERNEL)
    base = write_tree(tmp_path / "base", {"names": {"ttgir": KERNEL}, "op": {"ttgir": KERNEL},
                                          "llir": {"ttgir": KERNEL, "llir": LLIR, "ptx": PTX},
                                          "ptx": {"ttgir": KERNEL, "llir": LLIR, "ptx": PTX}})
    cand = write_tree(tmp_path / "cand", {"names": {"ttgir": named}, "op": {"ttgir": INSERTED},
                                          "llir": {"ttgir": named, "llir": LLIR_INSERTED, "ptx": PTX},
                                          "ptx": {"ttgir": KERNEL, "llir": LLIR, "ptx": PTX_INSERTED}})
    by = {d.name: d for d in diff_trees(base, cand)}
    assert (by["names"].status, by["names"].diff_text, by["names"].size) == (IDENTICAL, "", 0)
    assert (by["op"].status, by["op"].added, by["op"].removed) == (CHANGED, 1, 0)
    assert changes(by["op"].diff_text) == ["+    %4 = arith.constant 0 : i32"]
    assert [(lv, a, r) for lv, _, a, r in by["llir"].level_diffs] == [("llir", 1, 0)]
    assert [(lv, a, r) for lv, _, a, r in by["ptx"].level_diffs] == [("ptx", 2, 1)]
    assert by["llir"].first_level == "llir" and by["ptx"].first_level == "ptx"


# ---------------------------------------------------------------------------------------
# any program, any edits: what the diff calls context is the base renamed one to one

_OPS = ("addi", "subi", "muli", "maxsi")
Program = list[tuple[str, int, int]]


@st.composite
def programs(draw: st.DrawFn) -> tuple[Program, Program, bool]:
    """A straight-line program (op, operand, operand; operands index earlier values, 0 and 1
    the arguments), the same program edited (ops inserted, removed, rewired, changed), and
    whether the edits only swapped operands."""
    def new_op(values: int) -> tuple[str, int, int]:
        return draw(st.sampled_from(_OPS)), draw(st.integers(0, values - 1)), draw(st.integers(0, values - 1))

    base = [new_op(i + 2) for i in range(draw(st.integers(2, 14)))]
    cand, only_swaps = list(base), True
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(cand) - 1))
        kind = draw(st.sampled_from(("insert", "remove", "swap", "op")))
        op, x, y = cand[at]
        only_swaps = only_swaps and kind == "swap"
        if kind == "insert":
            cand.insert(at, new_op(at + 2))
        elif kind == "remove" and len(cand) > 1:
            del cand[at]
        elif kind == "swap":
            cand[at] = (op, y, x)
        else:
            cand[at] = (draw(st.sampled_from(_OPS)), x, y)
    return base, cand, only_swaps


def mlir(program: Program) -> str:
    body = "".join(f"    %v{i + 2} = arith.{op} %v{x}, %v{y} : i32\n" for i, (op, x, y) in enumerate(program))
    return f"tt.func @k(%v0: i32, %v1: i32) {{\n{body}    tt.return %v{len(program) + 1} : i32\n}}\n"


@settings(max_examples=300, deadline=None)
@given(programs())
def test_context_is_the_base_renamed_one_to_one_and_every_difference_shows(edit: tuple[Program, Program, bool]) -> None:
    b, c = canonical_ttgir(mlir(edit[0])), canonical_ttgir(mlir(edit[1]))
    base, cand = b.splitlines(), c.splitlines()
    names = renumbered_names("ttgir", b, c)
    assert names is not None
    opcodes = renumbering_opcodes(base, cand, names)
    # the opcodes walk both texts whole, in order
    assert [o[1] for o in opcodes] == [0] + [o[2] for o in opcodes[:-1]] and opcodes[-1][2] == len(base)
    assert [o[3] for o in opcodes] == [0] + [o[4] for o in opcodes[:-1]] and opcodes[-1][4] == len(cand)
    to_cand: dict[str, str] = {}
    for tag, i1, i2, j1, j2 in opcodes:
        for x, y in zip(base[i1:i2], cand[j1:j2]) if tag == "equal" else ():
            assert re.sub(r"%\d+", "%", x) == re.sub(r"%\d+", "%", y)
            for u, v in zip(re.findall(r"%\d+", x), re.findall(r"%\d+", y)):
                assert to_cand.setdefault(u, v) == v
    assert len(set(to_cand.values())) == len(to_cand)  # one to one
    text, added, removed = unified_diff(b, c, "a", "b", names)
    assert (text == "") == (b == c) and (b == c or added + removed > 0)
    if edit[2]:  # operands swapped only: each op whose operands now differ is a change
        swapped = sum(x != y for x, y in zip(edit[0], edit[1]))
        assert (added, removed) == (swapped, swapped)


def test_an_operand_swap_between_values_that_changed_lines_define_still_shows() -> None:
    """Two ops edited in place, then their results swapped in a non-commutative use: the use's
    canonical text reads the same, but it subtracts the other way round. Paired at the use (the
    first line both names appear on together) the swap read as context."""
    base = ("tt.func @k(%a: f32, %b: f32) {\n    %x = arith.mulf %a, %b : f32\n    %y = arith.addf %a, %b : f32\n"
            "    %z = arith.subf %x, %y : f32\n    tt.return %z : f32\n}\n")
    cand = (base.replace("arith.mulf", "arith.divf").replace("arith.addf", "arith.maxnumf")
            .replace("arith.subf %x, %y", "arith.subf %y, %x"))
    text, added, removed = ttgir_diff(base, cand)
    assert "-    %4 = arith.subf %2, %3 : f32" in changes(text)
    assert "+    %4 = arith.subf %3, %2 : f32" in changes(text)
    assert (added, removed) == (3, 3)
    # edited in place without a swap: the use is context, as before
    text, added, removed = ttgir_diff(base, base.replace("arith.mulf", "arith.divf").replace("arith.addf", "arith.maxnumf"))
    assert (added, removed) == (2, 2) and "     %4 = arith.subf %2, %3 : f32" in text.splitlines()


def test_edits_apart_in_a_long_run_of_lines_alike_are_each_one_line() -> None:
    """Past MAX_ALIKE_PAIRS the alignment keeps difflib's autojunk, which cannot anchor on a
    line alike to hundreds of others: two one-op edits far apart in 3,000 such lines read as
    every line between them removed and added again (+1001 -1001) where the plain diff shows
    the two lines. The alignment never shows more changed lines than the plain diff."""
    lines = [f"    %v{i} = arith.addi %a, %b : i32\n" for i in range(3_000)]
    cand = list(lines)
    cand[1_000], cand[2_000] = (cand[i].replace("addi", "muli") for i in (1_000, 2_000))
    text, added, removed = ttgir_diff(*(f"tt.func @k(%a: i32, %b: i32) {{\n{''.join(body)}    tt.return\n}}\n"
                                        for body in (lines, cand)))
    assert (added, removed) == (2, 2)
    assert sorted(x for x in changes(text) if x[0] == "+") == ["+    %1002 = arith.muli %0, %1 : i32",
                                                              "+    %2002 = arith.muli %0, %1 : i32"]
