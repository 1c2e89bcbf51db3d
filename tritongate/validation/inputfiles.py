"""The models of the files people write: suites, shape files and gate policies. Unknown
keys are refused (a typo must not silently fall back to a default)."""

from __future__ import annotations

from typing import Annotated, Optional

from pydantic import ConfigDict, Field, RootModel, StringConstraints

from tritongate.validation.core import HandWritten

Name = Annotated[str, StringConstraints(min_length=1, max_length=200)]
Dim = Annotated[int, Field(ge=1)]
ShapeList = Annotated[list[Annotated[list[Dim], Field(min_length=1)]], Field(min_length=1)]
DtypeList = Annotated[list[Name], Field(min_length=1)]
ModuleName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$",
                                              max_length=200)]
Effect = Annotated[float, Field(ge=0, le=10)]


class SuiteOpDoc(HandWritten):
    dtypes: Optional[DtypeList] = None
    shapes: Optional[ShapeList] = None  # inline shapes: win over the shape file's for this op


class SuiteDoc(HandWritten):
    description: Annotated[str, StringConstraints(max_length=2_000)] = ""
    shapes: Optional[Annotated[str, StringConstraints(min_length=1, max_length=1_000)]] = None
    dtypes: Optional[DtypeList] = None
    modules: list[ModuleName] = []  # importable modules with more ops (TRITONGATE_OPS)
    ops: dict[Name, Optional[SuiteOpDoc]] = {}


class ShapeEntryDoc(HandWritten):
    shapes: ShapeList


class ShapeFileDoc(RootModel[dict[Name, ShapeEntryDoc]]):
    model_config = ConfigDict(strict=True, frozen=True, allow_inf_nan=False)


class OpPolicyDoc(HandWritten):
    min_effect: Optional[Effect] = None


class PolicyDoc(HandWritten):
    min_effect: Optional[Effect] = None
    noise_z: Optional[Annotated[float, Field(ge=0, le=100)]] = None
    min_samples: Optional[Annotated[int, Field(ge=1, le=1_000_000)]] = None
    max_missing: Optional[Annotated[int, Field(ge=0)]] = None
    strict: Optional[bool] = None
    ops: Optional[dict[Name, OpPolicyDoc]] = None
