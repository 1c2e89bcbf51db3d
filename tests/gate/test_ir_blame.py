"""Pass blame beside the verdict's IR diff: ``ir-diff/blame.json`` read into verdict.json's
``ir.blame`` and shown one line per changed kernel in verdict.md and on the terminal; nothing
new without the file; a damaged, oversized or linked one is a note; hostile names stay text."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from tests.gate.test_ir_evidence import MATMUL, SOFTMAX, runs
from tests.report.golden_verdicts import BLAME_FIXTURE, fixture_diffs
from tritongate.gate import ir_blame
from tritongate.gate.ir_blame import BLAME_JSON, read_blame
from tritongate.gate.ir_evidence import IR_DIFF_DIR
from tritongate.gate.pipeline import write_result
from tritongate.gate.policy import GatePolicy
from tritongate.gate.verdict import run_gate
from tritongate.gate.verdict_file import load_verdict
from tritongate.ir.diff import CAND_ONLY, CHANGED, VariantDiff
from tritongate.model.verdict import IRBlameDoc
from tritongate.report.blame_view import MARKDOWN_LINES, markdown_block, terminal_block
from tritongate.report.verdict_terminal import summary_lines


def blamed(kernel: str, case: str, variant: str, **kw: Any) -> dict[str, Any]:
    """An entry as ``ir.passblame.Blame.to_dict`` writes it (the fields the verdict reads)."""
    return {"case": case, "kernel": kernel, "variant": variant, "kind": "pass", "pass_name": "tritongpu-accelerate-matmul",
            "stage": "ttgir", "level": "mlir", "index_base": 30, "index_cand": 30, "input_equal": True,
            "next_pass": "", "added": [], "removed": [], "excerpt": "-a\n+b", **kw}


def blame_file(folder: Path, variants: list[dict[str, Any]], **extra: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / BLAME_JSON
    path.write_text(json.dumps({"schema_version": 1, "target": "cuda:90", "variants": variants, **extra}),
                    encoding="utf-8")
    return path


def gate(tmp_path: Path, blame: Any = None) -> tuple[dict[str, Any], str, Path]:
    """The two runs of ``runs`` (matmul's dot kernel and softmax/s1024 changed) gated, with
    ``blame`` (entries, or a callable making the file) in verdict/ir-diff/ first."""
    base, cand = runs(tmp_path)
    verdict = tmp_path / "verdict"
    if callable(blame):
        (verdict / IR_DIFF_DIR).mkdir(parents=True)
        blame(verdict / IR_DIFF_DIR / BLAME_JSON)
    elif blame is not None:
        blame_file(verdict / IR_DIFF_DIR, blame)
    written = write_result(run_gate(base, cand, GatePolicy()), verdict)
    return json.loads(written.json_path.read_text()), written.md_path.read_text(), verdict


# ----------------------------------------------------------------------------- present, absent

def test_blame_lines_go_into_verdict_json_md_and_the_terminal(tmp_path: Path) -> None:
    doc, md, verdict = gate(tmp_path, [
        blamed(MATMUL, "m512", "B64_w4"),
        blamed(SOFTMAX, "s1024", "w4", kind="pipeline", pass_name="tritongpu-coalesce", index_cand=-1,
               next_pass="tritongpu-F32DotTC@ttgir", removed=["tritongpu-coalesce@ttgir"])])
    blame = doc["ir"]["blame"]
    assert blame["file"] == "ir-diff/blame.json" and blame["note"] is None and blame["target"] == "cuda:90"
    assert [(k["kernel"], k["outcome"], k.get("pass_name"), k.get("change")) for k in blame["kernels"]] == [
        (MATMUL, "pass", "tritongpu-accelerate-matmul", None), (SOFTMAX, "pipeline", "tritongpu-coalesce", "removed")]
    assert load_verdict(verdict).doc.ir.blame.kernels[0].cases == ["m512"]  # validated as it was written
    assert ("- <code>matmul_kernel</code> first differs after <code>tritongpu-accelerate-matmul</code> (ttgir)"
            in md)
    assert ("- <code>softmax_kernel</code>: pipeline changed: <code>tritongpu-coalesce</code> removed (ttgir); "
            "then <code>tritongpu-F32DotTC</code> (ttgir) is the first pass whose output differs") in md
    assert md.index("TTGIR of 4 launched kernel variants") < md.index("Pass blame") < md.index("How to read this")
    terminal = summary_lines(doc)
    assert "  PASS BLAME        `matmul_kernel` first differs after `tritongpu-accelerate-matmul` (ttgir)" in terminal


def test_without_blame_json_nothing_new_is_said(tmp_path: Path) -> None:
    doc, md, _ = gate(tmp_path)
    assert "blame" not in doc["ir"] and doc["ir"]["folder"] == IR_DIFF_DIR
    assert "blame" not in md.lower() and not any("BLAME" in line for line in summary_lines(doc))


def test_below_input_none_failed_past_n_and_one_side_only_each_say_so(tmp_path: Path) -> None:
    diffs = [VariantDiff("c", "m.k_below", "v", CHANGED), VariantDiff("c", "m.k_input", "v", CHANGED),
             VariantDiff("c", "m.k_none", "v", CHANGED), VariantDiff("c", "m.k_new", "v", CAND_ONLY),
             VariantDiff("c", "m.k_failed", "v", CHANGED), VariantDiff("c", "m.k_past", "v", CHANGED)]
    entries = [blamed("m.k_below", "c", "v", kind="below", first_level="ptx"),
               blamed("m.k_input", "c", "v", kind="input", pass_name="(input)"),
               blamed("m.k_none", "c", "v", kind="none")]
    # the pre-screen's blame.json also lists the variants past its limit and those whose dumps failed
    blame_file(tmp_path, entries, failed=[{"case": "c", "kernel": "m.k_failed", "variant": "v",
                                           "error": "compiling with dumps failed (exit 1)"}],
               not_blamed=[{"case": "c", "kernel": "m.k_past", "variant": "v"}])
    lines = markdown_block(IRBlameDoc.model_validate(read_blame(tmp_path, diffs, IR_DIFF_DIR)))
    text = "\n".join(lines)
    assert "<code>k_below</code> differs below the pass dumps (PTX)" in text
    assert "<code>k_input</code> differs before any pass: the frontend's TTIR" in text
    assert "<code>k_none</code>: no pass output or final output differs" in text
    assert "<code>k_new</code> not blamed: launched by one build only" in text
    assert "<code>k_failed</code> not blamed: its compiles with every pass dumped failed: compiling with dumps" in text
    assert "<code>k_past</code> not blamed: past the first 4 changed variants, the ones blamed" in text


# ----------------------------------------------------------------------------- damaged

def _not_json(p: Path) -> None:
    p.write_bytes(b"{\"schema_version\": 1, \"variants\": [")


def _deep(p: Path) -> None:
    p.write_text("[" * 100_000 + "]" * 100_000)


def _version(p: Path) -> None:
    p.write_text(json.dumps({"schema_version": 99, "variants": []}))


def _no_list(p: Path) -> None:
    p.write_text(json.dumps({"schema_version": 1, "variants": {"a": 1}}))


def _binary(p: Path) -> None:
    p.write_bytes(b"\xff\xfe\x00garbage")


def _link(p: Path) -> None:
    outside = p.parent.parent.parent / "secret.json"
    outside.write_text(json.dumps({"schema_version": 1, "variants": []}))
    os.symlink(outside, p)


def _folder(p: Path) -> None:
    p.mkdir()


def _fifo(p: Path) -> None:
    os.mkfifo(p)


@pytest.mark.parametrize("make, why", [
    (_not_json, "it is not valid JSON"), (_deep, "it is not valid JSON"), (_version, "schema_version 99"),
    (_no_list, "no list of variants"), (_binary, "it is not valid JSON"), (_link, "not a plain file in the folder"),
    (_folder, "not a plain file (a folder)"), (_fifo, "not a plain file (a pipe, socket or device)")])
def test_a_damaged_blame_json_is_a_note_and_the_verdict_stands(tmp_path: Path, make, why: str) -> None:
    doc, md, _ = gate(tmp_path, make)
    blame = doc["ir"]["blame"]
    assert blame["kernels"] == [] and why in blame["note"], blame["note"]
    assert blame["note"].startswith("the pass blame in ir-diff/blame.json could not be read: ")
    assert "secret" not in blame["note"]  # a link's target is never named
    assert "**Note:** The pass blame in ir-diff/blame.json could not be read: " in md
    assert "**🔴 Regressed (1)**" in md and doc["counts"]["REGRESSED"] == 1
    assert any(line.startswith("note: the pass blame") for line in summary_lines(doc))


def test_an_oversized_blame_json_is_refused_unread(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(ir_blame, "MAX_BLAME_BYTES", 1000)
    doc, md, _ = gate(tmp_path, [blamed(MATMUL, "m512", "B64_w4", excerpt="x" * 2000)])
    assert "it is larger than" in doc["ir"]["blame"]["note"] and doc["ir"]["blame"]["kernels"] == []


def test_a_blame_of_another_comparison_is_not_shown(tmp_path: Path) -> None:
    doc, md, _ = gate(tmp_path, [blamed("other.kernel", "elsewhere", "v")])
    assert "names none of this diff's changed kernel variants" in doc["ir"]["blame"]["note"]
    assert "other.kernel" not in md


def test_entries_that_are_not_objects_or_lack_keys_are_skipped(tmp_path: Path) -> None:
    deep: Any = []
    for _ in range(900):  # deep enough that printing it whole would recurse
        deep = [deep]
    doc, _, _ = gate(tmp_path, [1, "x", None, {"case": 1}, blamed(MATMUL, "m512", "B64_w4", kind=deep)])
    (line, rest) = doc["ir"]["blame"]["kernels"]
    assert line["outcome"] == "not_blamed" and line["why"] == "blame.json gives it no blame (kind list)"
    assert rest["kernel"] == SOFTMAX and rest["outcome"] == "not_blamed"


# ----------------------------------------------------------------------------- hostile

EVIL = ("</code></details><script>alert(1)</script> @octocat #12 [x](https://evil.example) "
        "![i](http://x/i.png) `tick` **b** | cell | \u202e <!-- c -->")


def test_hostile_pass_names_stay_inert_text_and_bounded(tmp_path: Path) -> None:
    doc, md, verdict = gate(tmp_path, [
        blamed(MATMUL, "m512", "B64_w4", pass_name=EVIL + "x" * 5000, stage="ttgir\n## ✅ passed"),
        blamed(SOFTMAX, "s1024", "w4", kind="pipeline", pass_name="p", next_pass=EVIL, index_base=-1)])
    kernels = doc["ir"]["blame"]["kernels"]
    assert len(kernels[0]["pass_name"]) == 300 and "\n" not in kernels[0]["stage"]
    block = md.split("Pass blame")[1].split("<sub>")[0]
    for bad in ("<script>", "</details>", "@octocat", " #12 ", "](https", "![", "`tick`", "**b**", "<!--", "\u202e",
                "| cell |", "\n## "):
        assert bad not in block, bad
    assert re.findall(r"<[^>]*>", block) and set(re.findall(r"<[^>]*>", block)) <= {"<code>", "</code>"}
    assert "&lt;script&gt;" in block and "&#92;u202e" in block
    assert all("\u202e" not in line for line in summary_lines(doc))  # the terminal: controls shown, not obeyed


# ----------------------------------------------------------------------------- bounded

def _many(n: int) -> tuple[list[VariantDiff], list[dict[str, Any]]]:
    diffs = [VariantDiff(f"c{i}", f"mod.kernel_{i:03d}", "v", CHANGED) for i in range(n)]
    return diffs, [blamed(d.kernel, d.case, d.name) for d in diffs]


def test_more_kernels_than_shown_end_in_and_n_more(tmp_path: Path) -> None:
    diffs, entries = _many(30)
    blame_file(tmp_path, entries)
    doc = IRBlameDoc.model_validate(read_blame(tmp_path, diffs, IR_DIFF_DIR))
    assert len(doc.kernels) == 30 and doc.more == 0
    lines = markdown_block(doc)
    assert sum(line.startswith("- <code>kernel_") for line in lines) == MARKDOWN_LINES
    assert lines[-1] == f"- _… and {30 - MARKDOWN_LINES} more; <code>ir-diff/blame.json</code> has every blamed variant._"
    assert terminal_block(doc)[-1] == "  … 25 more blame lines in verdict.md (ir-diff/blame.json)"


def test_verdict_json_keeps_at_most_100_lines_and_counts_the_rest(tmp_path: Path) -> None:
    diffs, entries = _many(250)
    blame_file(tmp_path, entries)
    raw = read_blame(tmp_path, diffs, IR_DIFF_DIR)
    doc = IRBlameDoc.model_validate(raw)
    assert len(doc.kernels) == 100 and doc.more == 150
    assert markdown_block(doc)[-1].startswith(f"- _… and {250 - MARKDOWN_LINES} more;")


def test_the_real_patch_blame_reads_as_written() -> None:
    """The committed blame of a real change (tests/report/blame_fixture.py): four variants
    blamed on the removed coalesce pass, the other thirty not blamed, past the first four."""
    diffs, _ = fixture_diffs()
    doc = IRBlameDoc.model_validate(read_blame(BLAME_FIXTURE, diffs, IR_DIFF_DIR))
    blamed_lines = [k for k in doc.kernels if k.outcome != "not_blamed"]
    assert {(k.pass_name, k.change) for k in blamed_lines} == {("tritongpu-coalesce", "removed")}
    assert sum(k.variants for k in blamed_lines) == 4
    assert sum(k.variants for k in doc.kernels) == len([d for d in diffs if d.status == CHANGED]) == 34


def test_a_prescreen_blame_is_carried_into_the_pair_verdict_folder(tmp_path):
    from tritongate.gate.ir_blame import carry_blame

    src = tmp_path / "prescreen" / "ir-diff"
    src.mkdir(parents=True)
    (src / "blame.json").write_bytes(b'{"schema": 1}')
    assert carry_blame(src, tmp_path / "verdict", "ir-diff")
    assert (tmp_path / "verdict" / "ir-diff" / "blame.json").read_bytes() == b'{"schema": 1}'
    # none there, a link (never followed), a folder: nothing carried, nothing written
    for name, make in (("none", lambda d: None), ("link", lambda d: (d / "blame.json").symlink_to("/etc/passwd")),
                       ("folder", lambda d: (d / "blame.json").mkdir())):
        d = tmp_path / name
        d.mkdir()
        make(d)
        assert not carry_blame(d, tmp_path / f"v-{name}", "ir-diff")
        assert not (tmp_path / f"v-{name}" / "ir-diff" / "blame.json").exists()
