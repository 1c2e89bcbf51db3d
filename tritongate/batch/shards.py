"""Op runs into one ordinary run directory, and shard batches into one batch.

``merge_op_runs`` writes what one ``tritongate run`` of every op would have (rows, identity with
per-op provenance under ``batch``, TTGIR, autotune records, ``shapes.yaml``, ``run.log``);
``merge_batches`` (``batch-merge``) joins the shards of one deep scan as if one batch ran them.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from tritongate.atomicio import write_text_atomic
from tritongate.batch.plan import OPS_DIR, RUN_DIR, read_manifest, utc_now, write_manifest
from tritongate.batch.status import OpResult, OpStatus, read_op_result, summary_lines, write_tables
from tritongate.errors import GateError, UsageError
from tritongate.gate.comparability import identity_mismatches
from tritongate.ir.store import merge_ttgir
from tritongate.rundir import LOG, Run, RunWriter, load_run
from tritongate.sharding import check_shard_set

PER_RUN_KEYS = ("schema_version", "tool_version", "mode", "started_utc", "wall_s", "gpu_state_after", "ir",
                "replay_from", "replay_record", "selection", "graph_state", "gpu_turns")
SHARED_PLAN_KEYS = ("suite", "planned_ops", "dtypes", "options", "replay_root")


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


def _merged_selection(identity: Mapping[str, Any], runs: Sequence[tuple[OpRun, Run]]) -> dict[str, Any] | None:
    """What part of the suite the merged op runs cover: None when every op of the suite is there
    with all its rows (each op run left out only the other ops); else the ``selection`` a run of
    part of the suite records (``baseline publish`` refuses it). A suite file that cannot be read
    again, or is no longer the one measured, counts as part."""
    ops = sorted({s.op for s, _ in runs})
    selections = [r.identity.get("selection") or {} for _, r in runs]
    dtypes = sorted({d for sel in selections for d in sel.get("dtypes") or ()})
    shards = any(sel.get("rows") is not None for sel in selections)
    part = {"ops": ops, "dtypes": dtypes, "rows": sum(len(r.rows) for _, r in runs)}
    if dtypes or shards:
        return part
    suite = identity.get("suite") if isinstance(identity.get("suite"), Mapping) else {}
    try:
        from tritongate.suites import load_suite

        loaded = load_suite(str(suite.get("path")))
    except (GateError, OSError, TypeError):
        return part
    if loaded.digest != suite.get("digest") or {op.name for op in loaded.ops} != set(ops):
        return part
    return None


def merge_op_runs(sources: Sequence[OpRun], out: Path, *, provenance: Mapping[str, Any],
                  replay_from: str | None = None) -> MergedRun:
    """Write ``out`` from the op runs ``sources``, built beside it and renamed into place (a reader
    never sees half of it). Runs measured unlike each other (another GPU model, timer, driver,
    code-generation settings) are refused: the merged identity would lie about them."""
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
    part = _merged_selection(first.identity, runs)
    if part is not None:
        identity["selection"] = part
    replays = {r.identity.get("replay_from") for _, r in runs}
    identity["replay_from"] = replay_from if replay_from is not None else (replays.pop() if len(replays) == 1 else None)
    ops: dict[str, list[dict[str, Any]]] = {}
    for s, r in runs:
        ops.setdefault(s.op, []).append({
            "run": s.label or str(s.path), "device": s.device, "rows": len(r.rows),
            "dtypes": sorted({row.dtype for row in r.rows}),
            **{k: r.identity.get(k) for k in ("started_utc", "wall_s", "replay_from", "compiler_ref", "codegen_env",
                                              "graph_state", "gpu_turns")}})
    identity["batch"] = {**provenance, "ops": ops}
    started = _earliest([r.identity.get("started_utc") for _, r in runs])
    if started:  # when the record started, as one run's: its first op (a store entry's night)
        identity["started_utc"] = started
    out = Path(out)
    for stale in [*out.parent.glob(f".{out.name}.tmp-*"), *out.parent.glob(f".{out.name}.old-*")]:
        shutil.rmtree(stale, ignore_errors=True)  # a merge killed part-way (the caller holds the batch lock)
    tmp, old = (out.parent / f".{out.name}.{kind}-{os.getpid()}" for kind in ("tmp", "old"))
    try:
        rows = _write(runs, tmp, identity, first.mode, name=out.name)
        if out.exists():  # the old merge is renamed away first and removed after
            os.replace(out, old)
        os.replace(tmp, out)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return MergedRun(path=out, rows=rows, ops=len({s.op for s in sources}), mode=first.mode)


def _earliest(stamps: Sequence[Any]) -> str | None:
    """The earliest of ISO-8601 times with a zone, as given (None: none readable)."""
    parsed = []
    for text in stamps:
        try:
            when = dt.datetime.fromisoformat(text) if isinstance(text, str) else None
        except ValueError:
            continue
        if when is not None and when.tzinfo is not None:
            parsed.append((when, text))
    return min(parsed)[1] if parsed else None


def _write(runs: Sequence[tuple[OpRun, Run]], tmp: Path, identity: dict[str, Any], mode: str, *,
           name: str) -> int:
    from tritongate.autotune.records import load_records, write_records

    writer = RunWriter(tmp, identity, mode=mode)
    seen: dict[tuple[str, str, str], Path] = {}
    for s, r in runs:
        for row in r.rows:
            if row.key in seen:
                raise UsageError(f"row {'/'.join(row.key)} is in {seen[row.key]} and {s.path}: "
                                 "the op runs of a batch never share a row")
            seen[row.key] = s.path
    writer.extend(row for _, r in runs for row in r.rows)  # one write: joining n rows stays O(n)
    shapes: dict[str, Any] = {}
    records: dict[tuple[str, str, str], Any] = {}
    meta: dict[str, Any] = {}
    log = [f"tritongate batch merge  mode={mode}  ops={len({s.op for s, _ in runs})}  runs={len(runs)}\n"]
    for s, r in runs:
        try:
            doc = yaml.safe_load((r.path / "shapes.yaml").read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError):
            doc = {}
        if isinstance(doc, dict) and s.op in doc:
            shapes.setdefault(s.op, doc[s.op])
        try:
            text = (r.path / LOG).read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = "(no run.log)\n"
        log.append(f"=== op {s.op}: {s.label or s.path} ===\n{text if text.endswith(chr(10)) else text + chr(10)}")
        if mode == "record":  # every op's autotune records under one autotune_records/
            try:
                rs = load_records(r.path, backend=str(r.identity.get("backend") or ""), replaying=False)
            except GateError as exc:
                raise UsageError(f"{s.path}: its autotune records cannot be merged: {exc}") from exc
            for rec in rs.records.values():
                records.setdefault((rec.op, *rec.match_key), rec)  # one key, one config: the first op's
            meta = meta or {k: v for k, v in rs.meta.items() if k != "schema_version"}
    write_text_atomic(tmp / "shapes.yaml", yaml.safe_dump(shapes, sort_keys=False))
    write_text_atomic(tmp / LOG, "".join(log))
    if mode == "record":
        merged_from = [s.label or str(s.path) for s, _ in runs]
        write_records(tmp, records.values(), {**meta, "run": name, "merged_from": merged_from})
    merge_ttgir([s.path for s, _ in runs], tmp)  # renamed as one run would have named it
    writer.finish()  # last: a merge that failed part-way never reads as complete
    return len(seen)


@dataclass(frozen=True)
class Shard:
    path: Path
    index: int
    count: int
    doc: dict[str, Any]
    results: list[OpResult]


@dataclass
class MergedBatch:
    path: Path
    results: list[OpResult]
    run: MergedRun | None
    shards: tuple[int, ...]
    count: int
    missing: tuple[int, ...]

    @property
    def exit_code(self) -> int:
        """0 only when every op is PASS or SKIP: an op left MISSING (--allow-partial) was not measured."""
        return 1 if any(r.status.failed or r.status is OpStatus.MISSING for r in self.results) else 0


def _load(path: Path) -> Shard:
    doc = read_manifest(path)
    if doc.get("merged_from"):
        raise UsageError(f"{path} is already a merged batch; merge the shard batches it came from")
    if not doc.get("finished"):
        raise UsageError(f"{path} has not finished (interrupted, or still running); resume it with "
                         f"`tritongate batch --resume {path}`, or leave it out with --allow-partial")
    shard = doc["plan"].get("shard") or {}
    index, count = shard.get("index"), shard.get("count")
    if not (isinstance(index, int) and isinstance(count, int) and 1 <= index <= count):
        raise UsageError(f"{path}: batch.json plan.shard is not {{index, count}}; the file is damaged")
    results = [read_op_result(path / OPS_DIR / op, complete_only=False) or OpResult(op, OpStatus.PENDING)
               for op in doc["plan"].get("ops", [])]
    return Shard(path=path, index=index, count=count, doc=doc, results=results)


def merge_batches(paths: Sequence[Path], out: Path, *, allow_partial: bool = False) -> MergedBatch:
    """Write the batch directory ``out`` from the shard batches at ``paths``."""
    if not paths:
        raise UsageError("no shard batch directories given")
    shards = sorted((_load(Path(p)) for p in paths), key=lambda s: s.index)
    count, missing = check_shard_set([(s.index, s.count, s.path) for s in shards], allow_partial=allow_partial,
                                     lost="their ops would be absent from the merged batch",
                                     fix="pass every shard, or --allow-partial")
    first = shards[0]
    for s in shards[1:]:
        differ = [k for k in SHARED_PLAN_KEYS if s.doc["plan"].get(k) != first.doc["plan"].get(k)]
        if differ:
            raise UsageError(f"{s.path} was planned unlike {first.path} ({', '.join(differ)} differ); merge "
                             "shards of one deep scan")
    by_op: dict[str, tuple[Shard, OpResult]] = {}
    for s in shards:
        for r in s.results:
            if r.op in by_op:
                raise UsageError(f"op {r.op} is in {by_op[r.op][0].path} and {s.path}: shards never share an op")
            by_op[r.op] = (s, r)
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"{out} is not empty; batch-merge writes a new batch directory, choose an empty --out")
    out.mkdir(parents=True, exist_ok=True)
    results: list[OpResult] = []
    sources: list[OpRun] = []
    summary: list[dict[str, Any]] = []
    records: dict[str, dict[tuple[str, str, str], float]] = {}  # each replayed record, read once
    for op in first.doc["plan"]["planned_ops"]:
        if op not in by_op:
            results.append(OpResult(op, OpStatus.MISSING, notes=("its shard was not merged",)))
            continue
        shard, r = by_op[op]
        prefix = Path(os.path.relpath(shard.path.resolve(), out.resolve())).as_posix()
        # run and log paths seen from ``out``
        moved = replace(r, runs=tuple(f"{prefix}/{run}" for run in r.runs),
                        attempts=tuple(replace(a, stdout_log=f"{prefix}/{a.stdout_log}",
                                               stderr_log=f"{prefix}/{a.stderr_log}") for a in r.attempts))
        results.append(moved)
        if r.status is OpStatus.PASS:
            rows = {}
            for run, here in zip(r.runs, moved.runs):
                try:
                    rows[here] = load_run(shard.path / run).rows
                except GateError as exc:
                    raise UsageError(f"{shard.path}: op {op}'s run {run} cannot be read: {exc}") from exc
                sources.append(OpRun(op=op, path=shard.path / run, device=r.device, label=here))
            summary += summary_lines(moved, rows, records)
    merged_from = [{"path": str(s.path.resolve()), "shard": f"{s.index}/{count}"} for s in shards]
    root = first.doc["plan"].get("replay_root")
    replay = str(Path(root) / RUN_DIR) if root and (Path(root) / RUN_DIR).is_dir() else root
    run = merge_op_runs(sources, out / RUN_DIR, provenance={"merged_from": merged_from},
                        replay_from=replay) if sources else None
    write_tables(out, results, summary)
    plan = {**first.doc["plan"], "shard": None, "ops": [r.op for r in results if r.status is not OpStatus.MISSING]}
    write_manifest(out, {"plan": plan, "execution": first.doc["execution"], "merged_from": merged_from,
                         "missing_shards": [f"{i}/{count}" for i in missing], "created_utc": utc_now(),
                         "finished": True, "finished_utc": utc_now(), "run": RUN_DIR if run else None})
    return MergedBatch(path=out, results=results, run=run, shards=tuple(s.index for s in shards), count=count,
                       missing=missing)
