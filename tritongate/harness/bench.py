"""Host-side timing loops: ``bench`` and ``compile_vs_run``.

A launch is asynchronous, so every sample is bracketed by syncs: the one before drains
what earlier work left queued, the one after waits for this sample's work. One more sync
after warm-up keeps the warm-up's tail out of the first sample: 1 + 2*repeats syncs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from tritongate.harness.clocks import Sync, Timer
from tritongate.stats import Summary, summarize


@dataclass(frozen=True)
class BenchResult:
    samples: tuple[float, ...]  # one per call, in the timer's unit
    summary: Summary


def bench(
    fn: Callable[[], object],
    *,
    timer: Timer,
    sync: Sync,
    warmup: int = 3,
    repeats: int = 10,
) -> BenchResult:
    """Call ``fn`` ``warmup`` times untimed, then time ``repeats`` calls one by one."""
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0, got {warmup}")
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    for _ in range(warmup):
        fn()
    sync()
    samples = []
    for _ in range(repeats):
        sync()
        t0 = timer()
        fn()
        sync()
        samples.append(timer() - t0)
    return BenchResult(tuple(samples), summarize(samples))


@dataclass(frozen=True)
class CompileVsRun:
    first_call: float  # make_fn() + the first call + sync
    steady: float  # median of the steady-state calls
    one_time_cost: float  # first_call - steady: compile, autotune, caches

    @property
    def break_even_calls(self) -> float:
        """Calls after which the one-time cost is paid back by a per-call saving of ``steady``."""
        return self.one_time_cost / self.steady if self.steady else float("inf")


def compile_vs_run(
    make_fn: Callable[[], Callable[[], object]],
    *,
    timer: Timer,
    sync: Sync,
    warmup: int = 3,
    repeats: int = 10,
) -> CompileVsRun:
    """Split the one-time cost (JIT compile, autotune sweep) from the steady per-call time.

    For Triton, ``make_fn`` returns the launcher and the first ``kernel[grid](...)`` call
    compiles and tunes.
    """
    sync()
    t0 = timer()
    fn = make_fn()
    fn()
    sync()
    first = timer() - t0
    steady = bench(fn, timer=timer, sync=sync, warmup=warmup, repeats=repeats).summary.median
    return CompileVsRun(first_call=first, steady=steady, one_time_cost=first - steady)
