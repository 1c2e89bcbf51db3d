"""How a split run is cut into shards, and which shards of it were given: the same cut, each
index once, and which are missing. Shared by ``tritongate merge`` (paired runs) and ``batch-merge`` (batches)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence, TypeVar

from tritongate.errors import UsageError

T = TypeVar("T")


def shard_of(planned: Sequence[T], index: int, count: int) -> list[T]:
    """Shard ``index`` of ``count`` (1-based) of a plan: every ``count``-th item from the
    ``index``-th, so each shard gets every op's mix of sizes. ``pair --shard`` runs these rows,
    and a merge missing that shard names them."""
    return list(planned[index - 1::count])


def check_shard_set(shards: Sequence[tuple[int, int, Path]], *, allow_partial: bool, lost: str,
                    fix: str) -> tuple[int, tuple[int, ...]]:
    """``shards``: (index, count, path) each. Returns (count, missing indices); ``UsageError``
    when they were cut differently, an index is given twice, or one is missing and
    ``allow_partial`` is off (``lost``: what a missing shard takes with it; ``fix``: the way out)."""
    counts = {count for _, count, _ in shards}
    if len(counts) != 1:
        listing = ", ".join(f"{path.name}: {index}/{count}" for index, count, path in shards)
        raise UsageError(f"the shards were cut differently ({listing}); merge shards of one deep scan")
    count = counts.pop()
    seen: dict[int, Path] = {}
    for index, _, path in shards:
        if index in seen:
            raise UsageError(f"shard {index}/{count} given twice ({seen[index]} and {path})")
        seen[index] = path
    missing = tuple(i for i in range(1, count + 1) if i not in seen)
    if missing and not allow_partial:
        raise UsageError(f"shard(s) {', '.join(f'{i}/{count}' for i in missing)} missing: {lost}; {fix}")
    return count, missing
