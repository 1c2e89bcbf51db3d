"""The constrained field types the documents tritongate writes share: bounded text, non-empty
names, counts. One spelling, so a bound is the same wherever a file holds it."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

Text = Annotated[str, Field(max_length=100_000)]
Name = Annotated[str, Field(min_length=1, max_length=1_000)]
NonNegInt = Annotated[int, Field(ge=0)]
PosInt = Annotated[int, Field(ge=1)]
NonNegFloat = Annotated[float, Field(ge=0)]
PosFloat = Annotated[float, Field(gt=0, lt=1e15, allow_inf_nan=False)]
