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
import json
import os
import time
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping

from tritongate import __version__, safefs
from tritongate.atomicio import write_json_atomic
from tritongate.errors import UsageError
from tritongate.ir.changed import load_changed_rows
from tritongate.ir.diff import CHANGED, LAUNCH_CHANGED, VariantDiff, diff_trees, split_row
from tritongate.ir.diff_dir import drop_blame, write_diff_dir
from tritongate.ir.index import INDEX
from tritongate.ir.provenance import diff_provenance, record_identity, write_diff_provenance
from tritongate.prescreen.launch_path import launch_path_changes
from tritongate.prescreen.rows import LAUNCH_PATH, NOT_COMPARED, VARIANT_SET
from tritongate.prescreen.side import PrescreenInternalError as PrescreenInternalError  # re-exported: the CLI maps it
from tritongate.prescreen.side import SIDES, prepare_sides, read_side, side_json
from tritongate.prescreen.respecialize import RowKey, launched_by_row, respecialized_rows, uncompared_rows
from tritongate.prescreen.target import record_target

SCHEMA_VERSION = 1
PRESCREEN_JSON = "prescreen.json"
IR_DIFF = "ir-diff"
VERDICT_DIR = "verdict"


@dataclass(frozen=True)
class PrescreenResult:
    out: Path
    rows_total: int
    rows_changed: list[tuple[str, str, str]]
    document: dict[str, Any]
    verdict_dir: Path | None


def _suite_of(identity: Mapping[str, Any], suite: str | None) -> str:
    """The suite the builds replay the baseline with: the record's own, or ``suite`` when it is
    that one (by name, or by content for a suite file); another suite would screen rows the
    record does not hold as changes, so it is refused."""
    named = identity.get("suite")
    name = named.get("name") if isinstance(named, Mapping) else None
    if suite:
        digest = named.get("digest") if isinstance(named, Mapping) else None
        if suite == name or not (isinstance(name, str) and name and isinstance(digest, str) and digest):
            return suite
        from tritongate.suites import load_suite

        try:
            given = load_suite(suite).digest
        except Exception:  # noqa: BLE001 - unreadable: the build's own replay names the problem
            return suite
        if given != digest:
            raise UsageError(f"--suite {suite} is not the suite the baseline was recorded with ({name}); "
                             f"drop --suite, or pass {name} or the file it was recorded from")
        return suite
    if not isinstance(name, str) or not name:
        raise UsageError("the baseline's run_identity.json names no suite; pass --suite NAME|PATH (the suite "
                         "it was recorded with)")
    return name


def _launch_changed(rows: Mapping[RowKey, str]) -> list[VariantDiff]:
    """The rows timed for a reason the IR diff does not show, as ir-diff entries."""
    return [VariantDiff(case=case, kernel="(launch)", name="launch", status=LAUNCH_CHANGED,
                        rows=(f"{op}/{dtype}",), reason=why) for (op, case, dtype), why in sorted(rows.items())]


def _rows_of(record: Path, run: Any) -> list[RowKey]:
    """The record's rows, refused where its IR index names rows its results.json does not hold:
    a damaged or edited record would screen those rows as unchanged without a word."""
    rows = sorted({r.key for r in run.rows})
    try:
        indexed = launched_by_row(record / "ttgir")
    except ValueError as exc:
        raise UsageError(f"--baseline {record}: {exc}") from None
    lost = sorted(set(indexed) - set(rows))
    if lost:
        shown = ", ".join(" ".join(k) for k in lost[:3]) + (f" and {len(lost) - 3} more" if len(lost) > 3 else "")
        raise UsageError(f"--baseline {record}: its ttgir/{INDEX} names {len(lost)} row(s) its results.json does not "
                         f"hold ({shown}): the record is damaged or was edited; use the store's copy or record it again")
    return rows


def _check_record(record: Path) -> None:
    if not record.is_dir():
        raise UsageError(f"--baseline {record}: no such folder; pass the record run (or baseline entry) that "
                         "`tritongate run` or `baseline find` printed")
    if not (record / "ttgir" / INDEX).is_file():
        raise UsageError(f"--baseline {record}: no ttgir/{INDEX} (a baseline entry keeps it; a record "
                         "made on a GPU or with --backend cpu has one)")


def _target(record: Path) -> Any:
    try:
        return record_target(record)
    except ValueError as exc:
        raise UsageError(f"--baseline {record}: {exc}") from None


def run_prescreen(record: Path, base_python: str, cand_python: str, out: Path, *,
                  suite: str | None = None, envs: Mapping[str, Mapping[str, str]] | None = None,
                  started: Callable[[], None] | None = None) -> PrescreenResult:
    """Both sides at once (``prepare_side``), then the judge: writes ``out/{ir-base,ir-cand,ir-diff}/``,
    ``out/capture-{base,cand}/``, ``out/side-{base,cand}.json`` and ``out/prescreen.json`` (and
    ``out/verdict/`` when no row changed). ``suite``: the one the baseline was recorded with
    (default: the name it gives); ``envs``: each side's environment overlay; ``started``: called
    once the inputs are checked, before the compiles."""
    prepare_side(record, {"base": base_python, "cand": cand_python}, out, suite=suite, envs=envs, started=started)
    return judge(record, out, suite=suite)


def _refuse_earlier(out: Path, names: list[str], step: str) -> None:
    """A folder holding an earlier pre-screen's output is refused: a recompile appends to an
    IR index, so two runs' variants would mix and pair as if one build made both."""
    found = [n for n in names if (out / n).exists() or (out / n).is_symlink()]
    if found:
        raise UsageError(f"--out {out}: holds an earlier pre-screen's {', '.join(found)}; {step} writes into a "
                         "folder without them (a fresh --out, or remove them)")


def prepare_side(record: Path, pythons: Mapping[str, str], out: Path, *, suite: str | None = None,
                 envs: Mapping[str, Mapping[str, str]] | None = None, started: Callable[[], None] | None = None) -> None:
    """One build's half (or both, given both): runs that build's code, writes what ``judge`` reads;
    ``started``: called once the inputs are checked (a bad one is refused before it)."""
    from tritongate.rundir import load_run

    record, out = Path(record), Path(out)
    _check_record(record)
    for side, py in pythons.items():
        if not (Path(py).is_file() and os.access(py, os.X_OK)):
            raise UsageError(f"--{side}-python {py}: not an executable file; pass the venv's bin/python of that "
                             "compiler build")
    _refuse_earlier(out, [n for side in pythons for n in (f"ir-{side}", f"capture-{side}", side_json(side))],
                    "--side" if len(pythons) == 1 else "--out")
    run = load_run(record)
    prepare_sides(record, pythons, out, suite=_suite_of(run.identity, suite), rows=_rows_of(record, run),
                  target=_target(record).target, envs=envs, started=started)


def judge(record: Path, out: Path, *, suite: str | None = None) -> PrescreenResult:
    """Compare the two sides in ``out`` (their ``side-*.json``, recompiles and captures) and
    classify every row; runs no compiler code, so it may run where neither build is installed."""
    from tritongate.rundir import load_run

    record, out = Path(record), Path(out)
    _check_record(record)
    _refuse_earlier(out, [IR_DIFF, PRESCREEN_JSON, VERDICT_DIR], "--judge")
    run = load_run(record)
    _suite_of(run.identity, suite)  # a record that names no suite is refused here too
    sides = {side: read_side(out, side, record) for side in SIDES}
    builds = {side: doc.build for side, doc in sides.items()}
    all_rows = _rows_of(record, run)
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION, "tool_version": __version__,
        "created_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "baseline": record_identity(record) | {"suite": run.identity.get("suite", {}).get("name")
                                               if isinstance(run.identity.get("suite"), Mapping) else None},
        "builds": builds, "rows_total": len(all_rows)}
    target = _target(record)
    for side, s in sides.items():
        if s.target != target.target:
            raise UsageError(f"{out / side_json(side)}: made for target {s.target}, the baseline's is {target.target}")
    if target.target is None:  # nothing to compile for: every row is timed
        doc |= {"target": None, "rows_changed": [list(k) for k in all_rows],
                "timed_without_ir_change": {"why": target.why, "rows": len(all_rows)}}
        write_json_atomic(out / PRESCREEN_JSON, doc)
        return PrescreenResult(out, len(all_rows), all_rows, doc, None)
    launch_files = launch_path_changes(sides["base"].launch_path, sides["cand"].launch_path)
    walls: dict[str, float] = {k: v for s in sides.values() for k, v in s.wall_s.items()}
    t0 = time.monotonic()
    captures = {side: None if s.capture is None else safefs.check_inside(out / f"capture-{side}",
                                                                        out / f"capture-{side}" / s.capture)
                for side, s in sides.items()}
    base_root, cand_root = out / "ir-base" / "ttgir", out / "ir-cand" / "ttgir"
    for side, tree in (("base", base_root), ("cand", cand_root)):
        gone = [p for p in (tree, captures[side]) if p is not None and not p.is_dir()]
        if gone:  # a side's output deleted or never downloaded beside its side file
            raise UsageError(f"{gone[0]}: the {side} side's output is missing; make it again with `tritongate "
                             f"prescreen --side {side} --baseline {record} --out {out}` (or download that job's "
                             f"artifact into {out})")
    provenance = diff_provenance(base_root, cand_root)
    timed = respecialized_rows(record / "ttgir", *(None if captures[s] is None else captures[s] / "ttgir"
                                                   for s in SIDES), all_rows)
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
    drop_blame(diff_dir)  # an earlier screen's blame is not this one's
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
        verdict_dir = write_zero_verdict(run, out, base_root, cand_root, len(all_rows), target.target, builds)
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
    return f"0 of {total} rows' kernels changed between the two builds; no GPU time used"


def _as_built(identity: Mapping[str, Any], build: Mapping[str, Any], target: str) -> dict[str, Any]:
    """The record's identity with its Triton replaced by the build a side compiled with
    (``build_of``: version, folder, key, an overlay's patches) and its environment overlay, so
    the verdict names each build."""
    triton: dict[str, Any] = {"version": build.get("triton_version"), "path": build.get("triton_dir"),
                              "build_hash": str(build.get("triton_key", ""))[:16]}
    if isinstance(build.get("overlay"), Mapping):
        triton["overlay"] = json.dumps(build["overlay"], sort_keys=True)
    software = identity.get("software") if isinstance(identity.get("software"), Mapping) else {}
    # what ran was a compile for the record's GPU, not the record's machine or timer
    built = {**identity, "software": {**software, "triton": triton}, "backend": target.split(":")[0],
             "device": f"no GPU: ahead-of-time compile for {target}", "timer": None}
    env = build.get("env_overlay")
    if isinstance(env, Mapping) and env:  # --base-env / --cand-env: named as a pair names them
        built["pair"] = {"build": {"env_overlay": {str(k): str(v) for k, v in env.items()}}}
    return built


def write_zero_verdict(run: Any, out: Path, base_root: Path, cand_root: Path, total: int, target: str,
                       builds: Mapping[str, Mapping[str, Any]]) -> Path:
    """``out/verdict/`` through the gate's writer: every row IDENTICAL_BINARY and untimed,
    which its renderer heads with ``zero_headline``; the AOT trees are the two sides (so its
    ``ir-diff/`` is the per-kernel evidence), each named by the build that made it (``builds``)."""
    from tritongate.gate.pipeline import write_result
    from tritongate.gate.policy import load_policy
    from tritongate.gate.verdict import AHEAD_OF_TIME_REASON, GateResult, RowVerdict, Verdict

    policy = load_policy()
    rows = [RowVerdict(*r.key, verdict=Verdict.IDENTICAL_BINARY, reasons=(AHEAD_OF_TIME_REASON,),
                       min_effect=policy.min_effect_for(r.op)) for r in sorted(run.rows, key=lambda r: r.key)]
    base = replace(run, path=base_root.parent, identity=_as_built(run.identity, builds["base"], target),
                   mode="ahead-of-time")
    cand = replace(run, path=cand_root.parent, identity=_as_built(run.identity, builds["cand"], target),
                   mode="ahead-of-time")
    result = GateResult(base=base, cand=cand, policy=policy, rows=rows,
                            notes=[f"pre-screen: {zero_headline(total)} (ahead-of-time TTGIR and cubin, {target}; "
                               "each build's launches recaptured, the launch path unchanged)"])
    verdict = out / VERDICT_DIR
    write_result(result, verdict)
    return verdict
