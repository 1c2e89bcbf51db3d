"""`tritongate ir-diff --blame`: two `tritongate ir` folders, one per build, and the first
compiler pass whose output differs, found by compiling under each build with every pass dumped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tritongate.cli import main
from tritongate.overlay import make_overlay

from tests.ir.compiled.aot_kernels import compiled_add
from tests.ir.compiled.check_aot import recorded_run

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
ROOT = Path(__file__).resolve().parents[3]


def test_ir_diff_blames_the_pass_a_patch_removed(tmp_path, capsys):
    run = recorded_run(tmp_path, compiled_add())
    assert main(["ir", "--from", str(run), "--target", "cuda:90", "--out", str(tmp_path / "base")]) == 0
    build = make_overlay(sys.executable, [ROOT / "bench" / "patches" / "drop-coalesce.patch"], tmp_path / "ov")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRITON_INTERPRET": "0"}
    done = subprocess.run([str(build.python), "-m", "tritongate", "ir", "--from", str(run), "--target", "cuda:90",
                           "--out", str(tmp_path / "cand")], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    capsys.readouterr()
    assert main(["ir-diff", str(tmp_path / "base"), str(tmp_path / "cand"), "--out", str(tmp_path / "d"),
                 "--blame"]) == 0
    printed = capsys.readouterr().out
    doc = json.loads((tmp_path / "d" / "blame.json").read_text())
    (one,) = doc["variants"]
    assert one["kind"] == "pipeline" and one["pass_name"] == "tritongpu-coalesce" and "tritongpu-coalesce@ttgir" in \
        one["removed"]
    assert "blame" in printed and "tritongpu-coalesce" in printed


def test_blame_needs_two_ir_folders(tmp_path, capsys):
    run = recorded_run(tmp_path, compiled_add())
    assert main(["ir-diff", str(run), str(run), "--out", str(tmp_path / "d"), "--blame"]) == 2
    assert "--blame needs two `tritongate ir` folders" in capsys.readouterr().err
