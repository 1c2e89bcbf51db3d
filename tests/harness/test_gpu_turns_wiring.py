"""Who gets a GPU-turn partner and what they do with it: a capture takes a turn first, the
run's idle check counts the partner as its own, the run identity records the turns, paired
workers go without, and the calibration's aim has one unless its build's environment says 0."""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any

import pytest

from tritongate.backends import BACKENDS
from tritongate.harness.device import CudaDevice, HostDevice

CPU = BACKENDS["cpu"]


class FakeTurns:
    def __init__(self, log: list[str], pid: int = 4242) -> None:
        self.log, self.pid, self.turns = log, pid, 0

    def take_turn(self) -> bool:
        self.log.append("turn")
        self.turns += 1
        return True

    def state(self) -> dict[str, Any]:
        return {"partner": True, "turns": self.turns, "failure": None}


def _fake_cuda_device(log: list[str]) -> CudaDevice:
    """A CudaDevice over a torch stand-in that logs what a capture does, in order."""
    class Graph:
        pass

    class Capturing:
        def __init__(self, graph: Graph) -> None:
            pass

        def __enter__(self) -> None:
            log.append("capture")

        def __exit__(self, *exc: object) -> None:
            log.append("captured")

    cuda = SimpleNamespace(CUDAGraph=Graph, graph=Capturing, default_generators=[object()],
                           get_rng_state=lambda device: None, set_rng_state=lambda state, device: None)
    device = object.__new__(CudaDevice)
    device._torch = SimpleNamespace(cuda=cuda)
    device.index, device.device = 0, "cuda:0"
    device._turns = FakeTurns(log)  # type: ignore[assignment]
    return device


@pytest.fixture(autouse=True)
def partner_4242(monkeypatch: pytest.MonkeyPatch) -> None:
    """The process's live partners, as gpu_turns would list them: the fake's."""
    from tritongate.harness import device as device_mod

    monkeypatch.setattr(device_mod, "partner_pids", lambda: [4242])


def test_every_capture_follows_a_turn_of_the_partner() -> None:
    log: list[str] = []
    device = _fake_cuda_device(log)
    device.capture(lambda: log.append("launch"), 2)
    device.capture(lambda: log.append("launch"), 1)
    assert log == ["turn", "capture", "launch", "launch", "captured", "turn", "capture", "launch", "captured"]
    assert device.gpu_turns() == {"partner": True, "turns": 2, "failure": None}
    assert device.own_pids() == {os.getpid(), 4242}


def test_a_run_without_a_partner_still_counts_the_one_an_earlier_run_left_on_the_gpu() -> None:
    device = _fake_cuda_device([])
    device._turns = None  # TRITONGATE_GPU_TURNS=0 for this run; the process's partner lives on
    assert device.own_pids() == {os.getpid(), 4242}


def test_the_idle_check_counts_the_partner_as_the_run_s_own(monkeypatch: pytest.MonkeyPatch) -> None:
    from tritongate.harness import device as device_mod
    from tritongate.harness import gpu_state
    from tritongate.runner import Runner

    seen: dict[str, Any] = {}

    def idle(uuid: str, *, own_pids: set[int] | None = None, allow_busy: bool = False) -> Any:
        seen["idle"] = own_pids
        return SimpleNamespace(to_dict=lambda: {})

    def after(uuid: str, *, own_pids: set[int] | None = None) -> Any:
        seen["after"] = own_pids
        return SimpleNamespace(to_dict=lambda: {})
    monkeypatch.setattr(gpu_state, "read_idle_state", idle)
    monkeypatch.setattr(gpu_state, "read_gpu_state", after)
    monkeypatch.setattr(device_mod, "device_uuid", lambda backend, device, index: "GPU-x")
    runner = object.__new__(Runner)
    runner.request = SimpleNamespace(backend=SimpleNamespace(name="cuda"), device_index=0, allow_busy_gpu=False)
    device = _fake_cuda_device([])
    runner._gpu_state(device, check_idle_now=True)
    runner._gpu_state(device, check_idle_now=False)
    assert seen == {"idle": {os.getpid(), 4242}, "after": {os.getpid(), 4242}}


class TurningHost(HostDevice):
    """The CPU device with a partner's record, to follow the wiring without a GPU."""

    def gpu_turns(self) -> dict[str, Any]:
        return {"partner": False, "turns": 7, "failure": "the partner exited after 7 turns"}


@pytest.mark.slow
def test_a_run_records_its_partner_and_a_paired_worker_gets_none_unless_asked(tmp_path, monkeypatch) -> None:
    import tritongate.backends as backends
    import tritongate.runner as runner_mod
    from tritongate.pair.executor import TritonExecutor
    from tritongate.rundir import load_run
    from tritongate.runner import RunRequest, run_suite

    monkeypatch.setattr(runner_mod, "make_device", lambda backend, index=0, **kw: TurningHost())
    record = run_suite(RunRequest(suite="smoke", backend=CPU, out=tmp_path / "runs", only_ops=("add",),
                                  only_dtypes=("float32",))).path
    assert load_run(record).identity["gpu_turns"] == TurningHost().gpu_turns()

    asked: list[Any] = []
    monkeypatch.setattr(backends, "make_device",
                        lambda backend, index=0, *, gpu_turns=None: asked.append(gpu_turns) or HostDevice())
    monkeypatch.setattr(TritonExecutor, "_quiet_host", lambda self, cpus: None)
    for settings in ({}, {"gpu_turns": True}):
        TritonExecutor({"backend": "cpu", "replay_from": str(record), **settings}).close()
    assert asked == [False, True]


@pytest.mark.parametrize("overlay, expected", [({}, True), ({"TRITONGATE_GPU_TURNS": "0"}, False)])
def test_the_calibration_s_aim_worker_asks_for_a_partner(tmp_path, monkeypatch, overlay, expected) -> None:
    from tritongate.calibrate.aim_worker import AimWorker
    from tritongate.pair.build import CompilerBuild
    from tritongate.pair.request import PairRequest

    monkeypatch.delenv("TRITONGATE_GPU_TURNS", raising=False)
    inits: list[dict[str, Any]] = []

    class Worker:
        side, pid, alive = "aim", 1, True

        def start(self) -> None:
            pass

        def call(self, cmd: str, timeout_s: float, **args: Any) -> dict[str, Any]:
            if cmd == "init":
                inits.append(args["settings"])
            return {"rows": []}

        def close(self) -> None:
            pass

    req = PairRequest(baseline=tmp_path / "baseline", suite="smoke", out=tmp_path / "out",
                      base=CompilerBuild("base", env=overlay))
    with AimWorker(req, tmp_path / "work", spawn=lambda spec: Worker()):
        pass
    assert [s["gpu_turns"] for s in inits] == [expected]
