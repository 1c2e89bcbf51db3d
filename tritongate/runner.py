"""Turn a suite into a run directory: one process, one device, rows measured in order.

Per row: seed everything, build inputs, check correctness against the torch reference
(a mismatch is a marker, the row is kept), record which kernel variants it launched, then
measure with the harness. ``results.json`` is rewritten atomically after every row, so a
crash loses at most the row in flight. The library reports progress through a callback
and never prints.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tritongate.atomicio import write_text_atomic
from tritongate.autotune.parallel_sweep import SweepOutcome
from tritongate.autotune.records import RecordSet, load_records, write_records
from tritongate.autotune.session import AutotuneSession, autotune_session
from tritongate.autotune.tuner_cache import open_tuner_cache
from tritongate.backends import (Backend, capture_only_requested, default_measure_config, make_device,
                                 prepare_environment)
from tritongate.errors import GateError, MeasurementError, PreflightError
from tritongate.harness.cuda_errors import is_fatal
from tritongate.harness.measure import MeasureConfig, measure
from tritongate.identity import codegen_env, compiler_ref, config_dict, host, software, source_commit
from tritongate.ops import user as user_ops
from tritongate.interpreter_cost import slow_rows
from tritongate.ir.store import IRStore
from tritongate.ops.registry import Registry
from tritongate.preflight import PlannedRow, check_out_dir, plan_rows
from tritongate.ops.planting import PlantPlan, load_plan
from tritongate.rundir import LOG, RunWriter, new_run_dir
from tritongate.progress import Progress, ProgressFn, row_line
from tritongate.runlog import RunLog
from tritongate.rowcase import describe, error_row, finish_row, planted_work, prepare_row, tuning_context
from tritongate.schema import Row, RowStatus
from tritongate.suites import load_suite



@dataclass(frozen=True)
class RunRequest:
    suite: str
    backend: Backend
    out: Path
    shape_file: Path | None = None
    only_ops: tuple[str, ...] = ()
    only_dtypes: tuple[str, ...] = ()
    config: MeasureConfig | None = None  # None: the backend's default
    allow_busy_gpu: bool = False
    device_index: int = 0
    replay_from: Path | None = None  # a record run: replay its autotune configs
    isolate_tuner_cache: bool = False
    only_rows: frozenset[tuple[str, str, str]] | None = None  # (op, case, dtype): a shard of a sweep or batch
    sweep_gpus: int = 0  # record mode: spread the autotune sweep over this many GPUs (< 2: serial)

    @property
    def mode(self) -> str:
        return "replay" if self.replay_from is not None else "record"




@dataclass
class RunOutcome:
    path: Path
    rows: list[Row] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def flagged(self) -> list[Row]:
        return [r for r in self.rows if r.markers or r.status is not RowStatus.OK]


class Runner:
    def __init__(self, request: RunRequest, progress: ProgressFn | None = None) -> None:
        self.request = request
        self._progress = progress or (lambda event: None)
        self._registry: Registry | None = None  # the suite's ops (builtin plus its modules'), set by prepare
        self._partial = False  # the filters left out rows of the suite (set by prepare)
        self._ir: IRStore | None = None  # the run's ttgir/ (GPU backends)
        self._plan: PlantPlan | None = None  # TRITONGATE_PLANTED_DELAY's plan, read once when the run starts
        self._op_sample_s: dict[str, float] = {}  # ops whose suite sets their own sample length (set by _run)

    # -- set-up ----------------------------------------------------------------------------
    def prepare(self) -> tuple[list[PlannedRow], Any, Any, RecordSet | None]:
        """Every preflight check, in order; returns the planned rows, suite, device and the
        autotune records to replay (None in record mode)."""
        req = self.request
        prepare_environment(req.backend)
        suite = load_suite(req.suite, shape_file=req.shape_file)
        # after prepare_environment: the kernels (builtin and the user's) are defined on import
        self._registry = user_ops.registry_for(suite.modules, search_dir=suite.path.parent)
        planned = plan_rows(suite, self._registry, req.backend, only_ops=req.only_ops or None,
                            only_dtypes=req.only_dtypes or None)
        if req.only_rows is not None:
            planned = _only_rows(planned, req.only_rows, suite.path)
        self._partial = self._part_of_suite(suite, planned)
        records = load_records(req.replay_from, backend=req.backend.name) if req.replay_from else None
        check_out_dir(req.out)
        device = make_device(req.backend, req.device_index)
        return planned, suite, device, records

    def _part_of_suite(self, suite: Any, planned: list[PlannedRow]) -> bool:
        """Whether the filters left out rows of the suite (``--ops add,softmax`` naming every op of
        a two-op suite leaves none out); a run of part of it is never published as its baseline."""
        req = self.request
        if not (req.only_ops or req.only_dtypes or req.only_rows is not None):
            return False
        try:
            full = plan_rows(suite, self._registry, req.backend)
        except PreflightError:  # a row outside the filters the backend refuses: the whole suite cannot run
            return True
        return {(p.op, p.case, p.dtype) for p in full} != {(p.op, p.case, p.dtype) for p in planned}

    def run(self) -> RunOutcome:
        req = self.request
        # before the suite loads: a provider suite imports flag_gems, which reads its tuner
        # DB's location once, at import
        tuner_cache = open_tuner_cache(req.isolate_tuner_cache)
        try:
            planned, suite, device, records = self.prepare()
            config = req.config or default_measure_config(req.backend)
            gpu_before = self._gpu_state(device, check_idle_now=True)
            sweep = self._parallel_sweep(planned)
            return self._run(planned, suite, device, records, config, gpu_before, tuner_cache, sweep)
        finally:
            tuner_cache.close()

    def _parallel_sweep(self, planned: list[PlannedRow]) -> SweepOutcome | None:
        """Record mode with --sweep-gpus N: the winners of N parallel shard sweeps (or why not)."""
        from tritongate.autotune import parallel_sweep as ps

        req = self.request
        if req.sweep_gpus < 2 or req.mode != "record":
            if req.sweep_gpus >= 2:
                return ps.SweepOutcome("refused", ps.refusal(req.sweep_gpus, replaying=True,
                                                             backend_name=req.backend.name, devices=()))
            return None
        devices = ps.visible_devices(req.backend.name)
        why = ps.refusal(req.sweep_gpus, replaying=False, backend_name=req.backend.name, devices=devices)
        if why:
            return ps.SweepOutcome("refused", why)
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        self._progress(Progress("note", message=f"parallel sweep over {min(req.sweep_gpus, len(devices))} devices ..."))
        return ps.run_sweep(suite=req.suite, backend_name=req.backend.name, shape_file=req.shape_file,
                            rows=[(p.op, p.case, p.dtype) for p in planned], devices=devices, gpus=req.sweep_gpus,
                            work_dir=Path(req.out) / f".sweep-{stamp}")

    def _run(self, planned, suite, device, records, config, gpu_before, tuner_cache,
             sweep: SweepOutcome | None = None) -> RunOutcome:
        req = self.request
        self._plan = plan = load_plan()  # before the run's directory: a bad plan leaves nothing behind
        self._op_sample_s = {op.name: op.sample_s for op in suite.ops if op.sample_s is not None}
        path = new_run_dir(req.out, suite.name)
        modules = suite.modules
        suite_ident = {"name": suite.name, "path": str(suite.path),
                       "shape_file": str(suite.shape_file) if suite.shape_file else None,  # None: inline shapes
                       "digest": suite.digest, "description": suite.description}
        if modules:  # the digest covers the YAML only: record which code the user ops ran
            suite_ident["modules"] = user_ops.provenance(modules)
        if self._op_sample_s:  # a night's per-op lengths, for history to see them change
            suite_ident["sample_ms"] = {op: s * 1e3 for op, s in sorted(self._op_sample_s.items())}
        if suite.provider:
            suite_ident.update(provider=suite.provider, inventory=str(suite.inventory) if suite.inventory else None,
                               dismiss=str(suite.dismiss) if suite.dismiss else None,
                               dismissed=list(suite.dismissed), shape_sources=dict(suite.shape_sources))
        identity = {
            "suite": suite_ident,
            "backend": req.backend.name, "device": getattr(device, "name", "host"),
            "timer": req.backend.timer.value, "measure_config": config_dict(config),
            "compiler_ref": compiler_ref(), "commit": source_commit(), "software": software(), "host": host(),
            "codegen_env": codegen_env(), "gpu_state_before": gpu_before,
            # CUDA: the throwaway graphs made and the launch state before and after them
            "graph_state": device.graph_state() if hasattr(device, "graph_state") else None,
            "started_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "replay_from": str(records.run_dir.resolve()) if records else None,
            "replay_record": records.meta if records else None,
            "tuner_cache": tuner_cache.to_dict(),
            "parallel_sweep": sweep.to_dict() if sweep is not None else None,
        }
        if capture_only_requested(req.backend.name):  # an IR index: never a baseline
            identity["capture_only"] = True
        if self._partial:  # a part of the suite: never its baseline
            identity["selection"] = {"ops": list(req.only_ops), "dtypes": list(req.only_dtypes),
                                     "rows": len(req.only_rows) if req.only_rows is not None else None}
        if plan is not None:
            identity["planted_delay"] = plan.identity()
        work = planted_work()
        if work != 1:  # as a paired run's sides record it: a planted run never passes for a plain one
            identity["planted_work"] = work
        if suite.provider == "flaggems":
            from tritongate.ops.providers import flaggems

            identity["flaggems"] = flaggems.identity()
        write_text_atomic(path / "shapes.yaml", yaml.safe_dump(suite.shapes_document(), sort_keys=False))
        from tritongate.ops.builtin import autotuners

        # a record run tunes live, even in a process that tuned before
        for tuner in autotuners() + user_ops.autotuners(modules):
            tuner.cache.clear()
        writer = RunWriter(path, identity, mode=req.mode)
        # the interpreter compiles nothing: its ttgir/ holds the index only (each launch's GPU
        # specialization, ir.specialize), enough for `tritongate ir --from` to compile it
        self._ir = IRStore(path)
        outcome = RunOutcome(path=path)
        session = AutotuneSession(req.mode, records,
                                  presweep=sweep.records if sweep is not None and sweep.status == "used" else None)
        t0 = time.perf_counter()
        with RunLog(path / LOG) as log:
            replay = f"  replay_from={identity['replay_from']}" if records else ""
            log.write(f"tritongate run  mode={req.mode}  suite={suite.name}  backend={req.backend.name}  "
                      f"timer={req.backend.timer.value}  device={identity['device']}  "
                      f"rows={len(planned)}  compiler={identity['compiler_ref']}{replay}")
            if sweep is not None:
                log.write(sweep.log_line())
                self._progress(Progress("note", message=sweep.log_line()))
            self._progress(Progress("start", total=len(planned), message=str(path)))
            if req.backend.interpreter:
                for slow in slow_rows(planned, self._registry):
                    log.write(f"NOTE {slow.text()}")
                    self._progress(Progress("note", message=slow.text()))
            try:
                with autotune_session(session):
                    self._run_rows(planned, device, config, gpu_before, writer, log, outcome, session)
                if req.mode == "record":
                    write_records(path, session.records(), {
                        "backend": req.backend.name, "device": identity["device"],
                        "triton": identity["software"]["triton"], "run": path.name, "suite": suite.name})
            except BaseException as exc:
                why = describe(exc)
                if self._ir is not None:
                    self._ir.close()  # what compiled so far, the failing row's compiles included
                writer.fail(why)
                log.write(f"RUN_FAILED {why}")
                exc.add_note(f"partial run directory (loads as incomplete): {path}")
                raise
            outcome.wall_s = time.perf_counter() - t0
            extra = {"gpu_state_after": self._gpu_state(device, check_idle_now=False),
                     "wall_s": round(outcome.wall_s, 3)}
            if hasattr(device, "gpu_turns"):  # CUDA: the partner's turns (harness.gpu_turns), None without one
                extra["gpu_turns"] = device.gpu_turns()
            if self._ir is not None:
                self._ir.close()
                extra["ir"] = {"variants": len(self._ir.variants), "notes": self._ir.notes[:20]}
            writer.set_identity_extra(extra)
            writer.finish()
            log.write(f"RUN_COMPLETE rows={len(outcome.rows)} flagged={len(outcome.flagged)} "
                      f"wall_s={outcome.wall_s:.1f}")
        self._progress(Progress("finish", total=len(planned), message=str(path)))
        return outcome

    def _gpu_state(self, device: Any, *, check_idle_now: bool) -> dict[str, Any] | None:
        """nvidia-smi's view of the GPU; before measuring, a busy GPU is an error. (After
        the run our own work shows as utilization, so then it is only recorded.)"""
        if self.request.backend.name != "cuda":
            return None
        from tritongate.errors import GpuBusyError
        from tritongate.harness.gpu_state import read_gpu_state, read_idle_state
        from tritongate.harness.device import device_uuid

        try:
            uuid = device_uuid("cuda", device, self.request.device_index)
            own = device.own_pids() if hasattr(device, "own_pids") else None  # a GPU-turn partner is the run's own
            state = read_idle_state(uuid, own_pids=own, allow_busy=self.request.allow_busy_gpu) if check_idle_now \
                else read_gpu_state(uuid, own_pids=own)
        except GpuBusyError:
            raise
        except Exception as exc:  # noqa: BLE001 - no nvidia-smi: record that, don't fail
            return {"error": describe(exc)}
        return state.to_dict()

    # -- rows ------------------------------------------------------------------------------
    def _run_rows(self, planned, device, config, gpu_before, writer, log, outcome, session) -> None:
        from tritongate.harness.gpu_state import state_markers

        gpu_markers = state_markers(gpu_before)
        for i, item in enumerate(planned):
            self._progress(Progress("row_start", index=i, total=len(planned), planned=item))
            session.begin_row(item.op, item.case, item.dtype)
            k = session.replay.launches.get((item.op, item.case, item.dtype)) if session.replay else None
            own = self._op_sample_s.get(item.op)  # the suite's least sample length for this op
            row_config = config if own is None else \
                dataclasses.replace(config, target_sample_s=max(own, config.target_sample_s))
            row = self._run_row(item, device, row_config, launches_per_sample=k)
            tuned = session.end_row()
            row = dataclasses.replace(row, markers=row.markers + tuple(tuned.markers),
                                      autotune=tuned.to_dict())
            if gpu_markers:
                row = dataclasses.replace(row, markers=row.markers + gpu_markers)
            writer.add(row)
            outcome.rows.append(row)
            log.write(row_line(row))
            for m in row.markers:
                log.write(m)
            self._progress(Progress("row_done", index=i, total=len(planned), planned=item, row=row))
            if row.status is RowStatus.ERROR and is_fatal(row.error):
                raise MeasurementError(f"fatal device error in {item.op} {item.case} {item.dtype}: "
                                       f"{row.error}; the device context is unusable, stopping the run")

    def _run_row(self, item: PlannedRow, device: Any, config: MeasureConfig,
                 launches_per_sample: int | None = None) -> Row:
        backend = self.request.backend
        try:
            with tuning_context(backend):
                prepared = prepare_row(item, backend, device, self.request.device_index, registry=self._registry,
                                       ir_sink=self._ir.add if self._ir is not None else None, plan=self._plan)
                m = measure(prepared.make_fn, device=device, timer=backend.timer, config=config,
                            launches_per_sample=launches_per_sample)
        except GateError:
            raise
        except Exception as exc:  # noqa: BLE001 - a failing row is data, not a crash
            return error_row(item, backend, describe(exc, 500))
        except SystemExit as exc:  # the op's or the compiler's code called sys.exit: that row failed, as
            # a worker of a paired run that exits fails its row; left to rise, it ended the command with
            # the code it chose (0: "done", 1: "gate failed") over a run marked failed
            return error_row(item, backend, f"the measured code called sys.exit({exc.code!r}) "
                                            f"({describe(exc, 200)})")
        return finish_row(prepared, m)


def _only_rows(planned: list[PlannedRow], only: frozenset[tuple[str, str, str]], suite_path: Path) -> list[PlannedRow]:
    """The planned rows ``--only-rows`` names; a row it names that the selection lacks is refused
    (a run of none of them completed with 0 rows and exit 0, the help's "measured at least one")."""
    keys = {(p.op, p.case, p.dtype) for p in planned}
    unknown = sorted(only - keys)
    if unknown:
        shown = ", ".join(" ".join(k) for k in unknown[:3]) + (f" and {len(unknown) - 3} more" if len(unknown) > 3 else "")
        raise PreflightError("suite_empty", f"--only-rows names {len(unknown)} row(s) that {suite_path} (with --ops/"
                             f"--dtypes) does not have: {shown}; name rows as [op, case, dtype] of the suite "
                             "(case like '4096' or '8x512')")
    return [p for p in planned if (p.op, p.case, p.dtype) in only]


def run_suite(request: RunRequest, progress: ProgressFn | None = None) -> RunOutcome:
    return Runner(request, progress).run()


