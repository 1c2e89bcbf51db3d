"""The versioned data of a run directory: rows of raw samples, and the run's status.

Value objects are frozen and validated when built; statistics are derived from the raw
samples, never trusted from the file (the stored ``summary`` is for human readers and
other tools, and is checked against the samples on load).

Schema history (bump ``SCHEMA_VERSION`` on any change a reader must know about):
  1 - first version: rows keyed by (op, case, dtype) with raw samples in µs per launch,
      measurement settings, markers, correctness, launched variants and what autotune did
      (record|replay, configs used, sweep benchmark count); run status running|complete|failed;
      autotune_records/ in record runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Mapping

from tritongate.stats import Summary, summarize

SCHEMA_VERSION = 1


class RunStatus(str, Enum):
    RUNNING = "running"  # being written, or the writer died
    COMPLETE = "complete"
    FAILED = "failed"  # the writer stopped on an error; rows so far are kept


class RowStatus(str, Enum):
    OK = "ok"
    ERROR = "error"  # the row raised; no samples
    TIMEOUT = "timeout"


@dataclass(frozen=True)
class Variant:
    """One compiled kernel variant a row launched."""

    kernel: str  # module.qualname
    name: str  # readable variant name (constexprs, warps, stages)
    source_hash: str = ""  # build-independent (src.hash())
    binary_hash: str = ""  # build-specific (CompiledKernel.hash)
    launches: int = 0

    def __post_init__(self) -> None:
        if not self.kernel or not self.name:
            raise ValueError("a variant needs a kernel id and a name")

    def to_dict(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "name": self.name, "source_hash": self.source_hash,
                "binary_hash": self.binary_hash, "launches": self.launches}


@dataclass(frozen=True)
class Correctness:
    ok: bool
    max_abs_err: float | None = None
    atol: float | None = None
    rtol: float | None = None
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "max_abs_err": self.max_abs_err, "atol": self.atol,
                "rtol": self.rtol, "detail": self.detail}


@dataclass(frozen=True)
class MeasurementInfo:
    """How the samples were taken; the gate checks both sides used the same."""

    launches_per_sample: int
    samples_per_round: int
    warmup_calls: int
    l2: str
    shift_bytes: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.launches_per_sample < 1 or self.samples_per_round < 1:
            raise ValueError("launches_per_sample and samples_per_round must be >= 1")

    def to_dict(self) -> dict[str, Any]:
        return {"launches_per_sample": self.launches_per_sample,
                "samples_per_round": self.samples_per_round, "warmup_calls": self.warmup_calls,
                "l2": self.l2, "shift_bytes": list(self.shift_bytes)}


@dataclass(frozen=True)
class Row:
    op: str
    case: str
    dtype: str
    timer: str
    samples: tuple[float, ...]  # µs per launch, raw, in measurement order
    status: RowStatus = RowStatus.OK
    params: Mapping[str, Any] = field(default_factory=dict)
    markers: tuple[str, ...] = ()
    measurement: MeasurementInfo | None = None
    correctness: Correctness | None = None
    variants: tuple[Variant, ...] = ()
    error: str = ""
    flops: float | None = None
    bytes: float | None = None
    autotune: Mapping[str, Any] | None = None  # {"mode", "sweep_benchmarks", "kernels": [...]}

    def __post_init__(self) -> None:
        for name in ("op", "case", "dtype"):
            if not getattr(self, name):
                raise ValueError(f"row field {name!r} must be a non-empty string")
        object.__setattr__(self, "status", RowStatus(self.status))
        object.__setattr__(self, "samples", tuple(float(s) for s in self.samples))
        if any(not (math.isfinite(s) and s > 0) for s in self.samples):
            raise ValueError(f"row {self.key}: samples must be finite and > 0 µs")
        if self.status is RowStatus.OK and not self.samples:
            raise ValueError(f"row {self.key}: an ok row needs samples")
        if self.status is not RowStatus.OK and not self.error:
            raise ValueError(f"row {self.key}: a {self.status.value} row needs an error text")

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.op, self.case, self.dtype)

    @property
    def summary(self) -> Summary | None:
        return summarize(self.samples) if self.samples else None

    def to_dict(self) -> dict[str, Any]:
        summary = self.summary
        return {
            "op": self.op, "case": self.case, "dtype": self.dtype, "status": self.status.value,
            "params": dict(self.params), "timer": self.timer, "samples": list(self.samples),
            "summary": summary.to_dict() if summary else None,
            "markers": list(self.markers),
            "measurement": self.measurement.to_dict() if self.measurement else None,
            "correctness": self.correctness.to_dict() if self.correctness else None,
            "variants": [v.to_dict() for v in self.variants],
            "error": self.error, "flops": self.flops, "bytes": self.bytes,
            "autotune": dict(self.autotune) if self.autotune is not None else None,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Row":
        meas = d.get("measurement")
        corr = d.get("correctness")
        row = cls(
            op=d["op"], case=d["case"], dtype=d["dtype"], timer=d["timer"],
            samples=tuple(d["samples"]), status=RowStatus(d.get("status", "ok")),
            params=dict(d.get("params") or {}), markers=tuple(d.get("markers") or ()),
            measurement=MeasurementInfo(**{**meas, "shift_bytes": tuple(meas.get("shift_bytes", ()))})
            if meas else None,
            correctness=Correctness(**corr) if corr else None,
            variants=tuple(Variant(**v) for v in d.get("variants") or ()),
            error=d.get("error", ""), flops=d.get("flops"), bytes=d.get("bytes"),
            autotune=d.get("autotune"),
        )
        stored = d.get("summary")
        if stored and row.summary and not math.isclose(stored["median"], row.summary.median,
                                                       rel_tol=1e-9):
            raise ValueError(f"row {row.key}: stored summary median {stored['median']} does not "
                             f"match its samples ({row.summary.median}); the file was edited")
        return row
