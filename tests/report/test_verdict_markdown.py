"""The one renderer of the verdict comment, on the golden verdicts (one per kind), rendered
again with a CommonMark renderer (markdown-it-py) as GitHub would show it."""

from __future__ import annotations

import json
import os
import re

import pytest
from markdown_it import MarkdownIt

from tritongate.gate.verdict_file import load_verdict
from tritongate.report.verdict_markdown import COMMENT_LIMIT, STICKY_MARKER, render_verdict
from tritongate.report.verdict_terminal import summary_lines
from tritongate.model.verdict import Verdict, VerdictDoc

from tests.report.golden_verdicts import GOLDEN, KINDS, build

UPDATE = bool(os.environ.get("TRITONGATE_UPDATE_GOLDEN"))


def golden_doc(kind: str) -> dict:
    return json.loads((GOLDEN / f"{kind}.verdict.json").read_text(encoding="utf-8"))


def html(text: str) -> str:
    return MarkdownIt("commonmark").enable("table").render(text)


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_golden_verdict_is_what_the_gate_writes_today(tmp_path, kind):
    doc = build(kind, tmp_path / kind)
    path = GOLDEN / f"{kind}.verdict.json"
    if UPDATE:
        path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    assert doc == json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_comment_matches_its_golden_file(kind):
    text = render_verdict(golden_doc(kind))
    path = GOLDEN / f"{kind}.md"
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


HEADLINES = {"pass": "## ✅ No regression in 5 rows",
             "pass_blind": "## ⚠️ No regression found; 3 rows could not resolve 1 %",
             "fail_regressions_ir": "## ❌ 2 regressions, worst matmul · 4096x4096x4096 · float16 +",
             "identical_only": "## ✅ No regression in 4 rows",
             "planted": "## ❌ 1 regression, worst add · 4096 · float32 +",
             "blame": "## ❌ 3 regressions, worst add · 1048576 · bfloat16 +"}


@pytest.mark.parametrize("kind", list(KINDS))
def test_one_headline_line_in_three_states(kind):
    text = render_verdict(golden_doc(kind))
    lines = text.splitlines()
    assert lines[0] == STICKY_MARKER and lines[1].startswith(HEADLINES[kind])
    assert sum(ln.startswith("## ") for ln in lines) == 1  # printed once
    assert summary_lines(golden_doc(kind))[0] == lines[1][len("## "):].replace(" · ", " ")  # the same words


@pytest.mark.parametrize("kind", list(KINDS))
def test_rendered_tables_keep_their_width_and_notes_stay_paragraphs(kind):
    text = render_verdict(golden_doc(kind))
    rendered = html(text)
    for table in re.findall(r"<table>.*?</table>", rendered, flags=re.S):
        head = len(re.findall(r"<th>", table.split("</thead>")[0]))
        for tr in re.findall(r"<tr>(.*?)</tr>", table.split("</thead>")[1], flags=re.S):
            assert len(re.findall(r"<td>", tr)) == head, tr
    notes = [n for n in golden_doc(kind)["notes"] if "environment overlay" not in n]
    paragraphs = re.findall(r"<p><strong>Note:</strong>(.*?)</p>", rendered, flags=re.S)
    assert len(paragraphs) >= len(notes)
    assert rendered.count("<details>") == rendered.count("</details>")


def test_the_planted_cpu_run_says_the_codegen_overlay_does_nothing_there():
    text = render_verdict(golden_doc("planted"))
    assert "DISABLE_MMA_V3=1 does nothing on the cpu backend" in text
    assert "planted run" in text
    assert "Both sides ran on the Triton interpreter (--backend cpu)" in text
    notes = re.findall(r"<p><strong>Note:</strong>", html(text))
    assert len(notes) == 3  # three paragraphs, not one merged quote


def test_calls_between_two_builds_on_the_interpreter_say_so_in_the_headline():
    """Triton 3.6.0 against 3.7.1 on `--backend cpu` read "✅ No regression in 8 rows; 8 improved",
    the interpreter note at the bottom: the calls measure the interpreters, and the headline
    says so. One build against itself (the planted golden) is measured as it is."""
    from tritongate.report.verdict_terminal import headline_text

    doc = golden_doc("planted")
    assert render_verdict(doc).splitlines()[1] == "## ❌ 1 regression, worst add · 4096 · float32 +27.2 %"
    for other in ({"triton_version": "3.7.1"}, {"python": "/venvs/triton-3.7.1/bin/python"},
                  {"patches": ["fuse.patch"]}, {"compiler_ref": "pr-head", "commit": "abc123"},
                  {"env_overlay": {**doc["candidate"]["env_overlay"], "PYTHONPATH": "/src/triton/python"}}):
        two = {**doc, "candidate": {**doc["candidate"], **other}}
        assert render_verdict(two).splitlines()[1] == ("## ❌ 1 regression, worst add · 4096 · float32 +27.2 % "
                                                       "(interpreter times, not the code a GPU would run)")
        assert headline_text(VerdictDoc.model_validate(two)).endswith("+27.2 % (interpreter times, not the code a "
                                                                      "GPU would run)")
    on_gpu = {**doc, "base": {**doc["base"], "backend": "cuda"},
              "candidate": {**doc["candidate"], "backend": "cuda", "triton_version": "3.7.1"}}
    assert "interpreter times" not in render_verdict(on_gpu).splitlines()[1]


def test_a_path_overlay_is_not_called_a_code_generation_setting():
    """`--cand-env PYTHONPATH=...` picks another Triton: on the interpreter that changes what runs
    (the interpreter note says what was compared), so it is not 'doing nothing'."""
    doc = golden_doc("planted")
    doc["candidate"]["env_overlay"] = {"PYTHONPATH": "/src/triton/python"}
    doc["base"]["env_overlay"] = {}
    assert "does nothing on the cpu backend" not in render_verdict(doc)
    doc["candidate"]["env_overlay"] = {"PYTHONPATH": "/src/triton/python", "DISABLE_MMA_V3": "1"}
    assert "overlay DISABLE_MMA_V3=1 does nothing" in render_verdict(doc)


def test_a_patched_build_on_the_interpreter_says_what_its_times_can_show():
    """A codegen-only patch (drop-hopper-pipeline.patch) paired on `--backend cpu` read "⚠️ No
    regression found" with only the generic interpreter note, where an environment knob is told
    it does nothing there: a patch may change Triton's Python code, which the interpreter runs,
    so the note says what can show and where the rest is seen."""
    doc = golden_doc("planted")
    assert "Patches applied" not in render_verdict(doc)
    doc["candidate"]["patches"] = ["drop-hopper-pipeline.patch"]
    text = render_verdict(doc)
    assert ("Patches applied to the candidate's (drop-hopper-pipeline.patch) build: on the cpu backend only a change "
            "to Triton's Python code (its interpreter, language or runtime) can show in these times") in text
    assert "shows ahead of time in tritongate prescreen (or ir and ir-diff), and in time only on a GPU." in text
    on_gpu = {**doc, "base": {**doc["base"], "backend": "cuda"}, "candidate": {**doc["candidate"], "backend": "cuda"}}
    assert "Patches applied" not in render_verdict(on_gpu)


def test_only_changed_rows_come_first_with_estimate_interval_and_labelled_medians():
    text = render_verdict(golden_doc("fail_regressions_ir"))
    top = text[: text.index("<details><summary>1 unchanged")]
    assert "| row | change | interval | base median | candidate median | judged | IR |" in top
    assert "add · 1048576" not in top  # unchanged rows live in the collapsed table only
    assert top.index("Regressed (2)") < top.index("Improved (1)") < top.index("Not judged (1)") \
        < top.index("IR changed, time unchanged (1)")
    assert "the 20 % trimmed mean of the per-pair log ratios), so it can differ from the ratio of the two medians" in top
    assert "```diff\n@@ -12,7 +12,7 @@" in text  # the smallest diff inline, literal


def test_rows_that_could_not_resolve_say_what_stopped_them():
    text = render_verdict(golden_doc("pass_blind"))
    section = text[text.index("Could not resolve 1 % (3)"): text.index("<details>")]
    assert "| add · 4096 · float32 | no change found |" in section and "the round cap (80 rounds)" in section
    assert "| silu_mul · 16x14336 · float16 | no change found | ±4.4 % | 1 % | the row budget, after 20 pairs |" in section
    assert "| rmsnorm · 1x4096 · float16 | no change found | ±2.3 % | 1 % | the run budget, after 20 pairs |" in section
    assert "softmax" not in section  # it reached 1 % on its 40 pairs


def test_a_row_the_launch_states_could_hide_says_so_where_unresolved_rows_are_listed():
    doc = golden_doc("pass_blind")
    softmax = next(r for r in doc["rows"] if r["op"] == "softmax")
    softmax.update(reached_target=False, target_reached=True, stopped_by="launch_state")
    text = render_verdict(doc)
    section = text[text.index("Could not resolve 1 % (4)"): text.index("<details>")]
    assert "softmax" in section
    assert "the sides' CUDA-graph launch states, far enough apart to hide the minimum effect" in section


def test_regressed_rows_are_never_listed_as_unresolved():
    doc = golden_doc("fail_regressions_ir")
    for r in doc["rows"]:
        r["target_reached"] = False  # the rule's budgets ran out on every row
    text = render_verdict(doc)
    if "Could not resolve" in text:
        section = text[text.index("Could not resolve"): text.index("<details><summary>")]
        assert "matmul" not in section and "attention" not in section


def test_the_state_from_the_rule_wins_over_the_fallback():
    doc = golden_doc("pass")
    doc["state"], doc["blind_rows"] = "blind", 1
    doc["rows"][0]["reached_target"] = False
    doc["rows"][0]["stopped_by"] = "run_budget"
    text = render_verdict(doc)
    assert text.splitlines()[1] == "## ⚠️ No regression found; 1 row could not resolve 1 %"
    assert "| the run budget, after 20 pairs |" in text


def test_a_geomean_interval_that_excludes_one_is_not_called_noise():
    doc = golden_doc("pass")
    doc["geomean_speedup"], doc["geomean_interval"] = 0.86, [0.78, 0.95]
    text = render_verdict(doc)
    assert "no single row cleared its own noise, but taken together the rows lean slower" in text
    assert "no row changed beyond its noise" not in text


HOSTILE = ["<script>alert(1)</script>", "x|y|z", "[click](https://evil.example)", "@maintainers",
           "`rm -rf`", "**bold** _em_ ~~gone~~ #123", "<!-- tritongate-verdict -->",
           "</details><img src=x onerror=alert(1)>", "a\u202eb"]


@pytest.mark.parametrize("name", HOSTILE)
def test_every_string_from_the_document_is_escaped(name):
    doc = golden_doc("fail_regressions_ir")
    for r in doc["rows"]:
        r["op"], r["case"] = name, name
        r["reasons"] = [name]
        if r["ir"] and r["ir"]["diff"]:
            r["ir"]["diff"] = name
    doc["notes"] = [name, name]
    doc["candidate"]["compiler_ref"] = name
    doc["candidate"]["env_overlay"] = {name: name}
    doc["failures"] = [name]
    text = render_verdict(doc)
    body = text[len(STICKY_MARKER):]
    for raw in ("<script", "](https://evil", "@maintainers", "`rm", "**bold**", "<img", "</details><",
                "<!-- tritongate", "\u202e"):
        assert raw not in body
    rendered = html(text)
    assert "<script" not in rendered and "<img" not in rendered
    for table in re.findall(r"<table>.*?</table>", rendered, flags=re.S):
        head = len(re.findall(r"<th>", table.split("</thead>")[0]))
        assert all(len(re.findall(r"<td>", tr)) == head
                   for tr in re.findall(r"<tr>(.*?)</tr>", table.split("</thead>")[1], flags=re.S))
    assert all("\u202e" not in ln for ln in summary_lines(doc))


def test_a_10000_row_verdict_is_well_under_the_cap():
    doc = golden_doc("fail_regressions_ir")
    template = doc["rows"]
    rows = []
    for i in range(10_000):
        r = dict(template[i % len(template)])
        r["op"], r["case"] = f"op{i % 400:03d}", f"case{i}x" + "9" * 40
        rows.append(r)
    doc["rows"] = rows
    doc["per_op"] = [{"op": f"op{i:03d}", "rows": 25, "min": 0.9, "geomean": 1.0 - i / 1000, "max": 1.1}
                     for i in range(400)]
    text = render_verdict(doc)
    assert len(text) < COMMENT_LIMIT * 0.75
    assert "more rows not shown; verdict.json has every row" in text
    assert "more ops not shown" in text
    assert text.count("<details>") == text.count("</details>")


def test_a_tight_limit_is_kept_and_says_so():
    doc = golden_doc("fail_regressions_ir")
    full = render_verdict(doc)
    short = render_verdict(doc, limit=len(full) - 500)
    assert len(short) <= len(full) - 500 and "not shown" in short
    assert short.count("<details>") == short.count("</details>")


def test_a_version_1_verdict_from_the_h200_renders_through_the_loader():
    from pathlib import Path

    path = Path(__file__).parents[2] / "bench/results/2026-11-29_h200_planted_regression_verdict.json"
    doc = load_verdict(path).doc
    assert isinstance(doc, VerdictDoc) and doc.schema_version == 1
    text = render_verdict(doc)
    assert text.splitlines()[1].startswith("## ❌ 14 regressions, worst matmul · 8192x1024x4096 · bfloat16 +90.4 %")
    assert "20 unchanged" in text and "NVIDIA H200" in text


def test_the_terminal_says_what_the_comment_says():
    doc = golden_doc("fail_regressions_ir")
    lines = summary_lines(doc)
    assert lines[0].startswith("❌ 2 regressions, worst matmul 4096x4096x4096 float16 +65.8 %")
    reg = [ln for ln in lines if ln.lstrip().startswith("REGRESSED")]
    assert len(reg) == 2 and "paired estimate; interval +63.9 … +67.7 %; 20 pairs, confirmed on 20 fresh" in reg[0]
    assert "base median 220.1 µs, candidate median 364.8 µs" in reg[0]
    assert not any("IQRs disjoint" in ln for ln in lines)
    assert lines[-1].startswith("ran on cuda · NVIDIA H200 · cuda-graph timer")


def test_the_renderer_imports_neither_torch_nor_pandas():
    """The trusted comment job renders the comment on a plain runner: no torch, pandas, scipy."""
    import subprocess
    import sys

    code = ("import sys, tritongate.report.verdict_markdown, tritongate.report.verdict_terminal; "
            "print(sorted(m for m in ('torch', 'pandas', 'scipy', 'triton', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_blind_comment_with_an_unconfirmed_call_does_not_say_no_regression_was_found(tmp_path) -> None:
    """The comment's headline and verdict.json's say the same: a call seen on the first pairs
    and not repeated on fresh ones is "not confirmed", not "no regression found"."""
    from tests.gate.helpers import samples
    from tests.gate.test_verdict import _paired_rows
    from tritongate.gate.output import verdict_document

    def part(median: float, seed: int) -> tuple[float, ...]:
        return samples(median, rounds=20, seed=seed)
    result = _paired_rows(tmp_path, [part(20, 1), part(20, 2)], [part(21, 3), part(20, 4)], confirm_from=20)
    text = render_verdict(verdict_document(result))
    assert "## ⚠️ No regression confirmed (1 call not confirmed); 1 row could not resolve 1 %" in text
    assert "No regression found" not in text
    # what left it unconfirmed is its confirmation, not a budget: the section and its row say so
    assert "**🟡 Unconfirmed: a change seen and not confirmed (1)**" in text
    assert ("| call not confirmed | ±1.0 % | 1 % | +4.96% on the first 20 pairs was not confirmed on fresh worker pairs "
            "(+0.10% on the 20 after: IQRs overlap) |") in text
    assert "pairs a call needs" not in text
    assert verdict_document(result)["headline"].startswith("⚠️ No regression confirmed (1 call not confirmed)")


def test_a_call_on_one_worker_pair_says_so_where_it_could_not_resolve(tmp_path) -> None:
    """A +5 % call on one worker pair (the cpu backend's) is shown unconfirmed, and its row names
    the one pair as what left it so, not a budget it never met."""
    from tests.gate.helpers import samples
    from tests.gate.test_verdict import _paired_rows
    from tritongate.gate.output import verdict_document

    def part(median: float, seed: int) -> tuple[float, ...]:
        return samples(median, rounds=20, seed=seed)
    result = _paired_rows(tmp_path, [part(20, 1), part(20, 2)], [part(21, 3), part(21, 4)], worker_pairs=(0,) * 40)
    assert result.rows[0].verdict == Verdict.UNCONFIRMED
    text = render_verdict(verdict_document(result))
    assert ("| call not confirmed | ±1.3 % | 1 % | called on one worker pair, where a process's own offset cannot be told "
            "from a change (the cpu backend keeps one) |") in text
    assert "pairs a call needs" not in text
