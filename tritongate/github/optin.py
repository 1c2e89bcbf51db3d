"""Opt-in and the `/perf` command: when a PR's gate runs, decided from the PR as it is now.

Opt-in mode (a repository that sets it): a pull_request runs the gate only with the label
``perf`` (or ``perf-full``, which also asks for every row), so draft pushes spend no GPU
time; without the label the gate's result check *fails* with "not run: add the label", so a
required check is never passed by skipping. The labels are read from the API when the job
starts, not from the event payload: a re-run of an old event sees the label added since.

``/perf`` (or ``/perf full``) in a PR comment, by an author with write access (OWNER,
MEMBER, COLLABORATOR in the event's ``author_association``), adds the label and re-runs the
latest gate run of the PR's current head (a label added with GITHUB_TOKEN starts no new
workflow run, a re-run through the API does). Anyone else's command is ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Literal

from tritongate.github.rest import GitHubClient

LABEL, FULL_LABEL = "perf", "perf-full"
WRITERS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})
_COMMAND = re.compile(r"\A/perf(?:\s+(full))?\s*\Z")


@dataclass(frozen=True)
class Decision:
    run: bool
    full: bool
    reason: str


def decide(event_name: str, labels: Iterable[str], *, opt_in: bool) -> Decision:
    names = set(labels)
    full = FULL_LABEL in names
    if event_name != "pull_request" or not opt_in:
        return Decision(True, full, "not an opt-in pull_request run")
    if names & {LABEL, FULL_LABEL}:
        return Decision(True, full, f"label {FULL_LABEL if full else LABEL}")
    return Decision(False, False, f"opt-in: add the label `{LABEL}` (or comment /perf) to run the perf gate")


def live_labels(client: GitHubClient, repo: str, pr: int) -> list[str]:
    pages = client.get_pages(f"/repos/{repo}/issues/{pr}/labels?per_page=100", what=f"reading the labels of #{pr}",
                             permission="pull-requests: read")
    return [label["name"] for label in pages if isinstance(label, dict) and isinstance(label.get("name"), str)]


@dataclass(frozen=True)
class Command:
    pr: int
    full: bool


def parse_command(event: dict[str, Any]) -> Command | Literal["ignored", "refused"]:
    """The `/perf` command of an issue_comment event, 'ignored' (not a command on a PR) or
    'refused' (a command by an author without write access)."""
    issue, comment = event.get("issue"), event.get("comment")
    if event.get("action") != "created" or not isinstance(issue, dict) or not isinstance(comment, dict):
        return "ignored"
    if not isinstance(issue.get("pull_request"), dict) or type(issue.get("number")) is not int:
        return "ignored"  # a comment on an issue, not on a PR
    m = _COMMAND.match(comment.get("body") or "") if isinstance(comment.get("body"), str) else None
    if not m:
        return "ignored"
    if comment.get("author_association") not in WRITERS:
        return "refused"
    return Command(pr=issue["number"], full=m.group(1) == "full")


def run_command(client: GitHubClient, repo: str, command: Command, workflow: str) -> str:
    """Label the PR, then re-run the latest run of ``workflow`` for its current head. Returns
    what was done, one line."""
    pull = client.get(f"/repos/{repo}/pulls/{command.pr}", what=f"reading PR #{command.pr}",
                      permission="pull-requests: read")
    head = (pull.get("head") or {}).get("sha") if isinstance(pull, dict) else None
    if not isinstance(head, str) or not re.fullmatch(r"[0-9a-f]{40}", head):
        raise ValueError(f"PR #{command.pr} has no head sha")
    label = FULL_LABEL if command.full else LABEL
    client.post(f"/repos/{repo}/issues/{command.pr}/labels", {"labels": [label]},
                what=f"labelling PR #{command.pr}", permission="pull-requests: write")
    runs = client.get(f"/repos/{repo}/actions/workflows/{workflow}/runs?head_sha={head}&per_page=1",
                      what="finding the gate run of the PR head", permission="actions: read")
    found = runs.get("workflow_runs") if isinstance(runs, dict) else None
    if not found:
        return f"labelled #{command.pr} {label}; no {workflow} run of {head[:12]} to re-run (the next push runs it)"
    run_id = found[0].get("id")
    if type(run_id) is not int:
        raise ValueError("the workflow run has no id")
    client.post(f"/repos/{repo}/actions/runs/{run_id}/rerun", {}, what=f"re-running run {run_id}",
                permission="actions: write")
    return f"labelled #{command.pr} {label}; re-running run {run_id} of {head[:12]}"
