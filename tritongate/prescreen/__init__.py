"""The ahead-of-time pre-screen of a PR, on a CPU: which baseline rows can the PR change?

A row is *unchanged* only when everything that decides how it runs is shown equal:

- the code: each build's interpreter recompiles the baseline record's launched variants for
  the record's own GPU target (``tritongate ir --from RECORD``, TTGIR down to cubin: ptxas
  ships in the wheel), and the two folders are diffed (``ir-diff``, with their provenance);
- what is launched: each build replays the record on the interpreter, capture only, so its
  own binder, option defaults and autotuner decide the row's variants (``respecialize``);
- how it is launched: the builds' launch-path files (``launch_path``) are the same.

A record for anything but one CUDA architecture (``target``) has every row timed. Rows timed
for a reason the IR diff cannot show are written into ``ir-diff/index.tsv`` as
``launch_changed``, so ``pair --changed-from`` times them. ``prescreen.json`` lists the
changed rows and why; when none changed, a verdict whose every row is ``IDENTICAL_BINARY``
is written through the gate's own writer, and no GPU job is needed.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping

import tritongate
from tritongate.childenv import build_env
from tritongate import __version__
from tritongate.atomicio import write_json_atomic
from tritongate.errors import GateError, UsageError
from tritongate.ir.changed import load_changed_rows
from tritongate.ir.diff import CHANGED, LAUNCH_CHANGED, VariantDiff, diff_trees, split_row, write_diff_dir
from tritongate.ir.index import INDEX
from tritongate.ir.provenance import build_of, diff_provenance, record_identity, write_diff_provenance
from tritongate.prescreen.blame import BLAME_JSON
from tritongate.prescreen.launch_path import launch_path_changes, launch_path_files
from tritongate.prescreen.rows import LAUNCH_PATH, NOT_COMPARED, VARIANT_SET
from tritongate.prescreen.sides import run_both
from tritongate.prescreen.respecialize import RowKey, capture_both, respecialized_rows, uncompared_rows
from tritongate.prescreen.target import record_target

SCHEMA_VERSION = 1
PRESCREEN_JSON = "prescreen.json"
IR_DIFF = "ir-diff"
VERDICT_DIR = "verdict"
AOT_TIMEOUT_S = 3600.0


class PrescreenInternalError(GateError):
    """A build's recompile failed in a way no input explains."""


@dataclass(frozen=True)
class PrescreenResult:
    out: Path
    rows_total: int
    rows_changed: list[tuple[str, str, str]]
    document: dict[str, Any]
    verdict_dir: Path | None


def _package_root() -> str:
    return str(Path(tritongate.__file__).resolve().parent.parent)


def _aot_cmd(python: str, record: Path, out: Path, target: str) -> tuple[list[str], dict[str, str]]:
    """``python -m tritongate ir`` (this tritongate, the build's Triton) into ``out``."""
    env = build_env(os.environ)  # the build is a PR's code: no file commands, no tokens
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_package_root(), env.get("PYTHONPATH", "")) if p)
    env.pop("TRITON_INTERPRET", None)  # AOT compiles: the interpreter would make nothing
    # binaries compared without line info, as GPU runs launch them: debug sections carry the
    # compiler's own source paths and lines, which differ between any two builds
    env.setdefault("TRITON_DISABLE_LINE_INFO", "1")
    # a cache of its own: every variant really compiled by this build, and the wall time honest
    env["TRITON_CACHE_DIR"] = str(out.with_name(out.name + ".triton-cache"))
    return [python, "-m", "tritongate", "ir", "--from", str(record), "--target", target, "--out", str(out)], env


def _aot_both(pythons: Mapping[str, str], record: Path, out: Path, target: str) -> dict[str, float]:
    """Both builds' recompiles at once (one core each on a 2-core runner); seconds per side."""
    codes, walls = run_both({side: _aot_cmd(py, record, out / f"ir-{side}", target) for side, py in pythons.items()},
                            {side: out / f"ir-{side}.log" for side in pythons}, AOT_TIMEOUT_S)
    for side, code in codes.items():
        log = out / f"ir-{side}.log"
        if code == 2:
            raise UsageError(f"{pythons[side]} -m tritongate ir --from {record} refused its input (exit 2); see {log}")
        if code != 0:  # a negative status: killed at AOT_TIMEOUT_S
            raise PrescreenInternalError(f"{pythons[side]} -m tritongate ir failed (exit {code}); see {log}")
    return {f"aot_{side}_s": wall for side, wall in walls.items()}


def _check_inputs(record: Path, base_python: str, cand_python: str) -> None:
    if not (record / "ttgir" / INDEX).is_file():
        raise UsageError(f"--baseline {record}: no ttgir/{INDEX} (a baseline entry keeps it; a record "
                         "made on a GPU or with --backend cpu has one)")
    for option, py in (("--base-python", base_python), ("--cand-python", cand_python)):
        if not (Path(py).is_file() and os.access(py, os.X_OK)):
            raise UsageError(f"{option} {py}: not an executable file")


def _capture_both(pythons: Mapping[str, str], record: Path, suite: str, rows: list[RowKey], out: Path,
                  target: str) -> tuple[dict[str, Path | None], dict[str, float]]:
    return capture_both(pythons, record, suite, rows, out, target, _package_root())


def _suite_of(identity: Mapping[str, Any], suite: str | None) -> str:
    if suite:
        return suite
    named = identity.get("suite")
    name = named.get("name") if isinstance(named, Mapping) else None
    if not isinstance(name, str) or not name:
        raise UsageError("the baseline's run_identity.json names no suite; pass --suite NAME|PATH (the suite "
                         "it was recorded with)")
    return name


def _launch_changed(rows: Mapping[RowKey, str]) -> list[VariantDiff]:
    """The rows timed for a reason the IR diff does not show, as ir-diff entries."""
    return [VariantDiff(case=case, kernel="(launch)", name="launch", status=LAUNCH_CHANGED,
                        rows=(f"{op}/{dtype}",), reason=why) for (op, case, dtype), why in sorted(rows.items())]


def run_prescreen(record: Path, base_python: str, cand_python: str, out: Path, *,
                  suite: str | None = None) -> PrescreenResult:
    """Recompile, recapture, diff, classify; writes ``out/{ir-base,ir-cand,ir-diff}/``,
    ``out/capture-{base,cand}/`` and ``out/prescreen.json`` (and ``out/verdict/`` when no row
    changed). ``suite``: the one the baseline was recorded with (default: the name it gives)."""
    from tritongate.rundir import load_run

    record, out = Path(record), Path(out)
    _check_inputs(record, base_python, cand_python)
    run = load_run(record)
    out.mkdir(parents=True, exist_ok=True)
    builds = {"base": build_of(base_python), "cand": build_of(cand_python)}
    all_rows = sorted({r.key for r in run.rows})
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION, "tool_version": __version__,
        "created_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "baseline": record_identity(record) | {"suite": run.identity.get("suite", {}).get("name")
                                               if isinstance(run.identity.get("suite"), Mapping) else None},
        "builds": builds, "rows_total": len(all_rows)}
    try:
        target = record_target(record)
    except ValueError as exc:
        raise UsageError(f"--baseline {record}: {exc}") from None
    if target.target is None:  # nothing to compile for: every row is timed
        doc |= {"target": None, "rows_changed": [list(k) for k in all_rows],
                "timed_without_ir_change": {"why": target.why, "rows": len(all_rows)}}
        write_json_atomic(out / PRESCREEN_JSON, doc)
        return PrescreenResult(out, len(all_rows), all_rows, doc, None)
    pythons = {"base": base_python, "cand": cand_python}
    launch_files = launch_path_changes(launch_path_files(Path(builds["base"]["triton_dir"])),
                                       launch_path_files(Path(builds["cand"]["triton_dir"])))
    walls = _aot_both(pythons, record, out, target.target)
    captures, capture_walls = _capture_both(pythons, record, _suite_of(run.identity, suite), all_rows, out,
                                            target.target)
    walls |= capture_walls
    t0 = time.monotonic()
    base_root, cand_root = out / "ir-base" / "ttgir", out / "ir-cand" / "ttgir"
    provenance = diff_provenance(base_root, cand_root)
    timed = respecialized_rows(record / "ttgir", *(None if captures[s] is None else captures[s] / "ttgir"
                                                   for s in ("base", "cand")), all_rows)
    diffs = diff_trees(base_root, cand_root)
    compared: Counter[RowKey] = Counter()  # per row, its variants in the diff (either tree)
    for d in diffs:
        compared.update((split_row(r)[0], d.case, split_row(r)[1]) for r in d.rows)
    uncompared = uncompared_rows(record / "ttgir", compared)
    kinds = {k: NOT_COMPARED for k in uncompared} | {k: VARIANT_SET for k in timed}  # as timed overrides
    timed = uncompared | timed
    if launch_files:
        why = f"the PR changes Triton's launch path ({', '.join(launch_files)})"
        timed = {k: why for k in all_rows}
        kinds = {k: LAUNCH_PATH for k in all_rows}
    diff_dir = write_diff_dir([*diffs, *_launch_changed(timed)], out / IR_DIFF)
    write_diff_provenance(diff_dir, provenance)
    (diff_dir / BLAME_JSON).unlink(missing_ok=True)  # an earlier screen's blame is not this one's
    proven = load_changed_rows(diff_dir, record=record, base_build=builds["base"], cand_build=builds["cand"])
    walls["diff_s"] = round(time.monotonic() - t0, 3)
    changed = [k for k in all_rows if not proven.is_unchanged(k)]
    doc |= {
        "target": target.target, "rows_changed": [list(k) for k in changed],
        "timed_without_ir_change": {"launch_path": launch_files, "rows": len(timed),
                                    "reasons": dict(Counter(timed.values()))},
        # per row, for the table of changed rows: [op, case, dtype, kind, why]
        "rows_timed": [[*k, kinds[k], why] for k, why in sorted(timed.items())],
        "variants": dict(Counter(d.status for d in diffs)),
        "compiled": {side: provenance[side]["compiled"] for side in ("base", "cand")},
        "failed": {side: provenance[side]["failed"] for side in ("base", "cand")},
        "kernels": _evidence(diffs), "ir_diff": IR_DIFF, "wall_s": walls,
    }
    verdict_dir = None
    if not changed:
        verdict_dir = write_zero_verdict(run, out, base_root, cand_root, len(all_rows), target.target)
        doc["verdict"] = VERDICT_DIR
    write_json_atomic(out / PRESCREEN_JSON, doc)
    return PrescreenResult(out, len(all_rows), changed, doc, verdict_dir)


def _evidence(diffs: list[Any]) -> list[dict[str, Any]]:
    """Per kernel variant: its status, its rows and, for a changed one, its diff file."""
    paths = {}
    from tritongate.ir.diff import diff_paths, variant_order

    ordered = sorted(diffs, key=variant_order)
    for i, rel in diff_paths(ordered).items():
        paths[i] = str(rel)
    return [{"case": d.case, "kernel": d.kernel, "variant": d.name, "status": d.status, "rows": list(d.rows),
             "added": d.added, "removed": d.removed, "diff": f"{IR_DIFF}/{paths[i]}" if d.status == CHANGED else None,
             "reason": d.reason or None} for i, d in enumerate(ordered)]


def zero_headline(total: int) -> str:
    return f"0 of {total} rows' kernels changed under this PR; no GPU time used"


def write_zero_verdict(run: Any, out: Path, base_root: Path, cand_root: Path, total: int, target: str) -> Path:
    """``out/verdict/`` through the gate's writer: every row IDENTICAL_BINARY and untimed,
    which its renderer heads with ``zero_headline``; the AOT trees are the two sides (so its
    ``ir-diff/`` is the per-kernel evidence)."""
    from tritongate.gate.pipeline import write_result
    from tritongate.gate.policy import load_policy
    from tritongate.gate.verdict import AHEAD_OF_TIME_REASON, GateResult, RowVerdict, Verdict

    policy = load_policy()
    rows = [RowVerdict(*r.key, verdict=Verdict.IDENTICAL_BINARY, reasons=(AHEAD_OF_TIME_REASON,),
                       min_effect=policy.min_effect_for(r.op)) for r in sorted(run.rows, key=lambda r: r.key)]
    base = replace(run, path=base_root.parent)
    cand = replace(run, path=cand_root.parent)
    result = GateResult(base=base, cand=cand, policy=policy, rows=rows,
                            notes=[f"pre-screen: {zero_headline(total)} (ahead-of-time TTGIR and cubin, {target}; "
                               "each build's launches recaptured, the launch path unchanged)"])
    verdict = out / VERDICT_DIR
    write_result(result, verdict)
    return verdict
