"""The rows of a ``results.json`` as ``Row.from_dict`` reads them, checked in one pass, without
building a pydantic model per row.

``plain_rows`` accepts only what ``runfiles.RowDoc`` accepts, and only in the form in which
``RowDoc.model_dump`` would hand it on: floats where the model has floats (an integer there,
which the model would turn into a float, is not taken), no key in a nested section that the
model does not know, integers of at most 63 bits. Anything else, valid or not, returns None:
the caller then validates with the models, whose error message names the file, the row and
the field. So the fast path never decides what an error says, and where it answers it
answers as the models would.
"""

from __future__ import annotations

import math
from typing import Any

from tritongate.schema import PAIR_INPUTS, STOPPED_BY

_INT_MAX = 2**63
_TEXT_MAX = 100_000
_NAME_MAX = 1_000
_MAX_DEPTH = 32  # deeper free-form values go to the models, whatever they allow

_ROW_REQUIRED = frozenset({"op", "case", "dtype", "timer", "samples"})
_STATUS = ("ok", "error", "timeout")
_SKIPPED = (None, "identical_binary", "other_side_failed", "unchanged_ahead_of_time")
_MEASUREMENT = frozenset({"launches_per_sample", "samples_per_round", "warmup_calls", "l2", "shift_bytes",
                          "pairing"})
_MEASUREMENT_REQUIRED = frozenset({"launches_per_sample", "samples_per_round", "warmup_calls", "l2"})
_PAIRING = frozenset({"pair_id", "side", "went_first", "target_effect", "detectable_effect", "target_reached",
                      "min_rounds", "max_rounds", "confirm_rounds", "inputs", "worker_pairs", "stopped_by",
                      "confirm_from"})
_PAIRING_REQUIRED = frozenset({"pair_id", "side"})
_STOPPED_BY = (None, *STOPPED_BY)
_CORRECTNESS = frozenset({"ok", "max_abs_err", "atol", "rtol", "detail"})
_VARIANT = frozenset({"kernel", "name", "source_hash", "binary_hash", "launches"})
_VARIANT_REQUIRED = frozenset({"kernel", "name"})
_AUTOTUNE = frozenset({"mode", "sweep_benchmarks", "kernels"})
_SUMMARY_ORDER = ("median", "n", "mean", "q1", "q3", "iqr", "min", "max")  # runfiles.SummaryDoc's
_SUMMARY = frozenset(_SUMMARY_ORDER)
_SUMMARY_FLOATS = ("mean", "q1", "q3", "iqr", "min", "max")  # and the median, required


def plain_rows(rows: Any) -> list[dict[str, Any]] | None:
    """``rows`` as the dicts ``Row.from_dict`` reads, or None where the models must decide."""
    if type(rows) is not list:
        return None
    out = []
    for row in rows:
        plain = _row(row)
        if plain is None:
            return None
        out.append(plain)
    return out


def _text(v: Any) -> bool:
    return type(v) is str and len(v) <= _TEXT_MAX


def _name(v: Any) -> bool:
    return type(v) is str and 0 < len(v) <= _NAME_MAX


def _count(v: Any, least: int = 0) -> bool:
    return type(v) is int and least <= v < _INT_MAX


def _float(v: Any) -> bool:
    return type(v) is float and -math.inf < v < math.inf


def _opt_nonneg(v: Any) -> bool:
    return v is None or (type(v) is float and 0.0 <= v < math.inf)


def _counts(values: Any) -> bool:
    """A list of integers >= 0 (in C: a row has many)."""
    return type(values) is list and (not values or (set(map(type, values)) == _INT and min(values) >= 0
                                                    and max(values) < _INT_MAX))


def _positive(values: Any) -> bool:
    """A list of finite floats > 0 (in C: a row has many). A finite sum has no NaN and no
    infinity in it (one so large it overflows is sent to the models), so min is exact."""
    return type(values) is list and (not values or (set(map(type, values)) == _FLOAT
                                                    and math.isfinite(sum(values)) and min(values) > 0.0))


_INT = {int}
_FLOAT = {float}
_BOOL = {bool}
_STR = {str}


def _json(v: Any, depth: int = 0) -> bool:
    """A value as ``json.loads`` gives it that ``JsonValue`` takes (no infinity, no NaN)."""
    kind = type(v)
    if kind is dict:
        if v and set(map(type, v)) != _STR:
            return False
        items: Any = v.values()
    elif kind is list:
        items = v
    else:
        return _json_scalar(v)
    if depth >= _MAX_DEPTH:
        return False
    for x in items:
        kind = type(x)
        if kind is str or kind is bool or x is None:
            continue
        if kind is float or kind is int:
            if not _json_scalar(x):
                return False
        elif not _json(x, depth + 1):
            return False
    return True


def _json_scalar(v: Any) -> bool:
    kind = type(v)
    if kind is float:
        return -math.inf < v < math.inf
    if kind is int:
        return -_INT_MAX <= v < _INT_MAX
    return kind is str or kind is bool or v is None


def _row(r: Any) -> dict[str, Any] | None:
    if type(r) is not dict or not _ROW_REQUIRED <= r.keys():
        return None
    if not (_name(r["op"]) and _name(r["case"]) and _name(r["dtype"]) and _text(r["timer"])
            and _positive(r["samples"])):
        return None
    get = r.get
    status, params, markers, variants = get("status", "ok"), get("params", {}), get("markers", []), \
        get("variants", [])
    measurement, correctness, summary = get("measurement"), get("correctness"), get("summary")
    if not (type(status) is str and status in _STATUS and _text(get("error", ""))
            and type(params) is dict and _json(params)
            and type(markers) is list and (not markers or all(map(_marker, markers)))
            and type(variants) is list and all(map(_variant, variants))
            and _opt_nonneg(get("flops")) and _opt_nonneg(get("bytes")) and _skipped(get("skipped"))
            and (measurement is None or _measurement(measurement))
            and (correctness is None or _correctness(correctness))
            and (summary is None or _summary(summary))):
        return None
    autotune = get("autotune")
    if autotune is not None and not _autotune(autotune):
        return None
    # sections as the models hand them on: every field in the models' order, defaults filled
    # in (the stored summary is checked field by field in that order: the first that differs
    # is the one an error names)
    return {**r, "summary": None if summary is None else {k: summary.get(k) for k in _SUMMARY_ORDER},
            "autotune": None if autotune is None else {
                "mode": autotune.get("mode"), "sweep_benchmarks": autotune.get("sweep_benchmarks", 0),
                "kernels": autotune.get("kernels", [])}}


def _skipped(v: Any) -> bool:
    return v is None or (type(v) is str and v in _SKIPPED)


def _marker(m: Any) -> bool:
    from tritongate.markers import parse_marker  # most rows carry no marker

    if not _text(m):
        return False
    try:
        parse_marker(m)
    except ValueError:
        return False
    return True


def _variant(v: Any) -> bool:
    return (type(v) is dict and _VARIANT_REQUIRED <= v.keys() <= _VARIANT and _name(v["kernel"])
            and _name(v["name"]) and _text(v.get("source_hash", "")) and _text(v.get("binary_hash", ""))
            and _count(v.get("launches", 0)))


def _measurement(m: Any) -> bool:
    return (type(m) is dict and _MEASUREMENT_REQUIRED <= m.keys() <= _MEASUREMENT
            and _count(m["launches_per_sample"], 1) and _count(m["samples_per_round"], 1)
            and _count(m["warmup_calls"]) and _name(m["l2"]) and _counts(m.get("shift_bytes", []))
            and (m.get("pairing") is None or _pairing(m["pairing"])))


def _pairing(p: Any) -> bool:
    if not (type(p) is dict and _PAIRING_REQUIRED <= p.keys() <= _PAIRING):
        return False
    get = p.get
    went_first, inputs, stopped_by, side = get("went_first", []), get("inputs", "own"), get("stopped_by"), p["side"]
    return (_name(p["pair_id"]) and type(side) is str and side in ("base", "candidate")
            and type(went_first) is list and (not went_first or set(map(type, went_first)) == _BOOL)
            and _opt_nonneg(get("target_effect")) and _opt_nonneg(get("detectable_effect"))
            and (get("target_reached") is None or type(p["target_reached"]) is bool)
            and _count(get("min_rounds", 0)) and _count(get("max_rounds", 0))
            and _count(get("confirm_rounds", 0)) and _count(get("confirm_from", 0))
            and type(inputs) is str and inputs in PAIR_INPUTS and _counts(get("worker_pairs", []))
            and (stopped_by is None or (type(stopped_by) is str and stopped_by in _STOPPED_BY)))


def _correctness(c: Any) -> bool:
    return (type(c) is dict and "ok" in c and c.keys() <= _CORRECTNESS and type(c["ok"]) is bool
            and (c.get("max_abs_err") is None or _float(c["max_abs_err"])) and _opt_nonneg(c.get("atol"))
            and _opt_nonneg(c.get("rtol")) and _text(c.get("detail", "")))


def _autotune(a: Any) -> bool:
    kernels = a.get("kernels", []) if type(a) is dict else None
    return (type(a) is dict and a.keys() <= _AUTOTUNE and (a.get("mode") is None or _name(a["mode"]))
            and _count(a.get("sweep_benchmarks", 0))
            and type(kernels) is list and all(type(k) is dict and _json(k) for k in kernels))


def _summary(s: Any) -> bool:
    if not (type(s) is dict and "median" in s and s.keys() <= _SUMMARY):
        return False
    n = s.get("n")
    values = [v for v in map(s.get, _SUMMARY_FLOATS) if v is not None]
    values.append(s["median"])
    return ((n is None or (type(n) is int and -_INT_MAX <= n < _INT_MAX))
            and set(map(type, values)) == _FLOAT and math.isfinite(sum(values)))
