"""What each FlagGems row launches on the record's GPU, learned on a host without one, and the
capture folder it is written to (``capture.json``: per row captured, or why not).

FlagGems cannot run on Triton's interpreter (its ``LibEntry`` walks ``.fn`` to a
``JITFunction``) and asks ``torch.cuda`` for the device at import. So the kernels stay real
``JITFunction``s and, with a stand-in for the record's GPU (``ir.standin_device``), each row
is built on the CPU and called twice as ``rowcase.prepare_row`` calls it on the GPU (the first
call tunes, the second is the recorded pass), with

- the record's autotune choices replayed (``autotune.session``): a tuner key the record lacks
  would sweep on the GPU, which cannot be reproduced here;
- every launch specialized for the record's target by the build's own binder and none
  executed (``ir.launchless``), ``LibEntry``'s cached launches counted as on the GPU;
- tensors answering as ``cuda:0`` to FlagGems and host reads of values refused (``ir.device_lens``).

A row is captured only when all of it ran so; otherwise it is reported with why, never
partly captured. ``LibEntry``'s caches are emptied before each row: each row is what a fresh
process launches (the pre-screen compares that with the record).
"""

from __future__ import annotations

import gc
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from tritongate.ir.capture import RowIR, row_ir
from tritongate.ir.launchless import NotCapturable, launchless_jit
from tritongate.ir.variants import LIBENTRY_MODULES

RowKey = tuple[str, str, str]  # (op, case, dtype)


@dataclass
class CaptureResult:
    """Per row, its IR (captured) or why it could not be; what the stand-in device answered."""
    target: str
    device: str
    captured: dict[RowKey, RowIR] = field(default_factory=dict)
    not_capturable: dict[RowKey, str] = field(default_factory=dict)
    device_queries: list[str] = field(default_factory=list)
    flag_gems: dict[str, Any] = field(default_factory=dict)


def _target_tuple(target: str) -> tuple[str, int | str, int]:
    from tritongate.ir.specialize import CAPTURE_TARGET_ENV, capture_target

    return capture_target({CAPTURE_TARGET_ENV: target})


def _reason(exc: BaseException) -> str:
    if isinstance(exc, NotCapturable):
        return str(exc)
    return f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"


def clear_libentry_caches() -> int:
    """Empty every FlagGems ``LibEntry``'s kernel cache (one dict, or one per device);
    returns how many entries were found."""
    classes = tuple(c for c in (getattr(sys.modules.get(m), "LibEntry", None) for m in LIBENTRY_MODULES)
                    if isinstance(c, type))
    if not classes:
        return 0
    found = 0
    for obj in gc.get_objects():
        if isinstance(obj, classes):
            cache = getattr(obj, "kernel_cache", None)
            for part in cache if isinstance(cache, (tuple, list)) else (cache,):
                if isinstance(part, dict):
                    part.clear()
            found += 1
    return found


def _takes_device(spec_name: str) -> bool:
    """A recipe passing the row's device as an argument: FlagGems would be given a CPU device
    where the GPU run gave ``cuda:0``."""
    from tritongate.ops.providers.flaggems import PREFIX
    from tritongate.ops.providers.flaggems_recipes import RECIPES, ROW_DEVICE

    rec = RECIPES.get(spec_name.removeprefix(PREFIX))
    return rec is not None and ROW_DEVICE in (*rec.args, *rec.kwargs.values())


def capture_row(spec: Any, shape: tuple[int, ...], dtype: str, session: Any,
                target: tuple[str, int | str, int]) -> RowIR:
    """One row's launched variants; ``NotCapturable`` (or what the op raised) when not known."""
    import torch

    from tritongate.ir.device_lens import gpu_lens
    from tritongate.ops.registry import case_id
    from tritongate.rowcase import row_seed, seed_everything

    case = case_id(shape)
    if _takes_device(spec.name):
        raise NotCapturable("the op is given the row's device, which is the CPU here")
    seed = row_seed(spec.name, case, dtype)
    seed_everything(seed)
    built = spec.build(shape, getattr(torch, dtype), torch.device("cpu"),
                       torch.Generator(device="cpu").manual_seed(seed))
    clear_libentry_caches()
    session.begin_row(spec.name, case, dtype)
    failure: BaseException | None = None
    try:
        with launchless_jit(target) as log, gpu_lens():
            built.launch()  # tunes (replayed) and fills LibEntry's cache, as the GPU's first call
            log.reset_launches()
            built.launch()  # the recorded pass
    except Exception as exc:  # noqa: BLE001 - told below, the replay's account first
        failure = exc
    tuned = session.end_row()
    if tuned.markers:  # a tuner fell back to sweeping, which needs the GPU
        raise NotCapturable(f"the record's autotune choice could not be replayed "
                            f"({'; '.join(tuned.markers)})") from failure
    if failure is not None:
        raise failure
    if not log.launches:
        raise NotCapturable("the op launched no Triton kernel")
    return row_ir(log.seen, dict(log.launches), case=case, row=f"{spec.name}/{dtype}")


def capture_rows(record: Path, suite_name: str, rows: Iterable[RowKey] | None, target: str) -> CaptureResult:
    """Every row of ``suite_name`` (or those of ``rows``) captured for ``record``'s GPU."""
    from tritongate.autotune.records import load_records
    from tritongate.autotune.session import REPLAY, AutotuneSession, autotune_session
    from tritongate.backends import BACKENDS
    from tritongate.ir.standin_device import profile_for, standin_cuda
    from tritongate.ops.providers import flaggems
    from tritongate.ops.registry import Registry, case_id
    from tritongate.preflight import plan_rows
    from tritongate.rundir import load_run
    from tritongate.suites import load_suite

    run = load_run(record)
    device = str(run.identity.get("device") or "")
    result = CaptureResult(target=target, device=device)
    wanted = set(rows) if rows is not None else {r.key for r in run.rows}
    suite = load_suite(suite_name)
    try:
        profile = profile_for(device, target)
    except NotCapturable as exc:
        result.not_capturable = {k: str(exc) for k in sorted(wanted)}
        return result
    records = load_records(record, backend=str(run.identity.get("backend") or "cuda"), run=run)
    flaggems.ensure_vendor("cuda")
    with standin_cuda(profile) as queries:
        try:
            specs = flaggems.op_specs("cuda")
        except Exception as exc:  # noqa: BLE001 - flag_gems failing at import: no row is known
            result.not_capturable = {k: f"importing flag_gems failed: {_reason(exc)}" for k in sorted(wanted)}
            result.device_queries = list(queries)
            return result
        result.flag_gems = flaggems.identity()
        registry = Registry()
        for spec in specs:
            registry.register(spec)
        planned = [p for p in plan_rows(suite, registry, BACKENDS["cuda"]) if (p.op, p.case, p.dtype) in wanted]
        session = AutotuneSession(REPLAY, records)
        target_tuple = _target_tuple(target)
        with autotune_session(session):
            for item in planned:
                key = (item.op, case_id(item.shape), item.dtype)
                try:
                    result.captured[key] = capture_row(registry.get(item.op), item.shape, item.dtype, session,
                                                       target_tuple)
                except Exception as exc:  # noqa: BLE001 - any failure: this row is not known
                    result.not_capturable[key] = _reason(exc)
        result.device_queries = list(queries)
    for key in sorted(wanted - set(result.captured) - set(result.not_capturable)):
        result.not_capturable[key] = "the suite has no such row"
    return result


CAPTURE_JSON = "capture.json"
SCHEMA_VERSION = 1


class CaptureDoc(BaseModel):
    """``capture.json``: what a provider capture took, per row, and what it could not (schema 1)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    schema_version: Literal[1] = SCHEMA_VERSION
    suite: str
    record: str
    target: str
    device: str
    flag_gems: dict[str, Any]
    versions: dict[str, str]
    captured: list[tuple[str, str, str, int]]  # op, case, dtype, launched variants
    not_capturable: list[tuple[str, str, str, str]]  # op, case, dtype, why
    device_queries: list[str]
    wall_s: float


def capture_document(result: CaptureResult, *, suite: str, record: Path, wall_s: float) -> CaptureDoc:
    import torch
    import triton

    return CaptureDoc(
        suite=suite, record=str(record), target=result.target, device=result.device, flag_gems=result.flag_gems,
        versions={"triton": triton.__version__, "torch": torch.__version__},
        captured=[(*k, len([v for v in ir.variants if v.launches > 0])) for k, ir in sorted(result.captured.items())],
        not_capturable=[(*k, why) for k, why in sorted(result.not_capturable.items())],
        device_queries=result.device_queries, wall_s=round(wall_s, 3))


def write_capture(result: CaptureResult, out: Path, *, suite: str, record: Path, wall_s: float) -> Path:
    """The capture's run directory under ``out``."""
    from tritongate.atomicio import write_text_atomic
    from tritongate.ir.index import INDEX, index_text
    from tritongate.ir.store import TTGIR_DIR, IRStore

    run_dir = Path(out) / f"{Path(suite).stem}_capture"
    (run_dir / TTGIR_DIR).mkdir(parents=True, exist_ok=True)
    store = IRStore(run_dir)
    for ir in result.captured.values():
        store.add(ir)
    store.close()
    if not (run_dir / TTGIR_DIR / INDEX).is_file():  # no row captured: an empty index, not a missing one
        write_text_atomic(run_dir / TTGIR_DIR / INDEX, index_text([]))
    doc = capture_document(result, suite=suite, record=record, wall_s=wall_s)
    write_text_atomic(run_dir / CAPTURE_JSON, doc.model_dump_json(indent=1) + "\n")
    return run_dir


def read_not_capturable(run_dir: Path) -> dict[RowKey, str]:
    """The rows a capture directory says it could not capture, with why (none if unreadable)."""
    try:
        doc = CaptureDoc.model_validate_json((Path(run_dir) / CAPTURE_JSON).read_bytes())
    except (OSError, ValidationError):
        return {}
    return {(op, case, dtype): why for op, case, dtype, why in doc.not_capturable}
