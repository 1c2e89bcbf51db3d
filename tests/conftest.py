"""Shared fakes: a scripted device for the measurement loop, and a run-row factory."""

from __future__ import annotations

import os

import pytest
import torch

# Without a GPU, Triton kernels run under the interpreter; it is chosen when a kernel is
# defined, so it must be set before any test imports one.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
# Knobs a developer's shell may carry: no test reads a calibration or a plan unless it sets one.
for _var in ("TRITONGATE_CALIBRATION", "TRITONGATE_PLANTED_DELAY"):
    os.environ.pop(_var, None)

from tritongate.schema import MeasurementInfo, Row  # noqa: E402 - after TRITON_INTERPRET is set


class FakeGraph:
    def __init__(self, device: "FakeDevice", fn, launches: int) -> None:
        self.device, self.fn, self.launches = device, fn, launches

    def replay(self) -> None:
        self.device.replays += 1
        if self.device.fail_replay is not None:
            raise self.device.fail_replay
        for _ in range(self.launches):
            self.fn()
        self.device.now += self.device.graph_overhead_s


class FakeDevice:
    """Device time advances by ``launch_cost(i)`` seconds per launch; events read it.

    ``capture`` records ``launches`` calls of fn without running them, like a real graph.
    """

    name = "fake"

    def __init__(self, cost_s: float = 1e-6, event_overhead_s: float = 0.0,
                 graph_overhead_s: float = 0.0) -> None:
        self.cost_s = cost_s
        self.event_overhead_s = event_overhead_s
        self.graph_overhead_s = graph_overhead_s
        self.now = 0.0
        self.syncs = 0
        self.launches = 0
        self.captures: list[int] = []
        self.replays = 0
        self.blocks: list[int] = []
        self.flushes = 0
        self.releases = 0
        self.fail_capture: BaseException | None = None
        self.fail_capture_at: int | None = None  # capture number (0-based) that fails
        self.fail_replay: BaseException | None = None
        self.capturing = False

    def launch(self) -> None:
        if self.capturing:
            return
        self.launches += 1
        self.now += self.cost_s

    def synchronize(self) -> None:
        self.syncs += 1

    def time_events(self, fn) -> float:
        t0 = self.now
        fn()
        return self.now - t0 + self.event_overhead_s

    def capture(self, fn, launches: int):
        n = len(self.captures)
        self.captures.append(launches)
        if self.fail_capture is not None and (self.fail_capture_at is None or self.fail_capture_at == n):
            raise self.fail_capture
        self.capturing = True
        try:
            for _ in range(launches):
                fn()
        finally:
            self.capturing = False
        return FakeGraph(self, fn, launches)

    def hold_block(self, nbytes: int):
        self.blocks.append(nbytes)
        return object()

    def flush_l2(self) -> None:
        self.flushes += 1

    def release_cached(self) -> None:
        self.releases += 1


@pytest.fixture
def fake_device() -> FakeDevice:
    return FakeDevice()


def make_row(op: str = "add", case: str = "n=4096", dtype: str = "float32",
             samples=(1.0, 1.1, 0.9, 1.0, 1.05), **kw) -> Row:
    kw.setdefault("measurement", MeasurementInfo(launches_per_sample=100, samples_per_round=5,
                                                 warmup_calls=6, l2="warm"))
    return Row(op=op, case=case, dtype=dtype, timer="cuda-graph", samples=tuple(samples), **kw)


def write_suite(folder, suite: str, shapes: str = "add: {shapes: [[16]]}\n"):
    """A suite file ``s.yaml`` (its text as given) beside a shape file ``shapes.yaml``."""
    (folder / "shapes.yaml").write_text(shapes)
    path = folder / "s.yaml"
    path.write_text(suite)
    return path


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """A run that selects the GPU tests runs them in one process: they time kernels, and
    workers sharing one GPU would time each other's (``-n auto`` is in pyproject's addopts)."""
    expr = (config.getoption("markexpr", "") or "").replace("not gpu", "")
    return 0 if "gpu" in expr else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """GPU tests are deselected by default (pyproject's ``-m "not gpu"``); a run that picks its
    own ``-m`` (the fast loop's ``-m "not slow"``) deselects them too without a GPU, and one that
    asks for them (``-m gpu``) there has them skipped, saying why."""
    if torch.cuda.is_available():
        return
    gpu = [item for item in items if "gpu" in item.keywords]
    if "gpu" not in (config.getoption("markexpr", "") or "").replace("not gpu", ""):
        config.hook.pytest_deselected(items=gpu)
        items[:] = [item for item in items if "gpu" not in item.keywords]
        return
    skip = pytest.mark.skip(reason="needs a CUDA device; run with -m gpu on the GPU machine")
    for item in gpu:
        item.add_marker(skip)
