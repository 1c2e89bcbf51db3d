"""A small store of real publishes for the dashboard tests: a planted step, gaps, a missing
night, a hostile op name, and (on request) a damaged entry."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tritongate.schema import AutotuneInfo

from tests.gate.helpers import row
from tests.history.helpers import DAY, T0, publish_nights

HOSTILE = "<img src=x onerror=alert(1)></script><b>op"
NIGHTS = 24
STEP_NIGHT = 14  # softmax 4096x4096 is 8 % slower from this night on
SKIPPED = 9  # published nothing
FAILED = 5  # softmax 1024x1024 failed this night
STEP_DATE = (T0 + STEP_NIGHT * DAY).date().isoformat()


def tuned(block: int) -> AutotuneInfo:
    """The config autotune chose for softmax 4096x4096: another one from the step's night on."""
    return AutotuneInfo(mode="record", kernels=({"kernel": "k.softmax", "key": [4096, "torch.float16"],
                                                 "config": {"kwargs": {"BLOCK": block}, "num_warps": 8}},))


def night(i: int) -> list:
    return [replace(row(median=20.0 * (1.08 if i >= STEP_NIGHT else 1.0), seed=i),
                    autotune=tuned(2048 if i >= STEP_NIGHT else 4096)),
            row(case="1024x1024", median=5.0, seed=100 + i) if i != FAILED
            else row(case="1024x1024", status="error", error="RuntimeError: out of <b>resources</b>"),
            row(op=HOSTILE, case="n=<i>4096</i>", dtype="float32", median=3.0, seed=200 + i)]


def make_store(tmp: Path) -> tuple[Path, list[Path]]:
    """The store and its entry folders, oldest first."""
    store = tmp / "store"
    entries = publish_nights(store, tmp / "runs", [night(i) for i in range(NIGHTS)], skip=[SKIPPED])
    return store, entries


def damage(entry: Path) -> None:
    """Edit an entry's results.json: its sha256 no longer matches the manifest."""
    results = entry / "results.json"
    results.write_bytes(results.read_bytes().replace(b'"status": "complete"', b'"status": "complete" '))
