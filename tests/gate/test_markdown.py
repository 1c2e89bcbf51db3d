import json
import os
import re
from pathlib import Path

import pytest

from tritongate.gate.output import write_verdict
from tritongate.gate.policy import GatePolicy
from tritongate.gate.verdict import run_gate
from tritongate.report.markdown import STICKY_MARKER, cell, render_markdown

from tritongate.gate.simulate import synthetic_run

from tests.gate.helpers import pair, row

GOLDEN = Path(__file__).parent / "golden" / "verdict.md"


def golden_result(tmp_path):
    base = [row(op="matmul", case="4096x4096x4096", median=220, seed=1),
            row(op="softmax", case="4096x4096", median=18, seed=2),
            row(op="add", case="1048576", dtype="float32", median=2.5, seed=3),
            row(op="rmsnorm", case="16x8192", median=1.9, seed=4),
            row(op="attention", case="4x16x1024x64", median=51, seed=5),
            row(op="silu_mul", case="16x14336", median=1.4, seed=6)]
    cand = [row(op="matmul", case="4096x4096x4096", median=235, seed=11),
            row(op="softmax", case="4096x4096", median=17, seed=12),
            row(op="add", case="1048576", dtype="float32", median=2.5, seed=13),
            row(op="rmsnorm", case="16x8192", median=1.9, seed=14,
                markers=["AUTOTUNE_REPLAY_FALLBACK reason=key_missing kernel=tritongate.ops.kernels.reduction.rmsnorm_kernel"]),
            row(op="attention", case="4x16x1024x64", median=51, seed=15),
            row(op="attention", case="1x32x4096x128", median=640, seed=16)]
    base_run, cand_run = pair(tmp_path, base, cand)
    return run_gate(base_run, cand_run, GatePolicy(op_min_effect={"add": 0.02}))


def test_markdown_matches_the_golden_file(tmp_path):
    text = render_markdown(golden_result(tmp_path), artifact_url="https://github.com/o/r/actions/runs/1/artifacts/2")
    if os.environ.get("TRITONGATE_UPDATE_GOLDEN"):
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()


def test_golden_structure(tmp_path):
    text = GOLDEN.read_text()
    assert text.startswith(STICKY_MARKER)
    assert text.index("Regressions") < text.index("Improvements") < text.index("Rejected") \
        < text.index("Missing") < text.index("New in") < text.index("<details>")
    assert "geomean speedup" in text and "Speedup by op" in text and "artifacts/2" in text


HOSTILE = [
    "<script>alert(1)</script>",
    "x|y|z",
    "[click](https://evil.example)",
    "@maintainers",
    "`rm -rf`",
    "**bold** _em_ ~~gone~~ #123",
    "<!-- tritongate-verdict -->",
    "</details><img src=x onerror=alert(1)>",
]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_are_escaped(tmp_path, name):
    marker = f"AUTOTUNE_REPLAY_FALLBACK reason=key_missing kernel={name.replace(' ', '_')}"
    base, cand = pair(tmp_path, [row(op=name, case=name)],
                      [row(op=name, case=name, seed=1, markers=[marker])])
    text = render_markdown(run_gate(base, cand, GatePolicy()))
    body = text[len(STICKY_MARKER):]
    for raw in ("<script", "](https://evil", "@maintainers", "`rm", "**bold**", "<img", "</details><",
                "<!-- tritongate"):
        assert raw not in body
    # the table row keeps its 4 cells: no injected pipe splits it
    rejected_rows = [ln for ln in text.splitlines() if ln.startswith("| ") and "replay fallback" in ln]
    assert rejected_rows and all(ln.count("|") == 5 for ln in rejected_rows)


def test_cell_escapes_everything_active():
    assert cell("a|b") == "a&#124;b"
    assert cell("<b>") == "&lt;b&gt;"
    assert cell("x\ny") == "x y"
    assert cell(None) == "–"
    stripped = re.sub(r"&#?\w+;", "", cell("<>|`*_[]@#~\\!$\"'&"))
    assert stripped == ""


def test_long_verdicts_are_cut_under_the_limit_and_say_so(tmp_path):
    long = "x" * 60
    base = [row(op=f"op{i:04d}{long}", case=f"c{i}", seed=i) for i in range(1500)]
    cand = [row(op=f"op{i:04d}{long}", case=f"c{i}", seed=10_000 + i, median=22 if i < 400 else 20)
            for i in range(1500)]
    result = run_gate(synthetic_run(base, "record"), synthetic_run(cand, "replay"), GatePolicy())
    text = render_markdown(result)
    assert len(text) <= 60_000
    assert "shortened to stay under 60,000 characters (1500 rows in all)" in text
    assert "more row(s) not shown" in text
    assert text.index("Regressions (400)") < text.index("shortened")
    out = write_verdict(result, tmp_path / "v")
    assert len(json.loads(out[0].read_text())["rows"]) == 1500


def test_step_summary_gets_the_verdict(tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    json_path, md_path = write_verdict(golden_result(tmp_path), tmp_path / "v")
    assert summary.read_text() == "earlier step\n" + md_path.read_text() + "\n"
    doc = json.loads(json_path.read_text())
    assert doc["schema_version"] == 1 and doc["passed"] is False
    assert doc["counts"]["REGRESSED"] == 1 and doc["counts"]["NEW"] == 1
    assert {"op", "rows", "min", "geomean", "max"} <= set(doc["per_op"][0])
