"""The models of what a run directory holds: ``results.json``, ``run_identity.json`` and
``autotune_records/``. Strict types; the value rules (an ok row has samples, a skipped row
has none, ...) stay with the value objects in ``tritongate.schema``."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional

from pydantic import AfterValidator, Field, JsonValue, StringConstraints

from tritongate.schema import PairInputs, PairStop
from tritongate.validation.core import OpenDoc, StrictDoc

Text = Annotated[str, StringConstraints(max_length=100_000)]
Name = Annotated[str, StringConstraints(min_length=1, max_length=1_000)]
NonNegInt = Annotated[int, Field(ge=0)]
PosInt = Annotated[int, Field(ge=1)]
NonNegFloat = Annotated[float, Field(ge=0)]
Sample = Annotated[float, Field(gt=0)]  # µs per launch; finiteness from allow_inf_nan=False


def _scalar(value: Any) -> Any:
    if isinstance(value, (list, dict)):
        raise ValueError(f"expected a number, text, true/false or null, got a {'list' if isinstance(value, list) else 'mapping'}")
    return value


Scalar = Annotated[JsonValue, AfterValidator(_scalar)]


def _marker(value: str) -> str:
    from tritongate.markers import parse_marker

    try:  # the gate parses every marker: a malformed one is refused here
        parse_marker(value)
    except ValueError as exc:
        raise ValueError(f"not a marker line (KIND key=value ...): {exc}") from None
    return value


MarkerLine = Annotated[Text, AfterValidator(_marker)]


class VariantDoc(StrictDoc):
    kernel: Name
    name: Name
    source_hash: Text = ""
    binary_hash: Text = ""
    launches: NonNegInt = 0


class CorrectnessDoc(StrictDoc):
    ok: bool
    max_abs_err: Optional[float] = None
    atol: Optional[NonNegFloat] = None
    rtol: Optional[NonNegFloat] = None
    detail: Text = ""


class PairingDoc(StrictDoc):
    pair_id: Name
    side: Literal["base", "candidate"]
    went_first: list[bool] = []
    target_effect: Optional[NonNegFloat] = None
    detectable_effect: Optional[NonNegFloat] = None
    target_reached: Optional[bool] = None
    min_rounds: NonNegInt = 0
    max_rounds: NonNegInt = 0
    confirm_rounds: NonNegInt = 0
    inputs: PairInputs = "own"
    worker_pairs: list[NonNegInt] = []
    stopped_by: Optional[PairStop] = None
    confirm_from: NonNegInt = 0


class MeasurementDoc(StrictDoc):
    launches_per_sample: PosInt
    samples_per_round: PosInt
    warmup_calls: NonNegInt
    l2: Name
    shift_bytes: list[NonNegInt] = []
    pairing: Optional[PairingDoc] = None


class SummaryDoc(StrictDoc):
    """For readers without numpy; every field present is checked against the samples on load."""

    median: float
    n: Optional[int] = None
    mean: Optional[float] = None
    q1: Optional[float] = None
    q3: Optional[float] = None
    iqr: Optional[float] = None
    min: Optional[float] = None
    max: Optional[float] = None


class AutotuneDoc(StrictDoc):
    mode: Optional[Name] = None
    sweep_benchmarks: NonNegInt = 0
    kernels: list[dict[str, JsonValue]] = []


class RowDoc(StrictDoc):
    op: Name
    case: Name
    dtype: Name
    timer: Text
    samples: list[Sample]
    status: Literal["ok", "error", "timeout"] = "ok"
    params: dict[str, JsonValue] = {}
    markers: list[MarkerLine] = []
    measurement: Optional[MeasurementDoc] = None
    correctness: Optional[CorrectnessDoc] = None
    variants: list[VariantDoc] = []
    error: Text = ""
    flops: Optional[NonNegFloat] = None
    bytes: Optional[NonNegFloat] = None
    autotune: Optional[AutotuneDoc] = None
    skipped: Optional[Literal["identical_binary", "other_side_failed", "unchanged_ahead_of_time"]] = None
    summary: Optional[SummaryDoc] = None


class ResultsDoc(StrictDoc):
    schema_version: int
    tool_version: Text = "unknown"
    status: Literal["running", "complete", "failed"]
    mode: Literal["record", "replay"] = "record"
    rows: list[RowDoc]
    failure: Text = ""


# -- run_identity.json: what the gate reads is typed; the rest is kept as written ----------

class SuiteIdentDoc(OpenDoc):
    name: Optional[Text] = None
    digest: Optional[Text] = None
    path: Optional[Text] = None
    shape_file: Optional[Text] = None
    description: Optional[Text] = None


class MeasureConfigDoc(OpenDoc):
    l2: Optional[Text] = None


class GpuStateDoc(OpenDoc):
    driver: Optional[Text] = None


class BuildDoc(OpenDoc):
    python: Optional[Text] = None
    env_overlay: dict[str, Text] = {}


class PairIdentDoc(OpenDoc):
    pair_id: Optional[Name] = None
    side: Optional[Literal["base", "candidate"]] = None
    build: Optional[BuildDoc] = None


class IdentityDoc(OpenDoc):
    schema_version: int
    tool_version: Text = "unknown"
    mode: Literal["record", "replay"] = "record"
    backend: Optional[Text] = None
    device: Optional[Text] = None
    timer: Optional[Text] = None
    compiler_ref: Optional[Text] = None
    commit: Optional[Text] = None
    replay_from: Optional[Text] = None
    suite: Optional[SuiteIdentDoc] = None
    measure_config: Optional[MeasureConfigDoc] = None
    codegen_env: dict[str, Optional[Text]] = {}
    gpu_state_before: Optional[GpuStateDoc] = None
    gpu_state_after: Optional[GpuStateDoc] = None
    pair: Optional[PairIdentDoc] = None


# -- autotune_records/ ---------------------------------------------------------------------

class ConfigDoc(OpenDoc):
    """Every ``triton.Config`` field, explicitly; extra fields are scalars (a version's own)."""

    __pydantic_extra__: dict[str, Scalar]  # type: ignore[assignment]
    kwargs: dict[str, Scalar]
    num_warps: Optional[PosInt] = None
    num_stages: Optional[NonNegInt] = None
    num_ctas: Optional[PosInt] = None
    maxnreg: Optional[PosInt] = None


class RecordEntryDoc(StrictDoc):
    kernel: Name
    tuner: Name = "Autotuner"
    key: JsonValue
    config: ConfigDoc
    cases: list[Text] = []


class RecordFileDoc(StrictDoc):
    schema_version: int
    op: Name
    entries: list[RecordEntryDoc]


class RecordsMetaDoc(OpenDoc):
    schema_version: int
    backend: Name
    device: Optional[Text] = None
    run: Optional[Text] = None
