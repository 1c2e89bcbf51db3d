"""Marker lines: a row that carries one is not clean same-config evidence.

A marker is ``KIND key=value ... [reason=free text]``; ``reason`` is always last and takes
the rest of the line. Markers are written verbatim to ``run.log`` (greppable) and as
strings in each row's ``markers`` list in ``results.json``; ``parse_marker`` gives them
back as structured data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tritongate.harness.cuda_errors import one_line

NO_CUDAGRAPH = "BENCHMARK_DIRECT_NO_CUDAGRAPH"
REPLAY_FALLBACK = "AUTOTUNE_REPLAY_FALLBACK"
CORRECTNESS_MISMATCH = "CORRECTNESS_MISMATCH"
GPU_BUSY = "GPU_BUSY"
GPU_THROTTLED = "GPU_THROTTLED"
ROW_ERROR = "ROW_ERROR"
ROW_TIMEOUT = "ROW_TIMEOUT"

KNOWN_KINDS = frozenset(
    {NO_CUDAGRAPH, REPLAY_FALLBACK, CORRECTNESS_MISMATCH, GPU_BUSY, GPU_THROTTLED, ROW_ERROR, ROW_TIMEOUT}
)

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
        parts = [self.kind]
        parts += [f"{k}={v}" for k, v in self.fields.items() if k != "reason"]
        if "reason" in self.fields:
            parts.append(f"reason={one_line(self.fields['reason'])}")
        return " ".join(parts)


def make(kind: str, reason: str | None = None, **fields: str) -> str:
    """Format a marker line; ``reason`` goes last and is folded to one bounded line."""
    all_fields = dict(fields)
    if reason is not None:
        all_fields["reason"] = reason
    return str(Marker(kind, all_fields))


def parse_marker(line: str) -> Marker:
    text = line.strip()
    head, sep, reason = text.partition(" reason=")
    words = head.split()
    if not words:
        raise ValueError("empty marker line")
    fields: dict[str, str] = {}
    for word in words[1:]:
        key, eq, value = word.partition("=")
        if not eq:
            raise ValueError(f"marker field without '=': {word!r} in {line!r}")
        fields[key] = value
    if sep:
        fields["reason"] = reason
    return Marker(words[0], fields)


def kinds(markers: list[str]) -> set[str]:
    return {m.split(" ", 1)[0] for m in markers}
