"""The build-compiler action's overlay and auto modes, replayed (tests/workflows/replay.py)
against a local compiler repository whose backend is this machine's installed Triton's: the
PR's diff is taken from a real shallow clone of the merge commit, the overlay really gets
built from this interpreter's Triton with a real pass-pipeline patch (bench/patches), and
the overlay's interpreter imports the patched pipeline."""

from __future__ import annotations

import pytest
import hashlib
import json
import subprocess
import sys
from pathlib import Path

from tests.workflows.build_fixtures import ACTION_DIR, NVIDIA, PATCHES, action_env, compiler_repo, run_build_action
from tritongate.overlay import OVERLAY_FILE


def _triton_dir(python: str) -> Path:
    out = subprocess.run([python, "-c", "import os, triton; print(os.path.dirname(triton.__file__))"],
                         capture_output=True, text=True, check=True).stdout.strip()
    return Path(out)


def _pipeline(python: str) -> str:
    return (_triton_dir(python) / "backends" / "nvidia" / "compiler.py").read_text()


@pytest.mark.slow
def test_auto_builds_an_overlay_of_a_python_only_pr(tmp_path: Path) -> None:
    repo = compiler_repo(tmp_path, {NVIDIA: "drop-coalesce.patch"})
    run, status, outputs, seen = run_build_action(tmp_path, repo.path, cache_write="false", mode="auto",
                                                  repo="acme/triton", ref=repo.merge)
    log = run.log()
    assert status == "success", log
    assert seen[0]["fetch-depth"] == "2" and seen[0]["ref"] == repo.merge  # its first parent comes with it
    assert "build mode auto: overlay; the PR changes only the package's Python sources (1 file(s): " + NVIDIA in log
    assert outputs["built"] == "overlay" and outputs["commit"] == repo.merge
    python = outputs["python"]
    assert python.startswith(str(tmp_path / "runner" / "temp" / "tritongate-pr" / "overlays"))
    assert "passes.ttgpuir.add_coalesce(pm)" not in _pipeline(python)
    assert "passes.ttgpuir.add_coalesce(pm)" in _pipeline(sys.executable)
    # the diff is the merge commit's from its first parent: main's own C++ change is not in it
    record = json.loads((_triton_dir(python) / OVERLAY_FILE).read_text())
    assert record["files"] == ["triton/backends/nvidia/compiler.py"]
    patch = Path(record["patches"][0]["path"])
    assert "Other.cpp" not in patch.read_text() and "add_coalesce" in patch.read_text()
    assert record["patches"][0]["sha256"] == outputs["patch-sha256"] == hashlib.sha256(patch.read_bytes()).hexdigest()
    assert not (tmp_path / "ws" / ".tritongate-src").exists() or not any((tmp_path / "ws" / ".tritongate-src").iterdir())


@pytest.mark.slow
def test_overlay_from_a_patch_file_needs_no_checkout(tmp_path: Path) -> None:
    patch = PATCHES / "drop-hopper-pipeline.patch"
    run, status, outputs, seen = run_build_action(tmp_path, tmp_path, mode="overlay", patch=str(patch))
    assert status == "success", run.log()
    assert seen == [] and outputs["built"] == "overlay" and outputs["commit"] == ""
    assert outputs["patch-sha256"] == hashlib.sha256(patch.read_bytes()).hexdigest()
    assert _pipeline(outputs["python"]).count("add_pipeline(pm, opt.num_stages, dump_enabled)") == 1


@pytest.mark.slow
def test_overlay_mode_leaves_out_compiled_files_and_names_them(tmp_path: Path) -> None:
    repo = compiler_repo(tmp_path, {NVIDIA: "drop-coalesce.patch", "lib/Coalesce.cpp": None})
    run, status, outputs, _ = run_build_action(tmp_path, repo.path, mode="overlay", **{"patch-from": "pr"},
                                               repo="acme/triton", ref=repo.merge)
    log = run.log()
    assert status == "success", log
    assert "mode overlay leaves out 1 changed file(s) an overlay cannot take: lib/Coalesce.cpp" in log
    assert "passes.ttgpuir.add_coalesce(pm)" not in _pipeline(outputs["python"])


def test_overlay_of_a_compiled_only_pr_and_a_patch_that_does_not_apply_fail_by_name(tmp_path: Path) -> None:
    repo = compiler_repo(tmp_path / "a", {"lib/Coalesce.cpp": None})
    run, status, _, _ = run_build_action(tmp_path / "a", repo.path, mode="overlay", **{"patch-from": "pr"},
                                         repo="acme/triton", ref=repo.merge)
    assert status == "failure"
    assert "the PR changes no file an overlay can take (lib/Coalesce.cpp); use mode source or auto" in run.log()
    twice = tmp_path / "twice.patch"
    twice.write_text((PATCHES / "noop-comment.patch").read_text() * 2)
    run, status, _, _ = run_build_action(tmp_path / "b", tmp_path, mode="overlay", patch=str(twice))
    assert status == "failure" and "does not apply to the base build's sources" in run.log()


def test_overlay_inputs_are_checked() -> None:
    for env, message in (({"TG_MODE": "overlay"}, "mode overlay needs a patch"),
                         ({"TG_MODE": "overlay", "TG_PATCH_FROM": "main", "TG_REF": "x"}, "patch-from must be 'pr'"),
                         ({"TG_MODE": "auto", "TG_REF": ""}, "mode auto needs a ref"),
                         ({"TG_MODE": "auto", "TG_REF": "x", "TG_BASE_COMMIT": "main"}, "base-commit must be")):
        proc = subprocess.run(["bash", str(ACTION_DIR / "build.sh"), "plan"], capture_output=True, text=True,
                              env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "TG_REPO": "acme/triton", **env})
        assert proc.returncode == 2 and message in proc.stderr, (env, proc.stderr)


@pytest.mark.slow
def test_auto_builds_from_source_when_the_pr_changes_compiled_code(tmp_path: Path) -> None:
    """The source build of the merge commit; a trusted complete venv of it is in the shared
    cache (the nightly's), so the replay reuses it after checking its manifest."""
    repo = compiler_repo(tmp_path, {NVIDIA: "drop-coalesce.patch", "lib/Coalesce.cpp": None})
    env = {**action_env(tmp_path, tmp_path, tmp_path), "TG_PYTHON": sys.executable}
    key = subprocess.run(["bash", str(ACTION_DIR / "build.sh"), "key"], env=env, capture_output=True, text=True,
                         check=True).stdout.strip()
    venv = tmp_path / "home" / ".cache" / "tritongate-builds" / "acme__triton" / f"{repo.merge}-{key}" / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    subprocess.run([sys.executable, str(ACTION_DIR / "venv_manifest.py"), "write", str(venv)], check=True,
                   capture_output=True)
    (venv / ".tritongate-complete").write_text("done\n")
    run, status, outputs, seen = run_build_action(tmp_path, repo.path, cache_write="false", mode="auto",
                                                  repo="acme/triton", ref=repo.merge)
    log = run.log()
    assert status == "success", log
    assert ("build mode auto: source build; the PR changes 1 file(s) outside the package's Python sources "
            "(lib/Coalesce.cpp), which an overlay cannot take") in log
    assert outputs == {**outputs, "built": "source", "commit": repo.merge, "python": str(venv / "bin" / "python")}
    assert outputs["patch-sha256"] == ""


def test_auto_with_a_pr_that_changes_nothing_is_the_base_build(tmp_path: Path) -> None:
    repo = compiler_repo(tmp_path, {})
    run, status, outputs, _ = run_build_action(tmp_path, repo.path, cache_write="false", mode="auto",
                                               repo="acme/triton", ref=repo.merge)
    assert status == "success", run.log()
    assert "the PR changes no file from " in run.log() and "the candidate is the base build, unpatched" in run.log()
    assert outputs["python"] == sys.executable and outputs["patch-sha256"] == ""
