"""The versioned data of a run directory: rows of raw samples, and the run's status.

A stored row has one type, ``Row``: a frozen pydantic dataclass that is at once the value
the code holds, the validator of ``results.json`` (``ResultsDoc``, from the file's bytes)
and its serialiser (``to_dict``). A new field is one line here. Statistics are derived from
the raw samples, never trusted from the file (the stored ``summary`` is for human readers
and other tools, and is checked against the samples on load).

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
      worker pairs began; 0: none was run; since 2026-12-06 only a call on the pairs a call
      needs is confirmed, so ``stopped_by`` is then the confirmation's).
      ``measurement.launch_state_us`` (per round, the µs a node of an empty-kernel reference
      graph: the process's CUDA-graph launch state; absent off CUDA. Read just before the
      round until 2026-12-06, right after its samples since).
      Read more strictly since, without a bump (tritongate never wrote such values): a sample
      of 1e15 µs or more is refused (its summary arithmetic overflowed to inf, which could not
      be read back), and so are names over 1,000 characters where the code built them.
"""

from __future__ import annotations

import math
from dataclasses import field
from enum import Enum
from functools import cached_property
from typing import Annotated, Any, Literal, Optional, get_args

from pydantic import AfterValidator, ConfigDict, Field
from pydantic.dataclasses import dataclass
from pydantic_core import to_jsonable_python

from tritongate.stats import Summary, summarize
from tritongate.validation.core import StrictDoc
from tritongate.validation.fields import Name, NonNegFloat, NonNegInt, PosFloat, PosInt, Text

SCHEMA_VERSION = 3
MIN_READABLE_SCHEMA_VERSION = 1  # 2 and 3 only added optional fields
# the allowed values of a row's pairing, spelt once: verdict.json's model takes them from here
PairInputs = Literal["own", "shared"]
PairStop = Literal["row_budget", "run_budget", "round_cap"]
PAIR_INPUTS: tuple[str, ...] = get_args(PairInputs)
STOPPED_BY: tuple[str, ...] = get_args(PairStop)

# Lax when the code builds a value (a list where a tuple is declared is fine), strict when a
# file is read (``ResultsDoc.model_validate_json``: a boolean is not a number, NaN not a time).
VALUES = ConfigDict(extra="ignore", allow_inf_nan=False, populate_by_name=True)

Sample = Annotated[float, Field(gt=0, lt=1e15)]  # µs per launch; below 1e15 its summary arithmetic stays finite


def _marker(value: str) -> str:
    from tritongate.markers import parse_marker

    try:  # the gate parses every marker: a malformed one is refused here
        parse_marker(value)
    except ValueError as exc:
        raise ValueError(f"not a marker line (KIND key=value ...): {exc}") from None
    return value


MarkerLine = Annotated[Text, AfterValidator(_marker)]


class RunStatus(str, Enum):
    RUNNING = "running"  # being written, or the writer died
    COMPLETE = "complete"
    FAILED = "failed"  # the writer stopped on an error; rows so far are kept


class RowStatus(str, Enum):
    OK = "ok"
    ERROR = "error"  # the row raised; no samples
    TIMEOUT = "timeout"


class SkipReason(str, Enum):
    """Why an ok row carries no samples."""

    IDENTICAL_BINARY = "identical_binary"  # every launched kernel byte-identical on both sides
    OTHER_SIDE_FAILED = "other_side_failed"  # the paired side failed: nothing to compare with
    # every kernel compiled byte-identical under both builds ahead of time (pair --changed-from)
    UNCHANGED_AHEAD_OF_TIME = "unchanged_ahead_of_time"


class _Stored:
    """A value of results.json: ``to_dict`` is its JSON form, field by field."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = to_jsonable_python(self, by_alias=False)
        return out


@dataclass(frozen=True, config=VALUES)
class Variant(_Stored):
    """One compiled kernel variant a row launched."""

    kernel: Name  # module.qualname
    name: Name  # readable variant name (constexprs, warps, stages)
    source_hash: Text = ""  # build-independent (src.hash())
    binary_hash: Text = ""  # build-specific (CompiledKernel.hash)
    launches: NonNegInt = 0


@dataclass(frozen=True, config=VALUES)
class Correctness(_Stored):
    ok: bool
    max_abs_err: Optional[float] = None
    atol: Optional[NonNegFloat] = None
    rtol: Optional[NonNegFloat] = None
    detail: Text = ""


@dataclass(frozen=True, config=VALUES)
class PairInfo(_Stored):
    """How a row of a paired run was measured: its rounds alternate with the other side's
    round by round, so round i here and round i there share their drift."""

    pair_id: Name  # the same in both run directories of one paired run
    side: Literal["base", "candidate"]
    went_first: tuple[bool, ...] = ()  # per round: did this side measure first in its pair
    target_effect: Optional[NonNegFloat] = None  # the precision the row aimed for (relative effect)
    detectable_effect: Optional[NonNegFloat] = None  # what it reached (None: could not be estimated)
    target_reached: Optional[bool] = None
    min_rounds: NonNegInt = 0
    max_rounds: NonNegInt = 0
    confirm_rounds: NonNegInt = 0  # pairs a call needs (0: none asked); fewer means the budgets cut it short
    inputs: PairInputs = "own"  # "shared": in each pair the side measured second read the first side's inputs
    worker_pairs: tuple[NonNegInt, ...] = ()  # per round: the worker pair (fresh processes) that measured it
    stopped_by: Optional[PairStop] = None  # what ended the row short of its target (None: nothing)
    confirm_from: NonNegInt = 0  # > 0: the round a confirmation on fresh worker pairs began (after a call)

    def __post_init__(self) -> None:
        if self.worker_pairs and len(self.worker_pairs) != len(self.went_first):
            raise ValueError(f"pairing worker_pairs has {len(self.worker_pairs)} entries for "
                             f"{len(self.went_first)} rounds")


@dataclass(frozen=True, config=VALUES)
class MeasurementInfo(_Stored):
    """How the samples were taken; the gate checks both sides used the same."""

    launches_per_sample: PosInt
    samples_per_round: PosInt
    warmup_calls: NonNegInt
    l2: Name
    shift_bytes: tuple[NonNegInt, ...] = ()
    pairing: Optional[PairInfo] = None  # set in paired runs
    # per round, µs a node of an empty-kernel reference graph timed right after the round's
    # samples: the process's launch state (``harness.device.CudaDevice.launch_state_us``)
    launch_state_us: tuple[PosFloat, ...] = ()


class StoredSummary(StrictDoc):
    """A row's summary as the file holds it (for readers without numpy); every field present
    is checked against the samples on load (``Row.check_stored_summary``)."""

    median: float
    n: Optional[int] = None
    mean: Optional[float] = None
    q1: Optional[float] = None
    q3: Optional[float] = None
    iqr: Optional[float] = None
    min: Optional[float] = None
    max: Optional[float] = None


@dataclass(frozen=True, config=VALUES)
class AutotuneInfo(_Stored):
    """What autotune did during the row: record|replay, how many configs a sweep benchmarked,
    and per tuned kernel the config used (``tritongate.autotune.session.RowAutotune``)."""

    mode: Optional[Name] = None
    sweep_benchmarks: NonNegInt = 0
    kernels: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True, config=VALUES)
class Row(_Stored):
    op: Name
    case: Name
    dtype: Name
    timer: Text
    samples: tuple[Sample, ...]  # µs per launch, raw, in measurement order
    status: RowStatus = RowStatus.OK
    params: dict[str, Any] = field(default_factory=dict)
    markers: tuple[MarkerLine, ...] = ()
    measurement: Optional[MeasurementInfo] = None
    correctness: Optional[Correctness] = None
    variants: tuple[Variant, ...] = ()
    error: Text = ""
    flops: Optional[NonNegFloat] = None
    bytes: Optional[NonNegFloat] = None
    autotune: Optional[AutotuneInfo] = None
    skipped: Optional[SkipReason] = None  # an ok row deliberately not timed
    # the file's ``summary``: kept only until ``check_stored_summary`` compares it with the samples
    stored_summary: Annotated[Optional[StoredSummary], Field(alias="summary")] = field(default=None, repr=False,
                                                                                       compare=False)

    def __post_init__(self) -> None:
        if self.skipped is not None:
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
        out = super().to_dict()
        out.pop("stored_summary")
        summary = self.summary
        out["summary"] = summary.to_dict() if summary else None
        return out

    def check_stored_summary(self) -> None:
        """``ValueError`` where the file's summary does not match the samples (then it was
        edited); the stored summary is dropped after."""
        stored = self.stored_summary
        if stored is not None and self.summary:  # every field a reader without numpy might take
            actual = self.summary.to_dict()
            for name, value in stored.model_dump().items():
                if value is not None and name in actual and not math.isclose(value, actual[name], rel_tol=1e-9,
                                                                             abs_tol=1e-12):
                    raise ValueError(f"row {self.key}: stored summary {name} {value} does not "
                                     f"match its samples ({actual[name]}); the file was edited")
        object.__setattr__(self, "stored_summary", None)


class ResultsDoc(StrictDoc):
    """results.json."""

    schema_version: int
    tool_version: Text = "unknown"
    status: Literal["running", "complete", "failed"]
    mode: Literal["record", "replay"] = "record"
    rows: list[Row]
    failure: Text = ""
