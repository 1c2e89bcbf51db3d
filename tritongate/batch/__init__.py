"""Batch: many ops, each in its own ``tritongate run`` subprocess (what the deep scan runs).

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
  ops/<op>/.running            while its process runs: the process group (--resume ends orphans)
  run/                         every PASS op merged: an ordinary run directory (gate, pair,
                               --replay-from), its identity naming each op's run under "batch"
```

Statuses, retries and the dtype rescue are described in ``tritongate.batch.opflow``;
the parent never imports torch or triton.
"""

from tritongate.batch.plan import BatchRequest, OpInvocation, RunOptions, tritongate_run
from tritongate.batch.scheduler import BatchEvent, BatchOutcome, run_batch
from tritongate.batch.shards import merge_batches
from tritongate.batch.status import OpResult, OpStatus

__all__ = ["BatchRequest", "OpInvocation", "RunOptions", "tritongate_run", "BatchEvent", "BatchOutcome",
           "run_batch", "merge_batches", "OpResult", "OpStatus"]
