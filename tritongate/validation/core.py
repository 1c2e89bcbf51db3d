"""Typed validation of files read from disk, with one-line errors.

Every document tritongate reads (run directories, autotune records, suites, shape files,
policies) is parsed into a pydantic model in *strict* mode before anything uses it: a
boolean is not a number, a string is not a list, ``NaN`` is not a time. A failure becomes
one line naming the file, the field path and what was expected, e.g.::

    runs/pr_X/results.json: rows[3].samples[0]: expected a number, got true

pydantic (rather than jsonschema) because the models are Python types the rest of the
code reads, the checks and the documentation of a field are the same line, and its error
records carry the exact location and the expected type.
"""

from __future__ import annotations

from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Callable, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError

M = TypeVar("M", bound=BaseModel)

MAX_GOT = 60  # characters of the offending value quoted in a message


class StrictDoc(BaseModel):
    """A document written by tritongate: unknown keys are ignored (a reader of the same
    schema version may meet optional fields it does not know), types are strict."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True, allow_inf_nan=False)


class OpenDoc(StrictDoc):
    """A section with typed keys that keeps the others (for people and later versions)."""

    model_config = ConfigDict(extra="allow")


class HandWritten(BaseModel):
    """A file people write (suite, shape file, policy): an unknown key is a typo, refused."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, allow_inf_nan=False)


def validate(model: type[M], data: Any, *, source: str | Path,
             error: Callable[[str], Exception]) -> M:
    """``data`` as ``model``, or ``error(one_line_message)`` raised."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise error(describe(exc, source, model)) from None


def describe(exc: ValidationError, source: str | Path, model: type[BaseModel] | None = None) -> str:
    """The first problem of a validation error as one line; the count of the others."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    if first["loc"] and first["loc"][-1] == "[key]":  # a mapping key of the wrong type
        loc = format_loc(first["loc"][:-2])
        where = f"{source}: {loc}: " if loc else f"{source}: "
        if first["type"] == "string_too_short":
            return f"{where}a key is empty; name it"
        if first["type"] == "string_too_long":
            return f"{where}the key {short(first['loc'][-2])} is too long"
        if first["type"] == "string_pattern_mismatch":
            return f"{where}the key {short(first['loc'][-2])} does not match {first.get('ctx', {}).get('pattern')}"
        return f"{where}the key {short(first['loc'][-2])} must be text"
    loc = format_loc(first["loc"])
    where = f"{source}: {loc}: " if loc else f"{source}: "
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    return where + _problem(first, model) + more


def format_loc(loc: tuple[Any, ...]) -> str:
    """``("rows", 3, "samples", 0)`` -> ``rows[3].samples[0]``; odd keys quoted."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str) and part.isidentifier():
            out += f".{part}" if out else part
        else:
            out += f"[{short(part)}]"
    return out


def short(value: Any) -> str:
    """A value quoted in a message: repr, one line, bounded."""
    text = repr(value)
    cut = len(text) > MAX_GOT
    if cut:  # cut before filtering: a value can be a 64 MiB string
        text = text[: MAX_GOT - 1]
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text + "…" if cut else text


_EXPECTED = {
    "float_type": "a number", "float_parsing": "a number", "int_type": "an integer",
    "int_from_float": "an integer", "int_parsing": "an integer", "bool_type": "true or false",
    "string_type": "a string", "list_type": "a list", "tuple_type": "a list",
    "dict_type": "a mapping", "model_type": "a mapping", "model_attributes_type": "a mapping",
    "finite_number": "a finite number", "none_required": "null",
}


def _problem(err: Any, model: type[BaseModel] | None) -> str:
    kind, ctx, got = err["type"], err.get("ctx") or {}, err.get("input")
    if kind == "missing":
        return "is required but missing"
    if kind == "extra_forbidden":
        allowed = _allowed_keys(model, err["loc"][:-1])
        return "is not a known key" + (f" (allowed: {', '.join(allowed)})" if allowed else "")
    if kind in _EXPECTED:
        expected = _EXPECTED[kind]
    elif kind in ("literal_error", "enum"):
        expected = f"one of {ctx.get('expected', '?')}"
    elif kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        sign = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<",
                "less_than_equal": "<="}[kind]
        bound = next(iter(ctx.values()), "?")
        expected = f"a number {sign} {bound}"
    elif kind in ("too_short", "string_too_short"):
        expected = ("a non-empty string" if kind == "string_too_short" and ctx.get("min_length") == 1
                    else f"at least {ctx.get('min_length', '?')} {'characters' if kind == 'string_too_short' else 'items'}")
    elif kind in ("too_long", "string_too_long"):
        expected = f"at most {ctx.get('max_length', '?')} {'characters' if kind == 'string_too_long' else 'items'}"
    elif kind == "string_pattern_mismatch":
        expected = f"text matching {ctx.get('pattern', '?')}"
    elif kind == "value_error":
        return str(ctx.get("error", err["msg"]))[:300]
    else:
        expected = err["msg"][0].lower() + err["msg"][1:]
    return f"expected {expected}, got {_got(got)}"


def _got(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "true" if value is True else "false" if value is False else "null"
    if isinstance(value, (dict, list)):
        kind = "a mapping" if isinstance(value, dict) else "a list"
        return f"{kind} {short(value)}"
    if isinstance(value, str):
        return f"the text {short(value)}"
    return short(value)


def _allowed_keys(model: type[BaseModel] | None, loc: tuple[Any, ...]) -> list[str]:
    """The field names of the sub-model at ``loc`` (best effort: for a helpful message)."""
    ann: Any = model
    for part in loc:
        ann = _unwrap(ann)
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            field = ann.model_fields.get(part) if isinstance(part, str) else None
            if field is None:
                return []
            ann = field.annotation
        elif get_origin(ann) in (list, tuple, dict):
            ann = get_args(ann)[-1] if get_args(ann) else None  # the element / value type
        else:
            return []
    ann = _unwrap(ann)
    return sorted(ann.model_fields) if isinstance(ann, type) and issubclass(ann, BaseModel) else []


def _unwrap(ann: Any) -> Any:
    """Optional[X] / Annotated[X, ...] -> X."""
    while True:
        origin = get_origin(ann)
        if origin is Annotated:
            ann = get_args(ann)[0]
        elif origin in (Union, UnionType):
            rest = [a for a in get_args(ann) if a is not type(None)]
            if len(rest) != 1:
                return ann
            ann = rest[0]
        else:
            return ann
