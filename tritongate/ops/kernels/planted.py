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

from typing import Any, Callable

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


def measure_clock_ghz(device: Any, cycles: int = 20_000_000, *, warmup_cycles: int = 200_000_000,
                      repeats: int = 3, spin_ns: Callable[[int], int] | None = None) -> float:
    """SM cycles per nanosecond at the clock the GPU works at: ``cycles`` (about 10 ms) spun on
    ``%clock64`` and timed on ``%globaltimer`` inside one program, so the timer's step is a
    rounding error; the fastest of ``repeats`` after ``warmup_cycles`` (about 100 ms) of spinning.
    Measured cold, a process caught the SM clock on its way up from idle: it read 1.0 instead of
    2.0 GHz, its planted spins were half as long as planned, and a paired run of one plan saw one
    worker pair at half the effect of the others (``bench/results/2026-12-05_h100_loaded_host.md``)."""
    run = spin_ns if spin_ns is not None else _device_spin(device)
    run(warmup_cycles)
    rates = []
    for _ in range(max(1, repeats)):
        elapsed_ns = run(cycles)
        if elapsed_ns <= 0:
            raise RuntimeError(f"the GPU timer did not advance over {cycles} cycles")
        rates.append(cycles / elapsed_ns)
    return max(rates)


def _device_spin(device: Any) -> Callable[[int], int]:
    """Nanoseconds one program takes to spin a number of SM cycles on ``device``."""
    import torch

    out = torch.zeros(1, dtype=torch.int64, device=device)

    def spin(cycles: int) -> int:
        _clock_rate_kernel[(1,)](out, cycles)
        return int(out.item())
    return spin


def plant_kwargs(plant: Any) -> dict[str, Any]:
    """The kernel arguments of a row's device plant (``planting.Plant``), or of none."""
    if plant is None or not plant.in_kernel:
        return {"plant_cycles": 0, "PLANT": False}
    return {"plant_cycles": plant.cycles, "PLANT": True}
