"""Measure one row: rounds of samples, the placement shifted every round.

A row is measured in ``rounds`` rounds of ``samples_per_round`` samples. Every round first
allocates a block of random size and holds it for the round (a caching allocator otherwise
hands back the same addresses, so "fresh" inputs would sit exactly where the last ones
did, and placement luck would read as a speed difference), then builds fresh inputs from
the same seed via ``make_fn``, then (graph timer) captures a fresh graph of k launches;
a sample is one replay divided by k. k is chosen once, from a time target, and can be
passed in so the other side of a comparison uses the same k.

Timers:
- ``cuda-graph`` (default on CUDA): launch overhead removed; falls back per measurement to
  ``cuda-events`` with a ``BENCHMARK_DIRECT_NO_CUDAGRAPH phase=... reason=...`` marker when
  the function cannot be captured or replayed; fatal CUDA errors are raised instead.
- ``cuda-events``: one launch per sample between two events (includes launch gaps).
- ``host-wall``: sync, perf_counter, call, sync, perf_counter (the CPU backend's timer).
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable

from tritongate import markers
from tritongate.errors import MeasurementError
from tritongate.harness.clocks import Timer
from tritongate.harness.cuda_errors import fatal_cuda_error
from tritongate.markers import one_line
from tritongate.harness.device import Device, Launch
from tritongate.stats import Summary, summarize

MakeFn = Callable[[], Launch]


class TimerKind(str, Enum):
    CUDA_GRAPH = "cuda-graph"
    CUDA_EVENTS = "cuda-events"
    HOST_WALL = "host-wall"


class L2Policy(str, Enum):
    WARM = "warm"  # no flush: a working set under L2 stays hot (what graphs measure)
    FLUSH = "flush"  # flush L2 before every sample, outside the timed span


@dataclass(frozen=True)
class MeasureConfig:
    rounds: int = 5
    samples_per_round: int = 5
    target_sample_s: float = 500e-6  # graph timer: about this much device time per sample
    warmup_budget_s: float = 1.0  # steady warm-up before capture, by time...
    warmup_min: int = 5  # ...clamped to this many calls...
    warmup_max: int = 200  # ...and at most this many
    max_launches: int = 10_000  # ceiling on k
    trial_launches: int = 10  # graph size used to estimate the per-launch time
    l2: L2Policy = L2Policy.WARM
    shift_placement: bool = True
    # Return cached device memory to the driver before each round, so the round's inputs
    # get new segments (new physical pages), not the ones the last round freed.
    fresh_segments: bool = True
    shift_min_bytes: int = 512
    shift_max_bytes: int = 32 << 20
    # Seeds the placement shift only (inputs have their own seed). None draws a fresh seed,
    # so two processes never shift in lockstep; the sizes used are recorded either way.
    seed: int | None = None

    def __post_init__(self) -> None:
        for name in ("rounds", "samples_per_round", "warmup_min", "max_launches", "trial_launches"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.warmup_max < self.warmup_min:
            raise ValueError(f"warmup_max ({self.warmup_max}) < warmup_min ({self.warmup_min})")
        if self.target_sample_s <= 0 or self.warmup_budget_s < 0:
            raise ValueError("target_sample_s must be > 0 and warmup_budget_s >= 0")
        if not 0 <= self.shift_min_bytes <= self.shift_max_bytes:
            raise ValueError("need 0 <= shift_min_bytes <= shift_max_bytes")
        object.__setattr__(self, "l2", L2Policy(self.l2))


@dataclass(frozen=True)
class Measurement:
    """Raw samples of one row, in microseconds per launch, and how they were taken."""

    timer: TimerKind
    samples_us: tuple[float, ...]
    samples_per_round: int
    launches_per_sample: int
    warmup_calls: int
    l2: L2Policy
    shift_bytes: tuple[int, ...] = ()
    markers: tuple[str, ...] = field(default_factory=tuple)
    # per round, µs a node of the device's reference graph right after its samples (the
    # process's launch state, ``CudaDevice.launch_state_us``); empty where the device has none
    launch_state_us: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if not self.samples_us:
            raise ValueError("a measurement needs at least one sample")
        if any(not (math.isfinite(s) and s > 0) for s in self.samples_us):
            raise ValueError(f"samples must be finite and > 0 µs, got {self.samples_us}")
        if self.launches_per_sample < 1:
            raise ValueError("launches_per_sample must be >= 1")

    @property
    def summary(self) -> Summary:
        return summarize(self.samples_us)

    @property
    def rounds(self) -> int:
        return len(self.samples_us) // self.samples_per_round


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, value))


class _CaptureFailed(Exception):
    def __init__(self, phase: str, cause: BaseException) -> None:
        super().__init__(f"{phase}: {cause}")
        self.phase = phase
        self.cause = cause


class RowMeasurer:
    """Measures one row round by round, so a driver can interleave two sides.

    ``warm_up()`` once, then ``measure_round()`` per round, then ``result()``. ``measure``
    below does exactly that for a single side.
    """

    def __init__(
        self,
        make_fn: MakeFn,
        *,
        device: Device,
        timer: TimerKind = TimerKind.CUDA_GRAPH,
        config: MeasureConfig = MeasureConfig(),
        launches_per_sample: int | None = None,
        clock: Timer = time.perf_counter,
    ) -> None:
        if launches_per_sample is not None and launches_per_sample < 1:
            raise ValueError(f"launches_per_sample must be >= 1, got {launches_per_sample}")
        self._make_fn = make_fn
        self._device = device
        self.timer = TimerKind(timer)
        self._config = config
        self._clock = clock
        self._fixed_k = launches_per_sample
        self.launches_per_sample = launches_per_sample or 1
        self.warmup_calls = 0
        seed = config.seed if config.seed is not None else random.SystemRandom().getrandbits(64)
        self._rng = random.Random(seed)
        self._samples: list[float] = []
        self._shifts: list[int] = []
        self._states: list[float] = []
        self._markers: list[str] = []
        self._warmed = False

    # -- warm-up ---------------------------------------------------------------------------
    def warm_up(self) -> None:
        """Discard one call (JIT compile, autotune), warm up by budget, choose k."""
        cfg, dev = self._config, self._device
        fn = self._make_fn()
        fn()
        dev.synchronize()
        per_call = self._estimate_call_s(fn)
        n = _clamp(int(cfg.warmup_budget_s / per_call) if per_call > 0 else cfg.warmup_max,
                   cfg.warmup_min, cfg.warmup_max)
        for _ in range(n):
            fn()
        dev.synchronize()
        self.warmup_calls = 1 + n
        if self.timer is TimerKind.CUDA_GRAPH:
            try:
                self.launches_per_sample = self._choose_k(fn)
            except _CaptureFailed as failure:
                self._fall_back(failure)
        del fn
        if cfg.fresh_segments:
            dev.release_cached()
        self._warmed = True

    def _estimate_call_s(self, fn: Launch) -> float:
        if self.timer is TimerKind.HOST_WALL:
            return self._host_time(fn)
        return min(self._device.time_events(fn) for _ in range(3))

    def _choose_k(self, fn: Launch) -> int:
        cfg = self._config
        if self._fixed_k is not None:
            return self._fixed_k
        if cfg.l2 is L2Policy.FLUSH:
            return 1  # only the first launch after a flush is cold
        # Two steps: a small graph's replay time is dominated by the graph launch itself,
        # so re-estimate with a graph of the first guess's size, then settle k.
        k = cfg.trial_launches
        for _ in range(2):
            per_launch = self._graph_per_launch_s(fn, k)
            if per_launch <= 0:
                return cfg.max_launches
            k_next = _clamp(round(cfg.target_sample_s / per_launch), 1, cfg.max_launches)
            if k_next <= k:
                return k_next
            k = k_next
        return k

    def _graph_per_launch_s(self, fn: Launch, launches: int) -> float:
        trial = self._capture(fn, launches, phase="warmup")
        try:
            return min(self._replay_s(trial, phase="warmup") for _ in range(3)) / launches
        finally:
            del trial

    # -- one round -------------------------------------------------------------------------
    def measure_round(self, on_inputs: Callable[[Launch], None] | None = None) -> list[float]:
        """Take one round of samples (µs per launch) and return them. ``on_inputs`` sees the
        round's launch right after its fresh inputs are built, before anything touches them
        (a paired round shares them with the other side, or adopts the other side's)."""
        if not self._warmed:
            self.warm_up()
        cfg = self._config
        block = None
        if cfg.fresh_segments:
            self._device.release_cached()
        if cfg.shift_placement:
            nbytes = self._rng.randint(cfg.shift_min_bytes, cfg.shift_max_bytes)
            block = self._device.hold_block(nbytes)
            self._shifts.append(nbytes)
        fn = None
        try:
            fn = self._make_fn()
            if on_inputs is not None:
                on_inputs(fn)
            if self.timer is TimerKind.CUDA_GRAPH:
                try:
                    samples = self._graph_round(fn)
                except _CaptureFailed as failure:
                    self._fall_back(failure)
                    samples = self._events_round(fn)
            elif self.timer is TimerKind.CUDA_EVENTS:
                samples = self._events_round(fn)
            else:
                samples = self._host_round(fn)
        finally:
            del fn, block
        if cfg.fresh_segments:
            # Hand this round's memory back too: in a paired run the other worker measures
            # next, and memory this process kept cached would shape where its inputs land.
            self._device.release_cached()
        self._samples.extend(samples)
        # Read after the samples, not before: a process's first reading, taken before its
        # first round's turn and capture, showed the slow level while that round's samples
        # ran at the fast one (H100, bench/results/2026-12-06_h100k_partner_checks.md).
        state = getattr(self._device, "launch_state_us", None)
        if state is not None and self.timer is TimerKind.CUDA_GRAPH:
            self._states.append(state())
        return samples

    def _graph_round(self, fn: Launch) -> list[float]:
        cfg, dev, k = self._config, self._device, self.launches_per_sample
        fn()  # first touch of the fresh inputs, outside the graph
        dev.synchronize()
        graph = self._capture(fn, k, phase="capture")
        self._replay_s(graph, phase="replay")  # one replay discarded: uploads the graph
        samples = []
        for _ in range(cfg.samples_per_round):
            if cfg.l2 is L2Policy.FLUSH:
                dev.flush_l2()
            samples.append(self._replay_s(graph, phase="replay") / k * 1e6)
        # The graph is dropped before fn (which owns the inputs the graph reads).
        del graph
        return samples

    def _events_round(self, fn: Launch) -> list[float]:
        return self._plain_round(fn, self._device.time_events)

    def _host_round(self, fn: Launch) -> list[float]:
        return self._plain_round(fn, self._host_time)

    def _plain_round(self, fn: Launch, time_one: Callable[[Launch], float]) -> list[float]:
        """One launch per sample, timed by ``time_one`` (seconds)."""
        cfg, dev = self._config, self._device
        fn()  # first touch of the fresh inputs
        dev.synchronize()
        samples = []
        for _ in range(cfg.samples_per_round):
            if cfg.l2 is L2Policy.FLUSH:
                dev.flush_l2()
            samples.append(time_one(fn) * 1e6)
        return samples

    def _host_time(self, fn: Launch) -> float:
        dev, clock = self._device, self._clock
        dev.synchronize()
        t0 = clock()
        fn()
        dev.synchronize()
        return clock() - t0

    # -- graph plumbing --------------------------------------------------------------------
    def _capture(self, fn: Launch, launches: int, *, phase: str) -> object:
        try:
            return self._device.capture(fn, launches)
        except Exception as exc:  # classified below, fatal ones re-raised
            raise self._classify(phase, exc) from exc

    def _replay_s(self, graph: object, *, phase: str) -> float:
        try:
            return self._device.time_events(graph.replay)  # type: ignore[attr-defined]
        except Exception as exc:
            raise self._classify(phase, exc) from exc

    def _classify(self, phase: str, exc: BaseException) -> BaseException:
        fatal = fatal_cuda_error(str(exc))
        if fatal is not None:
            return MeasurementError(f"fatal CUDA error during graph {phase}: {fatal}; "
                                    "the CUDA context is unusable, the row fails")
        return _CaptureFailed(phase, exc)

    def _fall_back(self, failure: _CaptureFailed) -> None:
        reason = f"{type(failure.cause).__name__}: {one_line(str(failure.cause))}"
        self._markers.append(markers.make(markers.NO_CUDAGRAPH, phase=failure.phase, reason=reason))
        self.timer = TimerKind.CUDA_EVENTS
        self.launches_per_sample = 1
        self._samples.clear()  # one row, one timer: graph samples taken so far are dropped
        self._states.clear()
        self._device.synchronize()

    # -- result ----------------------------------------------------------------------------
    @property
    def markers(self) -> tuple[str, ...]:
        """Timer-fallback markers so far."""
        return tuple(self._markers)

    @property
    def rounds_done(self) -> int:
        return len(self._samples) // self._config.samples_per_round

    def result(self) -> Measurement:
        if not self._samples:
            raise MeasurementError("no round was measured")
        return Measurement(
            timer=self.timer,
            samples_us=tuple(self._samples),
            samples_per_round=self._config.samples_per_round,
            launches_per_sample=self.launches_per_sample,
            warmup_calls=self.warmup_calls,
            l2=self._config.l2,
            shift_bytes=tuple(self._shifts[-self.rounds_done:]) if self._shifts else (),
            markers=tuple(self._markers),
            launch_state_us=tuple(self._states[-self.rounds_done:]) if len(self._states) == self.rounds_done else (),
        )


def measure(
    make_fn: MakeFn,
    *,
    device: Device,
    timer: TimerKind = TimerKind.CUDA_GRAPH,
    config: MeasureConfig = MeasureConfig(),
    launches_per_sample: int | None = None,
    clock: Timer = time.perf_counter,
) -> Measurement:
    """Measure one row on one side: warm up, then ``config.rounds`` full rounds."""
    m = RowMeasurer(make_fn, device=device, timer=timer, config=config,
                    launches_per_sample=launches_per_sample, clock=clock)
    m.warm_up()
    while m.rounds_done < config.rounds:
        m.measure_round()
    return m.result()
