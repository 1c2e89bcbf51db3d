"""The launch-path files of real builds: the installed Triton and overlays of it."""

from __future__ import annotations

import sys
from pathlib import Path

import triton

from tritongate.overlay import make_overlay
from tritongate.prescreen.launch_path import launch_path_changes, launch_path_files

PATCHES = Path(__file__).resolve().parents[2] / "bench" / "patches"
INSTALLED = Path(triton.__file__).resolve().parent


def test_the_launch_path_holds_the_binder_autotuner_and_launcher_but_not_the_interpreter() -> None:
    files = launch_path_files(INSTALLED)
    assert {"__init__.py", "runtime/jit.py", "runtime/autotuner.py", "backends/nvidia/driver.py",
            "backends/nvidia/driver.c", "compiler/compiler.py", "backends/driver.py", "_utils.py"} <= set(files)
    assert "runtime/interpreter.py" not in files and "backends/nvidia/compiler.py" not in files


def test_an_autotuner_patch_changes_the_launch_path_and_a_pipeline_comment_does_not(tmp_path: Path) -> None:
    base = launch_path_files(INSTALLED)
    tuner = make_overlay(sys.executable, [PATCHES / "autotuner-args-dict.patch"], tmp_path / "tuner")
    comment = make_overlay(sys.executable, [PATCHES / "noop-comment.patch"], tmp_path / "comment")
    assert launch_path_changes(base, launch_path_files(tuner.triton_dir)) == ["runtime/autotuner.py"]
    assert launch_path_changes(base, launch_path_files(comment.triton_dir)) == []
    jit = {"runtime/jit.py": "j"}
    assert launch_path_changes(jit | {"a": "1"}, jit | {"b": "1"}) == ["a", "b"]  # removed and added count too
