"""``verdict.json``: the words a row can be given (``Verdict``, the one list every module
uses, the trusted comment included) and the document's model, for tools that read it back and
for the renderers. The fields are typed; anything newer is kept as written. Fields the comment
reads that older verdicts lack are optional, and the renderer works them out from the fields
those verdicts have."""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, Callable, Literal, Optional, Union, get_args

from pydantic import Field

from tritongate.schema import PairInputs, PairStop
from tritongate.validation.core import OpenDoc
from tritongate.validation.fields import NonNegFloat, NonNegInt


# the words closing the reason that made a row UNCONFIRMED (gate.row_judging writes them, the
# verdict's renderers find that reason by them)
SHOWN_NOT_FAILING = ": shown, not failing"


class Verdict(StrEnum):
    """A row's verdict. A new word is added here and given its kind in ``KINDS`` below (the
    module refuses to load until it has one); the groups, the gate's exit, ``pair``'s
    nothing-judged check and the document's allowed values follow from the two. The renderers
    and the geomean name REGRESSED and IMPROVED themselves: a new *called* word needs its own
    section there."""

    REGRESSED = "REGRESSED"
    IMPROVED = "IMPROVED"
    UNCONFIRMED = "UNCONFIRMED"  # a change seen and not confirmed: shown, never failing
    UNCHANGED = "UNCHANGED"
    IDENTICAL_BINARY = "IDENTICAL_BINARY"
    REJECTED = "REJECTED"
    NOT_COMPARABLE = "NOT_COMPARABLE"
    MISSING = "MISSING"
    NEW = "NEW"


Section = Literal["called", "unconfirmed", "quiet", "not_judged"]


@dataclass(frozen=True)
class Kind:
    """What a word means to the gate: the section it is shown and counted in (``called``:
    timed and found different; ``unconfirmed``: a call short of its confirmation; ``quiet``:
    nothing to report; ``not_judged``: no evidence either way), whether it fails the gate,
    and whether it fails it under ``--strict``."""

    section: Section
    fails: bool = False
    fails_strict: bool = False

    @property
    def judged(self) -> bool:
        return self.section != "not_judged"


KINDS: dict[Verdict, Kind] = {
    Verdict.REGRESSED: Kind("called", fails=True),
    Verdict.IMPROVED: Kind("called"),
    Verdict.UNCONFIRMED: Kind("unconfirmed"),
    Verdict.UNCHANGED: Kind("quiet"),
    Verdict.IDENTICAL_BINARY: Kind("quiet"),
    Verdict.REJECTED: Kind("not_judged", fails_strict=True),
    Verdict.NOT_COMPARABLE: Kind("not_judged", fails_strict=True),
    Verdict.MISSING: Kind("not_judged"),
    Verdict.NEW: Kind("not_judged"),
}
if set(KINDS) != set(Verdict):  # a word without a kind would be handled by no one
    raise ImportError(f"tritongate.model.verdict: give {sorted(v.value for v in set(Verdict) - set(KINDS))} a Kind "
                      "in KINDS")


def _words(keep: Callable[[Kind], bool]) -> tuple[Verdict, ...]:
    return tuple(v for v in Verdict if keep(KINDS[v]))


CALLED = _words(lambda k: k.section == "called")  # timed and found different
NOT_JUDGED = _words(lambda k: not k.judged)
JUDGED = _words(lambda k: k.judged)  # timed, or its binaries compared: evidence either way
QUIET = _words(lambda k: k.section == "quiet")
FAILING = _words(lambda k: k.fails)  # fail the gate whatever the document claims
UNVERIFIED = _words(lambda k: k.fails_strict)  # fail the gate under --strict


def spread_bound(detectable: float | None, noise_floor: float | None, min_effect: float | None) -> bool:
    """Whether the least change a row could call was set by its IQR gap (the spread of its
    samples within a round, which more rounds do not narrow) rather than by its noise floor or
    minimum effect."""
    if detectable is None or noise_floor is None or not (math.isfinite(detectable) and math.isfinite(noise_floor)):
        return False
    return detectable > max(noise_floor, min_effect or 0.0) * 1.05


# verdict.json holds the words as strings: read as the enum's members (lax for this one field,
# strict for the rest), so anything but a word of the enum is refused
VerdictName = Annotated[Verdict, Field(strict=False)]
GateState = Literal["pass", "blind", "fail"]
# a paired row's stops, or the rule's; launch_state: the sides' states could hide the minimum effect
StopReason = Literal[PairStop, "unpaired", "too_few_samples", "launch_state"]
Interval = Annotated[list[float], Field(min_length=2, max_length=2)]


class RowIRDoc(OpenDoc):
    kernels: int
    changed: int
    diff: Optional[str] = None
    only_one_side: int = 0
    head: Optional[str] = None  # the smallest diff's first lines, shown inline in the comment
    head_cut: bool = False


# pass blame (``tritongate ir-diff --blame``'s blame.json, beside the verdict's IR diff): what a
# changed kernel's first differing compiler pass was, or why it has none. Its strings come from a
# PR's compiler output: bounded here, escaped by every renderer
BlameOutcome = Literal["pass", "pipeline", "input", "below", "none", "not_blamed"]
BLAME_OUTCOMES: tuple[str, ...] = get_args(BlameOutcome)
MAX_BLAME_TEXT = 300
MAX_BLAME_LINES = 200
BlameText = Annotated[str, Field(max_length=MAX_BLAME_TEXT)]


class BlameLineDoc(OpenDoc):
    """One changed kernel's blame: its variants that share one outcome. ``pass_name``: the pass
    whose output first differs (``pass``), or the pass one build runs and the other does not
    (``pipeline``, with ``change`` added/removed and ``next_pass`` the first differing output
    after it); ``level``: where a ``below`` difference first shows (llir, ptx, cubin);
    ``why``: why a ``not_blamed`` kernel has no blame."""

    kernel: Annotated[str, Field(min_length=1, max_length=1_000)]
    outcome: BlameOutcome
    variants: Annotated[int, Field(ge=1)] = 1
    cases: Annotated[list[BlameText], Field(max_length=20)] = []
    pass_name: Optional[BlameText] = None
    stage: Optional[BlameText] = None
    change: Optional[Literal["added", "removed"]] = None
    next_pass: Optional[BlameText] = None
    level: Optional[BlameText] = None
    why: Optional[BlameText] = None


class IRBlameDoc(OpenDoc):
    file: BlameText  # inside the verdict folder: ir-diff/blame.json
    note: Optional[Annotated[str, Field(max_length=1_000)]] = None  # why it could not be read (no kernels then)
    target: Optional[BlameText] = None
    kernels: Annotated[list[BlameLineDoc], Field(max_length=MAX_BLAME_LINES)] = []
    more: Annotated[int, Field(ge=0)] = 0  # lines past those kept here


class IRSummaryDoc(OpenDoc):
    folder: Optional[str] = None
    variants: dict[str, int] = {}
    note: Optional[str] = None
    blame: Optional[IRBlameDoc] = None  # absent where the IR diff folder has no blame.json


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
    python: Optional[str] = None  # the build's interpreter, where nothing else tells the sides apart
    patches: list[str] = []  # an overlay build's patches (file names), in the order applied


class VerdictPolicyDoc(OpenDoc):
    min_effect: NonNegFloat = 0.01
    op_min_effect: dict[str, float] = {}
    noise_z: float = 4.0
    min_samples: int = 10
    strict: bool = False
    max_missing: NonNegInt = 0
    fail_on_blind: bool = False


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
