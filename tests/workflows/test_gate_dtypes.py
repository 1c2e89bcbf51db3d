"""The gate's `dtypes` input reaches the paired check and the fallback record as `--dtypes`,
beside `ops`: a cpu-backend gate of a suite with bfloat16 rows (the interpreter runs none)
can name the dtypes it runs, as the error of that preflight tells users to do."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _stand_in(tmp: Path) -> Path:
    """An interpreter that writes its arguments, one a line, and says it made no verdict."""
    py = tmp / "python"
    py.write_text(f'#!/bin/bash\nprintf "%s\\n" "$@" > {tmp}/argv\necho "no verdict"\n')
    py.chmod(0o755)
    return py


@pytest.mark.parametrize("step", ["pair", "record"])
@pytest.mark.parametrize("dtypes", ["", "float16,float32"])
def test_the_dtypes_input_reaches_the_measuring_steps(tmp_path: Path, step: str, dtypes: str) -> None:
    py = _stand_in(tmp_path)
    (tmp_path / "record").mkdir()
    env = {"PATH": os.environ["PATH"], "RUNNER_TEMP": str(tmp_path / "temp"), "GITHUB_OUTPUT": str(tmp_path / "out"),
           "GITHUB_STEP_SUMMARY": str(tmp_path / "summary"), "BASE_PY": str(py), "CAND_PY": str(py),
           "RECORD": str(tmp_path / "record"), "TG_SUITE": "pr", "TG_BACKEND": "cpu", "TG_OPS": "add",
           "TG_DTYPES": dtypes, "STATE": "missing", "TG_REQUIRE": "false", "TG_COMPILER_REPO": "o/r"}
    subprocess.run(["bash", str(REPO / "ci" / "gate_steps.sh"), step], env=env, cwd=tmp_path,
                   capture_output=True, text=True, timeout=60)
    argv = (tmp_path / "argv").read_text().splitlines()
    assert argv[argv.index("--ops") + 1] == "add"
    if dtypes:
        assert argv[argv.index("--dtypes") + 1] == dtypes
    else:
        assert "--dtypes" not in argv


def test_both_entry_points_declare_it_and_pass_it_on() -> None:
    action = (REPO / ".github" / "actions" / "pr-gate" / "action.yml").read_text()
    workflow = (REPO / ".github" / "workflows" / "pr-gate.yml").read_text()
    assert "\n  dtypes:\n" in action and action.count("TG_DTYPES: ${{ inputs.dtypes }}") == action.count(
        "TG_OPS: ${{ inputs.ops }}") == 2
    assert "\n      dtypes:\n" in workflow and workflow.count("dtypes: ${{ inputs.dtypes }}") == workflow.count(
        "ops: ${{ inputs.ops }}") == 2
