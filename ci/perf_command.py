#!/usr/bin/env python3
"""CI entry point: the `/perf` PR comment (perf-command.yml, issue_comment).

    python3 ci/perf_command.py --event-path "$GITHUB_EVENT_PATH" --repo OWNER/NAME [--workflow pr-gate.yml]

A `/perf` or `/perf full` comment by an author with write access labels the PR and re-runs
the gate of its current head (tritongate.github.optin). Other comments: nothing. A command by
someone without write access: one `refused:` line, exit 0. Token: env GITHUB_TOKEN. Exit 0,
2 bad usage, 5 API failure.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tritongate.github.optin import parse_command, run_command
from tritongate.github.rest import DEFAULT_API_URL, GitHubClient, GitHubError


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="perf_command.py")
    p.add_argument("--event-path", type=Path, required=True)
    p.add_argument("--repo", required=True)
    p.add_argument("--workflow", default="pr-gate.yml")
    args = p.parse_args(argv)
    try:
        event = json.loads(args.event_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"error: perf_command.py: {args.event_path}: {exc}", file=sys.stderr)
        return 2
    command = parse_command(event if isinstance(event, dict) else {})
    if command == "ignored":
        print("not a /perf command on a pull request")
        return 0
    if command == "refused":
        print("refused: /perf needs write access to the repository (OWNER, MEMBER or COLLABORATOR)")
        return 0
    client = GitHubClient(api_url=os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL,
                          token=os.environ.get("GITHUB_TOKEN", ""))
    try:
        print(run_command(client, args.repo, command, args.workflow))
    except (GitHubError, ValueError) as exc:
        print(f"error: perf_command.py: {exc}", file=sys.stderr)
        return 5
    return 0


if __name__ == "__main__":
    sys.exit(main())
