"""Device backends: names and aliases, visibility variable, timer, and how to reach the device.

Unknown names fail (like the seed's ``ZL_BACKEND``); ``auto`` picks ``cuda`` when a CUDA
device is visible and ``cpu`` otherwise. Only CUDA gets the graph timer: the others
time directly with device events (the seed refuses graphs off CUDA).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping

from tritongate.errors import PreflightError
from tritongate.harness.measure import MeasureConfig, TimerKind


@dataclass(frozen=True)
class Backend:
    name: str
    aliases: tuple[str, ...]
    visibility_var: str  # selects devices for this runtime
    torch_api: str  # torch.<api> module with Event/synchronize ("" for the host)
    torch_device: str  # torch device type the inputs live on
    timer: TimerKind
    extension: str = ""  # module that registers the device with torch, if any
    interpreter: bool = False
    unsupported_dtypes: tuple[str, ...] = ()


BACKENDS: dict[str, Backend] = {
    "cuda": Backend("cuda", ("nvidia", "gpu"), "CUDA_VISIBLE_DEVICES", "cuda", "cuda", TimerKind.CUDA_GRAPH),
    "rocm": Backend("rocm", ("amd", "hip"), "HIP_VISIBLE_DEVICES", "cuda", "cuda", TimerKind.CUDA_EVENTS),
    "musa": Backend("musa", ("mthreads", "moore"), "MUSA_VISIBLE_DEVICES", "musa", "musa",
                    TimerKind.CUDA_EVENTS, extension="torch_musa"),
    "ascend": Backend("ascend", ("npu", "huawei"), "ASCEND_RT_VISIBLE_DEVICES", "npu", "npu",
                      TimerKind.CUDA_EVENTS, extension="torch_npu"),
    # The interpreter computes on numpy, which has no bfloat16 (results come back as garbage).
    "cpu": Backend("cpu", ("interpreter", "interpret", "host"), "", "", "cpu", TimerKind.HOST_WALL,
                   interpreter=True, unsupported_dtypes=("bfloat16",)),
}

# The interpreter is slow and its host timings are noisy from round to round: short rounds,
# many of them (6 x 3 samples give each side the gate's minimum of 10, and a paired run
# enough pairs for a noise floor), so a paired CPU run can call a change. Odd: a round's
# median of two samples is their mean, and one 10x sample moved it (the smoke A/A's +7.61 %).
CPU_MEASURE = MeasureConfig(rounds=6, samples_per_round=3, warmup_budget_s=0.0, warmup_min=1,
                            warmup_max=1, shift_placement=False, fresh_segments=False)


def cuda_visible() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def resolve_backend(name: str) -> Backend:
    key = name.strip().lower()
    if key == "auto":
        return BACKENDS["cuda" if cuda_visible() else "cpu"]
    for backend in BACKENDS.values():
        if key == backend.name or key in backend.aliases:
            return backend
    known = ", ".join(f"{b.name} ({'/'.join(b.aliases)})" for b in BACKENDS.values())
    raise PreflightError("backend", f"unknown backend {name!r}; known: auto, {known}")


def prepare_environment(backend: Backend) -> None:
    """Set what must be set before Triton kernels are defined or compiled."""
    os.environ["TRITONGATE_BACKEND"] = backend.name  # providers (flag_gems' vendor) follow the backend in use
    if backend.interpreter:
        os.environ["TRITON_INTERPRET"] = "1"
        return
    # Line info embeds source paths in the binaries; without it the same source and options
    # give byte-identical binaries across checkouts, which IDENTICAL_BINARY relies on.
    os.environ.setdefault("TRITON_DISABLE_LINE_INFO", "1")
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        raise PreflightError("interpreter", f"TRITON_INTERPRET={os.environ['TRITON_INTERPRET']} is set "
                             f"but the backend is {backend.name}; unset it, or use --backend cpu")


def default_measure_config(backend: Backend) -> MeasureConfig:
    return CPU_MEASURE if backend.interpreter else MeasureConfig()


def make_device(backend: Backend, index: int = 0, *, gpu_turns: bool | None = None):
    """The harness device for ``backend``; raises PreflightError(check=device) if absent.
    ``gpu_turns``: a partner process takes a turn on the GPU before each capture
    (``harness.gpu_turns``; None: unless TRITONGATE_GPU_TURNS=0); a paired run's workers,
    which take turns with each other, pass False."""
    from tritongate.harness.device import CudaDevice, HostDevice

    if backend.interpreter:
        return HostDevice()
    if backend.extension:
        try:
            __import__(backend.extension)
        except ImportError as exc:
            raise PreflightError("device", f"backend {backend.name} needs the {backend.extension} "
                                 f"package ({exc}); install it or pick another --backend") from exc
    try:
        return CudaDevice(index, api=backend.torch_api, turns=gpu_turns)
    except Exception as exc:  # any failure to reach the device is this check
        var = backend.visibility_var
        raise PreflightError("device", f"no {backend.name} device is visible ({exc}); check the driver "
                             f"and {var}={os.environ.get(var, '<unset>')}, or use --backend cpu") from exc


CAPTURE_ONLY_ENV = "TRITONGATE_CAPTURE_ONLY"


def capture_only_requested(backend: str, environ: Any = None) -> bool:
    """``TRITONGATE_CAPTURE_ONLY=1`` on the interpreter backend: an IR index capture, which
    times nothing and executes no kernel, so it may replay another backend's autotune
    configs (a GPU record's: the index then holds what the GPU launched) and index dtypes
    the interpreter cannot compute (bfloat16)."""
    env = os.environ if environ is None else environ
    return backend == "cpu" and env.get(CAPTURE_ONLY_ENV, "") in ("1", "true", "yes")


def capture_only_active(environ: Any = None) -> bool:
    """``TRITONGATE_CAPTURE_ONLY=1`` with the interpreter on: this process indexes interpreted
    launches without executing them (``ir.capture.install_capture_only``)."""
    env = os.environ if environ is None else environ
    return capture_only_requested("cpu", env) and env.get("TRITON_INTERPRET") == "1"


def is_capture_only_run(identity: Mapping[str, Any]) -> bool:
    """Whether a run was an IR index capture (nothing executed, every row CORRECTNESS_MISMATCH):
    its ``capture_only`` flag, or, in runs written before the flag, its capture note."""
    if identity.get("capture_only") is True:
        return True
    notes = (identity.get("ir") or {}).get("notes") or ()
    return any(isinstance(n, str) and n.startswith(f"{CAPTURE_ONLY_ENV}=1") for n in notes)
