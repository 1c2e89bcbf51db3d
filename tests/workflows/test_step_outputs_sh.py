"""The step scripts' `out NAME VALUE` (ci/outputs.sh) keeps the contract of
tritongate/github/outputs.py: what it appends is what `outputs.line` writes, and what that
refuses (a line break in a value, a name GitHub cannot read) it refuses too, leaving
$GITHUB_OUTPUT as it was and failing the step. Every ci/*.sh writes its outputs through it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tritongate.github import outputs

ROOT = Path(__file__).resolve().parents[2]
LIB = ROOT / "ci" / "outputs.sh"


def _out(tmp_path: Path, name: str, value: str) -> tuple[int, str, str]:
    target = tmp_path / "github_output"
    target.write_text("before=1\n", encoding="utf-8")
    proc = subprocess.run(["bash", "-c", 'source "$1"; out "$2" "$3"', "bash", str(LIB), name, value],
                          capture_output=True, text=True, env={"GITHUB_OUTPUT": str(target), "PATH": "/usr/bin:/bin"})
    return proc.returncode, target.read_text(encoding="utf-8"), proc.stderr


@pytest.mark.parametrize("name,value", [("record", "/runner/_work/_temp/tritongate/runs/run-pr_20261202T101010Z"),
                                        ("exit-code", "0"), ("store", "absent"), ("verdict_dir", "a b=c <<EOF"),
                                        ("empty", "")])
def test_a_value_is_appended_as_outputs_line_writes_it(tmp_path: Path, name: str, value: str):
    code, text, _ = _out(tmp_path, name, value)
    assert code == 0
    assert text == "before=1\n" + outputs.line(name, value)


@pytest.mark.parametrize("name,value", [("record", "x\ninjected=1"), ("record", "x\r\ninjected=1"), ("record", "x\r"),
                                        ("bad name", "v"), ("a=b", "v"), ("9lives", "v"), ("", "v")])
def test_what_outputs_line_refuses_is_refused_and_nothing_written(tmp_path: Path, name: str, value: str):
    with pytest.raises(outputs.OutputError):
        outputs.line(name, value)
    code, text, err = _out(tmp_path, name, value)
    assert code == 2 and "::error" in err
    assert text == "before=1\n"


def test_a_refused_output_fails_a_step_script(tmp_path: Path):
    target = tmp_path / "github_output"
    target.write_text("", encoding="utf-8")
    script = 'set -euo pipefail; source "$1"; out record "$(printf "a\\nb=2")"; echo after'
    proc = subprocess.run(["bash", "-c", script, "bash", str(LIB)], capture_output=True, text=True,
                          env={"GITHUB_OUTPUT": str(target), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 2 and "after" not in proc.stdout and target.read_text() == ""


def test_every_step_script_writes_outputs_only_through_out():
    scripts = sorted((ROOT / "ci").glob("*.sh"))
    users = [p for p in scripts if re.search(r"^\s*out \S+", p.read_text(encoding="utf-8"), re.M)]
    assert {p.name for p in users} >= {"gate_steps.sh", "nightly_steps.sh", "store.sh"}
    for p in scripts:
        if p == LIB:
            continue
        text = p.read_text(encoding="utf-8")
        assert not re.search(r">>\s*\"?\$\{?GITHUB_OUTPUT", text), f"{p.name} appends to $GITHUB_OUTPUT itself"
        assert not re.search(r"^\s*out\(\)", text, re.M), f"{p.name} defines its own out()"
        if p in users:
            assert 'source "$(dirname "${BASH_SOURCE[0]}")/outputs.sh"' in text
