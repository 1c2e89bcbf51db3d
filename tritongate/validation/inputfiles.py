"""The models of the files people write: suites, shape files and gate policies. Unknown
keys are refused (a typo must not silently fall back to a default)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Any, Literal, Optional

from pydantic import (AfterValidator, BeforeValidator, ConfigDict, Field, PrivateAttr, RootModel, StringConstraints,
                      field_validator, model_validator)

from tritongate.validation.core import HandWritten

def _listed_once(values: list[Any]) -> list[Any]:
    """A dtype or shape listed twice would be one row key measured twice: refused here, where
    the file is named, not when the second row is written."""
    seen: set[Any] = set()  # a set: a shape file may list tens of thousands
    for v in values:
        key = tuple(v) if isinstance(v, list) else v
        if key in seen:
            raise ValueError(f"{v!r} is listed twice; list each once")
        seen.add(key)
    return values


Name = Annotated[str, StringConstraints(min_length=1, max_length=200)]
# 2**34 elements along one dimension is 32 GiB at 2 bytes: past any GPU's memory as one tensor
MAX_DIM = 2**34
Dim = Annotated[int, Field(ge=1, le=MAX_DIM)]
ShapeList = Annotated[list[Annotated[list[Dim], Field(min_length=1)]], Field(min_length=1),
                      AfterValidator(_listed_once)]
DtypeList = Annotated[list[Name], Field(min_length=1), AfterValidator(_listed_once)]
ModuleName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$",
                                              max_length=200)]


def _yaml_number(value: Any) -> Any:
    """PyYAML (YAML 1.1) reads an exponent written without a dot (``5e-1``, ``1e-2``) as text;
    whoever wrote it meant the number, as ``--sample-ms 5e-1`` takes it."""
    if isinstance(value, str) and re.fullmatch(r"[-+]?(?:\d+\.?\d*|\.\d+)[eE][-+]?\d+", value.strip()):
        return float(value)
    return value


YamlFloat = Annotated[float, BeforeValidator(_yaml_number)]
Effect = Annotated[YamlFloat, Field(ge=0, le=10)]


def _fraction_below_one(value: float) -> float:
    # --min-effect refuses 2 with the fraction it probably meant (argtypes.fraction); a policy
    # file, the same setting, took `min_effect: 2` ("2 %") as 200 %: a gate blind to any change
    if value >= 1:
        raise ValueError(f"expected a fraction below 1 (0.01 is 1 %), got {value:g} (that would be {value:.0%}); "
                         f"for {value:g} % write {value / 100:g}")
    return value


MinEffect = Annotated[YamlFloat, Field(ge=0), AfterValidator(_fraction_below_one)]


class SuiteOpDoc(HandWritten):
    dtypes: Optional[DtypeList] = None
    shapes: Optional[ShapeList] = None  # inline shapes: win over the shape file's for this op
    # the least device time a CUDA-graph sample of this op aims at when recorded, in ms (a longer
    # --sample-ms still applies): for kernels whose launches jitter more than the rest
    sample_ms: Optional[Annotated[YamlFloat, Field(gt=0, le=100)]] = None


class SuiteDoc(HandWritten):
    description: Annotated[str, StringConstraints(max_length=2_000)] = ""
    shapes: Optional[Annotated[str, StringConstraints(min_length=1, max_length=1_000)]] = None
    dtypes: Optional[DtypeList] = None
    modules: list[ModuleName] = []  # importable modules with more ops (TRITONGATE_OPS)
    ops: dict[Name, Optional[SuiteOpDoc]] = {}


# -- provider suites (ops taken from a package such as flag_gems, by name) -------------------

# The word that, in place of a mapping under `ops:`, means "every op of the inventory that is
# not dismissed" (resolved when the suite loads).
INVENTORY_WORD = "inventory"
PathText = Annotated[str, StringConstraints(min_length=1, max_length=1_000)]
# Names that become row keys and file names: the provider's own spelling of an op.
OpName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=200)]
Dotted = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$",
                                          max_length=300)]


class ProviderSuiteDoc(HandWritten):
    """A suite whose ops come from a provider package (``provider: flaggems``). A separate
    model from ``SuiteDoc``, so a plain suite's keys stay exactly what they were."""

    description: Annotated[str, StringConstraints(max_length=2_000)] = ""
    provider: Literal["flaggems"]
    inventory: PathText  # the provider's op table (CSV), relative to the suite
    dismiss: Optional[PathText] = None  # ops `ops: inventory` leaves out, with reason and date
    shapes: Optional[PathText] = None
    dtypes: Optional[DtypeList] = None
    ops: dict[OpName, Optional[SuiteOpDoc]] = {}
    _all_inventory: bool = PrivateAttr(False)

    @model_validator(mode="wrap")
    @classmethod
    def _inventory_word(cls, data: Any, handler: Any) -> "ProviderSuiteDoc":
        # `ops: inventory` is a word, not a mapping: taken off before the strict model sees it
        if isinstance(data, dict) and isinstance(data.get("ops"), str):
            if data["ops"] != INVENTORY_WORD:
                raise ValueError(f"ops: expected a mapping of op names, or the word {INVENTORY_WORD!r} "
                                 f"(every op of the inventory that is not dismissed), got the text "
                                 f"{data['ops'][:60]!r}")
            doc: ProviderSuiteDoc = handler({**data, "ops": {}})
            doc._all_inventory = True
            return doc
        plain: ProviderSuiteDoc = handler(data)
        return plain

    @property
    def all_inventory(self) -> bool:
        """``ops: inventory``: every op of the inventory that is not dismissed."""
        return self._all_inventory


class InventoryRowDoc(HandWritten):
    """One row of ``inventory_<backend>.csv``."""

    op: OpName
    callable: Dotted  # where the op is taken from, e.g. flag_gems.mm
    family: Annotated[str, StringConstraints(pattern=r"^([A-Za-z_][A-Za-z0-9_]*)?$", max_length=200)] = \
        Field(alias="class")  # the input recipe's class; also the shape file's fallback key
    status: Literal["ok", "missing", "no_recipe"]
    module: Annotated[str, StringConstraints(pattern=r"^([A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*)?$",
                                             max_length=300)] = ""  # where the function is defined


class DismissEntryDoc(HandWritten):
    """One line of ``dismiss.txt``: ``op | YYYY-MM-DD | reason``."""

    op: OpName
    date: Annotated[str, StringConstraints(pattern=r"^\d{4}-\d{2}-\d{2}$")]
    reason: Annotated[str, StringConstraints(min_length=3, max_length=500)]

    @field_validator("date")
    @classmethod
    def _real_date(cls, value: str) -> str:
        try:
            dt.date.fromisoformat(value)
        except ValueError:
            raise ValueError(f"date {value!r} is not a calendar date (YYYY-MM-DD)") from None
        return value


class ShapeEntryDoc(HandWritten):
    shapes: ShapeList
    shape_desc: Optional[Annotated[str, StringConstraints(max_length=200)]] = None  # upstream's layout note


class ShapeFileDoc(RootModel[dict[Name, ShapeEntryDoc]]):
    model_config = ConfigDict(strict=True, frozen=True, allow_inf_nan=False)


class OpPolicyDoc(HandWritten):
    min_effect: Optional[MinEffect] = None


class PolicyDoc(HandWritten):
    min_effect: Optional[MinEffect] = None
    noise_z: Optional[Annotated[YamlFloat, Field(ge=0, le=100)]] = None
    min_samples: Optional[Annotated[int, Field(ge=1, le=1_000_000)]] = None
    max_missing: Optional[Annotated[int, Field(ge=0)]] = None
    strict: Optional[bool] = None
    process_sd: Optional[Effect] = None
    pair_inflation: Optional[Annotated[YamlFloat, Field(ge=1, le=100)]] = None
    fail_on_blind: Optional[bool] = None
    ops: Optional[dict[Name, OpPolicyDoc]] = None
