"""Pass blame for a pre-screen's changed kernels: which compiler pass first makes each differ.

Each changed variant (``prescreen.json``'s kernels, status ``changed``, then those only
``binary_changed``) is compiled again under both builds with every pass dumped
(``tritongate.ir.passblame.blame_variant``, as ``tritongate ir-diff --blame`` does), at most
``limit`` of them: seconds to a minute each. ``ir-diff/blame.json`` has the layout
``ir-diff --blame`` writes (``schema_version``, ``target``, ``variants``), plus the variants
left out (``not_blamed``) and those whose dumps could not be made (``failed``); the dumps are
in ``OUT/blame/`` (outside ``ir-diff/``, which CI uploads).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from tritongate.atomicio import write_json_atomic
from tritongate.errors import UsageError
from tritongate.ir.diff import BLAME_DIR, BLAME_JSON

DEFAULT_LIMIT = 10
BLAMED_STATUSES = ("changed", "binary_changed")


@dataclass(frozen=True)
class BlamedKernel:
    case: str
    kernel: str
    variant: str
    summary: str = ""  # "first differs after `tritongpu-coalesce` (...)"; empty when it failed
    error: str = ""


@dataclass
class BlameOutcome:
    path: Path  # ir-diff/blame.json
    blamed: list[BlamedKernel] = field(default_factory=list)  # failures too, with ``error``
    not_blamed: list[dict[str, str]] = field(default_factory=list)


def _ident(k: Mapping[str, Any]) -> dict[str, str]:
    return {"case": str(k["case"]), "kernel": str(k["kernel"]), "variant": str(k["variant"])}


def blame_prescreen(out: Path, doc: Mapping[str, Any], base_python: str, cand_python: str, limit: int, *,
                    starting: Callable[[int, int, BlamedKernel], None] | None = None,
                    progress: Callable[[BlamedKernel], None] | None = None,
                    envs: Mapping[str, Mapping[str, str]] | None = None) -> BlameOutcome:
    """Blame up to ``limit`` changed kernels of the pre-screen in ``out`` (``doc``: its
    prescreen.json) under the two builds it screened (``envs``: each side's environment overlay,
    as it screened them); ``starting`` is told of each one before its compiles (its place from 0,
    how many, the kernel without a summary: they take seconds to a minute), ``progress`` of each
    one done."""
    from tritongate.ir.index import INDEX, read_index
    from tritongate.ir.passblame import blame_variant

    out = Path(out)
    target = doc.get("target")
    diff_dir = out / str(doc.get("ir_diff") or "ir-diff")
    if not isinstance(target, str) or not diff_dir.is_dir():
        raise UsageError(f"{out}: the pre-screen compiled nothing (no target or no ir-diff/), so no pass can be "
                         "blamed; leave out --blame")
    try:
        variants = {(v.case, v.kernel, v.name): v for v in read_index(out / "ir-base" / "ttgir" / INDEX)}
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    # TTGIR changes first: a pass to blame is likelier there than below TTGIR (ptxas)
    changed = sorted((k for k in doc.get("kernels") or () if k.get("status") in BLAMED_STATUSES),
                     key=lambda k: BLAMED_STATUSES.index(k["status"]))
    dumps = out / BLAME_DIR
    shutil.rmtree(dumps, ignore_errors=True)  # the dumps go into fresh folders
    result = BlameOutcome(diff_dir / BLAME_JSON, not_blamed=[_ident(k) for k in changed[limit:]])
    found: list[dict[str, Any]] = []
    failed: list[dict[str, str]] = []
    blamed = changed[:limit]
    for i, k in enumerate(blamed):
        ident = _ident(k)
        v = variants.get((ident["case"], ident["kernel"], ident["variant"]))
        if v is None:  # only the candidate compiled it: nothing to compile under the base
            failed.append(ident | {"error": "not in the base build's AOT index"})
            done = BlamedKernel(**ident, error=failed[-1]["error"])
        else:
            if starting is not None:
                starting(i, len(blamed), BlamedKernel(**ident))
            try:
                blame = blame_variant(base_python, cand_python, v, target, dumps / f"{i:03d}",
                                      base_env=(envs or {}).get("base"), cand_env=(envs or {}).get("cand"))
            except (RuntimeError, subprocess.TimeoutExpired) as exc:  # one kernel's dumps, not the screen
                failed.append(ident | {"error": " ".join(str(exc).split())[:500]})
                done = BlamedKernel(**ident, error=failed[-1]["error"])
            else:
                found.append({**ident, **blame.to_dict()})
                done = BlamedKernel(**ident, summary=blame.summary())
        result.blamed.append(done)
        if progress is not None:
            progress(done)
    write_json_atomic(result.path, {"schema_version": 1, "target": target, "variants": found,
                                    "not_blamed": result.not_blamed, "failed": failed})
    return result
