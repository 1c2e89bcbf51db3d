"""The GPU the pre-screen compiles for: the baseline record's own, from its IR index.

Each launched variant in a record's ``ttgir/index.tsv`` names the target it was compiled (or,
on a CPU capture, specialized) for. The pre-screen compiles for that target only when every
launched variant names the same CUDA architecture; anything else (a ROCm or other backend
record, mixed targets, no launched variant) is a record it cannot reason about ahead of time,
and every row is timed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tritongate.ir.index import INDEX, read_index

_CUDA = re.compile(r"cuda:\d+")


@dataclass(frozen=True)
class RecordTarget:
    """``target`` (``cuda:90``), or None with ``why`` the pre-screen cannot compile for it."""

    target: str | None
    why: str = ""


def record_target(record: Path) -> RecordTarget:
    """The target of ``record``'s launched variants (``ValueError`` from a damaged index)."""
    index = Path(record) / "ttgir" / INDEX
    targets = sorted({v.target for v in read_index(index) if v.launches > 0 and not v.sweep_loser})
    if not targets:
        return RecordTarget(None, f"{index} names no launched variant's target")
    if len(targets) > 1:
        return RecordTarget(None, f"the baseline's variants were compiled for {', '.join(targets)}")
    if not _CUDA.fullmatch(targets[0]):
        return RecordTarget(None, f"the baseline was recorded for {targets[0] or 'an unnamed target'}; "
                                  "the pre-screen compiles for CUDA GPUs only")
    return RecordTarget(targets[0])
