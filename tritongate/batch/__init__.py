"""Batch: many ops, each its own ``tritongate run`` (what the deep scan runs), run by a worker
process per device that is reused from op to op (``lane``, ``worker``); a crash loses one op.

A batch directory holds ``batch.json`` (the plan, its sha256, the execution settings),
``ops_status.csv`` and ``summary.csv``, ``ops/<op>/`` (the op's run directories, attempt logs and
result) and ``run/`` (every PASS op in one ordinary run directory): docs/batch-and-deep-scan.md.
The parent never imports torch or triton.
"""

from __future__ import annotations

import importlib
from typing import Any

# imported on first use: a lane's worker (``python -m tritongate.batch.worker``) starts without
# the planner's imports (yaml, pydantic: a third of a second per worker)
_EXPORTS = {"BatchRequest": "plan", "OpInvocation": "plan", "RunOptions": "plan", "tritongate_run": "plan",
            "BatchEvent": "scheduler", "BatchOutcome": "scheduler", "run_batch": "scheduler",
            "merge_batches": "shards", "OpResult": "status", "OpStatus": "status"}
__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
