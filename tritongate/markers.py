"""Marker lines: a row that carries one is not clean same-config evidence.

A marker is ``KIND key=value ...``. A one-word ``reason`` keeps its place
(``AUTOTUNE_REPLAY_FALLBACK reason=key_missing kernel=<id>``); a free-text reason goes
last and takes the rest of the line (``... phase=capture reason=RuntimeError: ...``). Markers are written verbatim to ``run.log`` (greppable) and as
strings in each row's ``markers`` list in ``results.json``; ``parse_marker`` gives them
back as structured data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


NO_CUDAGRAPH = "BENCHMARK_DIRECT_NO_CUDAGRAPH"
REPLAY_FALLBACK = "AUTOTUNE_REPLAY_FALLBACK"
CORRECTNESS_MISMATCH = "CORRECTNESS_MISMATCH"
GPU_BUSY = "GPU_BUSY"
GPU_THROTTLED = "GPU_THROTTLED"
ROW_ERROR = "ROW_ERROR"
ROW_TIMEOUT = "ROW_TIMEOUT"

def one_line(text: str, limit: int = 200) -> str:
    """A marker-safe reason: first non-empty line, no '=' ambiguity, bounded length."""
    first = next((ln.strip() for ln in str(text).splitlines() if ln.strip()), "unknown")
    first = re.sub(r"\s+", " ", first)
    return first if len(first) <= limit else first[: limit - 3] + "..."


_KIND = re.compile(r"^[A-Z][A-Z0-9_]*$")
_KEY = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class Marker:
    kind: str
    fields: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not _KIND.match(self.kind):
            raise ValueError(f"marker kind must be UPPER_SNAKE, got {self.kind!r}")
        for key, value in self.fields.items():
            if not _KEY.match(key):
                raise ValueError(f"marker field name must be lower_snake, got {key!r}")
            if key != "reason" and (not value or re.search(r"\s", value)):
                raise ValueError(f"marker field {key}={value!r} must be one non-empty word")

    def __str__(self) -> str:
        reason = one_line(self.fields["reason"]) if "reason" in self.fields else None
        free_text = reason is not None and (" " in reason or "=" in reason)
        parts = [self.kind]
        for k, v in self.fields.items():
            if k == "reason":
                if not free_text:
                    parts.append(f"reason={reason}")
            else:
                parts.append(f"{k}={v}")
        if free_text:
            parts.append(f"reason={reason}")
        return " ".join(parts)


def make(kind: str, reason: str | None = None, **fields: str) -> str:
    """Format a marker line; a free-text ``reason`` goes last, folded to one bounded line."""
    all_fields: dict[str, str] = {}
    if reason is not None:
        all_fields["reason"] = reason
    all_fields.update(fields)
    return str(Marker(kind, all_fields))


_FIELD = re.compile(r"^[a-z][a-z0-9_]*=\S+$")


def parse_marker(line: str) -> Marker:
    words = line.strip().split(" ")
    if not words or not words[0]:
        raise ValueError("empty marker line")
    fields: dict[str, str] = {}
    i = 1
    while i < len(words):
        word = words[i]
        key, eq, value = word.partition("=")
        if not eq:
            raise ValueError(f"marker field without '=': {word!r} in {line!r}")
        rest = words[i + 1:]
        if key == "reason" and not all(_FIELD.match(w) for w in rest):
            fields["reason"] = " ".join([value, *rest])  # free text: the rest of the line
            break
        fields[key] = value
        i += 1
    return Marker(words[0], fields)


def kinds(markers: list[str]) -> set[str]:
    return {m.split(" ", 1)[0] for m in markers}
