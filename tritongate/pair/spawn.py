"""How one worker of a build is started: what a worker is to its parent (``Worker``), the
command line and environment of a side's worker (``side_worker_spec``) and the settings
every worker is initialised with (``worker_settings``).

Shared by the paired run's pool and by a calibration's aim worker, which start the same
workers the same way; neither imports torch or triton.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Protocol

from tritongate.childenv import package_link_dir
from tritongate.pair.build import CompilerBuild
from tritongate.pair.client import Pending, WorkerProcess, WorkerSpec
from tritongate.pair.request import PairRequest


class Worker(Protocol):
    side: str

    @property
    def pid(self) -> int | None: ...

    @property
    def alive(self) -> bool: ...

    def start(self) -> None: ...

    def call(self, cmd: str, timeout_s: float, **args: Any) -> dict[str, Any]: ...

    def send(self, cmd: str, timeout_s: float, **args: Any) -> Pending: ...

    def receive(self, pending: Pending) -> dict[str, Any]: ...

    def kill(self) -> None: ...

    def close(self) -> None: ...


SpawnFn = Callable[[WorkerSpec], Worker]


def spawn_process(spec: WorkerSpec) -> Worker:
    return WorkerProcess(spec)


def worker_settings(req: PairRequest) -> dict[str, Any]:
    """What every worker of ``req`` is initialised with."""
    return {"backend": req.backend, "replay_from": str(Path(req.baseline).resolve()),
            "config_overrides": dict(req.config_overrides), "device_index": req.device_index,
            "isolate_tuner_cache": req.isolate_tuner_cache,
            # every worker (a restarted one too) loads the suite's own op modules at init
            "suite": req.suite, "shape_file": str(req.shape_file) if req.shape_file else None,
            # the interpreter backend pins both workers to this one core (see the executor)
            "cpu_affinity": [max(os.sched_getaffinity(0))] if hasattr(os, "sched_getaffinity") else None}


def side_worker_spec(req: PairRequest, name: str, build: CompilerBuild, workers_dir: Path, *,
                     label: str | None = None) -> WorkerSpec:
    """How to start the worker of one side (``name``: base or candidate) of ``req``: the build's
    interpreter and environment, the side's own Triton cache, its log under ``workers_dir``
    (named ``label``, default ``name``: another worker of the same build shares its cache)."""
    cache_root = Path(req.cache_root) if req.cache_root else Path(req.out) / ".triton-cache"
    env = build.environment(os.environ, pythonpath=package_link_dir(workers_dir / "pythonpath"),
                            cache_dir=(cache_root / f"{name}-{build.digest()}").resolve())
    return WorkerSpec(side=label or name, argv=[build.python, "-m", "tritongate.pair.worker", "--executor",
                                                req.executor],
                      env=env, log_path=workers_dir / f"{label or name}.log")
