#!/usr/bin/env python3
"""CI entry point: the paired PR check (`tritongate pair`).

    python ci/replay_candidate.py BASELINE_RECORD --suite pr --out DIR \
        --base-python BASE_VENV/bin/python --cand-python PR_VENV/bin/python [pair options]

Both compiler builds replay the baseline's autotune configs in their own worker process on
this runner's GPU, rounds alternating; writes the base and candidate run directories and the
verdict, and prints their paths (`base:`, `candidate:`, `verdict:`). The exit code is the
CLI's, unchanged: 0 pass, 1 gate failed, 2 usage/input, 3 preflight, 130 interrupted.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tritongate.cli import main

if __name__ == "__main__":
    args = sys.argv[1:]
    # In CI a forgotten build is a silent A/A check that passes every PR: name both builds.
    missing = [opt for opt in ("--base-python", "--cand-python")
               if not any(a == opt or a.startswith(opt + "=") for a in args)]
    if missing and "-h" not in args and "--help" not in args:
        print(f"error: replay_candidate.py: {' and '.join(missing)} required (the interpreters of the base and "
              "the PR's compiler builds); for an A/A check of one build pass the same interpreter twice",
              file=sys.stderr)
        sys.exit(2)
    sys.exit(main(["pair", *args]))
