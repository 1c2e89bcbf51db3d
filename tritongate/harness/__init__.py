"""The measurement harness: host loops, statistics, device timers and GPU state."""

from tritongate.harness.bench import BenchResult, CompileVsRun, bench, compile_vs_run
from tritongate.harness.clocks import FakeClock, no_sync
from tritongate.harness.measure import (
    L2Policy,
    MeasureConfig,
    Measurement,
    RowMeasurer,
    TimerKind,
    measure,
)
from tritongate.stats import Change, Comparison, Summary, compare, outliers, summarize

__all__ = [
    "BenchResult", "Change", "CompileVsRun", "Comparison", "FakeClock", "L2Policy",
    "MeasureConfig", "Measurement", "RowMeasurer", "Summary", "TimerKind", "bench",
    "compare", "compile_vs_run", "measure", "no_sync", "outliers", "summarize",
]
