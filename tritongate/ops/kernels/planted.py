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
coarse for 1 % of a 2 µs kernel; nanoseconds become cycles at the GPU's rated peak clock
(``peak_clock_ghz``). With ``PLANT`` off (a constexpr) none of this is compiled in.
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl


@triton.jit
def _clock():
    return tl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)


@triton.jit
def planted_spin(delay_cycles):
    start = _clock()
    while _clock() - start < delay_cycles:
        pass


def peak_clock_ghz(device: Any) -> float:
    """The GPU's rated peak SM clock (``CU_DEVICE_ATTRIBUTE_CLOCK_RATE``), in cycles per ns.

    Planted nanoseconds become cycles at this fixed rate, the same in every process on a GPU
    model. A rate measured per process was not: one program spinning on one SM does not bring
    the clock up the way a full kernel does, and processes read 0.8-2.0 GHz on one H100 (after
    100 ms of warm-up, the fastest of three readings), so one plan planted spins 2.5x apart in
    different worker pairs (``bench/results/2026-12-05_h100_plant_measured_clock.md``). A spin of fixed
    cycles costs both sides of a paired round the same, whatever clock the GPU runs at then."""
    from triton.runtime import driver

    index = getattr(device, "index", None)
    if index is None:
        import torch

        index = torch.cuda.current_device()
    props = driver.active.utils.get_device_properties(index)
    khz = int(props["sm_clock_rate"])
    if khz <= 0:
        raise RuntimeError(f"the driver reports no SM clock rate for device {index}")
    return khz / 1e6


def plant_kwargs(plant: Any) -> dict[str, Any]:
    """The kernel arguments of a row's device plant (``planting.Plant``), or of none."""
    if plant is None or not plant.in_kernel:
        return {"plant_cycles": 0, "PLANT": False}
    return {"plant_cycles": plant.cycles, "PLANT": True}
