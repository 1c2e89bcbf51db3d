"""``batch-merge``: shard batches of one deep scan (``batch --shard I/N`` on a matrix of
runners) into one batch directory: ``batch.json``, ``ops_status.csv``, ``summary.csv`` and
``run/`` (every PASS op of every shard), as if one batch had run them all.

The shards must have been planned alike (suite and its digest, op selection, dtypes, run
options, replay root, shard count), each index given once, every one finished; a missing
shard is refused unless ``allow_partial`` (its ops are then listed as MISSING), and an op
claimed by two shards is refused.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from tritongate.batch.merge import MergedRun, OpRun, merge_op_runs
from tritongate.batch.plan import RUN_DIR, utc_now, write_manifest
from tritongate.batch.scheduler import read_batch
from tritongate.batch.status import (OPS_STATUS, SUMMARY, OpResult, OpStatus, summary_lines, write_ops_status,
                                     write_summary)
from tritongate.errors import GateError, UsageError
from tritongate.rundir import load_run
from tritongate.sharding import check_shard_set

SHARED_PLAN_KEYS = ("suite", "planned_ops", "dtypes", "options", "replay_root")


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
    doc, results = read_batch(path)
    if doc.get("merged_from"):
        raise UsageError(f"{path} is already a merged batch; merge the shard batches it came from")
    if not doc.get("finished"):
        raise UsageError(f"{path} has not finished (interrupted, or still running); resume it with "
                         f"`tritongate batch --resume {path}`, or leave it out with --allow-partial")
    shard = doc["plan"].get("shard") or {}
    index, count = shard.get("index"), shard.get("count")
    if not (isinstance(index, int) and isinstance(count, int) and 1 <= index <= count):
        raise UsageError(f"{path}: batch.json plan.shard is not {{index, count}}; the file is damaged")
    return Shard(path=path, index=index, count=count, doc=doc, results=results)


def _check(shards: Sequence[Shard], allow_partial: bool) -> tuple[int, tuple[int, ...]]:
    count, missing = check_shard_set([(s.index, s.count, s.path) for s in shards], allow_partial=allow_partial,
                                     lost="their ops would be absent from the merged batch",
                                     fix="pass every shard, or --allow-partial")
    first = shards[0]
    for s in shards[1:]:
        differ = [k for k in SHARED_PLAN_KEYS if s.doc["plan"].get(k) != first.doc["plan"].get(k)]
        if differ:
            raise UsageError(f"{s.path} was planned unlike {first.path} ({', '.join(differ)} differ); merge "
                             "shards of one deep scan")
    owner: dict[str, Path] = {}
    for s in shards:
        for r in s.results:
            if r.op in owner:
                raise UsageError(f"op {r.op} is in {owner[r.op]} and {s.path}: shards never share an op")
            owner[r.op] = s.path
    return count, missing


def merge_batches(paths: Sequence[Path], out: Path, *, allow_partial: bool = False) -> MergedBatch:
    """Write the batch directory ``out`` from the shard batches at ``paths``."""
    if not paths:
        raise UsageError("no shard batch directories given")
    shards = sorted((_load(Path(p)) for p in paths), key=lambda s: s.index)
    count, missing = _check(shards, allow_partial)
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"{out} is not empty; batch-merge writes a new batch directory, choose an empty --out")
    out.mkdir(parents=True, exist_ok=True)
    planned = list(shards[0].doc["plan"]["planned_ops"])
    by_op: dict[str, tuple[Shard, OpResult]] = {r.op: (s, r) for s in shards for r in s.results}
    results: list[OpResult] = []
    sources: list[OpRun] = []
    summary: list[dict[str, Any]] = []
    references: dict[str, dict[tuple[str, str, str], float]] = {}  # the replayed record, read once
    for op in planned:
        if op not in by_op:
            results.append(OpResult(op, OpStatus.MISSING, notes=("its shard was not merged",)))
            continue
        shard, r = by_op[op]
        prefix = Path(os.path.relpath(shard.path.resolve(), out.resolve())).as_posix()
        moved = r.relocated(prefix)
        results.append(moved)
        if r.status is OpStatus.PASS:
            rows = {}
            for run, here in zip(r.runs, moved.runs):
                try:
                    rows[here] = load_run(shard.path / run).rows
                except GateError as exc:
                    raise UsageError(f"{shard.path}: op {op}'s run {run} cannot be read: {exc}") from exc
                sources.append(OpRun(op=op, path=shard.path / run, device=r.device, label=here))
            if r.replay_from not in references:
                references[r.replay_from] = _reference(r.replay_from)
            summary += summary_lines(moved, rows, references[r.replay_from])
    merged_from = [{"path": str(s.path.resolve()), "shard": f"{s.index}/{count}"} for s in shards]
    root = shards[0].doc["plan"].get("replay_root")
    replay = str(Path(root) / RUN_DIR) if root and (Path(root) / RUN_DIR).is_dir() else root
    run = merge_op_runs(sources, out / RUN_DIR, provenance={"merged_from": merged_from},
                        replay_from=replay) if sources else None
    write_ops_status(out / OPS_STATUS, results)
    write_summary(out / SUMMARY, summary)
    plan = {**shards[0].doc["plan"], "shard": None, "ops": [r.op for r in results if r.status is not OpStatus.MISSING]}
    write_manifest(out, {"plan": plan, "execution": shards[0].doc["execution"], "merged_from": merged_from,
                         "missing_shards": [f"{i}/{count}" for i in missing], "created_utc": utc_now(),
                         "finished": True, "finished_utc": utc_now(), "run": RUN_DIR if run else None})
    return MergedBatch(path=out, results=results, run=run, shards=tuple(s.index for s in shards), count=count,
                       missing=missing)


def _reference(record: str) -> dict[tuple[str, str, str], float]:
    if not record:
        return {}
    try:
        return {r.key: r.summary.median for r in load_run(Path(record)).rows if r.summary}
    except GateError:
        return {}
