"""The model of ``verdict.json`` (written by ``tritongate gate``), for tools that read it
back: the fields are typed; anything newer is kept as written."""

from __future__ import annotations

from typing import Literal, Optional

from tritongate.validation.core import OpenDoc
from tritongate.validation.runfiles import NonNegFloat

VerdictName = Literal["REGRESSED", "IMPROVED", "UNCONFIRMED", "UNCHANGED", "IDENTICAL_BINARY", "REJECTED",
                      "NOT_COMPARABLE", "MISSING", "NEW"]


class RowIRDoc(OpenDoc):
    kernels: int
    changed: int
    diff: Optional[str] = None
    only_one_side: int = 0


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
    confirm_rounds: Optional[int] = None
    call_unconfirmed: Optional[bool] = None
    reached_target: Optional[bool] = None
    stopped_by: Optional[Literal["row_budget", "run_budget", "round_cap", "unpaired", "too_few_samples"]] = None
    worker_pairs: Optional[int] = None
    order_effect: Optional[float] = None
    inputs: Optional[Literal["own", "shared"]] = None
    timing_change: Optional[str] = None
    speedup: Optional[float] = None
    effect: Optional[float] = None
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


class VerdictDoc(OpenDoc):
    schema_version: int
    tool_version: str = "unknown"
    passed: bool
    exit_code: int
    headline: str
    state: Optional[Literal["pass", "blind", "fail"]] = None  # schema 4 on; absent before
    blind_rows: Optional[int] = None
    blind: Optional[str] = None
    failures: list[str] = []
    notes: list[str] = []
    identity_mismatches: list[str] = []
    counts: dict[str, int] = {}
    geomean_speedup: Optional[float] = None
    base: VerdictSideDoc
    candidate: VerdictSideDoc
    ir: Optional[IRSummaryDoc] = None
    rows: list[VerdictRowDoc]
