"""The planted spin is the same number of SM cycles in every process: nanoseconds become cycles
at the GPU's rated peak clock, read from the driver, never at a clock a process measures."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from triton.runtime import driver

from tritongate.ops.kernels.planted import peak_clock_ghz
from tritongate.ops.planting import make_plant


class FakeDriver:
    """The part of Triton's active CUDA driver the plant reads: the device's properties."""

    def __init__(self, sm_clock_khz: int) -> None:
        self.asked: list[int] = []
        self.utils = SimpleNamespace(get_device_properties=self._props)
        self.sm_clock_khz = sm_clock_khz

    def _props(self, index: int) -> dict[str, Any]:
        self.asked.append(index)
        return {"sm_clock_rate": self.sm_clock_khz, "multiprocessor_count": 132}


def activate(monkeypatch: pytest.MonkeyPatch, fake: FakeDriver) -> FakeDriver:
    # Triton's reset_active() would build the real driver, which needs a GPU: restore the slot instead
    monkeypatch.setattr(driver, "_active", fake)
    return fake


@pytest.fixture
def h100_driver(monkeypatch: pytest.MonkeyPatch) -> FakeDriver:
    return activate(monkeypatch, FakeDriver(1_980_000))  # an H100 SXM's rated clock, kHz


def test_the_rate_is_the_devices_rated_peak(h100_driver: FakeDriver) -> None:
    assert peak_clock_ghz(SimpleNamespace(index=3)) == pytest.approx(1.98)
    assert h100_driver.asked == [3]


def test_every_process_plants_the_same_cycles(h100_driver: FakeDriver) -> None:
    # a rate measured per process read 0.8-2.0 GHz on one H100; the rated one is one number
    plants = [make_plant(930, SimpleNamespace(index=0), in_kernel=True) for _ in range(4)]
    assert {p.cycles for p in plants} == {round(930 * 1.98)}
    assert all(p.in_kernel and p.delay_ns == 930 for p in plants)


def test_the_interpreters_plant_has_no_cycles(h100_driver: FakeDriver) -> None:
    plant = make_plant(930, None, in_kernel=False)
    assert (plant.in_kernel, plant.cycles) == (False, 0)
    assert h100_driver.asked == []


def test_a_driver_without_a_clock_rate_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    activate(monkeypatch, FakeDriver(0))
    with pytest.raises(RuntimeError, match="no SM clock rate"):
        peak_clock_ghz(SimpleNamespace(index=0))
