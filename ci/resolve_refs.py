#!/usr/bin/env python3
"""CI entry point: which two compiler commits a gate job compares, from the event itself.

    python3 ci/resolve_refs.py --event-name NAME --event-path "$GITHUB_EVENT_PATH" --sha "$GITHUB_SHA" \
        [--base-ref REF] [--cand-ref REF] [--merge-checkout DIR] [--runner-class RC --suite S] \
        [--github-output "$GITHUB_OUTPUT"]

pull_request  the candidate is the merge commit GitHub built (``--sha``); the base is that
              commit's *first parent*, read from a two-commit checkout of it
              (``--merge-checkout``). Not ``pull_request.base.sha``: GitHub often builds the
              merge ref on a newer main than the payload's base, and timing against the older
              base would count other people's commits as the PR's.
merge_group   the documented ``merge_group.base_sha`` and ``merge_group.head_sha``.
otherwise     ``--base-ref`` is required (a dispatch, or a caller that knows its refs).
``--base-ref`` always wins; ``--cand-ref`` defaults to ``--sha``.

Writes ``base=``, ``cand=``, ``how=`` and, with ``--runner-class``/``--suite``, ``key=`` (the
artifact and sticky-comment key: ``<runner-class>-<suite name>``). Standard library only (it
runs before any build; tritongate.github.outputs writes the outputs). Exit 0, or 2 with one ``error:`` line (a ref input with a line break in
it is refused: it would write an output of its own).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tritongate.github import outputs

SHA = re.compile(r"[0-9a-f]{40}")


class RefError(Exception):
    pass


def _sha(value: object, what: str) -> str:
    if not isinstance(value, str) or not SHA.fullmatch(value):
        raise RefError(f"{what} is {str(value)[:60]!r}, not a 40-hex commit")
    return value


def first_parent(checkout: Path, merge_sha: str) -> str:
    """The first parent of ``merge_sha``, checked out (two commits deep) at ``checkout``."""
    def git(*args: str) -> str:
        proc = subprocess.run(["git", "-C", str(checkout), *args], capture_output=True, text=True)
        if proc.returncode != 0:
            raise RefError(f"git {' '.join(args)} in {checkout}: {proc.stderr.strip()[:200]}")
        return proc.stdout.strip()

    head = git("rev-parse", "HEAD")
    if head != merge_sha:
        raise RefError(f"the merge checkout is at {head}, not the event's merge commit {merge_sha}")
    commits = git("rev-list", "--parents", "-n", "1", "HEAD").split()
    if len(commits) != 3:
        raise RefError(f"{merge_sha} has {len(commits) - 1} parents, not 2: it is not the PR's merge commit "
                       "(check out with fetch-depth: 2)")
    return _sha(commits[1], "the merge commit's first parent")


def resolve(event_name: str, event: dict, sha: str, *, base_ref: str = "", cand_ref: str = "",
            merge_checkout: Path | None = None) -> dict[str, str]:
    cand = cand_ref or sha
    if base_ref:
        return {"base": base_ref, "cand": cand, "how": "base-ref input"}
    if event_name == "pull_request":
        if merge_checkout is None:
            raise RefError("a pull_request needs --merge-checkout (the merge commit, two commits deep) to find "
                           "its base, or the base-ref input")
        return {"base": first_parent(merge_checkout, _sha(sha, "github.sha")), "cand": cand,
                "how": "first parent of the merge commit"}
    if event_name == "merge_group":
        group = event.get("merge_group")
        if not isinstance(group, dict):
            raise RefError("the merge_group event has no merge_group object")
        return {"base": _sha(group.get("base_sha"), "merge_group.base_sha"),
                "cand": cand_ref or _sha(group.get("head_sha"), "merge_group.head_sha"),
                "how": "merge_group.base_sha"}
    raise RefError(f"a {event_name} event names no base commit: pass the base-ref input")


MAX_REF = 255


def check_ref(value: str, what: str) -> str:
    """A ref input as git and actions/checkout take it: not an option, no whitespace or
    control characters, of a sane length. Empty is allowed (the default applies)."""
    if not value:
        return value
    if len(value) > MAX_REF:
        raise RefError(f"{what}: {len(value)} characters; a commit SHA or a ref name has at most {MAX_REF}")
    if "\n" in value or "\r" in value:  # it would end the output line and start another
        raise RefError(f"{what} {value[:40]!r}: contains a line break; pass a SHA or a ref")
    if value.startswith("-"):
        raise RefError(f"{what} {value[:40]!r}: begins with '-', which git reads as an option; pass a SHA or a ref")
    if re.search(r"[\s\x00-\x1f\x7f~^:?*\[\\]", value) or ".." in value:
        raise RefError(f"{what} {value[:40]!r}: not a ref name git accepts (whitespace, control characters, "
                       "'..' or one of ~^:?*[\\); pass a SHA or a ref")
    return value


def artifact_key(runner_class: str, suite: str) -> str:
    name = Path(suite).name
    name = re.sub(r"\.ya?ml$", "", name)
    key = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{runner_class}-{name}").strip("-.")
    if not key:
        raise RefError(f"no artifact key from runner class {runner_class!r} and suite {suite!r}")
    return key


def read_event(path: Path) -> dict:
    """The event payload: a JSON object (``RefError`` naming the file otherwise)."""
    try:
        event = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:  # RecursionError: a deeply nested payload
        raise RefError(f"--event-path {path}: cannot be read as JSON ({type(exc).__name__}: "
                       f"{' '.join(str(exc).split())[:200]}); pass $GITHUB_EVENT_PATH") from None
    if not isinstance(event, dict):
        raise RefError(f"--event-path {path}: the event must be a JSON object, got {type(event).__name__}; "
                       "pass $GITHUB_EVENT_PATH")
    return event


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="resolve_refs.py", description=__doc__.split("\n")[0])
    p.add_argument("--event-name", required=True)
    p.add_argument("--event-path", type=Path)
    p.add_argument("--sha", default="")
    p.add_argument("--base-ref", default="")
    p.add_argument("--cand-ref", default="")
    p.add_argument("--merge-checkout", type=Path)
    p.add_argument("--runner-class", default="")
    p.add_argument("--suite", default="")
    p.add_argument("--github-output", type=Path)
    args = p.parse_args(argv)
    try:
        event = read_event(args.event_path) if args.event_path else {}
        out = resolve(args.event_name, event, args.sha.strip(),
                      base_ref=check_ref(args.base_ref.strip(), "--base-ref"),
                      cand_ref=check_ref(args.cand_ref.strip(), "--cand-ref"),
                      merge_checkout=args.merge_checkout)
        if args.runner_class:
            out["key"] = artifact_key(args.runner_class, args.suite)
        text = outputs.append(args.github_output, out) if args.github_output else outputs.render(out)
    except (RefError, OSError, ValueError, RecursionError) as exc:  # OutputError is a ValueError
        print(f"error: resolve_refs.py: {exc}", file=sys.stderr)
        return 2
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
