"""``verdict.json``: the words a row can be given (``Verdict``, the one list every module
uses, the trusted comment included) and the document's model, for tools that read it back and
for the renderers. The fields are typed; anything newer is kept as written. Fields the comment
reads that older verdicts lack are optional, and the renderer works them out from the fields
those verdicts have."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import Field

from tritongate.schema import PairInputs, PairStop
from tritongate.validation.core import OpenDoc
from tritongate.validation.fields import NonNegFloat


class Verdict(StrEnum):
    """A row's verdict. Adding a word here is the one change a new word needs: the groups
    below and the document's allowed values follow from this list."""

    REGRESSED = "REGRESSED"
    IMPROVED = "IMPROVED"
    UNCONFIRMED = "UNCONFIRMED"  # called on fewer pairs than a confirmation needs: shown, never failing
    UNCHANGED = "UNCHANGED"
    IDENTICAL_BINARY = "IDENTICAL_BINARY"
    REJECTED = "REJECTED"
    NOT_COMPARABLE = "NOT_COMPARABLE"
    MISSING = "MISSING"
    NEW = "NEW"


CALLED = (Verdict.REGRESSED, Verdict.IMPROVED)  # timed and found different
NOT_JUDGED = (Verdict.REJECTED, Verdict.NOT_COMPARABLE, Verdict.MISSING, Verdict.NEW)
QUIET = (Verdict.UNCHANGED, Verdict.IDENTICAL_BINARY)
FAILING = (Verdict.REGRESSED, Verdict.REJECTED)  # fail the gate whatever the document claims

# verdict.json holds the words as strings: read as the enum's members (lax for this one field,
# strict for the rest), so anything but a word of the enum is refused
VerdictName = Annotated[Verdict, Field(strict=False)]
GateState = Literal["pass", "blind", "fail"]
StopReason = Literal[PairStop, "unpaired", "too_few_samples"]  # a paired row's stops, or the rule's
Interval = Annotated[list[float], Field(min_length=2, max_length=2)]


class RowIRDoc(OpenDoc):
    kernels: int
    changed: int
    diff: Optional[str] = None
    only_one_side: int = 0
    head: Optional[str] = None  # the smallest diff's first lines, shown inline in the comment
    head_cut: bool = False


class IRSummaryDoc(OpenDoc):
    folder: Optional[str] = None
    variants: dict[str, int] = {}
    note: Optional[str] = None


class VerdictRowDoc(OpenDoc):
    op: str
    case: str
    dtype: str
    verdict: VerdictName
    reasons: list[str] = []
    min_effect: Optional[NonNegFloat] = None
    base_markers: list[str] = []
    cand_markers: list[str] = []
    fails_policy: bool = False
    timed: bool = False
    rounds: Optional[int] = None
    target_effect: Optional[NonNegFloat] = None
    target_reached: Optional[bool] = None
    reached_target: Optional[bool] = None  # the rule's own answer, where it gives one
    stopped_by: Optional[StopReason] = None  # what ended the row's rounds short of its target
    max_rounds: Optional[int] = None
    confirm_rounds: Optional[int] = None
    call_unconfirmed: Optional[bool] = None
    worker_pairs: Optional[int] = None
    order_effect: Optional[float] = None
    inputs: Optional[PairInputs] = None
    timing_change: Optional[str] = None
    speedup: Optional[float] = None
    effect: Optional[float] = None
    effect_interval: Optional[Interval] = None  # the estimate ± its noise floor, as candidate/base - 1
    base_median_us: Optional[float] = None
    base_q1_us: Optional[float] = None
    base_q3_us: Optional[float] = None
    cand_median_us: Optional[float] = None
    cand_q1_us: Optional[float] = None
    cand_q3_us: Optional[float] = None
    base_n: Optional[int] = None
    cand_n: Optional[int] = None
    iqrs_overlap: Optional[bool] = None
    noise_floor: Optional[float] = None
    detectable_effect: Optional[float] = None
    paired: Optional[bool] = None
    pairs: Optional[int] = None
    why: Optional[str] = None
    ir: Optional[RowIRDoc] = None


class VerdictSideDoc(OpenDoc):
    path: Optional[str] = None
    run: Optional[str] = None
    mode: Optional[str] = None
    compiler_ref: Optional[str] = None
    commit: Optional[str] = None
    device: Optional[str] = None
    backend: Optional[str] = None
    timer: Optional[str] = None
    replay_from: Optional[str] = None
    triton_version: Optional[str] = None
    env_overlay: dict[str, str] = {}


class VerdictPolicyDoc(OpenDoc):
    min_effect: NonNegFloat = 0.01
    op_min_effect: dict[str, float] = {}
    noise_z: float = 4.0
    min_samples: int = 10


class VerdictBaselineDoc(OpenDoc):
    state: Optional[str] = None
    line: Optional[str] = None


class VerdictDoc(OpenDoc):
    schema_version: int
    tool_version: str = "unknown"
    passed: bool
    exit_code: int
    headline: str
    state: Optional[GateState] = None
    blind_rows: Optional[Union[int, list[Any]]] = None
    blind: Optional[str] = None
    failures: list[str] = []
    notes: list[str] = []
    identity_mismatches: list[str] = []
    counts: dict[str, int] = {}
    geomean_speedup: Optional[float] = None
    geomean_interval: Optional[Interval] = None
    policy: Optional[VerdictPolicyDoc] = None
    base: VerdictSideDoc
    candidate: VerdictSideDoc
    ir: Optional[IRSummaryDoc] = None
    baseline: Optional[VerdictBaselineDoc] = None
    calibration_line: Optional[str] = None
    artifact_url: Optional[str] = None
    rows: list[VerdictRowDoc]
