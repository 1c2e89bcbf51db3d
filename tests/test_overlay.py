"""Overlay builds: the installed Triton with a patch applied to its Python sources."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tritongate.errors import UsageError
from tritongate.overlay import OVERLAY_FILE, OverlayError, installed_path, make_overlay, map_patch

PATCHES = Path(__file__).resolve().parents[1] / "bench" / "patches"


def test_repository_paths_map_to_the_installed_package() -> None:
    assert installed_path("python/triton/compiler/compiler.py") == "triton/compiler/compiler.py"
    assert installed_path("third_party/nvidia/backend/compiler.py") == "triton/backends/nvidia/compiler.py"
    assert installed_path("third_party/amd/backend/compiler.py") == "triton/backends/amd/compiler.py"
    assert installed_path("triton/language/core.py") == "triton/language/core.py"
    assert installed_path("lib/Dialect/TritonGPU/Transforms/Coalesce.cpp") is None
    assert installed_path("python/test/unit/language/test_core.py") is None


def test_a_patch_to_compiled_code_is_refused_naming_the_file() -> None:
    text = ("diff --git a/lib/Analysis/Alias.cpp b/lib/Analysis/Alias.cpp\n"
            "--- a/lib/Analysis/Alias.cpp\n+++ b/lib/Analysis/Alias.cpp\n@@ -1 +1 @@\n-a\n+b\n")
    with pytest.raises(OverlayError, match=r"pr\.patch: changes compiled code \(lib/Analysis/Alias\.cpp\).*source build"):
        map_patch(text, "pr.patch")


def test_a_text_without_file_changes_is_refused() -> None:
    with pytest.raises(OverlayError, match="holds no file changes"):
        map_patch("just some words\n", "notes.txt")


def test_the_mapped_patch_names_installed_paths() -> None:
    mapped, files = map_patch((PATCHES / "drop-coalesce.patch").read_text(), "p")
    assert files == ("triton/backends/nvidia/compiler.py",)
    assert "--- a/triton/backends/nvidia/compiler.py" in mapped
    assert "+++ b/triton/backends/nvidia/compiler.py" in mapped
    assert "third_party" not in mapped


def _triton_dir(python: Path) -> str:
    return subprocess.run([str(python), "-c", "import os, triton; print(os.path.dirname(triton.__file__))"],
                          capture_output=True, text=True, check=True).stdout.strip()


@pytest.mark.slow
def test_an_overlay_holds_the_patched_pipeline_and_records_the_patch(tmp_path: Path) -> None:
    build = make_overlay(sys.executable, [PATCHES / "drop-hopper-pipeline.patch"], tmp_path / "ov")
    assert _triton_dir(build.python) == str(build.triton_dir)
    patched = (build.triton_dir / "backends" / "nvidia" / "compiler.py").read_text()
    assert patched.count("add_pipeline(pm, opt.num_stages, dump_enabled)") == 1  # one of two dropped
    # compiled parts are linked, not copied
    assert (build.triton_dir / "_C").is_symlink()
    record = json.loads((build.triton_dir / OVERLAY_FILE).read_text())
    assert record["files"] == ["triton/backends/nvidia/compiler.py"]
    assert len(record["patches"][0]["sha256"]) == 64
    # the run identity names the overlay, and Triton's own build hash tells the builds apart
    probe = ("import json; from tritongate.identity import triton_build; print(json.dumps(triton_build()))")
    over = json.loads(subprocess.run([str(build.python), "-c", probe], capture_output=True, text=True,
                                     check=True).stdout)
    base = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                     check=True).stdout)
    assert "overlay" not in base and "drop-hopper-pipeline.patch" in over["overlay"]
    assert over["build_hash"] != base["build_hash"]


def test_an_overlay_of_an_overlay_records_both_builds_patches(tmp_path: Path) -> None:
    """It carries both changes; its record named only its own patch, so the build passed for
    one with a single change."""
    first = make_overlay(sys.executable, [PATCHES / "drop-hopper-pipeline.patch"], tmp_path / "ov1")
    second = make_overlay(str(first.python), [PATCHES / "jit-grid-tuple.patch"], tmp_path / "ov2")
    record = json.loads((second.triton_dir / OVERLAY_FILE).read_text())
    assert [Path(p["path"]).name for p in record["patches"]] == ["drop-hopper-pipeline.patch", "jit-grid-tuple.patch"]
    assert record["files"] == ["triton/backends/nvidia/compiler.py", "triton/runtime/jit.py"]
    base = json.loads((first.triton_dir / OVERLAY_FILE).read_text())
    assert record["base_triton"] == base["base_triton"]  # the source build under both
    compiler = (second.triton_dir / "backends" / "nvidia" / "compiler.py").read_text()
    assert compiler.count("add_pipeline(pm, opt.num_stages, dump_enabled)") == 1  # the first change is there


def test_a_patch_that_does_not_apply_is_a_named_error_and_leaves_nothing(tmp_path: Path) -> None:
    twice = [PATCHES / "drop-coalesce.patch", PATCHES / "drop-coalesce.patch"]
    with pytest.raises(OverlayError, match=r"drop-coalesce\.patch does not apply.*compiler\.py"):
        make_overlay(sys.executable, twice, tmp_path / "ov")
    assert not (tmp_path / "ov").exists()


def test_an_existing_destination_or_a_missing_patch_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "ov").mkdir()
    with pytest.raises(UsageError, match="already exists"):
        make_overlay(sys.executable, [PATCHES / "noop-comment.patch"], tmp_path / "ov")
    with pytest.raises(UsageError, match=r"--patch .*nope\.patch: cannot be read"):
        make_overlay(sys.executable, [tmp_path / "nope.patch"], tmp_path / "ov2")


def test_a_removed_line_that_starts_with_two_dashes_is_hunk_content() -> None:
    text = ("--- a/python/triton/language/core.py\n+++ b/python/triton/language/core.py\n"
            "@@ -1,3 +1,2 @@\n x = 1\n--- not a header, a removed line '-- ...'\n y = 2\n")
    mapped, files = map_patch(text, "p")
    assert files == ("triton/language/core.py",)
    assert "--- not a header, a removed line '-- ...'\n" in mapped  # kept as it was, not refused or rewritten
    assert mapped.startswith("--- a/triton/language/core.py\n+++ b/triton/language/core.py\n")


def test_an_overlay_made_inside_a_git_work_tree_is_applied(tmp_path: Path) -> None:
    """git apply run inside a repository skips paths outside its folder and still exits 0: a
    compiler engineer's checkout would get the base build reported as patched."""
    repo = tmp_path / "checkout"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    build = make_overlay(sys.executable, [PATCHES / "drop-hopper-pipeline.patch"], repo / "build" / "ov")
    patched = (build.triton_dir / "backends" / "nvidia" / "compiler.py").read_text()
    assert patched.count("add_pipeline(pm, opt.num_stages, dump_enabled)") == 1


def test_a_patch_reported_but_not_applied_is_refused(tmp_path: Path, monkeypatch) -> None:
    import tritongate.overlay as overlay

    monkeypatch.setattr(overlay, "_apply", lambda mapped, name, site, earlier=None: None)  # as git apply in a work tree did
    with pytest.raises(OverlayError, match=r"triton/backends/nvidia/compiler\.py but left it as in the base build"):
        make_overlay(sys.executable, [PATCHES / "drop-hopper-pipeline.patch"], tmp_path / "ov")
    assert not (tmp_path / "ov").exists()


def test_the_record_keeps_absolute_paths_whatever_the_caller_gave(tmp_path: Path, monkeypatch) -> None:
    """Paths given relative to the caller's folder would name nothing read from elsewhere;
    the base interpreter stays a venv's own path (not resolved through its link)."""
    import shutil

    import os

    shutil.copy(PATCHES / "noop-comment.patch", tmp_path / "p.patch")
    monkeypatch.chdir(tmp_path)
    relative = os.path.relpath(sys.executable, tmp_path)  # this venv's python, as ../../x/.venv/bin/python
    build = make_overlay(relative, [Path("p.patch")], Path("ov"))
    record = json.loads((build.triton_dir / OVERLAY_FILE).read_text())
    assert record["base_python"] == os.path.abspath(sys.executable)
    assert record["patches"][0]["path"] == str(tmp_path / "p.patch")


def test_a_patch_that_repeats_an_earlier_one_says_so(tmp_path: Path) -> None:
    """The second --patch met the sources the first had changed: the fix is not a rebase on
    the base build."""
    with pytest.raises(OverlayError, match=r"drop-hopper-pipeline.patch does not apply after drop-hopper-pipeline.patch: "
                                         r".*rebase it on those, or give one --patch less"):
        make_overlay(sys.executable, [PATCHES / "drop-hopper-pipeline.patch"] * 2, tmp_path / "ov")
    assert not (tmp_path / "ov").exists()


def test_a_renamed_file_maps_its_rename_lines_and_applies(tmp_path: Path) -> None:
    """`git diff` detects renames by default (diff.renames): its `rename from/to` lines name the
    repository's paths too. Left as they were, git apply refused the whole patch ("inconsistent
    old filename") and the overlay said to rebase it on the base build's Triton version."""
    body = "".join(f"line {i}\n" for i in range(1, 11))
    text = ("diff --git a/python/triton/old_mod.py b/python/triton/new_mod.py\n"
            "similarity index 90%\n"
            "rename from python/triton/old_mod.py\n"
            "rename to python/triton/new_mod.py\n"
            "index 1111111..2222222 100644\n"
            "--- a/python/triton/old_mod.py\n+++ b/python/triton/new_mod.py\n"
            "@@ -4,3 +4,3 @@ line 3\n line 4\n-line 5\n+line five\n line 6\n")
    mapped, files = map_patch(text, "p")
    assert "rename from triton/old_mod.py\nrename to triton/new_mod.py\n" in mapped
    assert "python/" not in mapped and "triton/new_mod.py" in files
    site = tmp_path / "site"
    (site / "triton").mkdir(parents=True)
    (site / "triton" / "old_mod.py").write_text(body)
    subprocess.run(["git", "apply", "-"], input=mapped, text=True, cwd=site, check=True,
                   env={"GIT_CEILING_DIRECTORIES": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert not (site / "triton" / "old_mod.py").exists()
    assert (site / "triton" / "new_mod.py").read_text() == body.replace("line 5\n", "line five\n")


def test_a_rename_out_of_the_package_is_refused() -> None:
    text = ("diff --git a/python/triton/tools/x.py b/python/triton/tools/y.py\n"
            "similarity index 100%\nrename from python/triton/tools/x.py\nrename to python/test/y.py\n")
    with pytest.raises(OverlayError, match=r"python/test/y\.py"):
        map_patch(text, "p")
