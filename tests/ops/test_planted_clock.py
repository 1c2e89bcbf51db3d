"""The planted spin's clock rate is read at the clock the GPU works at, not on its way up."""

from __future__ import annotations

import pytest

from tritongate.ops.kernels.planted import measure_clock_ghz


class RampingGpu:
    """An SM clock that idles at 1.0 GHz and reaches 2.0 GHz after 50 ms of spinning, as a
    GPU leaving idle does; ``spin`` is what one program's spin of ``cycles`` takes, in ns."""

    def __init__(self, ramp_ns: float = 50e6) -> None:
        self.busy_ns = 0.0
        self.ramp_ns = ramp_ns

    def spin(self, cycles: int) -> int:
        elapsed = 0.0
        left = float(cycles)
        while left > 0:
            ghz = 1.0 if self.busy_ns + elapsed < self.ramp_ns else 2.0
            step = min(left, 1e6)
            elapsed += step / ghz
            left -= step
        self.busy_ns += elapsed
        return round(elapsed)


def test_a_cold_gpu_is_measured_at_its_working_clock() -> None:
    # measured cold, 20 M cycles at the idle clock read 1.0 GHz: spins half the planned length
    assert measure_clock_ghz(None, spin_ns=RampingGpu().spin) == pytest.approx(2.0, rel=1e-3)


def test_a_reading_caught_mid_ramp_does_not_win() -> None:
    gpu = RampingGpu(ramp_ns=105e6)  # the warm-up ends 5 ms short of the ramp: the first reading is slow
    assert measure_clock_ghz(None, spin_ns=gpu.spin) == pytest.approx(2.0, rel=1e-3)


def test_a_timer_that_does_not_advance_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="did not advance"):
        measure_clock_ghz(None, spin_ns=lambda cycles: 0)
