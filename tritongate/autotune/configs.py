"""Autotune keys and configs as JSON, across Triton versions.

Every ``Config`` field is written explicitly (the ``num_stages`` default changed in 3.3;
3.2 has warp-specialisation fields that 3.4 removed), read from ``Config.__init__``'s
signature of the running version. ``pre_hook`` is a callable and is never serialised: a
replayed config is matched against the kernel's own configs, which carry it.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

from tritongate.atomicio import jsonable as jsonable  # re-exported: configs are written with it

_NOT_FIELDS = {"self", "kwargs", "pre_hook"}


def config_fields() -> list[str]:
    from triton import Config

    return [p for p in inspect.signature(Config.__init__).parameters if p not in _NOT_FIELDS]


def key_text(key: Any) -> str:
    """A canonical string of an autotune key, for matching records across processes."""
    return json.dumps(jsonable(key), separators=(",", ":"))


def config_to_dict(config: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"kwargs": jsonable(dict(config.kwargs))}
    for name in config_fields():
        data[name] = jsonable(getattr(config, name, None))
    return data


def same_config(recorded: dict[str, Any], config: Any) -> bool:
    """Equal kwargs, and equal values for every field both versions know."""
    mine = config_to_dict(config)
    return recorded.get("kwargs") == mine["kwargs"] and all(recorded[f] == mine[f] for f in mine if f in recorded)
