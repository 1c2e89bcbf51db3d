"""The planted slowdown inside a builtin kernel (calibration only; off unless asked for).

With ``PLANT`` set, every program spins ``plant_cycles`` SM clock cycles after its own work.
Nothing is shared between programs (no atomics, no memory), so a planted kernel costs the same
in any process: only its spin differs between the sides of a calibration's paired run. What a
spin adds to a launch is not proportional to it (a short spin can end under the kernel's own
memory traffic, a kernel of several waves can pay it once or once per wave;
``bench/results/2026-11-30_h200_planted_delay.md``), so the calibration times each row at
several spins before planting (``tritongate/calibrate/aim.py``).

The spin counts ``%clock64``: the GPU's nanosecond ``%globaltimer`` advances in steps of a few
hundred nanoseconds on the H200 (``bench/results/2026-11-30_h200_planted_delay_counter.md``), too
coarse for 1 % of a 2 µs kernel; nanoseconds become cycles with the clock rate measured by
``measure_clock_ghz``. With ``PLANT`` off (a constexpr) none of this is compiled in.
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl


@triton.jit
def _global_ns():
    return tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)


@triton.jit
def _clock():
    return tl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)


@triton.jit
def planted_spin(delay_cycles):
    start = _clock()
    while _clock() - start < delay_cycles:
        pass


@triton.jit
def _clock_rate_kernel(out_ptr, cycles):
    t0 = _global_ns()
    c0 = _clock()
    while _clock() - c0 < cycles:
        pass
    tl.store(out_ptr, _global_ns() - t0)


def measure_clock_ghz(device: Any, cycles: int = 20_000_000) -> float:
    """SM cycles per nanosecond: ``cycles`` (about 10 ms) spun on ``%clock64`` and timed on
    ``%globaltimer`` inside one program, so the timer's step is a rounding error."""
    import torch

    out = torch.zeros(1, dtype=torch.int64, device=device)
    _clock_rate_kernel[(1,)](out, cycles)
    elapsed_ns = int(out.item())
    if elapsed_ns <= 0:
        raise RuntimeError(f"the GPU timer did not advance over {cycles} cycles")
    return cycles / elapsed_ns


def plant_kwargs(plant: Any) -> dict[str, Any]:
    """The kernel arguments of a row's device plant (``planting.Plant``), or of none."""
    if plant is None or not plant.in_kernel:
        return {"plant_cycles": 0, "PLANT": False}
    return {"plant_cycles": plant.cycles, "PLANT": True}
