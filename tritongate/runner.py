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
import random
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

from tritongate import markers
from tritongate.atomicio import write_text_atomic
from tritongate.autotune.records import RecordSet, load_records, write_records
from tritongate.autotune.session import AutotuneSession, autotune_session
from tritongate.autotune.tuner_cache import open_tuner_cache
from tritongate.backends import Backend, default_measure_config, make_device, prepare_environment
from tritongate.errors import GateError, MeasurementError
from tritongate.harness.cuda_errors import is_fatal, one_line
from tritongate.harness.measure import MeasureConfig, measure
from tritongate.identity import codegen_env, compiler_ref, config_dict, host, software, source_commit
from tritongate.preflight import PlannedRow, check_out_dir, plan_rows
from tritongate.rundir import LOG, RunWriter, new_run_dir
from tritongate.runlog import RunLog
from tritongate.schema import Correctness, MeasurementInfo, Row, RowStatus
from tritongate.suites import load_suite

BASE_SEED = 20261129
UTILIZATION_RETRIES = 5


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

    @property
    def mode(self) -> str:
        return "replay" if self.replay_from is not None else "record"


@dataclass(frozen=True)
class Progress:
    """One event for the caller's progress display."""

    kind: str  # "start" | "row_start" | "row_done" | "finish"
    index: int = 0
    total: int = 0
    planned: PlannedRow | None = None
    row: Row | None = None
    message: str = ""


ProgressFn = Callable[[Progress], None]


@dataclass
class RunOutcome:
    path: Path
    rows: list[Row] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def flagged(self) -> list[Row]:
        return [r for r in self.rows if r.markers or r.status is not RowStatus.OK]


def row_seed(op: str, case: str, dtype: str) -> int:
    """Stable per row, independent of which other rows run."""
    return (BASE_SEED + zlib.crc32(f"{op}|{case}|{dtype}".encode())) & 0x7FFFFFFF


def seed_everything(seed: int) -> None:
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _row_line(row: Row) -> str:
    s = row.summary
    state = "SUCCESS" if row.status is RowStatus.OK and not row.markers else "FLAGGED" \
        if row.status is RowStatus.OK else "FAILED"
    timing = f"median {s.median:.3f} us IQR [{s.q1:.3f}, {s.q3:.3f}] n={s.n}" if s else row.error
    return f"{state} {row.op} case={row.case} dtype={row.dtype} timer={row.timer} {timing}"


class Runner:
    def __init__(self, request: RunRequest, progress: ProgressFn | None = None) -> None:
        self.request = request
        self._progress = progress or (lambda event: None)

    # -- set-up ----------------------------------------------------------------------------
    def prepare(self) -> tuple[list[PlannedRow], Any, Any, RecordSet | None]:
        """Every preflight check, in order; returns the planned rows, suite, device and the
        autotune records to replay (None in record mode)."""
        req = self.request
        prepare_environment(req.backend)
        from tritongate.ops.builtin import REGISTRY  # kernels are defined after the env is set

        suite = load_suite(req.suite, shape_file=req.shape_file)
        planned = plan_rows(suite, REGISTRY, req.backend, only_ops=req.only_ops or None,
                            only_dtypes=req.only_dtypes or None)
        records = load_records(req.replay_from, backend=req.backend.name) if req.replay_from else None
        check_out_dir(req.out)
        device = make_device(req.backend, req.device_index)
        return planned, suite, device, records

    def run(self) -> RunOutcome:
        planned, suite, device, records = self.prepare()
        req = self.request
        config = req.config or default_measure_config(req.backend)
        gpu_before = self._gpu_state(device, check_idle_now=True)
        tuner_cache = open_tuner_cache(req.isolate_tuner_cache)
        try:
            return self._run(planned, suite, device, records, config, gpu_before, tuner_cache)
        finally:
            tuner_cache.close()

    def _run(self, planned, suite, device, records, config, gpu_before, tuner_cache) -> RunOutcome:
        req = self.request
        path = new_run_dir(req.out, suite.name)
        identity = {
            "suite": {"name": suite.name, "path": str(suite.path), "shape_file": str(suite.shape_file),
                      "digest": suite.digest, "description": suite.description},
            "backend": req.backend.name, "device": getattr(device, "name", "host"),
            "timer": req.backend.timer.value, "measure_config": config_dict(config),
            "compiler_ref": compiler_ref(), "commit": source_commit(), "software": software(), "host": host(),
            "codegen_env": codegen_env(), "gpu_state_before": gpu_before,
            "started_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "replay_from": str(records.run_dir.resolve()) if records else None,
            "replay_record": records.meta if records else None,
            "tuner_cache": tuner_cache.to_dict(),
        }
        write_text_atomic(path / "shapes.yaml", yaml.safe_dump(suite.shapes_document(), sort_keys=False))
        from tritongate.ops.builtin import autotuners

        for tuner in autotuners():  # a record run tunes live, even in a process that tuned before
            tuner.cache.clear()
        writer = RunWriter(path, identity, mode=req.mode)
        outcome = RunOutcome(path=path)
        session = AutotuneSession(req.mode, records)
        t0 = time.perf_counter()
        with RunLog(path / LOG) as log:
            replay = f"  replay_from={identity['replay_from']}" if records else ""
            log.write(f"tritongate run  mode={req.mode}  suite={suite.name}  backend={req.backend.name}  "
                      f"timer={req.backend.timer.value}  device={identity['device']}  "
                      f"rows={len(planned)}  compiler={identity['compiler_ref']}{replay}")
            self._progress(Progress("start", total=len(planned), message=str(path)))
            try:
                with autotune_session(session):
                    self._run_rows(planned, device, config, gpu_before, writer, log, outcome, session)
                if req.mode == "record":
                    write_records(path, session.records(), {
                        "backend": req.backend.name, "device": identity["device"],
                        "triton": identity["software"]["triton"], "run": path.name, "suite": suite.name})
            except BaseException as exc:
                why = describe(exc)
                writer.fail(why)
                log.write(f"RUN_FAILED {why}")
                raise
            outcome.wall_s = time.perf_counter() - t0
            writer.set_identity_extra({"gpu_state_after": self._gpu_state(device, check_idle_now=False),
                                       "wall_s": round(outcome.wall_s, 3)})
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
        from tritongate.harness.gpu_state import check_idle, read_gpu_state

        try:
            import torch

            uuid = str(torch.cuda.get_device_properties(self.request.device_index).uuid)
            uuid = uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"
            state = read_gpu_state(uuid)
            # Utilization is averaged over nvidia-smi's last sample period, so work this
            # process just finished (a previous run) can still show: look again briefly.
            for _ in range(UTILIZATION_RETRIES):
                if not check_idle_now or state.other_pids or not state.busy_reasons:
                    break
                time.sleep(1.0)
                state = read_gpu_state(uuid)
        except Exception as exc:  # noqa: BLE001 - no nvidia-smi: record that, don't fail
            return {"error": f"{type(exc).__name__}: {one_line(str(exc))}"}
        if check_idle_now:
            check_idle(state, allow_busy=self.request.allow_busy_gpu)
        return state.to_dict()

    # -- rows ------------------------------------------------------------------------------
    def _run_rows(self, planned, device, config, gpu_before, writer, log, outcome, session) -> None:
        busy = bool(gpu_before and gpu_before.get("busy_reasons"))
        throttled = bool(gpu_before and gpu_before.get("throttled"))
        for i, item in enumerate(planned):
            self._progress(Progress("row_start", index=i, total=len(planned), planned=item))
            session.begin_row(item.op, item.case, item.dtype)
            k = session.replay.launches.get((item.op, item.case, item.dtype)) if session.replay else None
            row = self._run_row(item, device, config, launches_per_sample=k)
            tuned = session.end_row()
            row = dataclasses.replace(row, markers=row.markers + tuple(tuned.markers),
                                      autotune=tuned.to_dict())
            if busy:
                row = _with_marker(row, markers.make(markers.GPU_BUSY, reason="; ".join(gpu_before["busy_reasons"])))
            if throttled:
                row = _with_marker(row, markers.make(markers.GPU_THROTTLED,
                                                     reason=" ".join(gpu_before["throttle_reasons"])))
            writer.add(row)
            outcome.rows.append(row)
            log.write(_row_line(row))
            for m in row.markers:
                log.write(m)
            self._progress(Progress("row_done", index=i, total=len(planned), planned=item, row=row))
            if row.status is RowStatus.ERROR and is_fatal(row.error):
                raise MeasurementError(f"fatal device error in {item.op} {item.case} {item.dtype}: "
                                       f"{row.error}; the device context is unusable, stopping the run")

    def _run_row(self, item: PlannedRow, device: Any, config: MeasureConfig,
                 launches_per_sample: int | None = None) -> Row:
        import torch

        from tritongate.ops.builtin import REGISTRY
        from tritongate.variants import record_launches

        backend = self.request.backend
        spec = REGISTRY.get(item.op)
        dtype = getattr(torch, item.dtype)
        tdevice = torch.device(backend.torch_device, self.request.device_index) \
            if backend.torch_device != "cpu" else torch.device("cpu")
        seed = row_seed(item.op, item.case, item.dtype)
        itemsize = torch.empty((), dtype=dtype).element_size()
        base = dict(op=item.op, case=item.case, dtype=item.dtype, timer=backend.timer.value,
                    params={"shape": list(item.shape), "seed": seed},
                    flops=spec.flops(item.shape) if spec.flops else None,
                    bytes=float(spec.bytes(item.shape, itemsize)))

        def make_fn():
            gen = torch.Generator(device=tdevice).manual_seed(seed)
            return spec.build(item.shape, dtype, tdevice, gen).launch

        try:
            with _tuning(backend):
                seed_everything(seed)
                case = spec.build(item.shape, dtype, tdevice, torch.Generator(device=tdevice).manual_seed(seed))
                case.launch()  # compiles and tunes: outside both the check and the timing
                with record_launches() as launches:
                    case.launch()
                device.synchronize()
                correctness = _check(case, spec.tolerance.get(item.dtype, (1e-2, 1e-2)))
                del case
                m = measure(make_fn, device=device, timer=backend.timer, config=config,
                            launches_per_sample=launches_per_sample)
        except GateError:
            raise
        except Exception as exc:  # noqa: BLE001 - a failing row is data, not a crash
            error = describe(exc, 500)
            return Row(**base, samples=(), status=RowStatus.ERROR, error=error,
                       markers=(markers.make(markers.ROW_ERROR, reason=error),))
        row_markers = list(m.markers)
        if not correctness.ok:
            row_markers.append(markers.make(markers.CORRECTNESS_MISMATCH, reason=correctness.detail))
        info = MeasurementInfo(launches_per_sample=m.launches_per_sample,
                               samples_per_round=m.samples_per_round, warmup_calls=m.warmup_calls,
                               l2=m.l2.value, shift_bytes=m.shift_bytes)
        return Row(**{**base, "timer": m.timer.value}, samples=m.samples_us, markers=tuple(row_markers),
                   measurement=info, correctness=correctness, variants=launches.variants())


def describe(exc: BaseException, limit: int = 200) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {one_line(text, limit)}" if text else type(exc).__name__


def _with_marker(row: Row, marker: str) -> Row:
    return dataclasses.replace(row, markers=row.markers + (marker,))


def _tuning(backend: Backend):
    """The interpreter has no driver to benchmark autotune configs: use the host timer."""
    import contextlib

    if backend.interpreter:
        from tritongate.autotune.hostbench import host_benchmarker

        return host_benchmarker()
    return contextlib.nullcontext()


def _check(case: Any, tolerance: tuple[float, float]) -> Correctness:
    import torch

    atol, rtol = tolerance
    got = case.output().float()
    want = case.reference().float()
    if got.shape != want.shape:
        return Correctness(ok=False, atol=atol, rtol=rtol,
                           detail=f"shape {tuple(got.shape)} != reference {tuple(want.shape)}")
    diff = (got - want).abs()
    finite = bool(torch.isfinite(got).all())
    max_err = float(diff.max()) if diff.numel() else 0.0
    bad = int((diff > atol + rtol * want.abs()).sum()) if finite else got.numel()
    ok = finite and bad == 0
    detail = "" if ok else (f"{bad} of {got.numel()} elements outside atol={atol} rtol={rtol}, "
                            f"max abs err {max_err:.3g}" if finite else "non-finite values in the output")
    return Correctness(ok=ok, max_abs_err=max_err if finite else None, atol=atol, rtol=rtol, detail=detail)


def run_suite(request: RunRequest, progress: ProgressFn | None = None) -> RunOutcome:
    return Runner(request, progress).run()


