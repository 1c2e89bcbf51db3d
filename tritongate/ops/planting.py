"""The planted-slowdown knob, for calibration: builtin kernels that take a known time longer.

``TRITONGATE_PLANTED_DELAY=FILE`` names a plan written by ``tritongate calibrate``: the
fraction it plants and, per row (``op/case/dtype``), the spin in nanoseconds that adds that
fraction to the row's time (``calibrate/aim.py``). A builtin op of a planned row launches its
kernel with the spin inside (``ops/kernels/planted.py``); under the interpreter a host spin
follows the launch. Off by default; when on it is in the run identity and in every planted
row's params, so a planted run can never pass for a plain one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import time
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from tritongate.atomicio import write_json_atomic
from tritongate.errors import UsageError
from tritongate.model.keys import row_key as row_key, split_key as split_key  # re-exported: a plan names rows by them


PLANTED_DELAY_ENV = "TRITONGATE_PLANTED_DELAY"
SCHEMA = 1
MAX_DELAY_NS = 1_000_000_000  # 1 s: beyond any planted fraction of a row, the interpreter's included


@dataclass(frozen=True)
class PlantPlan:
    """A plan file as read: the planted fraction and each row's delay."""

    path: str
    sha256: str
    fraction: float
    delays_ns: Mapping[str, int]

    def __post_init__(self) -> None:
        if not (math.isfinite(self.fraction) and 0 <= self.fraction < 1):  # 0: the spin compiled in, spinning 0
            raise ValueError(f"fraction {self.fraction!r} is not in [0, 1)")
        for row, ns in self.delays_ns.items():
            if not isinstance(ns, int) or isinstance(ns, bool) or not 0 <= ns <= MAX_DELAY_NS:
                raise ValueError(f"delay of {row!r} is {ns!r}: expected whole nanoseconds in 0..{MAX_DELAY_NS}")

    def delay_for(self, op: str, case: str, dtype: str) -> int | None:
        return self.delays_ns.get(row_key(op, case, dtype))

    def identity(self) -> dict[str, Any]:
        return {"file": self.path, "sha256": self.sha256, "fraction": self.fraction, "rows": len(self.delays_ns)}


def write_plan(path: Path, fraction: float, delays_ns: Mapping[str, int]) -> Path:
    """Write a plan (validated first: a bad delay never reaches a worker)."""
    PlantPlan(str(path), "", fraction, dict(delays_ns))
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, {"schema": SCHEMA, "fraction": fraction, "delays_ns": dict(sorted(delays_ns.items()))})
    return path


def load_plan(environ: Mapping[str, str] | None = None) -> PlantPlan | None:
    """The plan ``TRITONGATE_PLANTED_DELAY`` names, or None when unset (``UsageError`` naming
    the variable, the file and what is wrong)."""
    env = os.environ if environ is None else environ
    text = env.get(PLANTED_DELAY_ENV, "").strip()
    if not text:
        return None
    where = f"{PLANTED_DELAY_ENV}={text}"
    try:
        raw = Path(text).read_bytes()
        doc = json.loads(raw)
    except OSError as exc:
        raise UsageError(f"{where}: cannot read it ({exc.strerror or exc}); unset it, or point it at a plan "
                         "written by `tritongate calibrate`") from None
    except ValueError as exc:
        raise UsageError(f"{where}: not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or not isinstance(doc.get("delays_ns"), dict) \
            or not isinstance(doc.get("fraction"), (int, float)) or isinstance(doc.get("fraction"), bool):
        raise UsageError(f"{where}: expected {{\"schema\": {SCHEMA}, \"fraction\": F, \"delays_ns\": {{row: ns}}}}")
    try:
        return PlantPlan(str(Path(text)), hashlib.sha256(raw).hexdigest(), float(doc["fraction"]), dict(doc["delays_ns"]))
    except ValueError as exc:
        raise UsageError(f"{where}: {exc}") from None


@dataclass(frozen=True)
class Plant:
    """One row's planted spin as a launch uses it: in the kernel, in SM cycles, on a GPU
    (``in_kernel``); under the interpreter a host spin after each launch."""

    delay_ns: int
    in_kernel: bool = False
    cycles: int = 0


_ACTIVE: ContextVar[Plant | None] = ContextVar("tritongate_plant", default=None)


@contextlib.contextmanager
def planted(plant: Plant | None) -> Iterator[None]:
    """Builders called inside the block plant this delay (None: nothing planted)."""
    token = _ACTIVE.set(plant)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def active() -> Plant | None:
    """The plant a builtin builder must build its case with, or None."""
    return _ACTIVE.get()


def make_plant(delay_ns: int, device: Any, *, in_kernel: bool, clock_ghz: Callable[[Any], float] | None = None) -> Plant:
    """The row's plant: on the GPU ``delay_ns`` as SM cycles at the device's rated peak clock
    (``clock_ghz``, default ``peak_clock_ghz``), so every process of a run spins the same."""
    if not in_kernel:
        return Plant(delay_ns)
    if clock_ghz is None:
        from tritongate.ops.kernels.planted import peak_clock_ghz as clock_ghz
    return Plant(delay_ns, in_kernel=True, cycles=round(delay_ns * clock_ghz(device)))


def host_delayed(launch: Callable[[], object], plant: Plant | None) -> Callable[[], object]:
    """The interpreter's stand-in for the in-kernel delay: spin on the host after the launch
    (the interpreter runs kernels synchronously, so this is on the timed path)."""
    if plant is None or plant.in_kernel:
        return launch

    def delayed() -> object:
        result = launch()
        end = time.perf_counter_ns() + plant.delay_ns
        while time.perf_counter_ns() < end:
            pass
        return result
    return delayed
