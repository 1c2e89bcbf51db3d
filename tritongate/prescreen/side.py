"""One build's half of the pre-screen, and the record of it that the judge reads.

A side runs the build's own code: its interpreter recompiles the baseline's launched variants
(``ir-<side>/``), recaptures what it launches (``capture-<side>/``), and its launch-path files
are hashed. ``side-<side>.json`` says which build did it, for which baseline and target.
The judge (``prescreen.judge``) compares two sides and runs no compiler code, so in CI it can
run in a job that holds neither build: what decides ``rows_changed`` and the zero verdict is
then never in a process a PR's code ran in. A side's files are that build's output: read as
untrusted (bounded, never through a link, validated).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Literal, Mapping, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tritongate import __version__, safefs
from tritongate.atomicio import write_text_atomic
from tritongate.childenv import build_env, package_link_dir, with_overlay
from tritongate.errors import GateError, UsageError
from tritongate.ir.provenance import build_of, record_identity
from tritongate.prescreen.launch_path import launch_path_files
from tritongate.prescreen.respecialize import RowKey, capture_both
from tritongate.prescreen.sides import run_both

SIDE_SCHEMA = 1
SIDES = ("base", "cand")
AOT_TIMEOUT_S = 3600.0
MAX_SIDE_BYTES = 1 << 20  # the build identity and ~40 file hashes: kilobytes


class PrescreenInternalError(GateError):
    """A build's recompile failed in a way no input explains."""


class SideDoc(BaseModel):
    """``side-<side>.json``: one build's half of a pre-screen (schema 1)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    schema_version: Literal[1] = SIDE_SCHEMA
    tool_version: str
    side: Literal["base", "cand"]
    build: dict[str, Any]
    baseline: dict[str, Any]  # ``record_identity`` of the baseline it was made from
    target: str | None  # the record's GPU target; None: nothing compiled, every row is timed
    launch_path: dict[str, str] = Field(default_factory=dict)  # file -> sha256
    capture: str | None = None  # the capture's run directory under capture-<side>/; None: it failed
    wall_s: dict[str, float] = Field(default_factory=dict)


def side_json(side: str) -> str:
    return f"side-{side}.json"


def package_lead(out: Path) -> str:
    """The PYTHONPATH entry that finds this tritongate in a build's process (a folder beside
    ``out`` holding only a link to the package)."""
    return str(package_link_dir(Path(out) / ".pythonpath"))


def _aot_cmd(python: str, record: Path, out: Path, target: str,
             overlay: Mapping[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
    """``python -m tritongate ir`` (this tritongate, the build's Triton) into ``out``; ``overlay``:
    the build's own environment (a compiler knob)."""
    env = build_env(os.environ)  # the build is a PR's code: no file commands, no tokens
    # binaries compared without line info, as GPU runs launch them: debug sections carry the
    # compiler's own source paths and lines, which differ between any two builds
    env.setdefault("TRITON_DISABLE_LINE_INFO", "1")
    env = with_overlay(env, overlay, lead=package_lead(out.parent))
    env.pop("TRITON_INTERPRET", None)  # AOT compiles: the interpreter would make nothing
    # a cache of its own: every variant really compiled by this build, and the wall time honest
    env["TRITON_CACHE_DIR"] = str(out.with_name(out.name + ".triton-cache"))
    return [python, "-m", "tritongate", "ir", "--from", str(record), "--target", target, "--out", str(out)], env


def _aot_both(pythons: Mapping[str, str], record: Path, out: Path, target: str,
              envs: Mapping[str, Mapping[str, str]]) -> dict[str, float]:
    """The sides' recompiles at once (one core each on a 2-core runner); seconds per side."""
    codes, walls = run_both({side: _aot_cmd(py, record, out / f"ir-{side}", target, envs.get(side))
                             for side, py in pythons.items()},
                            {side: out / f"ir-{side}.log" for side in pythons}, AOT_TIMEOUT_S)
    for side, code in codes.items():
        log = out / f"ir-{side}.log"
        if code == 2:
            raise UsageError(f"{pythons[side]} -m tritongate ir --from {record} refused its input (exit 2); see {log}")
        if code != 0:  # a negative status: killed at AOT_TIMEOUT_S
            raise PrescreenInternalError(f"{pythons[side]} -m tritongate ir failed (exit {code}); see {log}")
    return {f"aot_{side}_s": wall for side, wall in walls.items()}


def _capture_both(pythons: Mapping[str, str], record: Path, suite: str, rows: list[RowKey], out: Path,
                  target: str, envs: Mapping[str, Mapping[str, str]]) -> tuple[dict[str, Path | None], dict[str, float]]:
    return capture_both(pythons, record, suite, rows, out, target, package_lead(out), envs)


def prepare_sides(record: Path, pythons: Mapping[str, str], out: Path, *, suite: str, rows: list[RowKey],
                  target: str | None, envs: Mapping[str, Mapping[str, str]] | None = None,
                  started: Callable[[], None] | None = None) -> dict[str, SideDoc]:
    """Each side of ``pythons`` (``base``/``cand`` -> interpreter) at once: its recompile, capture
    and launch-path hashes into ``out``, and its ``side-<side>.json``; ``envs``: a side's
    environment overlay, in its identity too; ``started``: called once the interpreters are
    known to be builds and ``out`` is made, before the compiles."""
    record, out = Path(record), Path(out)
    out.mkdir(parents=True, exist_ok=True)
    envs = {side: dict((envs or {}).get(side) or {}) for side in pythons}
    builds = {side: {**build_of(py, envs[side]), **({"env_overlay": envs[side]} if envs[side] else {})}
              for side, py in pythons.items()}
    walls: dict[str, float] = {}
    captures: dict[str, Path | None] = {side: None for side in pythons}
    if started is not None:
        started()
    if target is not None:
        walls = _aot_both(pythons, record, out, target, envs)
        captures, capture_walls = _capture_both(pythons, record, suite, rows, out, target, envs)
        walls |= capture_walls
    docs = {}
    for side, build in builds.items():
        capture = captures[side]
        docs[side] = SideDoc(
            tool_version=__version__, side=cast(Literal["base", "cand"], side), build=build,
            baseline=record_identity(record), target=target,
            launch_path=launch_path_files(Path(build["triton_dir"])),
            capture=None if capture is None else capture.relative_to(out / f"capture-{side}").as_posix(),
            wall_s={k: v for k, v in walls.items() if k.endswith(f"_{side}_s")})
        write_text_atomic(out / side_json(side), docs[side].model_dump_json(indent=1))
    return docs


def read_side(out: Path, side: str, record: Path) -> SideDoc:
    """``out/side-<side>.json``, validated, made from ``record``; ``UsageError`` naming the fix."""
    name = side_json(side)
    fix = (f"make it with `tritongate prescreen --side {side} --baseline {record} --out {out}` (or download "
           f"that job's artifact into {out})")
    try:
        raw = safefs.read_bytes(Path(out), name, limit=MAX_SIDE_BYTES)
    except safefs.LinkError as exc:
        raise UsageError(f"{Path(out) / name}: {exc.detail}; {fix}") from None
    except OSError as exc:
        raise UsageError(f"{Path(out) / name}: {exc.strerror or exc}; {fix}") from None
    if len(raw) > MAX_SIDE_BYTES:
        raise UsageError(f"{Path(out) / name}: larger than {MAX_SIDE_BYTES // 1024} KiB, not a pre-screen side")
    try:
        doc = SideDoc.model_validate_json(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "(document)"
        raise UsageError(f"{Path(out) / name}: not a pre-screen side of schema {SIDE_SCHEMA} ({where}: "
                         f"{first.get('msg', 'invalid')}); {fix}") from None
    if doc.capture is not None and (doc.capture in ("", ".", "..") or "/" in doc.capture or "\\" in doc.capture):
        raise UsageError(f"{Path(out) / name}: capture {doc.capture[:80]!r} is not a folder name; {fix}")
    if doc.side != side:
        raise UsageError(f"{Path(out) / name}: it is the {doc.side} side's; {fix}")
    # by content: the judge's copy of the baseline sits at another path than the side's
    if doc.baseline.get("content_sha256") != record_identity(record)["content_sha256"]:
        raise UsageError(f"{Path(out) / name}: made from another baseline than {record}; {fix}")
    return doc
