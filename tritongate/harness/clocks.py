"""Clocks are passed in, not imported: a ``Timer`` returns seconds, a ``Sync`` drains the device.

``FakeClock`` replaces the GPU with a script so timing logic is tested deterministically:
each ``work()`` advances time by the next scripted step.
"""

from __future__ import annotations

from typing import Iterable, Protocol


class Timer(Protocol):
    def __call__(self) -> float: ...


class Sync(Protocol):
    def __call__(self) -> None: ...


def no_sync() -> None:
    """The sync of a host-only workload: nothing is queued, so nothing to wait for."""


class FakeClock:
    """A scripted clock, usable as ``timer`` (call it) and ``sync`` (``clock.sync``).

    ``work()`` stands for one unit of device work and advances time by the next step of
    the script; once the script is exhausted the last step repeats. ``advance(s)`` moves
    time by hand (e.g. a compile inside ``make_fn``). Calls are counted so tests can
    check the number of syncs and launches.
    """

    def __init__(self, script: Iterable[float], start: float = 0.0) -> None:
        self._script = [float(s) for s in script]
        if not self._script:
            raise ValueError("FakeClock needs a non-empty script")
        if any(s < 0 for s in self._script):
            raise ValueError(f"FakeClock steps must be >= 0, got {self._script}")
        self._pos = 0
        self.now = float(start)
        self.syncs = 0
        self.works = 0

    def __call__(self) -> float:
        return self.now

    def sync(self) -> None:
        self.syncs += 1

    def work(self) -> None:
        step = self._script[min(self._pos, len(self._script) - 1)]
        self._pos += 1
        self.works += 1
        self.now += step

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("time does not run backwards")
        self.now += seconds
