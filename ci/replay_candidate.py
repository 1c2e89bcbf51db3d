#!/usr/bin/env python3
"""CI entry point: measure a candidate compiler build by replaying a baseline record.

    python ci/replay_candidate.py BASELINE_RUN --suite pr --out DIR [tritongate run options]

Prints the run directory as the last line; the exit code is the CLI's, unchanged.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tritongate.cli import main  # noqa: E402

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.exit("usage: replay_candidate.py BASELINE_RUN --suite NAME --out DIR [options]")
    sys.exit(main(["run", "--replay-from", sys.argv[1], *sys.argv[2:]]))
