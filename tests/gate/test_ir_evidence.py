"""The IR behind a verdict: both runs' ttgir/ compared, ir-diff/ written next to the verdict,
and each REGRESSED / IMPROVED / IR-changed-but-unchanged row pointing at its diff."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.gate.helpers import pair, row
from tritongate.gate.ir_evidence import HEAD_LINES, IR_DIFF_DIR, collect
from tritongate.gate.pipeline import Citations, write_result
from tritongate.gate.policy import GatePolicy
from tritongate.gate.verdict import run_gate
from tritongate.gate.verdict_file import load_verdict
from tritongate.ir.diff import BINARY_CHANGED, IDENTICAL, diff_trees, variant_order
from tritongate.ir.diff_dir import write_diff_dir
from tritongate.ir.index import CompiledVariant, index_text

MATMUL = "tritongate.ops.kernels.matmul.matmul_kernel"
SCALE = "tritongate.ops.kernels.matmul.scale_kernel"
SOFTMAX = "tritongate.ops.kernels.reduction.softmax_kernel"


def variant(kernel: str, case: str, name: str, rows: tuple[str, ...], binary: str = "") -> CompiledVariant:
    short = kernel.rsplit(".", 1)[1]
    return CompiledVariant(case=case, kernel=kernel, signature={"a_ptr": "*fp16"}, constexprs={"BLOCK": 64},
                           specialization={}, options={"num_warps": 4}, compile_hash=f"{case}-{short}-{name}",
                           binary_hash=binary, launches=1, rows=rows, name=name,
                           file=f"{case}/{short}/{name}.ttgir")


def ttgir(body: str) -> str:
    return ('#loc = loc("/ckout/k.py":1:0)\nmodule {\n  tt.func @k() {\n' + body +
            '    tt.return loc(#loc)\n  }\n}\n')


def write_ir(run: Path, entries: list[tuple[CompiledVariant, str]]) -> None:
    folder = run / "ttgir"
    for v, text in entries:
        (folder / v.file).parent.mkdir(parents=True, exist_ok=True)
        (folder / v.file).write_text(text, encoding="utf-8")
    (folder / "index.tsv").write_text(index_text([v for v, _ in entries]), encoding="utf-8")


MMA = "    %0 = ttng.warp_group_dot %a, %b : f16 loc(#loc)\n"
MMA_V2 = "    %0 = tt.dot %a, %b : f16 loc(#loc)\n    %1 = ttg.convert_layout %0 loc(#loc)\n"
SCALE_IR = "    %2 = arith.mulf %x, %y : f32 loc(#loc)\n"
SOFTMAX_IR = "    %3 = math.exp %x : f32 loc(#loc)\n"


def runs(tmp_path: Path, *, cand_ir: bool = True, base_ir: bool = True):
    """matmul regresses (its dot kernel changed, its scale kernel did not); softmax/1024
    is unchanged in time but its IR changed; softmax/2048 is unchanged throughout."""
    base_rows = [row(op="matmul", case="m512", median=20, seed=1), row(op="softmax", case="s1024", seed=2),
                 row(op="softmax", case="s2048", seed=3)]
    cand_rows = [row(op="matmul", case="m512", median=26, seed=4), row(op="softmax", case="s1024", seed=5),
                 row(op="softmax", case="s2048", seed=6)]
    base, cand = pair(tmp_path, base_rows, cand_rows)
    mm = ("matmul/float16",)
    sm = ("softmax/float16",)
    if base_ir:
        write_ir(base.path, [(variant(MATMUL, "m512", "B64_w4", mm), ttgir(MMA)),
                             (variant(SCALE, "m512", "w4", mm), ttgir(SCALE_IR)),
                             (variant(SOFTMAX, "s1024", "w4", sm), ttgir(SOFTMAX_IR)),
                             (variant(SOFTMAX, "s2048", "w4", sm), ttgir(SOFTMAX_IR))])
    if cand_ir:
        write_ir(cand.path, [(variant(MATMUL, "m512", "B64_w4", mm), ttgir(MMA_V2).replace("/ckout/", "/other/")),
                             (variant(SCALE, "m512", "w4", mm), ttgir(SCALE_IR)),
                             (variant(SOFTMAX, "s1024", "w4", sm), ttgir(SOFTMAX_IR + "    %4 = arith.addf loc(#loc)\n")),
                             (variant(SOFTMAX, "s2048", "w4", sm), ttgir(SOFTMAX_IR))])
    return base, cand


def test_rows_point_at_their_changed_kernels(tmp_path: Path) -> None:
    base, cand = runs(tmp_path)
    ev = collect(base.path, cand.path, tmp_path / "verdict")
    assert ev.note == "" and ev.folder == IR_DIFF_DIR
    assert ev.counts["changed"] == 2 and ev.counts[IDENTICAL] == 2
    mm = ev.for_row(("matmul", "m512", "float16"))
    assert (mm.kernels, mm.changed, mm.only_one_side) == (2, 1, 0)
    assert mm.diff == f"{IR_DIFF_DIR}/m512/matmul_kernel/B64_w4.diff"
    assert (tmp_path / "verdict" / mm.diff).is_file()
    # SSA names as the normaliser gives them (ir.diff may renumber them canonically)
    assert re.search(r"^-    %0 = ttng\.warp_group_dot %\w+, %\w+ : f16$", mm.head, re.M)
    assert re.search(r"^\+    %0 = tt\.dot %\w+, %\w+ : f16$", mm.head, re.M)
    assert "loc(" not in mm.head and "---" not in mm.head
    same = ev.for_row(("softmax", "s2048", "float16"))
    assert (same.kernels, same.changed, same.diff) == (1, 0, "")
    assert ev.for_row(("softmax", "nope", "float16")) is None


def test_verdict_md_links_each_called_and_quietly_changed_row(tmp_path: Path) -> None:
    base, cand = runs(tmp_path)
    result = run_gate(base, cand, GatePolicy())
    md_path = write_result(result, tmp_path / "verdict").md_path
    md = md_path.read_text()
    regressed = md.split("**🔴 Regressed")[1].split("\n**")[0]
    assert "| IR |" in regressed
    assert "1 of 2 kernels changed: <code>ir-diff/m512/matmul_kernel/B64_w4.diff</code>" in regressed
    assert "<details><summary>IR diff of matmul · m512 · float16: smallest changed diff" in regressed
    assert "```diff\n-    %0 = ttng.warp&#95;group" not in regressed  # code is literal, not escaped
    assert re.search(r"```diff\n@@ -1,6 \+1,7 @@\n module \{\n   tt\.func @k\(\) \{\n"
                     r"-    %0 = ttng\.warp_group_dot %\w+, %\w+ : f16\n\+    %0 = tt\.dot %\w+, %\w+ : f16\n", regressed)
    quiet = md.split("**🔎 IR changed, time unchanged (1)**")[1].split("\n**")[0]
    assert "| softmax · s1024 · float16 |" in quiet and "1 of 1 kernel changed" in quiet
    assert "s2048" not in quiet
    assert "TTGIR of 4 launched kernel variants compared: 2 differ (2 changed); diffs in <code>ir-diff/</code>" in md
    doc = load_verdict(tmp_path / "verdict").doc
    rows = {r.case: r for r in doc.rows}
    assert rows["m512"].ir.changed == 1 and rows["m512"].ir.diff.endswith("B64_w4.diff")
    assert rows["s2048"].ir.changed == 0 and rows["s2048"].ir.diff is None
    assert doc.ir.folder == IR_DIFF_DIR and doc.ir.variants["changed"] == 2


def test_runs_without_ir_give_no_ir_and_no_note(tmp_path: Path) -> None:
    base, cand = runs(tmp_path, base_ir=False, cand_ir=False)
    result = run_gate(base, cand, GatePolicy())
    written = write_result(result, tmp_path / "verdict")
    json_path, md_path = written.json_path, written.md_path
    md = md_path.read_text()
    assert "| IR |" not in md and "TTGIR" not in md and "IR comparison" not in md
    assert not (tmp_path / "verdict" / IR_DIFF_DIR).exists()
    doc = json.loads(json_path.read_text())
    assert doc["ir"] == {"folder": None, "variants": {}, "note": None}
    assert all(r["ir"] is None for r in doc["rows"])


def _ahead_of_time_folder(tmp_path: Path) -> Path:
    """An ir-diff folder of the same kernels (as ``tritongate ir-diff`` writes one), made from
    runs with IR; the runs then gated keep none, as interpreter runs do."""
    with_ir, without = tmp_path / "with-ir", tmp_path / "without"
    with_ir.mkdir(), without.mkdir()
    base, cand = runs(with_ir)
    return write_diff_dir(sorted(diff_trees(base.path, cand.path), key=variant_order), tmp_path / "aot-diff")


def test_interpreter_runs_paired_with_an_ahead_of_time_diff_take_it_as_their_ir(tmp_path: Path) -> None:
    # pair --changed-from on --backend cpu: the runs compile nothing, the pre-screen compiled both
    # builds for the GPU; its diff is the verdict's IR evidence (it was dropped without a word)
    folder = _ahead_of_time_folder(tmp_path)
    base, cand = runs(tmp_path / "without", base_ir=False, cand_ir=False)
    result = run_gate(base, cand, GatePolicy())
    written = write_result(result, tmp_path / "verdict", Citations(ahead_of_time=folder))
    doc = load_verdict(tmp_path / "verdict").doc
    rows = {r.case: r for r in doc.rows}
    assert rows["m512"].ir.changed == 1 and rows["m512"].ir.diff == f"{IR_DIFF_DIR}/m512/matmul_kernel/B64_w4.diff"
    assert (tmp_path / "verdict" / rows["m512"].ir.diff).read_bytes() == \
        (folder / "m512/matmul_kernel/B64_w4.diff").read_bytes()
    assert rows["s1024"].ir.changed == 1 and rows["s2048"].ir.changed == 0
    assert doc.ir.folder == IR_DIFF_DIR and doc.ir.variants["changed"] == 2
    assert doc.ir.note.startswith(f"IR compared ahead of time ({folder}")
    md = written.md_path.read_text()
    assert "**🔎 IR changed, time unchanged (1)**" in md and "| softmax · s1024 · float16 |" in md
    assert "-    %0 = ttng.warp_group_dot" in md


def test_an_unreadable_ahead_of_time_diff_is_a_note(tmp_path: Path) -> None:
    folder = _ahead_of_time_folder(tmp_path)
    diff = folder / "m512/matmul_kernel/B64_w4.diff"
    diff.unlink()
    diff.symlink_to("/etc/passwd")  # never followed: the folder may come from a job that ran the PR's code
    base, cand = runs(tmp_path / "without", base_ir=False, cand_ir=False)
    ev = collect(base.path, cand.path, tmp_path / "verdict", folder)
    assert ev.rows == {} and ev.note.startswith(f"no IR comparison: the runs kept no TTGIR and the ahead-of-time "
                                                f"diff {folder} could not be read")
    assert "root:" not in "".join(p.read_text(errors="replace") for p in (tmp_path / "verdict").rglob("*")
                                  if p.is_file())


def test_one_side_without_ir_is_a_note_not_a_failure(tmp_path: Path) -> None:
    base, cand = runs(tmp_path, cand_ir=False)
    result = run_gate(base, cand, GatePolicy())
    md_path = write_result(result, tmp_path / "verdict").md_path
    md = md_path.read_text()
    assert re.search(r"\*\*Note:\*\* No IR comparison: the candidate run kept no TTGIR \(.*ttgir is absent\)", md)
    assert "**🔴 Regressed (1)**" in md and "| IR |" not in md


def test_a_damaged_index_leaves_the_verdict_standing(tmp_path: Path) -> None:
    base, cand = runs(tmp_path)
    (cand.path / "ttgir" / "index.tsv").write_text("not\tan\tindex\n", encoding="utf-8")
    result = run_gate(base, cand, GatePolicy())
    written = write_result(result, tmp_path / "verdict")
    json_path, md_path = written.json_path, written.md_path
    assert "No IR comparison: ValueError" in md_path.read_text()
    assert json.loads(json_path.read_text())["ir"]["note"].startswith("no IR comparison")


def test_hostile_ir_stays_inside_its_code_block(tmp_path: Path) -> None:
    base, cand = runs(tmp_path)
    evil = "    ```\n</details><script>x</script> @octocat #1 https://evil.example \u202e\n    ````\n"
    f = cand.path / "ttgir" / "m512" / "matmul_kernel" / "B64_w4.ttgir"
    f.write_text(ttgir(MMA + evil), encoding="utf-8")
    md_path = write_result(run_gate(base, cand, GatePolicy()), tmp_path / "verdict").md_path
    md = md_path.read_text()
    block = re.search(r"\n(`{5,})diff\n(.*?)\n\1\n", md, re.S)  # the fence outgrows any run inside
    assert block is not None and "<script>" in block.group(2) and "\\u202e" in block.group(2)
    outside = md.replace(block.group(0), "")
    assert "<script>" not in outside and "@octocat" not in outside and "\u202e" not in md
    assert outside.count("<details>") == outside.count("</details>") == 3


def test_inline_diffs_are_bounded_in_count_and_length(tmp_path: Path) -> None:
    n = 15
    base_rows = [row(op="matmul", case=f"m{i}", median=20, seed=i) for i in range(n)]
    cand_rows = [row(op="matmul", case=f"m{i}", median=26, seed=100 + i) for i in range(n)]
    base, cand = pair(tmp_path, base_rows, cand_rows)
    long_body = "".join(f"    %{j} = arith.addi %a, %b : i32 loc(#loc)\n" for j in range(200))
    write_ir(base.path, [(variant(MATMUL, f"m{i}", "w4", ("matmul/float16",)), ttgir(MMA)) for i in range(n)])
    write_ir(cand.path, [(variant(MATMUL, f"m{i}", "w4", ("matmul/float16",)), ttgir(long_body)) for i in range(n)])
    md_path = write_result(run_gate(base, cand, GatePolicy()), tmp_path / "verdict").md_path
    md = md_path.read_text()
    assert md.count("smallest changed diff") == 12  # the inline budget; every row keeps its path
    assert md.count("1 of 1 kernel changed: <code>ir-diff/") == n
    first = re.search(r"```diff\n(.*?)\n```\n", md, re.S).group(1).splitlines()
    assert len(first) == HEAD_LINES + 1 and first[-1].startswith("… (first lines only")


def test_a_binary_only_change_counts_as_changed_without_a_diff(tmp_path: Path) -> None:
    base, cand = runs(tmp_path, base_ir=False, cand_ir=False)
    v = variant(SOFTMAX, "s2048", "w4", ("softmax/float16",), binary="aaaa")
    write_ir(base.path, [(v, ttgir(SOFTMAX_IR))])
    write_ir(cand.path, [(variant(SOFTMAX, "s2048", "w4", ("softmax/float16",), binary="bbbb"),
                          ttgir(SOFTMAX_IR).replace("/ckout/", "/elsewhere/"))])
    (d,) = diff_trees(base.path, cand.path)
    assert d.status == BINARY_CHANGED and d.diff_text == "" and "aaaa -> bbbb" in d.reason
    ev = collect(base.path, cand.path, tmp_path / "verdict")
    r = ev.for_row(("softmax", "s2048", "float16"))
    assert (r.kernels, r.changed, r.diff) == (1, 1, "")
    # one side without a binary hash (an interpreter-era index) is not evidence of a change
    write_ir(cand.path, [(variant(SOFTMAX, "s2048", "w4", ("softmax/float16",)), ttgir(SOFTMAX_IR))])
    assert [d.status for d in diff_trees(base.path, cand.path)] == [IDENTICAL]


@pytest.mark.parametrize("limit", [6000, 3000])
def test_shortened_comments_drop_inline_diffs_first(tmp_path: Path, limit: int) -> None:
    from tritongate.gate.output import render_markdown
    from tritongate.gate.ir_evidence import collect as collect_ir

    base, cand = runs(tmp_path)
    result = run_gate(base, cand, GatePolicy())
    ev = collect_ir(base.path, cand.path, tmp_path / "v")
    full = render_markdown(result, ir=ev)
    assert "smallest changed diff" in full
    short = render_markdown(result, ir=ev, limit=len(full) - 40)  # inline diffs go before any row
    assert short.count("smallest changed diff") < full.count("smallest changed diff")
    assert "1 of 2 kernels changed" in short
    assert len(render_markdown(result, ir=ev, limit=limit)) <= limit


def test_an_ahead_of_time_diff_past_its_total_bound_is_a_note_and_nothing_copied(tmp_path: Path, monkeypatch) -> None:
    # bounded per file and in count, it was not in total: 20,000 files of 2 MiB into the artifact
    from tritongate.ir import diff_read

    folder = _ahead_of_time_folder(tmp_path)
    total = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    monkeypatch.setattr(diff_read, "MAX_TOTAL_BYTES", total // 2)
    base, cand = runs(tmp_path / "without", base_ir=False, cand_ir=False)
    ev = collect(base.path, cand.path, tmp_path / "verdict", folder)
    assert ev.rows == {} and "over" in ev.note and "in all" in ev.note
    assert not (tmp_path / "verdict" / IR_DIFF_DIR).exists()


def test_an_ahead_of_time_index_the_csv_reader_refuses_is_a_note(tmp_path: Path) -> None:
    # a field past csv's own limit (131,072 characters) raised csv.Error while the folder was
    # copied, outside what the verdict's writer catches: the gate crashed on a PR's artifact
    folder = _ahead_of_time_folder(tmp_path)
    index = folder / "index.tsv"
    index.write_text(index.read_text() + "c\tk\t" + "n" * 200_000 + "\tchanged\t1\t1\t\tadd/float16\t\n")
    base, cand = runs(tmp_path / "without", base_ir=False, cand_ir=False)
    ev = collect(base.path, cand.path, tmp_path / "verdict", folder)
    assert ev.rows == {} and ev.note.startswith("no IR comparison: the runs kept no TTGIR") and "field" in ev.note
