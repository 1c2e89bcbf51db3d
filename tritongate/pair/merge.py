"""Join the shards of a paired run (``pair --shard I/N`` on several runners) into one.

Each shard is an ordinary pair directory (``base/``, ``candidate/``, ``verdict/``). The
merge checks that the shards belong together (one suite, one shard count, each index once,
rows disjoint, measured alike), writes ``OUT/base`` and ``OUT/candidate`` as ordinary run
directories holding every shard's rows (their pairing kept, so each row is still judged
from its own alternating rounds) and TTGIR, and returns them for the gate. A missing shard
is refused unless ``allow_partial``; then its rows, cut from the plan every shard keeps, are
returned as ``absent`` for the verdict to list as MISSING, so a partial merge never reads as whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from tritongate.errors import UsageError
from tritongate.gate.comparability import identity_mismatches
from tritongate.ir.store import merge_ttgir
from tritongate.rundir import Run, RunWriter, load_run
from tritongate.sharding import check_shard_set, shard_of

SIDES = ("base", "candidate")
RowKey = tuple[str, str, str]


@dataclass(frozen=True)
class Shard:
    path: Path
    index: int
    count: int
    runs: dict[str, Run]


@dataclass(frozen=True)
class MergeOutcome:
    base: Path
    candidate: Path
    shards: tuple[int, ...]
    count: int
    missing: tuple[int, ...]
    rows: int
    absent: dict[RowKey, int]  # a missing shard's rows -> that shard's index


def _shard_of(run: Run) -> tuple[int, int]:
    shard = (run.identity.get("pair") or {}).get("shard")  # validated: mappings or absent
    if not isinstance(shard, Mapping):
        return 1, 1  # an unsharded pair run is the one shard of one
    index, count = shard.get("index"), shard.get("count")
    if not (isinstance(index, int) and isinstance(count, int) and 1 <= index <= count):
        raise UsageError(f"{run.path}: run_identity.json pair.shard is not {{index, count}} with "
                         "1 <= index <= count; it was not written by tritongate pair --shard")
    return index, count


def load_shard(path: Path) -> Shard:
    path = Path(path)
    if not (path / "base").is_dir() or not (path / "candidate").is_dir():
        raise UsageError(f"{path} is not a pair directory (no base/ and candidate/); pass the "
                         "pair-<suite>_<UTC> folders that `tritongate pair --shard I/N` printed")
    runs = {side: load_run(path / side) for side in SIDES}  # refuses incomplete runs
    (bi, bn), (ci, cn) = (_shard_of(runs[s]) for s in SIDES)
    if (bi, bn) != (ci, cn):
        raise UsageError(f"{path}: base says shard {bi}/{bn}, candidate {ci}/{cn}; the directory is damaged")
    return Shard(path=path, index=bi, count=bn, runs=runs)


def _build_of(identity: Mapping[str, Any]) -> dict[str, Any]:
    """What tells one side's compiler build from another's, across runners (interpreter paths
    differ between runners; the build does not)."""
    triton = (identity.get("software") or {}).get("triton") or {}
    build = (identity.get("pair") or {}).get("build") or {}
    return {"compiler ref": identity.get("compiler_ref"), "commit": identity.get("commit"),
            "Triton version": triton.get("version"), "Triton build hash": triton.get("build_hash"),
            "overlay": triton.get("overlay"), "environment overlay": build.get("env_overlay")}


def _record_of(identity: Mapping[str, Any]) -> dict[str, Any]:
    """The baseline record a side replayed: its name (a run directory's name is its suite and
    UTC stamp, wherever a runner put it) and what its autotune records say of it."""
    source = identity.get("replay_from")
    return {"record": Path(str(source)).name if source else None, "record meta": identity.get("replay_record")}


def _differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    return [f"{k} {a[k]!r} vs {b.get(k)!r}" for k in a if a[k] != b.get(k)]


def _check(shards: Sequence[Shard], allow_partial: bool) -> tuple[int, tuple[int, ...]]:
    count, missing = check_shard_set([(s.index, s.count, s.path) for s in shards], allow_partial=allow_partial,
                                     lost="their rows would be absent from the verdict",
                                     fix="pass every shard, or --allow-partial to gate what is there")
    first = shards[0]
    suite = first.runs["base"].identity.get("suite")
    for s in shards[1:]:
        if s.runs["base"].identity.get("suite") != suite:
            raise UsageError(f"{s.path} measured another suite than {first.path}; merge shards of one deep scan")
        for side in SIDES:
            a, b = first.runs[side].identity, s.runs[side].identity
            mism = identity_mismatches(a, b)
            if mism:
                raise UsageError(f"{s.path} ({side}) was not measured like {first.path}: "
                                 f"{'; '.join(map(str, mism))}")
            other = _differences(_build_of(a), _build_of(b))
            if other:
                raise UsageError(f"{s.path} ({side}) ran another {side} build than {first.path}: "
                                 f"{'; '.join(other)}; merge the shards of one paired run")
            other = _differences(_record_of(a), _record_of(b))
            if other:
                raise UsageError(f"{s.path} ({side}) replayed another baseline record than {first.path}: "
                                 f"{'; '.join(other)}; merge the shards of one paired run")
    return count, missing


def _absent_rows(shards: Sequence[Shard], count: int, missing: Sequence[int]) -> dict[RowKey, int]:
    """The rows the missing shards would have measured, from the plan each shard keeps."""
    if not missing:
        return {}
    plans = []
    for s in shards:
        shard = (s.runs["base"].identity.get("pair") or {}).get("shard")
        plan = shard.get("plan") if isinstance(shard, Mapping) else None
        if not isinstance(plan, list):
            raise UsageError(f"shard(s) {', '.join(f'{i}/{count}' for i in missing)} missing, and {s.path} "
                             "does not keep the plan it was cut from (an older tritongate wrote it), so the "
                             "verdict could not name their rows; pass every shard, or pair the shards again")
        plans.append(plan)
    if any(p != plans[0] for p in plans[1:]):
        raise UsageError(f"the shards were cut from different plans ({shards[0].path}, ...); merge the "
                         "shards of one paired run")
    only = (shards[0].runs["base"].identity.get("pair") or {}).get("only_rows")
    out: dict[RowKey, int] = {}
    for index in missing:
        for key in shard_of(plans[0], index, count):
            if only is None or "/".join(key) in only:
                out[(str(key[0]), str(key[1]), str(key[2]))] = index
    return out


def _merge_ir(shards: Sequence[Shard], side: str, out: Path) -> None:
    """Every shard's TTGIR into one folder, renamed as one run would have named it."""
    merge_ttgir((s.path / side for s in shards), out)


def merge_shards(paths: Sequence[Path], out: Path, *, allow_partial: bool = False) -> MergeOutcome:
    """Write ``out/base`` and ``out/candidate`` from the shards' pair directories."""
    if not paths:
        raise UsageError("no shard directories given")
    shards = sorted((load_shard(Path(p)) for p in paths), key=lambda s: s.index)
    count, missing = _check(shards, allow_partial)
    absent = _absent_rows(shards, count, missing)
    out = Path(out)
    if (out / "base").exists() or (out / "candidate").exists():
        raise UsageError(f"{out} already holds a merged run; choose an empty --out")
    keys: dict[tuple[str, str, str], Path] = {}
    for s in shards:
        for row in s.runs["base"].rows:
            if row.key in keys:
                raise UsageError(f"row {'/'.join(row.key)} is in {keys[row.key]} and {s.path}: "
                                 "shards of one scan never share a row")
            keys[row.key] = s.path
    for side in SIDES:
        identity: dict[str, Any] = dict(shards[0].runs[side].identity)
        for k in ("schema_version", "tool_version", "mode"):
            identity.pop(k, None)
        identity["merged_from"] = [{"path": str(s.path), "shard": f"{s.index}/{count}"} for s in shards]
        writer = RunWriter(out / side, identity, mode=shards[0].runs[side].mode)
        writer.extend(row for s in shards for row in s.runs[side].rows)  # one write, not one per row
        writer.finish()
        _merge_ir(shards, side, out / side)
    return MergeOutcome(base=out / "base", candidate=out / "candidate", shards=tuple(s.index for s in shards),
                        count=count, missing=missing, rows=len(keys), absent=absent)
