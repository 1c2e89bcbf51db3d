#!/usr/bin/env python3
"""CI entry point: find the baseline record a PR job should replay.

    python ci/find_baseline.py --store DIR --suite pr --runner-class h200 --gpu "NVIDIA H200"
        [--compiler-repo OWNER/NAME] [--max-age-days 7] [--backend cuda] [--suite-digest auto|none|HEX]
        [--github-output "$GITHUB_OUTPUT"] [--state-out lookup.json]

Prints (and appends to --github-output) one-line `state=`, `record=`, `reason=`, `refresh=`,
`age_days=` values. state: ok | stale | mismatched | missing (see baselines/README.md); the
workflow replays `record` when state is ok (or stale, if it accepts that) and otherwise records
with the base build. Exit 0 whenever the lookup ran, 2 on usage errors, 4 internal error.

Only entries built from the PR's compiler repository are candidates: `--compiler-repo`, else
`$TG_COMPILER_REPO` (what the gate's steps call the compiler-repo input), else
`$GITHUB_REPOSITORY` (the repository the workflow runs in: the compiler-repo input's default).
With none of them (not on GitHub) it refuses (exit 2) rather than take any repository's entry;
`tritongate baseline find` without `--compiler-repo` is the command that matches any.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Mapping

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tritongate.cli.baseline import main

ENV_REPOS = ("TG_COMPILER_REPO", "GITHUB_REPOSITORY")


def with_compiler_repo(argv: list[str], environ: Mapping[str, str]) -> list[str] | None:
    """``argv`` with ``--compiler-repo`` taken from the environment when it has none; None
    when neither names one."""
    if any(a == "--compiler-repo" or a.startswith("--compiler-repo=") for a in argv):
        return argv
    for name in ENV_REPOS:
        value = environ.get(name, "").strip()
        if value:
            print(f"compiler repository: {value} (from ${name})", file=sys.stderr)
            return [*argv, "--compiler-repo", value]
    return None


if __name__ == "__main__":
    args = sys.argv[1:]
    if "-h" in args or "--help" in args:
        sys.exit(main(["find", *args]))
    full = with_compiler_repo(args, os.environ)
    if full is None:
        print("error: find_baseline.py: no compiler repository: pass --compiler-repo OWNER/NAME (or set "
              "TG_COMPILER_REPO); a PR's baseline must come from its own repository", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(["find", *full]))
