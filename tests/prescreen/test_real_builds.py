"""The pre-screen on real Triton source changes: the installed Triton is the base build, an
overlay of it with one patch (``bench/patches``) the PR's. The record is the smoke suite's IR
index, captured on the interpreter. Each change is screened for real: recompiled for cuda:90
(TTGIR and cubin), recaptured, launch paths compared.

- an option default the binder applies (FP fusion off): the recorded variants compile the
  same, so the ahead-of-time diff alone would pass the PR unmeasured; every row is timed;
- an autotuner change (``runtime/autotuner.py``), a change in the JIT's launch (``runtime/jit.py``)
  or in the CUDA launcher (``third_party/nvidia/backend/driver.py``): every row is timed, the
  file named;
- a pass change (one of the Hopper pipelines dropped): exactly the rows whose kernels changed;
- a comment: nothing timed, the zero verdict written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tritongate.ir.changed import load_changed_rows
from tritongate.overlay import make_overlay

ROOT = Path(__file__).resolve().parents[2]
PATCHES = ROOT / "bench" / "patches"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def record(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("record")
    env = {**os.environ, "TRITON_INTERPRET": "1", "TRITONGATE_CAPTURE_ONLY": "1"}
    subprocess.run([sys.executable, "-m", "tritongate", "run", "--suite", "smoke", "--backend", "cpu", "--rounds", "1",
                    "--samples-per-round", "1", "--out", str(out), "--color", "never"], env=env, cwd=ROOT,
                   capture_output=True, check=False)
    (run,) = [p for p in out.iterdir() if (p / "ttgir" / "index.tsv").is_file()]
    return run


def screen(record: Path, patch: str, tmp_path: Path) -> tuple[dict, Path]:
    build = make_overlay(sys.executable, [PATCHES / patch], tmp_path / "overlay")
    out = tmp_path / "prescreen"
    proc = subprocess.run([sys.executable, str(ROOT / "ci" / "prescreen.py"), "--baseline", str(record),
                           "--base-python", sys.executable, "--cand-python", str(build.python), "--out", str(out)],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads((out / "prescreen.json").read_text()), out


def test_an_option_default_the_binder_applies_is_timed_though_every_variant_compiles_the_same(record, tmp_path):
    doc, out = screen(record, "fp-fusion-default-off.patch", tmp_path)
    assert doc["variants"] == {"identical": doc["rows_total"]}  # what the pre-screen used to pass on
    assert len(doc["rows_changed"]) == doc["rows_total"] == 8
    assert doc["timed_without_ir_change"]["launch_path"] == [] and doc["timed_without_ir_change"]["rows"] == 8
    assert not (out / "verdict").exists()
    proven = load_changed_rows(out / "ir-diff", record=record)  # what `pair --changed-from` reads
    assert len(proven.changed) == 8 and not proven.unchanged


def test_an_autotuner_change_times_every_row_naming_the_file(record, tmp_path):
    doc, out = screen(record, "autotuner-args-dict.patch", tmp_path)
    assert doc["timed_without_ir_change"]["launch_path"] == ["runtime/autotuner.py"]
    assert len(doc["rows_changed"]) == 8 and not (out / "verdict").exists()


@pytest.mark.parametrize("patch, named", [("jit-grid-tuple.patch", "runtime/jit.py"),
                                          ("launcher-grid-size.patch", "backends/nvidia/driver.py")])
def test_a_launch_or_launcher_change_times_every_row_naming_the_file(record, tmp_path, patch, named):
    """Every recorded variant compiles the same under these, so only the launch-path check
    stands between them and a pass with no measurement."""
    doc, out = screen(record, patch, tmp_path)
    assert doc["variants"] == {"identical": doc["rows_total"]}
    assert doc["timed_without_ir_change"]["launch_path"] == [named]
    assert len(doc["rows_changed"]) == doc["rows_total"] == 8 and not (out / "verdict").exists()


def test_a_pass_change_times_exactly_the_rows_whose_kernels_changed(record, tmp_path):
    doc, _ = screen(record, "drop-hopper-pipeline.patch", tmp_path)
    changed_kernels = {k["kernel"] for k in doc["kernels"] if k["status"] != "identical"}
    from_kernels = {(row.rpartition("/")[0], k["case"], row.rpartition("/")[2])
                    for k in doc["kernels"] if k["status"] != "identical" for row in k["rows"]}
    assert changed_kernels and 0 < len(doc["rows_changed"]) < doc["rows_total"]
    assert {tuple(r) for r in doc["rows_changed"]} == from_kernels
    assert doc["timed_without_ir_change"] == {"launch_path": [], "rows": 0, "reasons": {}}


def test_a_comment_uses_no_gpu(record, tmp_path):
    doc, out = screen(record, "noop-comment.patch", tmp_path)
    assert doc["rows_changed"] == [] and doc["target"] == "cuda:90"
    verdict = json.loads((out / "verdict" / "verdict.json").read_text())
    assert {r["verdict"] for r in verdict["rows"]} == {"IDENTICAL_BINARY"}
    # the verdict names the two builds the screen compiled with, not the baseline's build twice
    assert verdict["candidate"]["patches"] == ["noop-comment.patch"] and "patches" not in verdict["base"]
    assert verdict["candidate"]["path"].endswith("ir-cand") and verdict["base"]["path"].endswith("ir-base")
    assert "+ noop-comment.patch" in (out / "verdict" / "verdict.md").read_text()


def test_a_pr_build_is_not_handed_the_step_s_file_commands(record, tmp_path):
    """A PR whose Triton appends `rows_changed=0` (and a BASH_ENV line) to the runner's file
    commands it finds in its environment when imported: the pre-screen runs it (probe,
    recompile, capture) with those variables removed, so an honest or careless build cannot
    write them. (Code set on it can still find the runner's files: docs/adopting.md.)"""
    import difflib

    import triton

    init = Path(triton.__file__).read_text()
    hostile = init + ("\nimport os as _os\nfor _name in ('GITHUB_OUTPUT', 'GITHUB_ENV'):\n"
                      "    if _os.environ.get(_name):\n"
                      "        open(_os.environ[_name], 'a').write('rows_changed=0\\nBASH_ENV=/tmp/owned\\n')\n")
    rel = "python/triton/__init__.py"
    patch = tmp_path / "hostile.patch"
    patch.write_text(f"diff --git a/{rel} b/{rel}\n" + "".join(difflib.unified_diff(
        init.splitlines(True), hostile.splitlines(True), f"a/{rel}", f"b/{rel}")))
    build = make_overlay(sys.executable, [patch], tmp_path / "overlay")
    outputs, env_file = tmp_path / "github_output", tmp_path / "github_env"
    outputs.touch()
    env_file.touch()
    env = {**os.environ, "GITHUB_OUTPUT": str(outputs), "GITHUB_ENV": str(env_file)}
    proc = subprocess.run([sys.executable, str(ROOT / "ci" / "prescreen.py"), "--baseline", str(record),
                           "--base-python", sys.executable, "--cand-python", str(build.python),
                           "--out", str(tmp_path / "o")], capture_output=True, text=True, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert env_file.read_text() == "" and outputs.read_text() == "rows_changed=8\nrows_total=8\n"
