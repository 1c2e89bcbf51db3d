"""GPU state before and after measuring: who else is on the device, clocks, temperature.

Another process on the GPU slows both sides of a comparison alike and produces numbers
that look consistent and mean nothing, so a busy GPU is an error unless overridden. The
state is read with ``nvidia-smi`` (present wherever the driver is) and recorded in the
run identity; parsing is separate from the subprocess call so it is tested on the CPU.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from typing import Callable, Sequence

from tritongate.errors import GpuBusyError

GPU_FIELDS = (
    "index", "uuid", "name", "driver_version", "clocks.sm", "clocks.mem", "clocks.max.sm",
    "temperature.gpu", "power.draw", "utilization.gpu",
)
# Renamed in newer drivers; the first one the driver knows is used.
REASON_FIELDS = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")

# Reasons that mean the GPU is being slowed against its will (not idle, not app clocks).
THROTTLE_BITS = {
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x20: "sw_thermal",
    0x40: "hw_thermal",
    0x80: "hw_power_brake",
}
# sw_power_cap is normal under full load; only these make a row suspect.
SUSPECT_BITS = 0x8 | 0x20 | 0x40 | 0x80

BUSY_UTILIZATION_PCT = 20.0

Runner = Callable[[Sequence[str]], str]


@dataclass(frozen=True)
class GpuState:
    index: int
    uuid: str
    name: str
    driver: str
    sm_clock_mhz: float | None
    mem_clock_mhz: float | None
    max_sm_clock_mhz: float | None
    temperature_c: float | None
    power_w: float | None
    utilization_pct: float | None
    throttle_mask: int | None
    other_pids: tuple[int, ...] = field(default_factory=tuple)

    @property
    def throttle_reasons(self) -> list[str]:
        if not self.throttle_mask:
            return []
        return [name for bit, name in THROTTLE_BITS.items() if self.throttle_mask & bit]

    @property
    def throttled(self) -> bool:
        return bool(self.throttle_mask and self.throttle_mask & SUSPECT_BITS)

    @property
    def busy_reasons(self) -> list[str]:
        reasons = []
        if self.other_pids:
            reasons.append(f"other processes on the GPU: pids {', '.join(map(str, self.other_pids))}")
        if self.utilization_pct is not None and self.utilization_pct >= BUSY_UTILIZATION_PCT:
            reasons.append(f"utilization {self.utilization_pct:.0f}% before measuring")
        return reasons

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["other_pids"] = list(self.other_pids)
        d["throttle_reasons"] = self.throttle_reasons
        d["throttled"] = self.throttled
        d["busy_reasons"] = self.busy_reasons
        return d


def _num(text: str) -> float | None:
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        return None  # "[N/A]", "[Not Supported]"


def _mask(text: str) -> int | None:
    text = text.strip()
    try:
        return int(text, 16) if text.lower().startswith("0x") else int(text)
    except ValueError:
        return None


def parse_gpu_line(line: str, reasons: str | None) -> GpuState:
    parts = [p.strip() for p in line.split(",")]
    if len(parts) != len(GPU_FIELDS):
        raise ValueError(f"unexpected nvidia-smi line ({len(parts)} fields): {line!r}")
    rec = dict(zip(GPU_FIELDS, parts))
    return GpuState(
        index=int(rec["index"]),
        uuid=rec["uuid"],
        name=rec["name"],
        driver=rec["driver_version"],
        sm_clock_mhz=_num(rec["clocks.sm"]),
        mem_clock_mhz=_num(rec["clocks.mem"]),
        max_sm_clock_mhz=_num(rec["clocks.max.sm"]),
        temperature_c=_num(rec["temperature.gpu"]),
        power_w=_num(rec["power.draw"]),
        utilization_pct=_num(rec["utilization.gpu"]),
        throttle_mask=_mask(reasons) if reasons is not None else None,
    )


def parse_apps(text: str, uuid: str, own_pids: set[int]) -> tuple[int, ...]:
    pids = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 2 or parts[0] != uuid:
            continue
        try:
            pid = int(parts[1])
        except ValueError:
            continue
        if pid not in own_pids:
            pids.append(pid)
    return tuple(sorted(set(pids)))


def _run_smi(args: Sequence[str]) -> str:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        raise FileNotFoundError("nvidia-smi not found on PATH")
    out = subprocess.run([exe, *args], capture_output=True, text=True, timeout=30, check=True)
    return out.stdout


def read_gpu_state(index: int | str = 0, *, run: Runner = _run_smi,
                   own_pids: set[int] | None = None) -> GpuState:
    """Query one GPU (``index``: nvidia-smi index or a "GPU-..." UUID). Raises OSError/CalledProcessError
    when nvidia-smi is missing or fails; the caller decides whether that is fatal."""
    own = own_pids if own_pids is not None else {os.getpid()}
    line = run(["-i", str(index), f"--query-gpu={','.join(GPU_FIELDS)}",
                "--format=csv,noheader,nounits"]).strip().splitlines()[0]
    reasons = None
    for name in REASON_FIELDS:
        try:
            reasons = run(["-i", str(index), f"--query-gpu={name}",
                           "--format=csv,noheader,nounits"]).strip()
            break
        except subprocess.CalledProcessError:
            continue
    state = parse_gpu_line(line, reasons)
    apps = run(["--query-compute-apps=gpu_uuid,pid,used_memory", "--format=csv,noheader,nounits"])
    return GpuState(**{**asdict(state), "other_pids": parse_apps(apps, state.uuid, own)})


def check_idle(state: GpuState, *, allow_busy: bool = False) -> list[str]:
    """Raise ``GpuBusyError`` when the GPU is busy, unless allowed; return the busy reasons."""
    reasons = state.busy_reasons
    if reasons and not allow_busy:
        raise GpuBusyError(
            f"GPU {state.index} ({state.name}) is busy: {'; '.join(reasons)}. Timings would be "
            "slowed by the other work; free the GPU, pick another with CUDA_VISIBLE_DEVICES, "
            "or pass --allow-busy-gpu to measure anyway (rows are marked GPU_BUSY)"
        )
    return reasons


def read_idle_state(index: int | str, *, own_pids: set[int] | None = None, allow_busy: bool = False,
                    retries: int = 5, wait_s: float = 1.0, run: Runner = _run_smi,
                    sleep=None) -> GpuState:
    """The GPU's state before measuring, checked idle (``GpuBusyError`` unless allowed).
    Utilization is averaged over nvidia-smi's last sample period, so work that just finished
    (a previous run) can still show: look again a few times before calling it busy."""
    import time

    pause = sleep or time.sleep
    state = read_gpu_state(index, run=run, own_pids=own_pids)
    for _ in range(retries):
        if state.other_pids or not state.busy_reasons:
            break
        pause(wait_s)
        state = read_gpu_state(index, run=run, own_pids=own_pids)
    check_idle(state, allow_busy=allow_busy)
    return state


def state_markers(state: dict | None) -> tuple[str, ...]:
    """The row markers a run's GPU state before measuring calls for (``GpuState.to_dict()``):
    GPU_BUSY when measured anyway on a busy GPU, GPU_THROTTLED when it started throttled."""
    from tritongate import markers

    if not state or not isinstance(state, dict):
        return ()
    out = []
    if state.get("busy_reasons"):
        out.append(markers.make(markers.GPU_BUSY, reason="; ".join(state["busy_reasons"])))
    if state.get("throttled"):
        out.append(markers.make(markers.GPU_THROTTLED, reason=" ".join(state.get("throttle_reasons", []))))
    return tuple(out)
