"""A compiler build from a patch: the installed Triton with a patch applied to its Python sources.

Most compiler PRs change only Python (the pass pipeline in ``backends/nvidia/compiler.py``,
the frontend, the lowering helpers). For those, a source build (tens of minutes) is not
needed: an *overlay* build is a venv made from the base interpreter (its site-packages
visible, so torch is reused) holding a copy of the base Triton's Python files with the patch
applied, and symlinks to its compiled parts (``libtriton.so``, ``ptxas``, headers), so it
takes seconds.

A patch may use the Triton repository's layout (``python/triton/X`` and
``third_party/<backend>/backend/X``, as a PR's diff does) or the installed one
(``triton/X``). A patch that touches compiled code (C++, MLIR, TableGen) is refused with a
named error: it needs a source build. A patch that does not apply is a named error too.

The overlay writes ``triton/_tritongate_overlay.json`` (the base build and every patch's
sha256); the run identity records it, and Triton's own build hash (``triton_key``, over the
Python sources) differs from the base's by construction.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tritongate.atomicio import write_bytes_atomic
from tritongate.errors import GateError, UsageError

OVERLAY_FILE = "_tritongate_overlay.json"
OVERLAY_SCHEMA = 1
# Kept as links, not copied: compiled libraries and tools, and folders of them.
_LINKED_SUFFIXES = (".so", ".a", ".bc", ".dylib")
_LINKED_DIRS = {"bin", "lib", "include", "_C"}
_TEXT_SUFFIXES = (".py", ".pyi", ".c", ".h", ".json", ".txt", ".typed")
# A file header: `diff --git a/X b/Y`, or a `--- X` line directly followed by `+++ Y` (alone,
# `--- ` also starts a removed line that began with `-- `, which is hunk content, not a header).
_HEADER = re.compile(r"^(?:diff --git a/(\S+) b/(\S+)|--- (?:a/)?(\S+)(.*)\n\+\+\+ (?:b/)?(\S+))", re.M)
# git's extended header lines of a rename or copy (`git diff` finds renames by default) name the
# repository's paths as well; a hunk line always starts with ' ', '+', '-' or '\', never these.
_MOVE = re.compile(r"^(rename|copy) (from|to) (\S+)$", re.M)


class OverlayError(GateError):
    """An overlay build could not be made (the patch, the base build, or the destination)."""


@dataclass(frozen=True)
class OverlayBuild:
    python: Path  # the overlay's interpreter
    site_packages: Path
    triton_dir: Path
    patches: tuple[dict[str, str], ...]  # {"path", "sha256"} per patch, in order applied
    files: tuple[str, ...]  # installed-layout paths the patches change


def installed_path(repo_path: str) -> str | None:
    """Where a file of the Triton repository lands in an installed ``triton`` package, or
    None when it is not a Python source of the package (C++, tests, docs, build files)."""
    p = repo_path.strip()
    if p == "/dev/null":
        return p
    if p.startswith("triton/"):
        return p
    if p.startswith("python/triton/"):
        return p[len("python/"):]
    m = re.match(r"third_party/([A-Za-z0-9_]+)/backend/(.+)$", p)
    if m:
        return f"triton/backends/{m.group(1)}/{m.group(2)}"
    return None


def _compiled(path: str) -> bool:
    return path.endswith((".cpp", ".cc", ".h", ".hpp", ".td", ".cu", ".mlir", ".txt", ".cmake"))


def map_patch(text: str, patch_name: str) -> tuple[str, tuple[str, ...]]:
    """The patch with every file path rewritten to the installed layout, and those paths.

    Refuses a patch that changes anything that is not a Python source of the package: the
    overlay reuses the base build's compiled code, so such a change would silently not be
    in the build under test.
    """
    files: list[str] = []
    refused: list[str] = []

    def one(path: str, side: str) -> str | None:
        mapped = installed_path(path)
        if mapped is None:
            refused.append(path)
            return None
        if mapped == "/dev/null":
            return mapped
        if mapped not in files:
            files.append(mapped)
        return f"{side}/{mapped}"

    def rewrite(m: re.Match[str]) -> str:
        if m.group(1) is not None:
            a, b = installed_path(m.group(1)), installed_path(m.group(2))
            if a is None or b is None:
                refused.append(m.group(2))
                return m.group(0)
            if b not in files:
                files.append(b)
            return f"diff --git a/{a} b/{b}"
        old, new = one(m.group(3), "a"), one(m.group(5), "b")
        if old is None or new is None:
            return m.group(0)
        return f"--- {old}{m.group(4)}\n+++ {new}"

    def move(m: re.Match[str]) -> str:
        mapped = installed_path(m.group(3))
        if mapped is None or mapped == "/dev/null":
            refused.append(m.group(3))
            return m.group(0)
        if m.group(2) == "to" and mapped not in files:
            files.append(mapped)
        return f"{m.group(1)} {m.group(2)} {mapped}"

    mapped_text = _MOVE.sub(move, _HEADER.sub(rewrite, text))
    if refused:
        kinds = "compiled code" if any(_compiled(p) for p in refused) else "files outside the Python package"
        raise OverlayError(
            f"{patch_name}: changes {kinds} ({', '.join(sorted(set(refused))[:5])}); an overlay build "
            "reuses the base build's compiled libraries, so this patch needs a source build "
            "(build-compiler mode: source)")
    if not files:
        raise OverlayError(f"{patch_name}: holds no file changes (not a unified diff?)")
    return mapped_text, tuple(files)


def _base_paths(base_python: str) -> tuple[Path, list[str]]:
    """The base build's triton folder and its site folders (in its sys.path order)."""
    code = ("import os, site, sys, triton, json; print(json.dumps([os.path.dirname(os.path.realpath("
            "triton.__file__)), [p for p in sys.path if p.endswith(('site-packages', 'dist-packages'))]]))")
    try:
        out = subprocess.run([base_python, "-I", "-c", code], capture_output=True, text=True,
                             timeout=300, check=False)
    except OSError as exc:
        raise UsageError(f"--base-python {base_python}: cannot be started ({exc.strerror}); "
                         "pass the interpreter of the installed compiler build") from exc
    if out.returncode != 0 or not out.stdout.strip():
        raise UsageError(f"--base-python {base_python}: cannot import triton "
                         f"({(out.stderr.strip().splitlines() or ['no output'])[-1]})")
    triton_dir, sites = json.loads(out.stdout.strip().splitlines()[-1])
    return Path(triton_dir), sites


def _copy_tree(src: Path, dst: Path) -> None:
    """Copy the package's text sources, link its compiled parts (seconds, not a 1 GB copy)."""
    dst.mkdir(parents=True)
    for entry in os.scandir(src):
        target = dst / entry.name
        if entry.name == "__pycache__":
            continue
        if entry.is_dir(follow_symlinks=True):
            if entry.name in _LINKED_DIRS:
                target.symlink_to(Path(entry.path).resolve(), target_is_directory=True)
            else:
                _copy_tree(Path(entry.path), target)
        elif entry.name.endswith(_LINKED_SUFFIXES) or not entry.name.endswith(_TEXT_SUFFIXES):
            target.symlink_to(Path(entry.path).resolve())
        else:
            shutil.copyfile(entry.path, target)


def _site_packages(python: Path) -> Path:
    out = subprocess.run([str(python), "-I", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, timeout=120, check=True)
    return Path(out.stdout.strip())


def _apply(mapped: str, patch_name: str, site: Path, earlier: list[str] | None = None) -> None:
    # git apply is all or nothing: a hunk that fails leaves every file as it was. Inside a git
    # work tree it applies relative to that repository and skips, silently, every path outside
    # the current folder: the ceiling keeps it from finding a repository above the overlay.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_CEILING_DIRECTORIES"] = str(site.resolve().parent)
    try:
        res = subprocess.run(["git", "apply", "--whitespace=nowarn", "-"], input=mapped, text=True,
                             capture_output=True, cwd=site, timeout=120, check=False, env=env)
    except OSError as exc:
        raise OverlayError(f"git is needed to apply {patch_name} ({exc.strerror})") from exc
    if res.returncode != 0:
        why = " ".join(res.stderr.strip().splitlines()[:3]) or f"git apply exit {res.returncode}"
        if earlier:  # the sources it met were the base build's with the earlier patches applied
            raise OverlayError(f"{patch_name} does not apply after {', '.join(earlier)}: {why}; the patches "
                               "overlap (or one repeats another): rebase it on those, or give one --patch less")
        raise OverlayError(f"{patch_name} does not apply to the base build's sources: {why}; "
                           "rebase the patch on the base build's Triton version")


def _check_applied(src: Path, site: Path, files: list[str]) -> None:
    """Every file the patches name now differs from the base build's (or was added or
    removed): an overlay that reports a patch it did not apply would pass for the PR build."""
    same = []
    for rel in files:
        base, now = src.parent / rel, site / rel
        if base.is_file() and now.is_file() and base.read_bytes() == now.read_bytes():
            same.append(rel)
        elif not base.exists() and not now.exists():
            same.append(rel)
    if same:
        raise OverlayError(f"the patches name {', '.join(same[:5])} but left {'it' if len(same) == 1 else 'them'} "
                           "as in the base build: nothing was applied there")


def make_overlay(base_python: str, patches: list[Path], dest: Path) -> OverlayBuild:
    """Make an overlay build at ``dest`` (which must not exist) and return it."""
    if not patches:
        raise UsageError("an overlay build needs at least one --patch")
    dest = Path(dest)
    if dest.exists():
        raise UsageError(f"{dest}: already exists; an overlay is made into a new folder")
    texts: list[tuple[Path, str, str, tuple[str, ...]]] = []
    for patch in patches:
        try:
            raw = Path(patch).read_bytes()
        except OSError as exc:
            raise UsageError(f"--patch {patch}: cannot be read ({exc.strerror})") from exc
        text = raw.decode("utf-8", errors="replace")
        mapped, files = map_patch(text, str(patch))
        texts.append((Path(patch), hashlib.sha256(raw).hexdigest(), mapped, files))
    src, base_sites = _base_paths(base_python)
    python = dest / "bin" / "python"
    try:
        made = subprocess.run([base_python, "-m", "venv", "--without-pip", str(dest)],
                              capture_output=True, text=True, timeout=300, check=False)
        if made.returncode != 0:
            why = (made.stderr.strip().splitlines() or [f"exit {made.returncode}"])[-1]
            raise OverlayError(f"{dest}: the venv could not be made ({why})")
        site = _site_packages(python)
        triton_dir = site / "triton"
        # The base's site folders come after the overlay's own (torch, tritongate, its .pth
        # hooks), so the patched triton shadows the base one. --system-site-packages would not
        # do: a venv made from a venv sees the system's packages, not its parent venv's.
        hook = "import site; " + "; ".join(f"site.addsitedir({p!r})" for p in base_sites)
        (site / "_tritongate_base.pth").write_text(hook + "\n", encoding="utf-8")
        _copy_tree(src, triton_dir)
        for i, (patch, _sha, mapped, _files) in enumerate(texts):
            _apply(mapped, str(patch), site, [Path(p).name for p, *_rest in texts[:i]])
        _check_applied(src, site, sorted({f for *_x, files in texts for f in files}))
        below = overlay_identity(src) or {}  # an overlay of an overlay carries both builds' patches
        below_patches = below.get("patches") if isinstance(below.get("patches"), list) else []
        below_files = below.get("files") if isinstance(below.get("files"), list) else []
        record = {
            "schema_version": OVERLAY_SCHEMA,
            # absolute, not resolved: a venv's bin/python is a link the venv is found by
            "base_python": os.path.abspath(base_python),
            "base_triton": below.get("base_triton") if isinstance(below.get("base_triton"), str) else str(src),
            "patches": [*below_patches, *({"path": os.path.abspath(p), "sha256": sha} for p, sha, _m, _f in texts)],
            "files": sorted({*(f for f in below_files if isinstance(f, str)),
                             *(f for *_x, files in texts for f in files)}),
        }
        # Inside the try: an overlay without its record would pass for the base build.
        write_bytes_atomic(triton_dir / OVERLAY_FILE, (json.dumps(record, indent=1) + "\n").encode())
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    return OverlayBuild(python=python, site_packages=site, triton_dir=triton_dir,
                        patches=tuple(record["patches"]), files=tuple(record["files"]))


def overlay_identity(triton_dir: str | os.PathLike[str]) -> dict[str, object] | None:
    """The overlay record of a triton package folder, or None for a plain build."""
    path = Path(triton_dir) / OVERLAY_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    return {"patches": data.get("patches"), "files": data.get("files"), "base_triton": data.get("base_triton")}
