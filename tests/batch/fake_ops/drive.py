"""Run a batch of fake ops in its own process (for the tests that kill or signal it):
``python drive.py '{"state": ..., "suite": ..., "out": ... | "resume": ..., ...}'``.

Goes through ``tritongate.cli.batch.execute`` and ``dispatch``, as the CLI does, with
the fake command in place of ``tritongate run``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository, for tests.batch.fake_ops

from tests.batch.fake_ops import fake_command
from tritongate.cli.batch import dispatch, execute
from tritongate.batch.plan import BatchRequest, request_from_manifest


def main() -> int:
    spec = json.loads(sys.argv[1])
    command = fake_command(Path(spec["state"]))
    extra = {k: spec[k] for k in ("op_timeout_s", "kill_grace_s", "retries") if k in spec}
    if spec.get("devices"):
        extra["devices"] = tuple(spec["devices"])

    def build() -> BatchRequest:
        if "resume" in spec:
            return request_from_manifest(Path(spec["resume"]), command=command, **extra)
        return BatchRequest(suite=spec["suite"], out=Path(spec["out"]), command=command, **extra)

    return dispatch(lambda: execute(build()))


if __name__ == "__main__":
    sys.exit(main())
