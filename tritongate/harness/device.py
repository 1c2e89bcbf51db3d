"""What the measurement loop needs from a device, as a Protocol, and its CUDA implementation.

The loop in ``measure.py`` only talks to ``Device``, so its logic (k selection, warm-up
clamping, placement shift, fallback markers) is tested on the CPU with a scripted fake;
``CudaDevice`` is the real thing and is exercised on the GPU machine.
"""

from __future__ import annotations


import contextlib
import gc
import os
import socket
from typing import Any, Callable, Iterator, Protocol

from tritongate.harness.gpu_turns import PartnerLease, lease_partner, partner_pids, turns_requested

Launch = Callable[[], object]


class Graph(Protocol):
    def replay(self) -> None: ...


class Device(Protocol):
    name: str

    def synchronize(self) -> None: ...

    def time_events(self, fn: Launch) -> float:
        """Seconds of device time between events recorded around ``fn()``."""
        ...

    def capture(self, fn: Launch, launches: int) -> Graph:
        """A graph of ``launches`` back-to-back calls of ``fn``."""
        ...

    def hold_block(self, nbytes: int) -> object:
        """Allocate ``nbytes`` and return a handle that keeps them allocated."""
        ...

    def flush_l2(self) -> None: ...

    def release_cached(self) -> None:
        """Hand memory cached by the allocator back to the driver."""
        ...


# A process's CUDA graphs of small kernels replay ~0.18 µs a node slower once about three graphs
# have been made since the GPU last switched contexts; another process's work on the GPU, or a
# context created or destroyed, brings the fast level back (bench/results/2026-12-06_h100i_
# launch_state_switch.md). So a process starts at the fast level and leaves it at its third graph.
# The throwaway graphs made before anything is timed take it past that point, so that without a
# partner (gpu_turns, TRITONGATE_GPU_TURNS=0) every round is timed at the one slow level instead of
# the first rounds at the other; with a partner every capture follows a turn of the partner's and
# every round is timed at the fast level, as in a paired run. Every round records the level it ran
# at. TRITONGATE_GRAPH_PRIME=0 skips the throwaway graphs.
PRIME_GRAPHS = 8
PRIME_NODES = 8
STATE_NODES = 64  # the reference graph: this many empty kernels
_graph_state: dict[str, Any] | None = None  # once per process, like the state itself


class CudaDevice:
    """torch.cuda (or a torch.cuda-like module: torch.musa, torch.npu) behind ``Device``."""

    def __init__(self, index: int = 0, api: str = "cuda", *, turns: bool | None = None) -> None:
        """``turns``: start a partner that takes a turn on the GPU before each capture
        (``gpu_turns``); None: unless ``TRITONGATE_GPU_TURNS=0``. CUDA only."""
        import torch

        module = getattr(torch, api, None)
        if module is None or not module.is_available():
            from tritongate.errors import MeasurementError

            raise MeasurementError(f"torch.{api}.is_available() is False")
        self._torch = torch
        self._api = module
        self.index = index
        self.device = torch.device(api, index)
        module.set_device(index)
        self.name = module.get_device_name(index)
        self._flush_buffer = None
        self._state_graph: Any = None
        self._turns: PartnerLease | None = None
        if api == "cuda":
            if turns_requested() if turns is None else turns:
                self._turns = lease_partner(api, index)
            self._settle_graph_state()

    def _empty_graph(self, nodes: int) -> Any:
        torch = self._torch
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(nodes):
                torch.cuda._sleep(0)
        return graph

    def _settle_graph_state(self) -> None:
        global _graph_state
        if _graph_state is None:
            self._state_graph = self._empty_graph(STATE_NODES)
            before = self.launch_state_us()
            primed = 0 if os.environ.get("TRITONGATE_GRAPH_PRIME", "1") == "0" else PRIME_GRAPHS
            throwaway = [self._empty_graph(PRIME_NODES) for _ in range(primed)]
            for graph in throwaway:
                graph.replay()
            self.synchronize()
            del throwaway
            _graph_state = {"primed_graphs": primed, "state_before_us": before}
        # A graph made before the switch reads the old level until another graph is made
        # (seen on the H100), so the reference graph is made after the throwaway ones.
        # (read before any partner's turn: a partner still starting is not waited for here)
        self._state_graph = self._empty_graph(STATE_NODES)
        _graph_state.setdefault("state_after_us", self.launch_state_us())

    def gpu_turns(self) -> dict[str, Any] | None:
        """The partner's turns so far (None: measured without one)."""
        return self._turns.state() if self._turns is not None else None

    def own_pids(self) -> set[int]:
        """This process and every live partner of it (an earlier run's stays on the GPU for the
        next): the processes on the GPU that are this run's own."""
        return {os.getpid(), *partner_pids()}

    def graph_state(self) -> dict[str, Any] | None:
        """How this process's graph state was settled: the throwaway graphs made and the
        reference graph's µs a node before and after (None before any CudaDevice)."""
        return None if _graph_state is None else dict(_graph_state)

    def launch_state_us(self) -> float | None:
        """µs a node of a graph of empty kernels: which launch state the process is in now
        (about 0.79 vs 0.97 on an H100). Median of three replays, each after the blocker."""
        if self._state_graph is None:
            return None
        times = sorted(self.time_events(self._state_graph.replay) for _ in range(3))
        return times[1] / STATE_NODES * 1e6

    def synchronize(self) -> None:
        self._api.synchronize(self.device)

    # ~100 µs at a 2 GHz SM clock: longer than the host needs to submit a graph launch.
    BLOCKER_CYCLES = 200_000

    def time_events(self, fn: Launch) -> float:
        """Device time of ``fn`` between two events. A spin kernel is queued first, so the
        GPU is still busy while the host submits ``fn``'s work: the start event then fires
        with that work already queued, and host submission time (which varies with CPU
        scheduling and, for a graph, with its size) stays out of the sample."""
        api = self._api
        start = api.Event(enable_timing=True)
        end = api.Event(enable_timing=True)
        if hasattr(api, "_sleep"):
            api._sleep(self.BLOCKER_CYCLES)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3

    @contextlib.contextmanager
    def _throwaway_rng(self) -> Iterator[None]:
        """Capture registers the default CUDA generator; a capture that fails half-way can
        leave it "capturing" for good ("Offset increment outside graph capture" on every
        later torch.randn). So the generator holds a stand-in state during capture and
        gets its real state back whatever happens."""
        gen = self._torch.cuda.default_generators[self.index]
        if not hasattr(gen, "graphsafe_get_state"):
            saved = self._torch.cuda.get_rng_state(self.device)
            try:
                yield
            finally:
                self._torch.cuda.set_rng_state(saved, self.device)
            return
        real = gen.graphsafe_get_state()
        gen.graphsafe_set_state(gen.clone_state())
        try:
            yield
        finally:
            gen.graphsafe_set_state(real)

    def capture(self, fn: Launch, launches: int) -> Graph:
        torch = self._torch
        if self._turns is not None:  # this graph is then the first made since a context switch
            self._turns.take_turn()
        graph = torch.cuda.CUDAGraph()
        # Triton >= 3.8 unloads a module when the GC finalizes its CompiledKernel, which is
        # illegal inside stream capture: keep the collector out of the capture window.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            with self._throwaway_rng():
                with torch.cuda.graph(graph):
                    for _ in range(launches):
                        fn()
        finally:
            if gc_was_enabled:
                gc.enable()
        return graph

    def hold_block(self, nbytes: int) -> object:
        return self._torch.empty(max(1, nbytes), dtype=self._torch.uint8, device=self.device)

    def release_cached(self) -> None:
        self._api.empty_cache()

    def flush_l2(self) -> None:
        if self._flush_buffer is None:
            l2 = getattr(self._api.get_device_properties(self.index), "L2_cache_size", 0)
            # Twice the L2 and never under the 256 MiB triton.testing uses.
            nbytes = max(2 * int(l2), 256 << 20)
            self._flush_buffer = self._torch.empty(nbytes, dtype=self._torch.uint8, device=self.device)
        self._flush_buffer.zero_()


class HostDevice:
    """A device with no queue: the CPU backend (Triton interpreter, torch on CPU).

    It has no events and no graphs, so only the host-wall timer works on it.

    Making one runs torch on one thread in this process. The interpreter's kernels are
    single-threaded numpy anyway; a reference computed on several threads is not reliable:
    torch's MKL build initializes its vector math lazily, and a first ``torch.exp`` of 4096
    floats split over two threads came back, now and then, with one thread's half at MKL's
    low-accuracy (EP) AVX2 kernel, errors up to 1.5e-3 (a false CORRECTNESS_MISMATCH).
    """

    name = "host"

    def __init__(self) -> None:
        import torch

        torch.set_num_threads(1)

    def synchronize(self) -> None:
        pass

    def time_events(self, fn: Launch) -> float:
        raise NotImplementedError("the host device has no events; use the host-wall timer")

    def capture(self, fn: Launch, launches: int) -> Graph:
        raise NotImplementedError("the host device has no graphs; use the host-wall timer")

    def hold_block(self, nbytes: int) -> object:
        return None  # host allocations are not the bias this shift exists for

    def flush_l2(self) -> None:
        pass

    def release_cached(self) -> None:
        pass


def device_uuid(backend_name: str, device: Any, index: int) -> str:
    """The physical device both workers must share."""
    if backend_name == "cuda":
        import torch

        uuid = str(torch.cuda.get_device_properties(index).uuid)
        return uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"
    if backend_name == "cpu":
        return f"host:{socket.gethostname()}"
    return f"{backend_name}:{getattr(device, 'name', '?')}:{index}"
