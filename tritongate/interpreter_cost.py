"""How long a row will take under the Triton interpreter, to announce slow rows up front.

The interpreter runs each program instance in numpy: its time per launch follows the bytes
an op moves and the FLOPs it does, at rates far below any device. Calibrated on this
project's CPU runner image (2 cores, triton 3.6, 2026-11-30; 13 rows from 4096-element adds
to 512^3 matmuls): 1.2 s per launch for a 512^3 fp16 matmul (268 MFLOP), 1.1 s for a
256x4096 fp32 softmax (8 MB), 0.55 s for a 1M-element add (12 MB). The estimate is within
about 2x of those (small row-wise reductions run up to 4x slower than it says); it is for
a warning, never for a decision.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

INTERPRETER_BYTES_PER_S = 12e6
INTERPRETER_FLOPS_PER_S = 250e6
# Launches a recorded CPU row makes in all (autotune sweep, correctness check, warm-up, trial
# launches, 6 rounds x 2 samples): measured 36 at 2 rounds in the calibration run.
LAUNCHES_PER_ROW = 45
SLOW_ROW_S = 30.0  # rows estimated above this are announced

ELEMENT_SIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int8": 1, "int32": 4}


@dataclass(frozen=True)
class SlowRow:
    op: str
    case: str
    dtype: str
    launch_s: float  # estimated seconds per launch
    row_s: float  # estimated seconds for the whole row

    def text(self) -> str:
        return (f"slow on the interpreter: {self.op} {self.case} {self.dtype} takes about "
                f"{_seconds(self.launch_s)} per launch, {_seconds(self.row_s)} for the row; smaller "
                "shapes keep CPU runs short")


def launch_seconds(bytes_moved: float, flops: float | None) -> float:
    return bytes_moved / INTERPRETER_BYTES_PER_S + (flops or 0.0) / INTERPRETER_FLOPS_PER_S


def slow_rows(planned: Iterable[object], registry: object, *, threshold_s: float = SLOW_ROW_S,
              launches_per_row: int = LAUNCHES_PER_ROW) -> list[SlowRow]:
    """The planned rows (``op``, ``shape``, ``dtype``, ``case``) estimated above ``threshold_s``
    on the interpreter, slowest first."""
    out = []
    for row in planned:
        spec = registry.get(row.op)  # type: ignore[attr-defined]
        size = ELEMENT_SIZE.get(row.dtype, 4)  # type: ignore[attr-defined]
        shape: Sequence[int] = row.shape  # type: ignore[attr-defined]
        try:
            per_launch = launch_seconds(float(spec.bytes(shape, size)),
                                        float(spec.flops(shape)) if spec.flops else None)
        except Exception:  # noqa: BLE001 - a user op's cost model failing only loses the warning
            continue
        if per_launch * launches_per_row > threshold_s:
            out.append(SlowRow(row.op, row.case, row.dtype, per_launch,  # type: ignore[attr-defined]
                               per_launch * launches_per_row))
    return sorted(out, key=lambda r: -r.row_s)


def _seconds(s: float) -> str:
    if s < 1:
        return f"{s * 1e3:.0f} ms"
    if s < 120:
        return f"{s:.0f} s" if s >= 10 else f"{s:.1f} s"
    return f"{s / 60:.0f} min"
