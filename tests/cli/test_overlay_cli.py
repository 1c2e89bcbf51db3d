"""`tritongate overlay`: a real overlay of this interpreter's Triton, made through the CLI."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from tritongate.cli import main
from tritongate.overlay import OVERLAY_FILE

PATCHES = Path(__file__).resolve().parents[2] / "bench" / "patches"


def test_overlay_prints_the_interpreter_last_and_a_summary_on_stderr(tmp_path: Path, capsys) -> None:
    patch = PATCHES / "drop-coalesce.patch"
    code = main(["overlay", "--base-python", sys.executable, "--patch", str(patch), "--out", str(tmp_path / "ov")])
    out, err = capsys.readouterr()
    assert code == 0, err
    python = Path(out.splitlines()[-1])
    assert python == tmp_path / "ov" / "bin" / "python" and python.exists()
    summary = err.strip().splitlines()
    assert len(summary) == 1 and "triton/backends/nvidia/compiler.py" in summary[0]
    assert "drop-coalesce.patch sha256 " in summary[0]
    where = subprocess.run([str(python), "-c", "import os, triton; print(os.path.dirname(triton.__file__))"],
                           capture_output=True, text=True, check=True).stdout.strip()
    record = json.loads((Path(where) / OVERLAY_FILE).read_text())
    assert record["patches"][0]["sha256"] == hashlib.sha256(patch.read_bytes()).hexdigest()
    assert "passes.ttgpuir.add_coalesce(pm)" not in (Path(where) / "backends" / "nvidia" / "compiler.py").read_text()


def test_a_patch_of_compiled_code_is_exit_2_naming_the_file(tmp_path: Path, capsys) -> None:
    patch = tmp_path / "cpp.patch"
    patch.write_text("diff --git a/lib/Analysis/Alias.cpp b/lib/Analysis/Alias.cpp\n"
                     "--- a/lib/Analysis/Alias.cpp\n+++ b/lib/Analysis/Alias.cpp\n@@ -1 +1 @@\n-a\n+b\n")
    code = main(["overlay", "--patch", str(patch), "--out", str(tmp_path / "ov")])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert "lib/Analysis/Alias.cpp" in err and "source build" in err
    assert not (tmp_path / "ov").exists()


def test_a_patch_that_does_not_apply_is_exit_2(tmp_path: Path, capsys) -> None:
    patch = PATCHES / "noop-comment.patch"
    code = main(["overlay", "--patch", str(patch), "--patch", str(patch), "--out", str(tmp_path / "ov")])
    err = capsys.readouterr().err
    assert code == 2 and "noop-comment.patch does not apply" in err
    assert not (tmp_path / "ov").exists()


def test_usage_errors_are_exit_2(tmp_path: Path, capsys) -> None:
    (tmp_path / "taken").mkdir()
    assert main(["overlay", "--patch", str(PATCHES / "noop-comment.patch"), "--out", str(tmp_path / "taken")]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(["overlay", "--base-python", str(tmp_path / "nope"), "--patch", str(PATCHES / "noop-comment.patch"),
                 "--out", str(tmp_path / "ov")]) == 2
    assert "cannot be started" in capsys.readouterr().err
    assert main(["overlay", "--out", str(tmp_path / "ov")]) == 2  # --patch is required
