#!/usr/bin/env python3
"""CI entry point: gate a candidate run against a base run.

    python ci/gate.py BASE_RUN CAND_RUN --out DIR [tritongate gate options]

Thin on purpose: the workflow calls this, this calls the CLI, and the exit code passes
through unchanged (0 pass, 1 gate failed, 2 input error, 3 preflight).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tritongate.cli import main

if __name__ == "__main__":
    sys.exit(main(["gate", *sys.argv[1:]]))
