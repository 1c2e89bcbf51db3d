#!/usr/bin/env python3
"""CI entry point: post a verdict folder as the sticky PR comment.

    python ci/post_comment.py --verdict-dir DIR --repo OWNER/NAME (--pr N | --head-repo OWNER/NAME
        --head-branch BRANCH) --head-sha SHA [--run-id ID] [--key KEY] [--api-url URL] [--bot-login LOGIN] [--dry-run]

Runs in the `workflow_run` job on a GitHub-hosted runner with pydantic, rich, numpy, scipy and
pyyaml installed; the verdict folder is an untrusted artifact whose verdict.md is never posted
(the comment is rendered from its verdict.json: ``tritongate.github.trusted``). ``--pr`` and ``--head-sha`` come from the trusted
``workflow_run`` event; the PR is read back and its head must still be ``--head-sha``. A fork PR's
event lists no PR: then the open PR whose head is ``--head-repo``:``--head-branch`` at
``--head-sha`` (the event's ``head_repository`` and ``head_branch``) is looked up, never a
number from the artifact.
The comment links the gate's run only where verdict.json's link is a run page of ``--repo``
on ``GITHUB_SERVER_URL`` (of run ``--run-id``, when given); any other link is dropped.
The token is env ``GITHUB_TOKEN`` (never printed); the API base is ``--api-url``, else env
``GITHUB_API_URL``, else https://api.github.com.

Exit codes: 0 posted, dry-run printed, or stale (the PR moved on to a newer commit, whose
own run posts: one `stale:` line, nothing written); 2 bad usage or a malformed verdict
folder; 4 an internal error (a bug: one line, never 1, which means "gate failed"); 5 a GitHub
API failure (permission, rate limit, not found, network). Errors are one
line on stderr starting with `error:`.
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping, NoReturn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tritongate.github.comment import (
    DEFAULT_BOT_LOGIN, DEFAULT_SERVER_URL, Outcome, Target, VerdictInputError, post_verdict, pr_of_head, read_verdict,
    validate_login, validate_key, validate_pr, validate_repo, validate_sha)
from tritongate.github.rest import DEFAULT_API_URL, GitHubClient, GitHubError, validate_api_url

EXIT_OK, EXIT_USAGE, EXIT_INTERNAL, EXIT_GITHUB = 0, 2, 4, 5
PROG = "post_comment.py"
EPILOG = """\
exit codes:
  0  posted; or --dry-run printed; or stale: the PR head is no longer --head-sha (a newer
     push superseded this run, and its own run posts), nothing written
  2  bad usage, or a malformed verdict folder (missing, huge, not UTF-8, a symlink,
     no sticky marker or more than one, verdict.json without passed/counts/headline)
  4  internal error (a bug in the poster): one line, nothing written after it
  5  GitHub API failure: 401/403 (the job needs `permissions: pull-requests: write`),
     rate limit (the message says when it resets), 404 (repo or PR), network
environment:
  GITHUB_TOKEN    the token (required unless --dry-run; never printed)
  GITHUB_API_URL  API base when --api-url is not given (default https://api.github.com)
  GITHUB_SERVER_URL  the server whose run pages the comment may link (default https://github.com)
"""


class _Usage(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Usage(message)  # one `error:` line and exit 2, not argparse's usage block


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="Post a tritongate verdict folder as the sticky PR comment.",
                epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--verdict-dir", required=True, type=Path, help="the folder holding verdict.md and verdict.json")
    p.add_argument("--repo", required=True, help="OWNER/NAME of the base repository")
    p.add_argument("--pr", default="", help="the pull request number the event lists")
    p.add_argument("--head-repo", default="", help="without --pr: the event's head repository (OWNER/NAME)")
    p.add_argument("--head-branch", default="", help="without --pr: the event's head branch")
    p.add_argument("--head-sha", required=True, help="the PR head commit the verdict is for (40 hex digits)")
    p.add_argument("--run-id", default="", help="the gate run (workflow_run.id): the only run the comment links")
    p.add_argument("--api-url", help="GitHub API base (default: env GITHUB_API_URL, else https://api.github.com)")
    p.add_argument("--bot-login", default=DEFAULT_BOT_LOGIN,
                   help=f"author of the sticky comment (default {DEFAULT_BOT_LOGIN})")
    p.add_argument("--key", default="", help="one sticky comment per key (the runner class and suite), "
                   "e.g. h200-pr; default: the one unkeyed sticky")
    p.add_argument("--dry-run", action="store_true", help="print the action and body; write nothing")
    return p


def _scrub(text: str, token: str) -> str:
    """Belt and braces: no message carries the token, but never let one slip out."""
    return text.replace(token, "***") if token else text


def _token(env: Mapping[str, str], dry_run: bool) -> str:
    token = env.get("GITHUB_TOKEN", "").strip()
    if not token and not dry_run:
        raise VerdictInputError("GITHUB_TOKEN is not set; pass `env: GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}` "
                                "to the step (the job needs `permissions: pull-requests: write`)")
    if token and not all(33 <= ord(ch) <= 126 for ch in token):
        raise VerdictInputError("GITHUB_TOKEN holds whitespace or non-ASCII characters; it is not a token")
    return token


def _run_id(value: str) -> int | None:
    text = value.strip()
    if text and not re.fullmatch(r"[1-9][0-9]{0,19}", text):
        raise VerdictInputError(f"--run-id {text[:40]!r} is not a run id (github.event.workflow_run.id)")
    return int(text) if text else None


def _read_verdict(folder: Path, **link: Any) -> Any:
    """``read_verdict``, with the bad folders it lets through refused as such: a link to nothing (or
    a link loop), and a verdict.json that cannot be read as a file (a folder of that name)."""
    if folder.is_symlink() and not folder.exists():
        raise VerdictInputError(f"--verdict-dir {folder}: a symbolic link to nothing (or a link loop); pass the "
                                "verdict folder the gate job uploaded")
    try:
        return read_verdict(folder, **link)
    except OSError as exc:
        raise VerdictInputError(f"--verdict-dir {folder}: its verdict.json cannot be read ({exc.strerror or exc}); "
                                "the verdict folder must hold a plain verdict.json") from None


def _report(outcome: Outcome, target: Target, env: Mapping[str, str]) -> list[str]:
    if outcome.status == "stale":
        return [f"stale: PR #{target.pr}'s head is now {outcome.pr_head}, this verdict is for {target.head_sha}; "
                "not posted (the newer commit's run posts its own verdict)"]
    if outcome.status == "posted":
        done = {"create": "created", "update": "updated"}[outcome.actions[0]]
        lines = [f"posted: {done} {outcome.sticky_url or f'comment {outcome.sticky_id}'}"]
        if outcome.notify is not None:
            lines.append(f"notified: the verdict got worse ({outcome.notify_url or 'comment created'})")
        return lines
    where = f" comment {outcome.sticky_id}" if outcome.sticky_id is not None else ""
    lines = [f"dry-run: would {' + '.join(outcome.actions)}{where} on {target.repo}#{target.pr}"]
    shown = [("body", outcome.body)] + ([("notify", outcome.notify)] if outcome.notify else [])
    # The body is the artifact's text: in Actions, stop workflow commands while it is printed.
    stop = secrets.token_hex(16) if env.get("GITHUB_ACTIONS") == "true" else None
    for label, text in shown:
        lines.append(f"--- {label} ---")
        lines += [f"::stop-commands::{stop}", text.rstrip("\n"), f"::{stop}::"] if stop else [text.rstrip("\n")]
    return lines


def main(argv: list[str] | None = None, *, env: Mapping[str, str] | None = None,
         sleep: Callable[[float], None] = time.sleep) -> int:
    env = os.environ if env is None else env
    token = ""
    try:
        args = _parser().parse_args(argv)
        token = _token(env, args.dry_run)
        owner, name = validate_repo(args.repo)
        head_sha = validate_sha(args.head_sha)
        bot = validate_login(args.bot_login)
        try:
            api = validate_api_url(args.api_url or env.get("GITHUB_API_URL") or DEFAULT_API_URL)
        except ValueError as exc:
            raise VerdictInputError(str(exc)) from None
        run_id = _run_id(args.run_id)
        server = env.get("GITHUB_SERVER_URL") or DEFAULT_SERVER_URL
        verdict = _read_verdict(args.verdict_dir, repo=f"{owner}/{name}", server=server, run_id=run_id)
        client = GitHubClient(api_url=api, token=token, sleep=sleep)
        pr = validate_pr(args.pr) if args.pr else pr_of_head(client, f"{owner}/{name}", args.head_repo,
                                                              args.head_branch, head_sha)
        if pr is None:
            print(f"no open PR of {args.head_repo}:{args.head_branch} at {head_sha}: nothing posted")
            return EXIT_OK
        target = Target(owner=owner, name=name, pr=pr, head_sha=head_sha)
        outcome = post_verdict(client, target, verdict, bot_login=bot, dry_run=args.dry_run,
                               key=validate_key(args.key))
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    except (_Usage, VerdictInputError) as exc:
        print(_scrub(f"error: {PROG}: {exc}", token), file=sys.stderr)
        return EXIT_USAGE
    except GitHubError as exc:
        print(_scrub(f"error: {PROG}: {exc}", token), file=sys.stderr)
        return EXIT_GITHUB
    except Exception as exc:  # noqa: BLE001 - a bug must not exit 1, the code for "gate failed"
        text = " ".join(str(exc).split())[:300]
        print(_scrub(f"error: {PROG}: internal error (a bug): {type(exc).__name__}: {text}", token), file=sys.stderr)
        return EXIT_INTERNAL
    for line in _report(outcome, target, env):
        print(_scrub(line, token))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
