"""The environment a compiler build's own code runs in: never the runner's file commands.

GitHub Actions hands each step files to append to (``GITHUB_ENV``, ``GITHUB_PATH``,
``GITHUB_OUTPUT``, ``GITHUB_STEP_SUMMARY``, ``GITHUB_STATE``) and, to actions, runtime tokens.
With them a PR's compiler (its build scripts, its Triton imported by a worker or a recompile)
could set the step's outputs (``rows_changed``) or the job's later environment: one line
``BASH_ENV=...`` appended to ``GITHUB_ENV`` runs code in every later ``bash`` step. Every
process tritongate starts under a build's interpreter gets this environment instead.

This keeps honest mistakes and casual tampering out; it is not a sandbox: the build runs as
the runner's user (docs/adopting.md says what the gate does not defend against).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Mapping

FILE_COMMANDS = ("GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_STATE")
RUNNER_TOKENS = ("GITHUB_TOKEN", "ACTIONS_RUNTIME_TOKEN", "ACTIONS_RUNTIME_URL", "ACTIONS_RESULTS_URL",
                 "ACTIONS_CACHE_URL", "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_URL")


def build_env(parent: Mapping[str, str]) -> dict[str, str]:
    """``parent`` without the runner's file commands and tokens."""
    return {k: v for k, v in parent.items() if k not in FILE_COMMANDS and k not in RUNNER_TOKENS}


def with_overlay(env: Mapping[str, str], overlay: Mapping[str, str] | None, *, lead: str) -> dict[str, str]:
    """``env`` with a build's overlay applied. A ``PYTHONPATH`` in the overlay (a PR's Triton
    checkout, say) goes right after ``lead`` (the folder that finds this tritongate) and before
    the rest of ``env``'s, so it is added, never replacing the path to tritongate, and wins over
    the runner's own entries. The one rule for every process a build runs."""
    if not lead:  # an empty entry would put the working folder on the path
        raise ValueError("with_overlay needs the folder that finds tritongate as lead")
    out = dict(env)
    extra = dict(overlay or {})
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != lead]
    own = [p for p in extra.pop("PYTHONPATH", "").split(os.pathsep) if p]
    out.update(extra)
    out["PYTHONPATH"] = os.pathsep.join([lead, *own, *rest])
    return out


def package_link_dir(root: Path) -> Path:
    """A folder holding only a link to this ``tritongate`` package: the ``lead`` of a build's
    PYTHONPATH. The package's parent folder instead could be the caller's site-packages, and
    would shadow the build's own triton and torch with the caller's."""
    import tritongate

    package = Path(tritongate.__file__).resolve().parent
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    link = root / "tritongate"
    if link.is_symlink() and Path(os.readlink(link)) == package:
        return root
    tmp = root / f".tritongate-{os.getpid()}"
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    tmp.symlink_to(package, target_is_directory=True)
    os.replace(tmp, link)
    return root


def die_with_parent() -> None:
    """In the child, before exec: on Linux, be killed when the parent dies (kill -9 included),
    so a worker (or a GPU-turn partner) busy on the GPU never outlives the process that started it
    (the thread, in fact: start it from the main thread).
    Elsewhere the child still exits when its stdin closes, once it is idle."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - not Linux: stdin EOF is the fallback
        pass
