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
    if any(a == "--replay-from" or a.startswith("--replay-from=") for a in sys.argv[1:]):
        print("error: record_baseline.py records; use replay_candidate.py to replay a baseline", file=sys.stderr)
        sys.exit(2)  # a usage error, like the CLI's
    sys.exit(main(["run", *sys.argv[1:]]))
