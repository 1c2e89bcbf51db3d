"""Batch: many ops, each its own ``tritongate run`` (what the deep scan runs), run by a worker
process per device that is reused from op to op (``lane``, ``worker``); a crash loses one op.

```
BATCH/                         DIR/batch-<suite>[-shardIofN]_<UTC>/
  batch.json                   the plan (suite + digest, ops, dtypes, run options, replay root,
                               shard) and its sha256 (a plan edited later is refused by --resume
                               and batch-merge), execution settings; finished, counts, run
  ops_status.csv               one line per op, rewritten atomically as the batch runs
  summary.csv                  one line per measured row (backend, device, timer, dtype,
                               latency, speedup vs the replayed record, case, markers)
  ops/<op>/<suite>_<UTC>/      the op's run directories (ordinary: replay any of them)
  ops/<op>/logs/attempt-NN.{stdout,stderr}.log, attempt-NN.argv
  ops/<op>/result.json         the op's result; .complete (same content) only for PASS/SKIP
  ops/<op>/.running            while an attempt runs: its (worker) process group (--resume ends orphans)
  run/                         every PASS op merged: an ordinary run directory (gate, pair,
                               --replay-from), its identity naming each op's run under "batch"
```

Statuses, retries and the dtype rescue are described in ``tritongate.batch.opflow``;
the parent never imports torch or triton.
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
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
