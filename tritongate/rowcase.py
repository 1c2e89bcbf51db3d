"""One row's case, before and after measurement: shared by the single-process runner and by
the paired run's workers.

``prepare_row`` seeds everything, builds the inputs, launches once (JIT compile and
autotune happen here, outside both the check and the timing), launches once more while
recording which kernel variants ran, and checks the output against the torch reference.
It returns what the measurement needs (``make_fn``: fresh inputs from the same seed, then
a launch) and the row's fields so far; ``finish_row`` turns a measurement into a ``Row``.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import zlib
from dataclasses import dataclass
from typing import Any, Callable

from tritongate import markers
from tritongate.backends import Backend
from tritongate.errors import UsageError
from tritongate.markers import one_line
from tritongate.harness.measure import Measurement
from tritongate.harness.shared_inputs import unshareable as unshareable_inputs
from tritongate.ir.capture import CompiledSeen, RowIR, row_ir
from tritongate.ops.registry import Registry
from tritongate.ops.planting import PLANTED_DELAY_ENV, Plant, PlantPlan, make_plant, planted, row_key
from tritongate.preflight import PlannedRow
from tritongate.schema import Correctness, MeasurementInfo, PairInfo, Row, RowStatus, Variant
from tritongate.ir.variants import LaunchRecorder

BASE_SEED = 20261129
PLANTED_WORK_ENV = "TRITONGATE_PLANTED_WORK"
MAX_PLANTED_WORK = 1000


def row_seed(op: str, case: str, dtype: str) -> int:
    """Stable per row, independent of which other rows run."""
    return (BASE_SEED + zlib.crc32(f"{op}|{case}|{dtype}".encode())) & 0x7FFFFFFF


def seed_everything(seed: int) -> None:
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def planted_work() -> int:
    """A test knob: every launch of every row runs its kernels this many times (default 1).
    It plants a slowdown of known size with byte-identical binaries, so it is recorded in
    each row's params (which makes the row's work differ from an unplanted run's)."""
    text = os.environ.get(PLANTED_WORK_ENV, "1").strip() or "1"
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_PLANTED_WORK:  # a billion launches per launch is a hang, not a test
        raise UsageError(f"{PLANTED_WORK_ENV}={text[:40]!r}: expected a whole number >= 1 and <= "
                         f"{MAX_PLANTED_WORK} (launches per launch)")
    return value


def _row_plant(item: PlannedRow, spec: Any, backend: Backend, tdevice: Any, plan: PlantPlan | None) -> Plant | None:
    """The row's planted delay in ``plan`` (calibration), or None."""
    delay = plan.delay_for(item.op, item.case, item.dtype) if plan is not None else None
    if delay is None:
        return None
    if not spec.plantable:
        raise ValueError(f"{item.op} cannot plant a delay ({PLANTED_DELAY_ENV} lists "
                         f"{row_key(item.op, item.case, item.dtype)}); only builtin ops can")
    return make_plant(delay, tdevice, in_kernel=not backend.interpreter)


def tuning_context(backend: Backend) -> contextlib.AbstractContextManager[Any]:
    """The interpreter has no driver to benchmark autotune configs: use the host timer."""
    if backend.interpreter:
        from tritongate.autotune.hostbench import host_benchmarker

        return host_benchmarker()
    return contextlib.nullcontext()


def describe(exc: BaseException, limit: int = 200) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {one_line(text, limit)}" if text else type(exc).__name__


@dataclass(frozen=True)
class CaseLaunch:
    """The row's launch on one fresh build of its inputs; ``tensors``: everything it reads or
    writes (``Case.tensors``), so a paired round can share them with the other side."""

    launch: Callable[[], object]
    tensors: tuple[Any, ...] = ()

    def __call__(self) -> object:
        return self.launch()


@dataclass
class PreparedRow:
    fields: dict[str, Any]  # op, case, dtype, timer, params, flops, bytes
    make_fn: Callable[[], CaseLaunch]
    variants: tuple[Variant, ...]
    correctness: Correctness
    unshareable: str = ""  # why the inputs cannot be shared with another worker ("" when they can)


def _repeat(launch: Callable[[], object], times: int) -> Callable[[], object]:
    if times == 1:
        return launch

    def repeated() -> None:
        for _ in range(times):
            launch()
    return repeated


def prepare_row(item: PlannedRow, backend: Backend, device: Any, device_index: int = 0, *,
                registry: Registry | None = None, ir_sink: Callable[[RowIR], None] | None = None,
                plan: PlantPlan | None = None) -> PreparedRow:
    """Build, compile/tune, record variants and check correctness. Raises what the op raises.
    ``registry``: the suite's ops (builtin plus its modules'); default the builtin ones.
    ``ir_sink`` receives the row's compiled variants (launched and sweep losers) with their
    TTGIR, also when the row fails part-way: what compiled before a crash is kept. ``plan``: the
    process's planted-delay plan (``planting.load_plan``, read once by the caller), or None."""
    import torch

    from tritongate.ir.capture import observe_compiled
    from tritongate.ir.variants import record_launches

    if registry is None:
        from tritongate.ops.builtin import REGISTRY as registry
    spec = registry.get(item.op)
    dtype = getattr(torch, item.dtype)
    tdevice = torch.device(backend.torch_device, device_index) \
        if backend.torch_device != "cpu" else torch.device("cpu")
    seed = row_seed(item.op, item.case, item.dtype)
    itemsize = torch.empty((), dtype=dtype).element_size()
    work = planted_work()
    params: dict[str, Any] = {"shape": list(item.shape), "seed": seed}
    if work != 1:
        params["planted_work"] = work
    plant = _row_plant(item, spec, backend, tdevice, plan)
    if plant is not None:
        params["planted_delay_ns"] = plant.delay_ns
        if plant.in_kernel:  # what the spin is on this GPU: the clock it was converted at shows in the data
            params["planted_cycles"] = plant.cycles
    fields = dict(op=item.op, case=item.case, dtype=item.dtype, timer=backend.timer.value, params=params,
                  flops=spec.flops(item.shape) if spec.flops else None,
                  bytes=float(spec.bytes(item.shape, itemsize)))

    def make_fn() -> CaseLaunch:
        gen = torch.Generator(device=tdevice).manual_seed(seed)
        with planted(plant):
            built = spec.build(item.shape, dtype, tdevice, gen)
        return CaseLaunch(_repeat(built.launch, work), tuple(built.tensors))

    seed_everything(seed)
    with planted(plant):
        case = spec.build(item.shape, dtype, tdevice, torch.Generator(device=tdevice).manual_seed(seed))
    launch = _repeat(case.launch, work)
    seen: CompiledSeen | None = None
    launches: LaunchRecorder | None = None
    recorded = False
    try:
        with observe_compiled() as seen:
            launch()  # compiles and tunes: outside both the check and the timing
        with record_launches() as launches:
            launch()
        recorded = True
    finally:
        if ir_sink is not None and seen is not None:
            _hand_over_ir(ir_sink, seen, launches, item, recorded=recorded)
    device.synchronize()
    correctness = check_output(case, spec.tolerance.get(item.dtype, (1e-2, 1e-2)))
    unshareable = unshareable_inputs(case.tensors) if tdevice.type == "cuda" else f"inputs on {tdevice.type}"
    return PreparedRow(fields=fields, make_fn=make_fn, variants=launches.variants(), correctness=correctness,
                       unshareable=unshareable)


def _hand_over_ir(sink: Callable[[RowIR], None], seen: CompiledSeen, launches: LaunchRecorder | None,
                  item: PlannedRow, *, recorded: bool) -> None:
    """The row's IR to the store. A row that stopped before its recording pass ended keeps
    the IR of everything it compiled (what a crash report needs), none of it a loser."""
    if launches is not None:  # launched variants compiled in an earlier row are not in `seen`
        for fn, compiled in launches.compiled.values():
            seen.add(fn, compiled)
    counts = dict(launches.compiled_launches) if recorded and launches is not None else None
    sink(row_ir(seen, counts, case=item.case, row=f"{item.op}/{item.dtype}"))


def finish_row(prepared: PreparedRow, m: Measurement, *, pairing: PairInfo | None = None) -> Row:
    row_markers = list(m.markers)
    if not prepared.correctness.ok:
        row_markers.append(markers.make(markers.CORRECTNESS_MISMATCH, reason=prepared.correctness.detail))
    info = MeasurementInfo(launches_per_sample=m.launches_per_sample, samples_per_round=m.samples_per_round,
                           warmup_calls=m.warmup_calls, l2=m.l2.value, shift_bytes=m.shift_bytes,
                           pairing=pairing, launch_state_us=m.launch_state_us)
    return Row(**{**prepared.fields, "timer": m.timer.value}, samples=m.samples_us, markers=tuple(row_markers),
               measurement=info, correctness=prepared.correctness, variants=prepared.variants)


def error_row(item: PlannedRow, backend: Backend, error: str, *, status: RowStatus = RowStatus.ERROR,
              marker_kind: str = markers.ROW_ERROR, **marker_fields: str) -> Row:
    """A row that failed: kept as data, with its marker."""
    return Row(op=item.op, case=item.case, dtype=item.dtype, timer=backend.timer.value,
               params={"shape": list(item.shape), "seed": row_seed(item.op, item.case, item.dtype)},
               samples=(), status=status, error=error,
               markers=(markers.make(marker_kind, **marker_fields, reason=error),))


def check_output(case: Any, tolerance: tuple[float, float]) -> Correctness:
    import torch

    atol, rtol = tolerance
    got = case.output().float()
    want = case.reference().float()
    if got.shape != want.shape:
        return Correctness(ok=False, atol=atol, rtol=rtol,
                           detail=f"shape {tuple(got.shape)} != reference {tuple(want.shape)}")
    diff = (got - want).abs()
    max_err = float(diff.max()) if diff.numel() else 0.0
    # a NaN or inf in the reference makes the largest difference NaN or inf: only then is the
    # whole reference scanned (once per row, for every op), not on every row that matches
    if not math.isfinite(max_err) and not bool(torch.isfinite(want).all()):
        return Correctness(ok=False, atol=atol, rtol=rtol,
                           detail="non-finite values in the reference: the op's reference() or its inputs are wrong")
    finite = bool(torch.isfinite(got).all())
    bad = int((diff > atol + rtol * want.abs()).sum()) if finite else got.numel()
    ok = finite and bad == 0
    detail = "" if ok else (f"{bad} of {got.numel()} elements outside atol={atol} rtol={rtol}, "
                            f"max abs err {max_err:.3g}" if finite else "non-finite values in the output")
    return Correctness(ok=ok, max_abs_err=max_err if finite else None, atol=atol, rtol=rtol, detail=detail)
