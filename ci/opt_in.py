#!/usr/bin/env python3
"""CI entry point: does this pull_request run the perf gate (opt-in mode), from its live labels.

    python3 ci/opt_in.py --event-name NAME --repo OWNER/NAME [--pr N] [--opt-in true|false] \
        [--github-output FILE]

Writes run=true|false, full=true|false and reason= (tritongate.github.optin). Token: env
GITHUB_TOKEN; API: env GITHUB_API_URL. Standard library only. Exit 0, 2 on bad usage, 5 on an
API failure.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tritongate.github import outputs
from tritongate.github.optin import decide, labels_that_count
from tritongate.github.rest import GitHubError, client_from_env


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="opt_in.py")
    p.add_argument("--event-name", required=True)
    p.add_argument("--repo", required=True)
    p.add_argument("--pr", default="")
    p.add_argument("--opt-in", default="false")
    p.add_argument("--github-output", type=Path)
    args = p.parse_args(argv)
    mode = args.opt_in.strip().lower()
    if mode not in ("true", "label", "false", ""):  # a typo must not quietly mean "off"
        print(f"error: opt_in.py: --opt-in {args.opt_in[:40]!r}: expected true (or label) or false", file=sys.stderr)
        return 2
    opt_in = mode in ("true", "label")
    labels: list[str] = []
    refused: list[str] = []
    try:
        if args.event_name == "pull_request":  # perf-full counts with or without opt-in mode
            if not re.fullmatch(r"[1-9][0-9]{0,9}", args.pr):  # str.isdigit() takes '²' too
                print(f"error: opt_in.py: --pr {args.pr[:40]!r}: a pull_request run needs the PR's number, a "
                      "positive whole number", file=sys.stderr)
                return 2
            try:
                client = client_from_env(os.environ)
            except ValueError as exc:  # a plain-http or malformed API URL: the token is never sent there
                print(f"error: opt_in.py: GITHUB_API_URL: {exc}", file=sys.stderr)
                return 2
            try:
                labels, refused = labels_that_count(client, args.repo, int(args.pr))
            except GitHubError as exc:
                if opt_in:  # the labels decide whether the gate runs: no guessing
                    raise
                # every PR runs anyway; only perf-full is unknown: time the changed rows, say so
                print(f"::warning::opt_in.py: the PR's labels could not be read ({exc}); a perf-full label "
                      "is not seen this run", file=sys.stderr)
    except GitHubError as exc:
        print(f"error: opt_in.py: {exc}", file=sys.stderr)
        return 5
    for why in refused:
        print(f"::warning::opt_in.py: {why}", file=sys.stderr)
    d = decide(args.event_name, labels, opt_in=opt_in, refused=refused)
    values = {"run": d.run, "full": d.full, "reason": d.reason}
    try:
        text = outputs.append(args.github_output, values) if args.github_output else outputs.render(values)
    except (outputs.OutputError, OSError) as exc:
        print(f"error: opt_in.py: {exc}", file=sys.stderr)
        return 2
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
