"""The launch path of a Triton build: the files that decide how a compiled kernel is bound,
selected and launched, but not what code it is.

Two builds whose compilers emit the same TTGIR and cubin for every recorded variant can still
run a row differently: the binder (``runtime/jit.py``) may specialize other arguments, the
autotuner (``runtime/autotuner.py``) prune or pick otherwise, the launcher
(``backends/<x>/driver.py`` and its C template ``driver.c``) cost more per launch, and
``compiler/compiler.py`` (``CompiledKernel``) or ``knobs.py`` change the defaults in between,
and ``__init__.py``, imported first, can replace any of them; ``backends/driver.py`` (the
current stream and device, asked on every launch), ``backends/compiler.py`` and ``_utils.py``
are read by the binder.
The ahead-of-time diff sees none of that; a PR that changes any of these files has every row
timed. ``runtime/interpreter.py`` is left out: a GPU run never executes it.

The binder's native part (``native_specialize_impl`` in ``libtriton``, 3.4+) is compiled with
the passes; what it decides is checked by recapturing each build's own specialization
(``respecialize``), not by file.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Mapping

LAUNCH_PATH_GLOBS = ("__init__.py", "_utils.py", "knobs.py", "runtime/*.py", "compiler/compiler.py", "backends/*.py",
                     "backends/*/__init__.py", "backends/*/driver.py", "backends/*/driver.c")
# without it there is no launch path to compare: a build that lacks it changes it
REQUIRED = "runtime/jit.py"
NOT_LAUNCH_PATH = frozenset({"runtime/interpreter.py"})


def launch_path_files(triton_dir: Path) -> dict[str, str]:
    """sha256 of each launch-path file of the Triton package at ``triton_dir``, by its path
    relative to it (``runtime/jit.py``); links are read as the build imports them."""
    root = Path(triton_dir)
    out: dict[str, str] = {}
    for pattern in LAUNCH_PATH_GLOBS:
        for path in sorted(root.glob(pattern)):
            rel = path.relative_to(root).as_posix()
            if rel not in NOT_LAUNCH_PATH and path.is_file():
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def launch_path_changes(base: Mapping[str, str], cand: Mapping[str, str]) -> list[str]:
    """The launch-path files that differ between two builds (changed, added or removed), sorted;
    ``REQUIRED`` when either build lacks it (nothing to compare: fail closed)."""
    changed = sorted(rel for rel in set(base) | set(cand) if base.get(rel) != cand.get(rel))
    if REQUIRED not in base or REQUIRED not in cand:
        return sorted({*changed, REQUIRED})
    return changed
