"""A host-timer benchmarker for ``triton.autotune`` where there is no GPU driver.

Under ``TRITON_INTERPRET=1`` Triton has no active driver, so an autotuner without an
explicit ``do_bench=`` fails on its first sweep ("0 active drivers"). The CPU backend
installs this one at class level: kernels that brought their own ``do_bench=`` keep it.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from typing import Callable, Iterator, Sequence


def host_do_bench(kernel_call: Callable[[], object], quantiles: Sequence[float] | None = None,
                  *, repeats: int = 3, **_: object) -> float | list[float]:
    """Milliseconds per call by wall clock: one discarded call, then the median of ``repeats``,
    once per requested quantile (three host samples carry no meaningful spread)."""
    kernel_call()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        kernel_call()
        times.append((time.perf_counter() - t0) * 1e3)
    median = statistics.median(times)
    return [median] * len(quantiles) if quantiles else median


@contextlib.contextmanager
def host_benchmarker(bench: Callable[..., object] = host_do_bench) -> Iterator[None]:
    """Make every ``Autotuner`` without its own ``do_bench=`` use ``bench``."""
    from triton.runtime.autotuner import Autotuner

    original = Autotuner.__dict__.get("do_bench")
    Autotuner.do_bench = property(  # type: ignore[assignment]
        lambda self: bench if getattr(self, "_do_bench", None) is None else self._do_bench)
    try:
        yield
    finally:
        if original is not None:
            Autotuner.do_bench = original  # type: ignore[assignment]
        else:
            del Autotuner.do_bench
