"""The one gate pipeline: every verdict is judged and written through ``gate.pipeline``."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import tritongate
from tritongate.gate.pipeline import Citations, gate_runs, judge_runs
from tritongate.gate.policy import GatePolicy

from tests.gate.helpers import calibration_summary, pair, row

PACKAGE = Path(tritongate.__file__).parent
# the pipeline's own parts: the judging (verdict.run_gate) and the writer (output.write_verdict_files)
INTERNAL = {"run_gate", "write_verdict_files"}


def test_no_module_outside_the_gate_judges_or_writes_a_verdict_on_its_own() -> None:
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.parent == PACKAGE / "gate":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and {a.name for a in node.names} & INTERNAL:
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not found, f"call tritongate.gate.pipeline instead: {found}"


def test_gate_runs_writes_the_folder_with_its_citations_and_leading_notes(tmp_path: Path) -> None:
    base, cand = pair(tmp_path, [row()], [row(median=23, seed=1)])
    gated = gate_runs(base.path, cand.path, tmp_path / "v", GatePolicy(), notes=["partial: shard 2/3 missing"],
                      cite=Citations(calibration=calibration_summary(), artifact_url="https://github.com/o/r/a/1"))
    doc = json.loads(gated.written.json_path.read_text())
    assert doc["notes"][0] == "partial: shard 2/3 missing" and doc["artifact_url"] == "https://github.com/o/r/a/1"
    assert doc["calibration"] is not None and doc["counts"]["REGRESSED"] == 1
    assert gated.written.md_path.read_text() == (tmp_path / "v" / "verdict.md").read_text()
    assert gated.result.exit_code == 1 and gated.written.doc.passed is False


def test_judging_alone_writes_nothing(tmp_path: Path) -> None:
    base, cand = pair(tmp_path, [row()], [row(seed=1)])
    before = sorted(p.name for p in tmp_path.iterdir())
    result = judge_runs(base, cand, GatePolicy())
    assert result.exit_code == 0 and sorted(p.name for p in tmp_path.iterdir()) == before
