"""The worker-side executor that measures real Triton kernels: one per compiler build.

It replays the baseline's autotune configs for the whole life of the worker, and measures a
row step by step as the parent asks: ``prepare`` (build, compile, record variants, check
correctness), ``warm_up`` (choose or take k), ``round`` (one round of samples), ``finish``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from pathlib import Path
from typing import Any

from tritongate.harness.device import device_uuid
from tritongate.errors import UsageError
from tritongate.harness.measure import RowMeasurer
from tritongate.ops.registry import Registry
from tritongate.preflight import PlannedRow


def _suite_registry(suite: str, shape_file: str | None) -> tuple[Any, Registry]:
    """The suite, and the builtin ops plus those of its ``modules:``."""
    from tritongate.ops.user import registry_for
    from tritongate.suites import load_suite

    loaded = load_suite(suite, shape_file=Path(shape_file) if shape_file else None)
    return loaded, registry_for(loaded.modules, search_dir=loaded.path.parent, probe=False)  # the parent sees a worker that exits


class TritonExecutor:
    def __init__(self, settings: dict[str, Any]) -> None:
        from tritongate.autotune.records import load_records
        from tritongate.autotune.session import REPLAY, AutotuneSession, autotune_session
        from tritongate.autotune.tuner_cache import open_tuner_cache
        from tritongate.backends import default_measure_config, make_device, prepare_environment, resolve_backend
        from tritongate.ops.planting import load_plan
        from tritongate.rowcase import planted_work, tuning_context

        self.backend = resolve_backend(settings["backend"])
        prepare_environment(self.backend)
        self.cpu_affinity = self._quiet_host(settings.get("cpu_affinity"))
        try:
            self.config = dataclasses.replace(default_measure_config(self.backend),
                                              **(settings.get("config_overrides") or {}))
        except (TypeError, ValueError) as exc:
            raise UsageError(f"bad measurement settings: {exc}") from exc
        self.index = int(settings.get("device_index", 0))
        self._stack = contextlib.ExitStack()
        # before any suite loads: a provider suite imports flag_gems, which reads its tuner DB's
        # location once, at import
        self.tuner_cache = open_tuner_cache(bool(settings.get("isolate_tuner_cache")))
        self._stack.callback(self.tuner_cache.close)
        # Ops of the suite's own modules. Every worker needs them, and only the base worker is
        # asked to plan, so the suite may come with the settings; plan() sets it too.
        self.registry: Registry | None = _suite_registry(settings["suite"], settings.get("shape_file"))[1] \
            if settings.get("suite") else None
        self.records = load_records(Path(settings["replay_from"]), backend=self.backend.name)
        self.planted_work = planted_work()
        self.plant_plan = load_plan()  # read once; a bad plan stops the worker before its first row
        self.planted_delay = self.plant_plan.identity() if self.plant_plan is not None else None
        # a paired run's two workers take turns on the GPU round by round; a worker measuring
        # alone (the calibration's aim) gets a partner to take turns with (harness.gpu_turns)
        self.device = make_device(self.backend, self.index, gpu_turns=bool(settings.get("gpu_turns", False)))
        self.session = AutotuneSession(REPLAY, self.records)
        self._stack.enter_context(autotune_session(self.session))
        self._stack.enter_context(tuning_context(self.backend))
        self._prepared: Any = None
        self._measurer: RowMeasurer | None = None
        # (launch, payload) of the last ``round(inputs="export")``: the inputs the other worker reads
        self._exported: tuple[Any, dict[str, Any]] | None = None
        self._ir: Any = None  # IRStore of this side's run directory, opened by the first prepare

    def _quiet_host(self, cpus: list[int] | None) -> list[int] | None:
        """On the interpreter the kernels run on the host: both workers then share one core
        and one thread each, so neither the idle worker's thread pools nor moves between
        cores of different speed end up in the other side's samples."""
        if not self.backend.interpreter:
            return None
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            os.environ.setdefault(var, "1")  # (torch itself: the HostDevice runs it on one thread)
        if cpus and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, set(cpus))
            return sorted(os.sched_getaffinity(0))
        return None

    # -- identity --------------------------------------------------------------------------
    def hello(self) -> dict[str, Any]:
        import sys

        from tritongate.identity import codegen_env, compiler_ref, config_dict, host, software, source_commit

        return {
            "pid": os.getpid(), "python": sys.executable, "backend": self.backend.name,
            "device": getattr(self.device, "name", "host"),
            "device_uuid": device_uuid(self.backend.name, self.device, self.index),
            "timer": self.backend.timer.value, "measure_config": config_dict(self.config), "software": software(), "host": host(),
            "codegen_env": codegen_env(), "compiler_ref": compiler_ref(), "commit": source_commit(),
            "planted_work": self.planted_work, "planted_delay": self.planted_delay, "cpu_affinity": self.cpu_affinity, "tuner_cache": self.tuner_cache.to_dict(),
            "replay_record": self.records.meta, "replay_from": str(self.records.run_dir.resolve()),
            "recorded_launches": [[*key, k] for key, k in sorted(self.records.launches.items())],
        }

    def plan(self, suite: str, shape_file: str | None = None, only_ops: list[str] | None = None,
             only_dtypes: list[str] | None = None) -> dict[str, Any]:
        from tritongate.ops.user import provenance
        from tritongate.preflight import plan_rows

        loaded, self.registry = _suite_registry(suite, shape_file)
        rows = plan_rows(loaded, self.registry, self.backend, only_ops=only_ops or None,
                         only_dtypes=only_dtypes or None)
        ident = {"name": loaded.name, "path": str(loaded.path),
                 "shape_file": str(loaded.shape_file) if loaded.shape_file else None,  # None: inline shapes
                 "digest": loaded.digest, "description": loaded.description}
        if loaded.modules:  # the digest covers the YAML only: record which code the user ops ran
            ident["modules"] = provenance(loaded.modules)
        from tritongate.interpreter_cost import slow_rows

        # per side: each side's launches count, so the pair's row takes twice the estimate
        slow = [dataclasses.replace(r, row_s=2 * r.row_s).text() for r in slow_rows(rows, self.registry)] \
            if self.backend.interpreter else []
        return {"suite": ident, "notes": slow,
                "shapes": loaded.shapes_document(),
                "rows": [{"op": r.op, "shape": list(r.shape), "dtype": r.dtype, "case": r.case} for r in rows]}

    def set_plant(self, delays_ns: dict[str, int], fraction: float = 0.0) -> dict[str, Any]:
        """Plant these per-row spins (``op/case/dtype`` -> ns) in the rows prepared from now on:
        a calibration's aim step tries several spins per row in one process."""
        from tritongate.ops.planting import PlantPlan

        try:
            self.plant_plan = PlantPlan("<set_plant>", "", float(fraction), dict(delays_ns))
        except ValueError as exc:
            raise UsageError(f"set_plant: {exc}") from None
        return {}

    # -- one row ---------------------------------------------------------------------------
    def prepare(self, op: str, shape: list[Any], dtype: str, run_dir: str | None = None) -> dict[str, Any]:
        from tritongate.ops.builtin import REGISTRY
        from tritongate.rowcase import prepare_row

        self.abort()
        if op not in (REGISTRY if self.registry is None else self.registry):
            raise UsageError(f"op {op!r} is not known to this worker: not builtin, and the suite's modules "
                             "were not loaded here (pass the suite in the worker's init settings)")
        item = PlannedRow(op=op, shape=tuple(shape), dtype=dtype)
        self.session.begin_row(item.op, item.case, item.dtype)
        store = self._ir_store(run_dir)
        self._prepared = prepare_row(item, self.backend, self.device, self.index, registry=self.registry,
                                     ir_sink=store.add if store is not None else None, plan=self.plant_plan)
        if self.config.fresh_segments:
            self.device.release_cached()  # the other worker measures next: hold nothing
        p = self._prepared
        return {"fields": p.fields, "variants": [v.to_dict() for v in p.variants],
                "correctness": p.correctness.to_dict()}

    def _ir_store(self, run_dir: str | None) -> Any:
        """This side's ttgir/ (the worker writes it: the IR never crosses the pipe); reopened by
        a restarted worker. None on the interpreter, which compiles nothing."""
        if run_dir is None or self.backend.interpreter:
            return None
        from tritongate.ir.store import IRStore

        if self._ir is None or self._ir.root.parent != Path(run_dir):
            if self._ir is not None:
                self._ir.close()
            self._ir = IRStore(Path(run_dir))
        return self._ir

    def warm_up(self, k: int | None = None) -> dict[str, Any]:
        if self._prepared is None:
            raise UsageError("warm_up before prepare")
        self._measurer = RowMeasurer(self._prepared.make_fn, device=self.device, timer=self.backend.timer,
                                     config=self.config, launches_per_sample=k)
        self._measurer.warm_up()
        return {**self._state(), "unshareable": self._prepared.unshareable}

    def round(self, inputs: str = "own", shared: dict[str, Any] | None = None) -> dict[str, Any]:
        """One round of samples. ``inputs``: ``own`` (this worker's fresh inputs), ``export``
        (the same, kept alive after the round and handed out as ``shared`` until ``unshare``)
        or ``import`` (this worker's fresh inputs, pointed at the memory ``shared`` exports).
        A ``shared`` payload this round never reaches ``adopt_inputs`` with (a refused request,
        a failure before the inputs are built) has its holds given back here: the other side
        is then told this side let go, so nobody else would."""
        from tritongate.harness.shared_inputs import SharingError, adopt_inputs, export_inputs, release as release_holds

        adopting = False
        try:
            if self._measurer is None:
                raise UsageError("round before warm_up")
            if inputs not in ("own", "export", "import") or (inputs == "import") != (shared is not None):
                raise UsageError(f"round: inputs={inputs!r} with{'' if shared is not None else 'out'} a shared payload")
            self.unshare(release=True)  # (none is held unless the parent never said the other side was done)
            exported: dict[str, Any] = {}

            def on_inputs(fn: Any) -> None:
                nonlocal adopting
                if inputs == "export":
                    exported.update(export_inputs(fn.tensors))
                    self._exported = (fn, exported)  # alive until the other side has timed on it
                elif inputs == "import":
                    adopting = True  # from here adopt_inputs gives back what it does not open
                    adopt_inputs(fn.tensors, shared)

            try:
                samples = self._measurer.measure_round(on_inputs if inputs != "own" else None)
            except SharingError as exc:
                raise SharingError(f"{exc} (`--inputs own` times each side on inputs of its own)") from exc
            return {"samples": samples, **self._state(), **({"shared": exported} if exported else {})}
        finally:
            if shared is not None and not adopting:
                release_holds(shared)

    def unshare(self, release: bool = False) -> dict[str, Any]:
        """Let go of the inputs the last ``export`` round handed out. ``release``: the other side
        never opened them, or its worker died holding them, so give back their holds here too
        (else torch keeps the memory until this worker exits)."""
        from tritongate.harness.shared_inputs import collect, release as release_holds

        if self._exported is not None:
            fn, payload = self._exported
            self._exported = None
            self.device.synchronize()
            if release:
                release_holds(payload)
            del fn
            collect()
            if self.config.fresh_segments:
                self.device.release_cached()
        return {}

    def _state(self) -> dict[str, Any]:
        m = self._measurer
        return {"k": m.launches_per_sample, "timer": m.timer.value, "warmup_calls": m.warmup_calls,
                "rounds_done": m.rounds_done, "markers": list(m.markers)} if m else {}

    def finish(self) -> dict[str, Any]:
        tuned = self.session.end_row()
        measurement = None
        if self._measurer is not None and self._measurer.rounds_done:
            m = self._measurer.result()
            measurement = {"timer": m.timer.value, "samples": list(m.samples_us),
                           "samples_per_round": m.samples_per_round, "launches_per_sample": m.launches_per_sample,
                           "warmup_calls": m.warmup_calls, "l2": m.l2.value, "shift_bytes": list(m.shift_bytes),
                           "markers": list(m.markers), "launch_state_us": list(m.launch_state_us)}
        self._prepared, self._measurer = None, None
        self.unshare(release=True)  # only held if the parent never said the other side was done
        return {"autotune": tuned.to_dict(), "autotune_markers": list(tuned.markers), "measurement": measurement}

    def abort(self) -> dict[str, Any]:
        if self._prepared is not None or self._measurer is not None:
            self.session.end_row()
        self._prepared, self._measurer = None, None
        self.unshare(release=True)
        return {}

    def close(self) -> None:
        if self._ir is not None:
            self._ir.close()
        self._stack.close()
