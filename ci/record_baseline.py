#!/usr/bin/env python3
"""CI entry point: record a baseline (live autotune, configs saved) on main.

    python ci/record_baseline.py --suite pr --out DIR [tritongate run options]

Prints the run directory as the last line; the exit code is the CLI's, unchanged.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tritongate.cli import main  # noqa: E402

if __name__ == "__main__":
    if "--replay-from" in sys.argv:
        sys.exit("record_baseline.py records; use replay_candidate.py to replay a baseline")
    sys.exit(main(["run", *sys.argv[1:]]))
