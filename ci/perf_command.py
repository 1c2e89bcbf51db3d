#!/usr/bin/env python3
"""CI entry point: the `/perf` PR comment and the perf labels (perf-command.yml).

    python3 ci/perf_command.py --event-name NAME --event-path "$GITHUB_EVENT_PATH" --repo OWNER/NAME \
        [--workflow pr-gate.yml]

issue_comment: a `/perf`, `/perf full` or `/perf [full] SHA` comment; pull_request (labeled):
the `perf` or `perf-full` label added by hand. From an actor with write access (the
collaborator-permission API), it re-runs the gate run of the head they saw
(tritongate.github.optin); otherwise, or when it cannot act, it replies on the PR saying why.
Other comments and labels: nothing. Token: env GITHUB_TOKEN. Exit 0, 2 bad usage, 5 API failure
(after a reply saying so, when the reply itself can be posted).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tritongate.github.optin import parse_command, parse_label, reply, run_command
from tritongate.github.rest import GitHubError, client_from_env


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="perf_command.py")
    p.add_argument("--event-name", default=os.environ.get("GITHUB_EVENT_NAME", "issue_comment"),
                   choices=["issue_comment", "pull_request"])
    p.add_argument("--event-path", type=Path, required=True)
    p.add_argument("--repo", required=True)
    p.add_argument("--workflow", default="pr-gate.yml")
    args = p.parse_args(argv)
    try:
        event = json.loads(args.event_path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:  # a deeply nested payload: RecursionError
        print(f"error: perf_command.py: {args.event_path}: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}",
              file=sys.stderr)
        return 2
    if not isinstance(event, dict):  # GitHub's event payload is an object: this is some other file
        print(f"error: perf_command.py: {args.event_path}: the event must be a JSON object, got "
              f"{type(event).__name__}; pass $GITHUB_EVENT_PATH", file=sys.stderr)
        return 2
    command = parse_label(event) if args.event_name == "pull_request" else parse_command(event)
    if command == "ignored":
        print("not a /perf command or a perf label on a pull request")
        return 0
    try:
        client = client_from_env(os.environ)
    except ValueError as exc:  # a plain-http or malformed API URL: the token is never sent there
        print(f"error: perf_command.py: GITHUB_API_URL: {exc}", file=sys.stderr)
        return 2
    try:
        outcome = run_command(client, args.repo, command, args.workflow)
        print(outcome.line)
        if outcome.reply:
            reply(client, args.repo, command.pr, outcome.reply)
    except (GitHubError, ValueError) as exc:
        print(f"error: perf_command.py: {exc}", file=sys.stderr)
        try:  # say so on the PR: a command that silently does nothing reads as ignored
            reply(client, args.repo, command.pr, f"@{command.login}: the command could not act: "
                                                 f"{' '.join(str(exc).split())[:300]}")
        except GitHubError:
            pass
        return 5
    return 0


if __name__ == "__main__":
    sys.exit(main())
