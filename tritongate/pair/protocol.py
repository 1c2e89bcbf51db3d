"""The parent/worker protocol: one JSON object per line.

Requests go down the worker's stdin; answers come back on the worker's original stdout,
which the worker moves to a private descriptor at start-up and replaces with its stderr,
so anything Triton, torch or a kernel prints lands in the worker's log, never in the
protocol. A worker exits when its stdin closes, so it dies with its parent.

request:  {"seq": 7, "cmd": "round", "args": {...}}
answer:   {"seq": 7, "ok": true, "result": {...}}
          {"seq": 7, "ok": false, "error": "...", "kind": "row|fatal|preflight|usage", "check": "..."}

``kind``: ``row`` - this row failed (the worker is fine); ``fatal`` - the worker's device
context is unusable (restart it); ``preflight`` / ``usage`` - bad input for the whole run.
"""

from __future__ import annotations

import json
from typing import Any

PROTOCOL_VERSION = 2  # 2: round(inputs=, shared=), unshare, set_plant; unknown commands refused
MAX_LINE = 64 << 20  # a row's samples are a few kB; anything this large is a broken worker

COMMANDS = ("init", "plan", "set_plant", "prepare", "warm_up", "round", "unshare", "finish", "abort", "shutdown")
ERROR_KINDS = ("row", "fatal", "preflight", "usage")


def encode(message: dict[str, Any]) -> bytes:
    return (json.dumps(message, allow_nan=False, separators=(",", ":")) + "\n").encode()


def decode(line: bytes) -> dict[str, Any]:
    message = json.loads(line)
    if not isinstance(message, dict) or "seq" not in message:
        raise ValueError(f"not a protocol message: {line[:200]!r}")
    return message
