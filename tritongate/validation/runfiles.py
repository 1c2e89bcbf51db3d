"""The models of what a run directory holds besides its rows: ``run_identity.json`` and
``autotune_records/``. Strict types. ``results.json`` and its rows are ``tritongate.schema``'s
``ResultsDoc`` and ``Row``, one type each for the value, its check and its JSON form."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional

from pydantic import AfterValidator, JsonValue

from tritongate.validation.core import OpenDoc, StrictDoc
from tritongate.validation.fields import Name, NonNegInt, PosInt, Text


def _scalar(value: Any) -> Any:
    if isinstance(value, (list, dict)):
        raise ValueError(f"expected a number, text, true/false or null, got a {'list' if isinstance(value, list) else 'mapping'}")
    return value


Scalar = Annotated[JsonValue, AfterValidator(_scalar)]


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


class SelectionDoc(StrictDoc):
    """The part of the suite a run measured (--ops, --dtypes, a shard's rows); absent: all of it."""

    ops: list[Name] = []
    dtypes: list[Name] = []
    rows: Optional[NonNegInt] = None


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
    selection: Optional[SelectionDoc] = None
    capture_only: bool = False  # TRITONGATE_CAPTURE_ONLY=1: an IR index, never a baseline


# -- autotune_records/ ---------------------------------------------------------------------

# a field named `kwargs` beside the **kwargs pydantic's type-checker plugin gives __init__
class ConfigDoc(OpenDoc):  # type: ignore[no-redef]
    """Every ``triton.Config`` field, explicitly; extra fields are scalars (a version's own)."""

    __pydantic_extra__: dict[str, Scalar]
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
