"""Op runs into one ordinary run directory, and shard batches into one batch.

``merge_op_runs`` writes what ``tritongate run`` over the whole op list would have written:
every kept run's rows, one identity (the first op's, with per-op provenance under
``batch``), the TTGIR renamed as one run would name it, ``autotune_records/`` per op (so
``--replay-from BATCH/run`` replays every op), ``shapes.yaml`` and a ``run.log`` holding every
op's log (markers stay greppable). Runs measured unlike each other (another GPU model, timer,
driver, code-generation settings) are refused: the merged identity would lie about them.
It is built beside the target and renamed into place, so a reader never sees half of it.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from tritongate.atomicio import write_text_atomic
from tritongate.errors import GateError, UsageError
from tritongate.gate.comparability import identity_mismatches
from tritongate.ir.store import merge_ttgir
from tritongate.rundir import LOG, Run, RunWriter, load_run

PER_RUN_KEYS = ("schema_version", "tool_version", "mode", "started_utc", "wall_s", "gpu_state_after", "ir",
                "replay_from", "replay_record")


@dataclass(frozen=True)
class OpRun:
    op: str
    path: Path
    device: str = ""  # the batch's device id
    label: str = ""  # how provenance names the run (a path relative to the batch)


@dataclass(frozen=True)
class MergedRun:
    path: Path
    rows: int
    ops: int
    mode: str


def merge_op_runs(sources: Sequence[OpRun], out: Path, *, provenance: Mapping[str, Any],
                  replay_from: str | None = None) -> MergedRun:
    """Write ``out`` (replacing an earlier merge) from the op runs ``sources``."""
    if not sources:
        raise UsageError("no op runs to merge")
    runs = [(s, load_run(s.path)) for s in sources]  # refuses incomplete ones
    first = runs[0][1]
    modes = {r.mode for _, r in runs}
    if len(modes) != 1:
        raise UsageError(f"the op runs mix record and replay modes ({', '.join(sorted(modes))}); "
                         "a batch replays every op or none")
    for s, r in runs[1:]:
        mism = identity_mismatches(first.identity, r.identity)
        if mism:
            raise UsageError(f"{s.path} ({s.op}) was not measured like {first.path}: {'; '.join(map(str, mism))}; "
                             "run a batch on one kind of device")
    identity = {k: v for k, v in first.identity.items() if k not in PER_RUN_KEYS}
    replays = {r.identity.get("replay_from") for _, r in runs}
    identity["replay_from"] = replay_from if replay_from is not None else (replays.pop() if len(replays) == 1 else None)
    identity["batch"] = {**provenance, "ops": _provenance(runs)}
    out = Path(out)
    for stale in [*out.parent.glob(f".{out.name}.tmp-*"), *out.parent.glob(f".{out.name}.old-*")]:
        shutil.rmtree(stale, ignore_errors=True)  # a merge killed part-way (the caller holds the batch lock)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    try:
        rows = _write(runs, tmp, identity, first.mode, name=out.name)
        _swap(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return MergedRun(path=out, rows=rows, ops=len({s.op for s in sources}), mode=first.mode)


def _provenance(runs: Sequence[tuple[OpRun, Run]]) -> dict[str, list[dict[str, Any]]]:
    ops: dict[str, list[dict[str, Any]]] = {}
    for s, r in runs:
        ident = r.identity
        ops.setdefault(s.op, []).append({
            "run": s.label or str(s.path), "device": s.device, "rows": len(r.rows),
            "dtypes": sorted({row.dtype for row in r.rows}), "started_utc": ident.get("started_utc"),
            "wall_s": ident.get("wall_s"), "replay_from": ident.get("replay_from"),
            "compiler_ref": ident.get("compiler_ref"), "codegen_env": ident.get("codegen_env")})
    return ops


def _write(runs: Sequence[tuple[OpRun, Run]], tmp: Path, identity: dict[str, Any], mode: str, *,
           name: str) -> int:
    writer = RunWriter(tmp, identity, mode=mode)
    seen: dict[tuple[str, str, str], Path] = {}
    for s, r in runs:
        for row in r.rows:
            if row.key in seen:
                raise UsageError(f"row {'/'.join(row.key)} is in {seen[row.key]} and {s.path}: "
                                 "the op runs of a batch never share a row")
            seen[row.key] = s.path
    writer.extend(row for _, r in runs for row in r.rows)  # one write: joining n rows stays O(n)
    _merge_shapes(runs, tmp)
    _merge_log(runs, tmp, mode)
    if mode == "record":
        _merge_records(runs, tmp, name)
    _merge_ir([s.path for s, _ in runs], tmp)
    writer.finish()  # last: a merge that failed part-way never reads as complete
    return len(seen)


def _swap(tmp: Path, out: Path) -> None:
    """Put ``tmp`` at ``out``; the old merge is renamed away first and removed after."""
    old = out.parent / f".{out.name}.old-{os.getpid()}"
    if out.exists():
        os.replace(out, old)
    os.replace(tmp, out)
    shutil.rmtree(old, ignore_errors=True)


def _merge_shapes(runs: Sequence[tuple[OpRun, Run]], tmp: Path) -> None:
    doc: dict[str, Any] = {}
    for s, r in runs:
        try:
            shapes = yaml.safe_load((r.path / "shapes.yaml").read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError):
            continue
        if isinstance(shapes, dict) and s.op in shapes:
            doc.setdefault(s.op, shapes[s.op])
    write_text_atomic(tmp / "shapes.yaml", yaml.safe_dump(doc, sort_keys=False))


def _merge_log(runs: Sequence[tuple[OpRun, Run]], tmp: Path, mode: str) -> None:
    parts = [f"tritongate batch merge  mode={mode}  ops={len({s.op for s, _ in runs})}  runs={len(runs)}\n"]
    for s, r in runs:
        try:
            text = (r.path / LOG).read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = "(no run.log)\n"
        parts.append(f"=== op {s.op}: {s.label or s.path} ===\n{text if text.endswith(chr(10)) else text + chr(10)}")
    write_text_atomic(tmp / LOG, "".join(parts))


def _merge_records(runs: Sequence[tuple[OpRun, Run]], tmp: Path, name: str) -> None:
    """Every op's autotune records under one ``autotune_records/`` (a record run's layout)."""
    from tritongate.autotune.records import load_records, write_records

    records: dict[tuple[str, str, str], Any] = {}
    meta: dict[str, Any] | None = None
    for s, r in runs:
        try:
            rs = load_records(r.path, backend=str(r.identity.get("backend") or ""))
        except GateError as exc:
            raise UsageError(f"{s.path}: its autotune records cannot be merged: {exc}") from exc
        for rec in rs.records.values():
            records.setdefault((rec.op, *rec.match_key), rec)  # one key, one config: the first op's
        meta = meta or {k: v for k, v in rs.meta.items() if k != "schema_version"}
    write_records(tmp, records.values(), {**(meta or {}), "run": name,
                                          "merged_from": [s.label or str(s.path) for s, _ in runs]})


def _merge_ir(paths: Sequence[Path], tmp: Path) -> None:
    """Every run's TTGIR into one folder, renamed as one run would have named it."""
    merge_ttgir(paths, tmp)
