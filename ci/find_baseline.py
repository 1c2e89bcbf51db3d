#!/usr/bin/env python3
"""CI entry point: find the baseline record a PR job should replay.

    python ci/find_baseline.py --store DIR --suite pr --runner-class h200 --gpu "NVIDIA H200"
        [--max-age-days 7] [--backend cuda] [--suite-digest auto|none|HEX]
        [--github-output "$GITHUB_OUTPUT"] [--state-out lookup.json]

Prints (and appends to --github-output) one-line `state=`, `record=`, `reason=`, `refresh=`,
`age_days=` values. state: ok | stale | mismatched | missing (see baselines/README.md); the
workflow replays `record` when state is ok (or stale, if it accepts that) and otherwise records
with the base build. Exit 0 whenever the lookup ran, 2 on usage errors, 4 internal error.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tritongate.baselines.commands import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["find", *sys.argv[1:]]))
