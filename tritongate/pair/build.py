"""A compiler build under test: a Python interpreter (typically a venv holding that Triton
build) plus environment overlays that reach only its own worker."""

from __future__ import annotations

import hashlib
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from tritongate.childenv import build_env, with_overlay
from tritongate.errors import UsageError

SIDES = ("base", "candidate")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# What execve runs: ELF (Linux), Mach-O (both byte orders, fat), or a #! script.
_PROGRAM_MAGIC = (b"\x7fELF", b"#!", b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xca\xfe\xba\xbe")


def parse_env_overlay(items: Sequence[str] | None, *, option: str) -> dict[str, str]:
    """``["K=V", ...]`` from a repeatable command-line option, validated."""
    out: dict[str, str] = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        if not sep or not _ENV_NAME.match(name):
            raise UsageError(f"{option} {item!r}: expected NAME=VALUE with NAME a valid environment "
                             "variable name, e.g. DISABLE_MMA_V3=1")
        out[name] = value
    return out


@dataclass(frozen=True)
class CompilerBuild:
    side: str  # "base" | "candidate"
    python: str = field(default_factory=lambda: sys.executable)
    env: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.side not in SIDES:
            raise ValueError(f"side must be one of {SIDES}, got {self.side!r}")
        object.__setattr__(self, "env", dict(self.env))

    def check(self) -> None:
        """The interpreter must exist and be executable (a venv's bin/python is kept as
        given: resolving its symlink would lose the venv)."""
        path = Path(self.python)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise UsageError(f"{self.option} {self.python}: not an "
                             "executable file; pass the venv's bin/python of that compiler build")
        try:
            with open(path, "rb") as f:
                head = f.read(4)
        except OSError as exc:
            raise UsageError(f"{self.option} {self.python}: cannot be read ({exc.strerror or exc}); pass the venv's "
                             "bin/python of that compiler build") from None
        if not head.startswith(_PROGRAM_MAGIC):  # the kernel would refuse it: "Exec format error"
            raise UsageError(f"{self.option} {self.python}: not a program (neither a native executable nor a #! "
                             f"script; it starts with {head!r}), though it has the execute bit; pass the venv's "
                             "bin/python of that compiler build")

    @property
    def option(self) -> str:
        return f"--{'base' if self.side == 'base' else 'cand'}-python"

    def check_backend(self, backend: str) -> None:
        """The interpreter backend sets TRITON_INTERPRET=1 in every worker: an overlay that
        sets it otherwise would be overridden while the run records it as given."""
        value = self.env.get("TRITON_INTERPRET")
        if backend == "cpu" and value is not None and value != "1":
            env_option = f"--{'base' if self.side == 'base' else 'cand'}-env"
            raise UsageError(f"{env_option} TRITON_INTERPRET={value}: the cpu backend runs every kernel in Triton's "
                             "interpreter (TRITON_INTERPRET=1 in both workers), so this overlay would be overridden; "
                             "drop it, or use --backend cuda")

    def digest(self) -> str:
        """Identifies the build's interpreter and overlays (names its private compile cache)."""
        text = "\0".join([self.python, *(f"{k}={v}" for k, v in sorted(self.env.items()))])
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def environment(self, parent: Mapping[str, str], *, pythonpath: Path, cache_dir: Path) -> dict[str, str]:
        """The worker's environment: the parent's without the runner's file commands and tokens
        (``childenv``: the build is a PR's code), with this package importable first, a private
        ``TRITON_CACHE_DIR`` (unless the overlay sets one), then the overlay."""
        env = build_env(parent)
        env["TRITON_CACHE_DIR"] = str(cache_dir)
        env["PYTHONUNBUFFERED"] = "1"
        return with_overlay(env, self.env, lead=str(pythonpath))

    def to_dict(self) -> dict[str, object]:
        return {"side": self.side, "python": self.python, "env_overlay": dict(self.env)}
