"""The versioned data of a run directory: rows of raw samples, and the run's status.

Value objects are frozen and validated when built; statistics are derived from the raw
samples, never trusted from the file (the stored ``summary`` is for human readers and
other tools, and is checked against the samples on load).

Schema history (bump ``SCHEMA_VERSION`` on any change a reader must know about):
  1 - first version: rows keyed by (op, case, dtype) with raw samples in µs per launch,
      measurement settings, markers, correctness, launched variants and what autotune did
      (record|replay, configs used, sweep benchmark count); run status running|complete|failed;
      autotune_records/ in record runs.
  2 - paired runs: ``measurement.pairing`` (the pair id, this side, which rounds it went
      first, the precision target and whether it was reached) and ``skipped`` (an ok row
      that was deliberately not timed: ``identical_binary``, ``other_side_failed``).
      Schema 1 files still load: they are unpaired and never skipped.
  3 - ``measurement.pairing.confirm_rounds``: the pairs a call needs in that paired run (a
      row called on fewer was stopped by a budget). Schema 1 and 2 files still load (0: no
      such need was set).
      Added since, optional, without a bump (readers ignore keys they do not know):
      ``measurement.pairing.inputs``, ``shared`` when in each pair the side measured second
      read the inputs the first side built (the same memory), ``own`` otherwise (and when
      absent: every earlier paired run built its own).
      ``measurement.pairing.worker_pairs`` (per round: which worker pair, fresh processes of
      both builds, measured it; absent: one worker pair for every round) and
      ``measurement.pairing.stopped_by`` (why the row's pairs ended short of its target or of
      a confirmation: ``row_budget``, ``run_budget``, ``round_cap``; null when it reached them),
      ``measurement.pairing.confirm_from`` (the round at which a call's confirmation on fresh
      worker pairs began; 0: none was run).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from typing import Any, Literal, Mapping, get_args

from tritongate.stats import Summary, summarize

SCHEMA_VERSION = 3
MIN_READABLE_SCHEMA_VERSION = 1  # 2 and 3 only added optional fields
# the allowed values of a row's pairing, spelt once: results.json's model and verdict.json's take them from here
PairInputs = Literal["own", "shared"]
PairStop = Literal["row_budget", "run_budget", "round_cap"]
PAIR_INPUTS: tuple[str, ...] = get_args(PairInputs)
STOPPED_BY: tuple[str, ...] = get_args(PairStop)


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


class SkipReason(str, Enum):
    """Why an ok row carries no samples."""

    IDENTICAL_BINARY = "identical_binary"  # every launched kernel byte-identical on both sides
    OTHER_SIDE_FAILED = "other_side_failed"  # the paired side failed: nothing to compare with
    # every kernel compiled byte-identical under both builds ahead of time (pair --changed-from)
    UNCHANGED_AHEAD_OF_TIME = "unchanged_ahead_of_time"


@dataclass(frozen=True)
class PairInfo:
    """How a row of a paired run was measured: its rounds alternate with the other side's
    round by round, so round i here and round i there share their drift."""

    pair_id: str  # the same in both run directories of one paired run
    side: str  # "base" | "candidate"
    went_first: tuple[bool, ...]  # per round: did this side measure first in its pair
    target_effect: float | None = None  # the precision the row aimed for (relative effect)
    detectable_effect: float | None = None  # what it reached (None: could not be estimated)
    target_reached: bool | None = None
    min_rounds: int = 0
    max_rounds: int = 0
    confirm_rounds: int = 0  # pairs a call needs (0: none asked); fewer means the budgets cut it short
    inputs: str = "own"  # "shared": in each pair the side measured second read the first side's inputs
    worker_pairs: tuple[int, ...] = ()  # per round: the worker pair (fresh processes) that measured it
    stopped_by: str | None = None  # row_budget | run_budget | round_cap: what ended the row short
    confirm_from: int = 0  # > 0: the round a confirmation on fresh worker pairs began (after a call)

    def __post_init__(self) -> None:
        if not self.pair_id or self.side not in ("base", "candidate"):
            raise ValueError(f"pairing needs a pair_id and a side of base|candidate, got {self.side!r}")
        if self.inputs not in PAIR_INPUTS:
            raise ValueError(f"pairing inputs must be one of {', '.join(PAIR_INPUTS)}, got {self.inputs!r}")
        for name in ("target_effect", "detectable_effect"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ValueError(f"pairing {name} must be a finite number >= 0 or null, got {value!r}")
        object.__setattr__(self, "went_first", tuple(map(bool, self.went_first)))
        object.__setattr__(self, "worker_pairs", tuple(map(int, self.worker_pairs)))
        if self.worker_pairs and len(self.worker_pairs) != len(self.went_first):
            raise ValueError(f"pairing worker_pairs has {len(self.worker_pairs)} entries for "
                             f"{len(self.went_first)} rounds")
        if self.stopped_by is not None and self.stopped_by not in STOPPED_BY:
            raise ValueError(f"pairing stopped_by must be one of {', '.join(STOPPED_BY)} or null, "
                             f"got {self.stopped_by!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"pair_id": self.pair_id, "side": self.side, "went_first": list(self.went_first),
                "target_effect": self.target_effect, "detectable_effect": self.detectable_effect,
                "target_reached": self.target_reached, "min_rounds": self.min_rounds,
                "max_rounds": self.max_rounds, "confirm_rounds": self.confirm_rounds, "inputs": self.inputs,
                "worker_pairs": list(self.worker_pairs), "stopped_by": self.stopped_by,
                "confirm_from": self.confirm_from}


@dataclass(frozen=True)
class MeasurementInfo:
    """How the samples were taken; the gate checks both sides used the same."""

    launches_per_sample: int
    samples_per_round: int
    warmup_calls: int
    l2: str
    shift_bytes: tuple[int, ...] = ()
    pairing: PairInfo | None = None  # set in paired runs

    def __post_init__(self) -> None:
        if self.launches_per_sample < 1 or self.samples_per_round < 1:
            raise ValueError("launches_per_sample and samples_per_round must be >= 1")

    def to_dict(self) -> dict[str, Any]:
        return {"launches_per_sample": self.launches_per_sample,
                "samples_per_round": self.samples_per_round, "warmup_calls": self.warmup_calls,
                "l2": self.l2, "shift_bytes": list(self.shift_bytes),
                "pairing": self.pairing.to_dict() if self.pairing else None}


# The fields of a stored row that ``Row.timing_of`` reads.
TIMING_FIELDS = frozenset({"op", "case", "dtype", "timer", "samples", "status", "markers", "error", "skipped",
                           "summary"})


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
    skipped: SkipReason | None = None  # an ok row deliberately not timed


    def __post_init__(self) -> None:
        for name in ("op", "case", "dtype"):
            if not getattr(self, name):
                raise ValueError(f"row field {name!r} must be a non-empty string")
        object.__setattr__(self, "status", RowStatus(self.status))
        samples = tuple(map(float, self.samples))
        object.__setattr__(self, "samples", samples)
        # in C, a row has many: without NaN, min and max are exact
        if samples and (any(map(math.isnan, samples)) or not (min(samples) > 0 and max(samples) < math.inf)):
            raise ValueError(f"row {self.key}: samples must be finite and > 0 µs")
        if self.skipped is not None:
            object.__setattr__(self, "skipped", SkipReason(self.skipped))
            if self.samples or self.status is not RowStatus.OK:
                raise ValueError(f"row {self.key}: a skipped row is ok and has no samples")
        elif self.status is RowStatus.OK and not self.samples:
            raise ValueError(f"row {self.key}: an ok row needs samples (or a skip reason)")
        if self.status is not RowStatus.OK and not self.error:
            raise ValueError(f"row {self.key}: a {self.status.value} row needs an error text")

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.op, self.case, self.dtype)

    @cached_property
    def summary(self) -> Summary | None:
        """From the raw samples, once: the row is frozen, so its samples never change."""
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
            "skipped": self.skipped.value if self.skipped else None,
        }

    @classmethod
    def timing_of(cls, d: Mapping[str, Any]) -> "Row":
        """A row's key, timer, status, samples, markers, error and skip reason only (no params,
        variants, measurement or correctness), checked as ``rundir.row_of`` checks them: what a
        reader of many runs' timings needs (``history``), at a fraction of the cost."""
        row = cls(op=d["op"], case=d["case"], dtype=d["dtype"], timer=d["timer"], samples=tuple(d["samples"]),
                  status=RowStatus(d.get("status", "ok")), markers=tuple(d.get("markers") or ()),
                  error=d.get("error", ""), skipped=d.get("skipped"))
        row.check_stored_summary(d.get("summary"))
        return row

    def check_stored_summary(self, stored: Mapping[str, Any] | None) -> None:
        if stored and self.summary:  # every field a reader without numpy might take, not the median only
            actual = self.summary.to_dict()
            for name, value in stored.items():
                if value is not None and name in actual and not math.isclose(value, actual[name], rel_tol=1e-9,
                                                                             abs_tol=1e-12):
                    raise ValueError(f"row {self.key}: stored summary {name} {value} does not "
                                     f"match its samples ({actual[name]}); the file was edited")
