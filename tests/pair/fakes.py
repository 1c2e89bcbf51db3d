"""Scripted stand-ins for a paired run: a device whose time drifts as the test says, an
executor with the real executor's interface (it measures through the real ``RowMeasurer``),
and a worker that runs an executor in this process.

The same executor also runs in real worker subprocesses (``--executor
tests.pair.fakes:ScriptedExecutor``); there its behaviour comes from environment overlays:
``TG_FACTOR`` (time multiplier), ``TG_BINARY`` (binary hash tag), ``TG_CRASH`` /
``TG_HANG`` / ``TG_FATAL`` (ops whose prepare crashes, hangs or hits a fatal device error),
``TG_PROBE`` (copied into each row's params), ``TG_SLEEP`` (seconds per round),
``TG_CAPTURE_FAIL_AT`` (graph captures from the n-th on fail: a timer fallback mid-row),
``TG_NOISE`` (``op:sd,...``: that op's per-round placement noise), and the real
``TRITONGATE_PLANTED_DELAY`` plan: its rows' launches take the planted spin times the op's
``TG_GAIN`` (``op:gain,...``, default 1: one wave of programs) longer, less what ``TG_HIDE``
(``op:ns,...``: a spin up to that long ends under the kernel's own memory traffic) hides, plus
``TG_FIXED`` (``op:ns,...``: what any spin at all costs once, as a one-wave kernel on the H200).
``TG_AIM_NOISE`` (``op:sd,...``) is that op's per-round noise in a calibration's aim worker
only (side ``aim``): a power-bound kernel whose clock moves between timings in one process;
``TG_AIM_ERROR`` (ops) fail in the aim's worker only. ``TG_SHARE=1``: a pair's second side
reads the first side's inputs (takes its placement), except for the ops ``TG_NO_SHARE`` names;
``TG_SHARE_FAIL`` (ops): adopting the other side's inputs fails; ``TG_EXPORT_FAIL`` /
``TG_EXPORT_INTERRUPT`` (ops): the exporting side's round fails / is interrupted (Ctrl-C) after
it exported.
"""

from __future__ import annotations

import math
import os
import random
import signal
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from tritongate.harness.measure import MeasureConfig, RowMeasurer, TimerKind
from tritongate.harness.shared_inputs import SharingError
from tritongate.ops.registry import case_id
from tritongate.pair.client import WorkerError
from tritongate.pair.worker import _classify
from tritongate.ops.planting import PlantPlan, load_plan

ROWS = [("add", (4096,), "float16"), ("softmax", (64, 512), "float16"), ("matmul", (64, 64, 64), "float16")]
COST_US = {"add": 2.0, "softmax": 6.0, "matmul": 40.0}


@dataclass
class World:
    """What both sides share: the drift, as a function of how many rounds have started."""

    drift: Callable[[int], float] = lambda r: 1.0
    rounds_started: int = 0
    processes_started: int = 0  # draws each worker process's own level (TG_PROCESS_SD)


class ScriptedGraph:
    def __init__(self, device: "ScriptedDevice", fn: Callable[[], object], launches: int) -> None:
        self.device, self.fn, self.launches = device, fn, launches

    def replay(self) -> None:  # a graph's own launch overhead is left out here
        for _ in range(self.launches):
            self.fn()


class ScriptedDevice:
    """Device time advances by each launch's cost: op cost x side factor x shared drift x
    this round's placement offset x a small per-launch jitter."""

    name = "scripted"

    def __init__(self, world: World, factor: float, seed: int, placement_sd: float = 0.003,
                 jitter_sd: float = 0.002) -> None:
        self.world, self.factor = world, factor
        self.rng = random.Random(seed)
        self.placement_sd, self.jitter_sd = placement_sd, jitter_sd
        self.now = 0.0
        self.offset = 1.0
        self.capturing = False
        self.cost_us = 1.0
        self.extra_us = 0.0  # a planted delay: fixed time per launch, on top of the noisy cost
        self.captures = 0
        self.fail_capture_at: int | None = None  # graph captures from this one on fail

    def launch(self) -> None:
        if self.capturing:
            return
        drift = self.world.drift(self.world.rounds_started)
        self.now += self.cost_us * 1e-6 * self.factor * drift * self.offset * (1 + self.rng.gauss(0, self.jitter_sd))
        self.now += self.extra_us * 1e-6

    def synchronize(self) -> None:
        pass

    def time_events(self, fn: Callable[[], object]) -> float:
        t0 = self.now
        fn()
        return self.now - t0

    def capture(self, fn: Callable[[], object], launches: int) -> ScriptedGraph:
        self.captures += 1
        if self.fail_capture_at is not None and self.captures >= self.fail_capture_at:
            raise RuntimeError("operation not permitted when stream is capturing")
        self.capturing = True
        try:
            for _ in range(launches):
                fn()
        finally:
            self.capturing = False
        return ScriptedGraph(self, fn, launches)

    def hold_block(self, nbytes: int) -> object:
        self.world.rounds_started += 1  # a round starts: new placement, drift moves on
        self.offset = 1 + self.rng.gauss(0, self.placement_sd)
        return object()

    def flush_l2(self) -> None:
        pass

    def release_cached(self) -> None:
        pass


class ScriptedExecutor:
    """The executor interface of ``tritongate.pair.executor.TritonExecutor``, scripted."""

    def __init__(self, settings: dict[str, Any], *, world: World | None = None, env: dict[str, str] | None = None,
                 side: str = "") -> None:
        self.env = dict(os.environ if env is None else env)
        self.side = side or self.env.get("TG_SIDE", "?")
        self.world = world or World()
        factor = float(self.env.get("TG_FACTOR", "1.0"))
        seed = int(self.env.get("TG_SEED", "0")) + (0 if self.side == "base" else 1000)
        process_sd = float(self.env.get("TG_PROCESS_SD", "0"))
        if process_sd:  # this worker process's own level: every start draws a new one
            self.world.processes_started += 1
            factor *= math.exp(random.Random(f"{seed}-{self.world.processes_started}").gauss(0, process_sd))
        self.device = ScriptedDevice(self.world, factor, seed)
        self.default_placement_sd = self.device.placement_sd
        self.plant_plan = load_plan(self.env)
        if "TG_CAPTURE_FAIL_AT" in self.env:
            self.device.fail_capture_at = int(self.env["TG_CAPTURE_FAIL_AT"])
        overrides = settings.get("config_overrides") or {}
        self.config = MeasureConfig(**{"warmup_budget_s": 0.0, "warmup_min": 1, "warmup_max": 2,
                                       "seed": seed, **overrides})
        self.recorded = settings.get("recorded_launches", [])
        self._measurer: RowMeasurer | None = None
        self._op = ""
        # rounds whose inputs this side handed out, let go of, and gave back the holds of itself
        self.exported = self.unshared = self.released = 0

    def hello(self) -> dict[str, Any]:
        return {"pid": os.getpid(), "python": "scripted", "backend": "cuda", "device": "Scripted GPU",
                "device_uuid": self.env.get("TG_UUID", "GPU-scripted"), "timer": "cuda-graph",
                "measure_config": {"rounds": self.config.rounds, "samples_per_round": self.config.samples_per_round,
                                   "l2": "warm"},
                "software": {"triton": {"version": "scripted"}}, "host": {}, "codegen_env": {},
                "compiler_ref": f"scripted {self.side}", "commit": None, "planted_work": 1,
                "planted_delay": self.plant_plan.identity() if self.plant_plan is not None else None,
                "tuner_cache": {}, "replay_record": {}, "replay_from": "/baseline",
                "recorded_launches": self.recorded}

    def plan(self, suite: str, **_: Any) -> dict[str, Any]:
        return {"suite": {"name": suite, "path": "scripted", "shape_file": "scripted", "digest": "0",
                          "description": ""}, "shapes": {},
                "rows": [{"op": op, "shape": list(shape), "dtype": dt, "case": case_id(shape)}
                         for op, shape, dt in ROWS]}

    def set_plant(self, delays_ns: dict[str, int], fraction: float = 0.0) -> dict[str, Any]:
        self.plant_plan = PlantPlan("<set_plant>", "", fraction, dict(delays_ns))
        return {}

    def prepare(self, op: str, shape: list[Any], dtype: str, run_dir: str | None = None) -> dict[str, Any]:
        if op in self.env.get("TG_CRASH", "").split(","):
            os.kill(os.getpid(), signal.SIGSEGV)
        if op in self.env.get("TG_HANG", "").split(","):
            time.sleep(3600)
        if op in self.env.get("TG_FATAL", "").split(","):
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        if op in self.env.get("TG_ROW_ERROR", "").split(","):
            raise ValueError(f"{op} does not support this shape")
        if self.side == "aim" and op in self.env.get("TG_AIM_ERROR", "").split(","):
            raise ValueError(f"{op} failed in the aim's worker")
        self._op = op
        self.device.cost_us = COST_US[op]
        noise = dict(item.split(":") for item in self.env.get("TG_NOISE", "").split(",") if item)
        self.device.placement_sd = float(noise.get(op, self.default_placement_sd))
        if self.side == "aim":
            aim_noise = dict(item.split(":") for item in self.env.get("TG_AIM_NOISE", "").split(",") if item)
            self.device.placement_sd = float(aim_noise.get(op, self.device.placement_sd))
        params: dict[str, Any] = {"shape": list(shape), "seed": 1}
        delay = self.plant_plan.delay_for(op, case_id(tuple(shape)), dtype) if self.plant_plan is not None else None
        gains = dict(item.split(":") for item in self.env.get("TG_GAIN", "").split(",") if item)
        hidden = dict(item.split(":") for item in self.env.get("TG_HIDE", "").split(",") if item)
        fixed = dict(item.split(":") for item in self.env.get("TG_FIXED", "").split(",") if item)
        self.device.extra_us = (max(0, (delay or 0) - float(hidden.get(op, 0))) * float(gains.get(op, 1.0))
                                + (float(fixed.get(op, 0)) if delay else 0.0)) / 1000
        if delay is not None:
            params["planted_delay_ns"] = delay
        if "TG_PROBE" in self.env:
            params["probe"] = self.env["TG_PROBE"]
        binary = f"{op}-{self.env.get('TG_BINARY', 'same')}"
        return {"fields": {"op": op, "case": case_id(tuple(shape)), "dtype": dtype, "timer": "cuda-graph",
                           "params": params, "flops": None, "bytes": None},
                "variants": [{"kernel": f"scripted.{op}_kernel", "name": "BLOCK=128 w4 s2", "source_hash": "src",
                              "binary_hash": binary, "launches": 1}],
                "correctness": {"ok": True, "max_abs_err": 0.0, "atol": 0.01, "rtol": 0.01, "detail": ""}}

    def warm_up(self, k: int | None = None) -> dict[str, Any]:
        dev = self.device
        self._measurer = RowMeasurer(lambda: dev.launch, device=dev, timer=TimerKind.CUDA_GRAPH,
                                     config=self.config, launches_per_sample=k)
        self._measurer.warm_up()
        shares = self.env.get("TG_SHARE") == "1" and self._op not in self.env.get("TG_NO_SHARE", "").split(",")
        return {"k": self._measurer.launches_per_sample,
                "unshareable": "" if shares else f"scripted {self._op}: TG_SHARE is not 1 or TG_NO_SHARE names it"}

    def round(self, inputs: str = "own", shared: dict[str, Any] | None = None) -> dict[str, Any]:
        """Sharing, scripted: the exporting side hands out its round's placement offset and
        the importing side takes it (the same memory: the same placement)."""
        assert self._measurer is not None
        assert (inputs == "import") == (shared is not None), (inputs, shared)
        time.sleep(float(self.env.get("TG_SLEEP", "0")))  # a slow real row, for interrupt tests
        exported: dict[str, Any] = {}

        def on_inputs(_fn: Any) -> None:
            if inputs == "export":
                exported["offset"] = self.device.offset
                self.exported += 1
            elif self._op in self.env.get("TG_SHARE_FAIL", "").split(","):
                raise SharingError("shared inputs: tensor 0 differs between the sides (scripted)")
            else:
                self.device.offset = float(shared["offset"])  # type: ignore[index]

        samples = self._measurer.measure_round(on_inputs if inputs != "own" else None)
        if inputs == "export" and self._op in self.env.get("TG_EXPORT_FAIL", "").split(","):
            raise RuntimeError("scripted: the exporting side's round failed after it exported")
        if inputs == "export" and self._op in self.env.get("TG_EXPORT_INTERRUPT", "").split(","):
            raise KeyboardInterrupt
        m = self._measurer
        return {"samples": samples, "k": m.launches_per_sample, "timer": m.timer.value, "markers": list(m.markers),
                **({"shared": exported} if exported else {})}

    def unshare(self, release: bool = False) -> dict[str, Any]:
        self.unshared += 1
        self.released += bool(release)
        return {}

    def finish(self) -> dict[str, Any]:
        m = self._measurer.result() if self._measurer and self._measurer.rounds_done else None
        self._measurer = None
        meas = None if m is None else {
            "timer": m.timer.value, "samples": list(m.samples_us), "samples_per_round": m.samples_per_round,
            "launches_per_sample": m.launches_per_sample, "warmup_calls": m.warmup_calls, "l2": m.l2.value,
            "shift_bytes": list(m.shift_bytes), "markers": list(m.markers)}
        return {"autotune": {"mode": "replay", "sweep_benchmarks": 0, "kernels": []}, "autotune_markers": [],
                "measurement": meas}

    def abort(self) -> dict[str, Any]:
        self._measurer = None
        return {}


@dataclass
class InProcessWorker:
    """A worker that calls its executor directly (no process, no timeouts)."""

    side: str
    make: Callable[[dict[str, Any]], Any]
    executor: Any = None
    calls: list[str] = field(default_factory=list)
    log: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # every call with its arguments
    starts: int = 0

    @property
    def pid(self) -> int | None:
        return None

    @property
    def alive(self) -> bool:
        return self.executor is not None

    def start(self) -> None:
        self.starts += 1

    def call(self, cmd: str, timeout_s: float, **args: Any) -> dict[str, Any]:
        self.calls.append(cmd)
        self.log.append((cmd, dict(args)))
        try:
            if cmd == "init":
                self.executor = self.make(args["settings"])
                return self.executor.hello()
            return getattr(self.executor, cmd)(**args)
        except Exception as exc:  # noqa: BLE001 - answered like the real worker does
            raise WorkerError(self.side, _classify(exc)) from None

    def send(self, cmd: str, timeout_s: float, **args: Any) -> Any:
        """Runs the call at once; ``receive`` hands over its answer or raises its error."""
        try:
            return ("answer", self.call(cmd, timeout_s, **args))
        except WorkerError as exc:
            return ("error", exc)

    def receive(self, pending: Any) -> dict[str, Any]:
        kind, value = pending
        if kind == "error":
            raise value
        return value

    def kill(self) -> None:
        self.executor = None

    def close(self) -> None:
        self.executor = None
