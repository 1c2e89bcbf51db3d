"""The aim step's measurements: one worker of the base build (the paired runs' own worker
code, replaying the same baseline's configs) times each row at the spins ``aim.aim_row`` asks
for, switching the planted spin between timings (``set_plant``) instead of restarting."""

from __future__ import annotations

import os
import statistics
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from tritongate.calibrate.aim import RowAim, aim_row
from tritongate.errors import MeasurementError, PreflightError, UsageError
from tritongate.pair.client import WorkerError, WorkerFailure, startup_timeout
from tritongate.pair.request import PairRequest
from tritongate.harness.gpu_turns import turns_requested
from tritongate.pair.spawn import SpawnFn, side_worker_spec, spawn_process, worker_settings
from tritongate.ops.planting import row_key

AIM_ROUNDS = 3  # rounds per timing; each round's samples as the paired runs take them
AIM_WARMUP_S = 0.05  # a row is warm from its last timing: a short steady warm-up per spin is enough
ROW_TIMEOUT_S = 600.0


class AimWorker:
    """``with AimWorker(request, work_dir) as w: w.time_row(key, spin_ns)``."""

    def __init__(self, request: PairRequest, work_dir: Path, *, spawn: SpawnFn = spawn_process,
                 rounds: int = AIM_ROUNDS, warmup_s: float = AIM_WARMUP_S) -> None:
        self.request = replace(request, config_overrides={**request.config_overrides, "warmup_budget_s": warmup_s})
        self.rounds = rounds
        self._worker = spawn(side_worker_spec(self.request, "base", self.request.base, Path(work_dir) / "workers",
                                              label="aim"))
        self._rows: dict[str, dict[str, Any]] = {}
        self.device_uuid: str | None = None  # the physical GPU it measured on, from its hello

    def __enter__(self) -> "AimWorker":
        req = self.request
        self._worker.start()
        try:
            # measuring alone, it takes turns with a partner, so that its spins are timed at the
            # launch-state level the paired runs they are planted into time at (harness.gpu_turns)
            hello = self._worker.call("init", startup_timeout(req.row_timeout_s),
                              settings={**worker_settings(req),
                                        "gpu_turns": turns_requested({**os.environ, **req.base.env})})
            plan = self._worker.call("plan", startup_timeout(req.row_timeout_s), suite=req.suite,
                                     shape_file=str(req.shape_file) if req.shape_file else None,
                                     only_ops=list(req.only_ops), only_dtypes=list(req.only_dtypes))
        except WorkerError as exc:
            self._worker.kill()
            if exc.kind == "preflight":
                raise PreflightError(str(exc.check or "worker"), f"aim step: {exc}") from None
            raise UsageError(f"aim step ({req.base.python}): {exc}") from None
        except WorkerFailure as exc:
            self._worker.kill()
            raise MeasurementError(f"aim step: the worker ({req.base.python}) could not start: {exc.reason}") from None
        self._rows = {row_key(r["op"], r["case"], r["dtype"]): r for r in plan["rows"]}
        uuid = hello.get("device_uuid")
        self.device_uuid = str(uuid) if uuid else None
        return self

    def __exit__(self, *exc: object) -> None:
        self._worker.close()

    def has_row(self, key: str) -> bool:
        return key in self._rows

    def time_row(self, key: str, spin_ns: int) -> float:
        """The row's median time per launch (µs) with every program spinning ``spin_ns``."""
        row = self._rows[key]
        call = self._worker.call
        call("set_plant", ROW_TIMEOUT_S, delays_ns={key: spin_ns}, fraction=0.0)
        call("prepare", ROW_TIMEOUT_S, op=row["op"], shape=row["shape"], dtype=row["dtype"], run_dir=None)
        try:
            call("warm_up", ROW_TIMEOUT_S)
            samples = [s for _ in range(self.rounds) for s in call("round", ROW_TIMEOUT_S)["samples"]]
        finally:
            call("finish", ROW_TIMEOUT_S)
        if not samples:
            raise ValueError(f"{key}: no samples at a spin of {spin_ns} ns")
        return statistics.median(samples)


def aim_rows(worker: AimWorker, keys: Sequence[str], fractions: Sequence[float],
             log: Callable[[str], None] = lambda _: None, *, done: Mapping[str, RowAim] | None = None,
             failed_before: Mapping[str, str] | None = None,
             on_row: Callable[[dict[str, RowAim], dict[str, str]], None] | None = None,
             ) -> tuple[dict[str, RowAim], dict[str, str]]:
    """Each row's aim, and each row that could not be aimed with why (it is then a miss at every
    size). Rows in ``done``/``failed_before`` (a resumed aim) are not aimed again; ``on_row``
    gets the progress after each row. A worker that dies stops the step (``MeasurementError``)."""
    aims: dict[str, RowAim] = dict(done or {})
    failed: dict[str, str] = dict(failed_before or {})
    for i, key in enumerate(keys, 1):
        if key in aims or key in failed:
            continue
        if not worker.has_row(key):
            failed[key] = "not in the suite's plan"
        else:
            try:
                aims[key] = aim_row(key, lambda spin, key=key: worker.time_row(key, spin), fractions)
            except (WorkerError, ValueError) as exc:
                failed[key] = str(exc)
            except WorkerFailure as exc:
                raise MeasurementError(f"aim step: the worker failed on {key}: {exc.reason}; the rows aimed so "
                                       "far are kept: `tritongate calibrate --resume` goes on from there") from None
        if on_row is not None:
            on_row(aims, failed)
        got = aims.get(key)
        log(f"aim {i}/{len(keys)} {key}: " + (f"not aimed ({failed[key]})" if got is None else
            f"{len(got.points)} spins timed; "
            + ", ".join([f"{k} -> {got.spins_ns[k]} ns ({got.aimed[k]:+.2%})" for k in got.spins_ns]
                        + [f"{k} not plantable" for k in got.missed])))
    return aims, failed
