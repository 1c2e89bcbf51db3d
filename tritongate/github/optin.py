"""Opt-in and the `/perf` command: when a PR's gate runs, decided from the PR as it is now.

Opt-in mode (a repository that sets it): a pull_request runs the gate only with the label
``perf`` (or ``perf-full``, which also asks for every row), so draft pushes spend no GPU
time; without the label the gate's result check *fails* with "not run: add the label", so a
required check is never passed by skipping. The labels are read from the API when the job
starts, not from the event payload: a re-run of an old event sees the label added since.

``/perf`` (or ``/perf full``, optionally followed by 12 or more characters of the head SHA)
in a PR comment, and the ``perf``/``perf-full`` label added by hand, re-run the latest gate run
of the PR's head (a label added with GITHUB_TOKEN starts no new workflow run, a re-run through
the API does). Only an actor with write access is obeyed, asked of the collaborator-permission
API for every command (``author_association`` says nothing about the role, and a private
organisation member reads as CONTRIBUTOR); a refused label is taken off again, and the
opt-in job counts a perf label only when its last adder could write (``labels_that_count``:
a triage role can label a fork PR, where no workflow takes the label off). The command
acts on the head the commenter saw: the head named in the command, or else a head whose gate
run already existed when the comment was written; a later head, or no run yet, is refused. A
run still in progress is labelled, not re-run; a fork run held for approval is left to a
maintainer's approval. Whenever it cannot act, it says why in a reply on the PR.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Literal

from tritongate.github.rest import GitHubClient, GitHubError

LABEL, FULL_LABEL = "perf", "perf-full"


@dataclass(frozen=True)
class Decision:
    run: bool
    full: bool
    reason: str


def decide(event_name: str, labels: Iterable[str], *, opt_in: bool, refused: Iterable[str] = ()) -> Decision:
    """``labels``: the PR's labels that count; ``refused``: why a perf label on it does not."""
    names = set(labels)
    full = FULL_LABEL in names
    if event_name != "pull_request" or not opt_in:
        return Decision(True, full, "not an opt-in pull_request run")
    if names & {LABEL, FULL_LABEL}:
        return Decision(True, full, f"label {FULL_LABEL if full else LABEL}")
    why = "; ".join(refused)
    return Decision(False, False, f"opt-in: {why + ': ' if why else ''}add the label `{LABEL}` (or comment /perf) "
                                  "to run the perf gate")


def live_labels(client: GitHubClient, repo: str, pr: int) -> list[str]:
    pages = client.get_pages(f"/repos/{repo}/issues/{pr}/labels?per_page=100", what=f"reading the labels of #{pr}",
                             permission="pull-requests: read")
    return [label["name"] for label in pages if isinstance(label, dict) and isinstance(label.get("name"), str)]


def labels_that_count(client: GitHubClient, repo: str, pr: int) -> tuple[list[str], list[str]]:
    """The PR's live labels, less a perf label whose last adder cannot write (a triage role can
    label a fork PR, and no workflow takes that label off), and the reason for each left out.
    The adder is the actor of the label's last ``labeled`` issue event, whose permission is
    asked of the collaborator-permission API, as for `/perf`."""
    labels = live_labels(client, repo, pr)
    wanted = [name for name in labels if name in (LABEL, FULL_LABEL)]
    if not wanted:
        return labels, []
    refused: list[str] = []
    try:
        adder = _last_adders(client, repo, pr, wanted)
    except GitHubError as exc:  # unchecked is not counted: `/perf` still works (its label is the bot's)
        adder, unchecked = {}, f" (who added it could not be read: {exc})"
    else:
        unchecked = ""
    for name in wanted:
        login = adder.get(name, "")
        if login == ACTIONS_BOT:  # a workflow of this repository: `/perf` after checking the commenter
            continue
        try:
            allowed, permission = can_write(client, repo, login) if login else (False, "unknown")
        except GitHubError as exc:
            allowed, permission = False, f"unreadable: {exc}"
        if not allowed:
            labels = [n for n in labels if n != name]
            who = f"@{login}, whose access is `{permission}`" if login else f"no one the API names{unchecked}"
            refused.append(f"the label `{name}` was added by {who}; it counts only when someone with write "
                           "access adds it (or comments /perf)")
    return labels, refused


def _last_adders(client: GitHubClient, repo: str, pr: int, names: list[str]) -> dict[str, str]:
    """The actor of each label's newest ``labeled`` issue event (by time, then id)."""
    events = client.get_pages(f"/repos/{repo}/issues/{pr}/events?per_page=100",
                              what=f"reading who labelled #{pr}", permission="pull-requests: read")
    labelled = [e for e in events if isinstance(e, dict) and e.get("event") == "labeled"
                and isinstance(e.get("label"), dict) and e["label"].get("name") in names]
    labelled.sort(key=lambda e: (str(e.get("created_at") or ""), e.get("id") if type(e.get("id")) is int else 0))
    return {e["label"]["name"]: _login(e, "actor") for e in labelled}


@dataclass(frozen=True)
class Command:
    """A request to run the gate on PR ``pr``: a `/perf` comment (``created_at``, the head
    prefix it named if any) or a perf label added by ``login`` (``head``: the event's)."""

    pr: int
    full: bool
    login: str = ""
    created_at: str = ""  # the comment's ISO time; "" for a label
    sha: str = ""  # the head the command names: a prefix from the comment, the full SHA of a label event
    via_label: bool = False
    malformed: bool = False  # starts with `/perf` but is not one of its forms: answered with them, nothing run


@dataclass(frozen=True)
class Outcome:
    """What the command did (one line for the log) and, when it could not act, the reply
    to post on the PR."""

    line: str
    reply: str | None = None


# The actor of what a workflow does with GITHUB_TOKEN: only a token that can write adds a label
# (a fork PR's is read-only), so a label it added was added by a workflow of this repository.
ACTIONS_BOT = "github-actions[bot]"
WRITE_PERMISSIONS = frozenset({"admin", "write"})  # the API maps maintain to write, triage to read
_COMMAND = re.compile(r"\A/perf(?:\s+(full))?(?:\s+([0-9a-fA-F]{12,40}))?\s*\Z")
_ATTEMPT = re.compile(r"\A/perf(?:\s|\Z)")  # `/perf` as the first word: meant as the command
USAGE = ("the whole comment must be the command: `/perf`, `/perf full` (every row), or either followed by "
         "12 or more hex digits of the head you reviewed (`/perf full 1a2b3c4d5e6f`)")


def _login(event: dict[str, Any], key: str) -> str:
    actor = event.get(key)
    user = actor.get("user") if key == "comment" and isinstance(actor, dict) else actor
    login = user.get("login") if isinstance(user, dict) else None
    return login if isinstance(login, str) and re.fullmatch(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?", login) \
        else ""


def parse_command(event: dict[str, Any]) -> Command | Literal["ignored"]:
    """The `/perf` command of an issue_comment event, or 'ignored' (not a command on a PR)."""
    issue, comment = event.get("issue"), event.get("comment")
    if (event.get("action") != "created" or not isinstance(issue, dict) or not isinstance(comment, dict)
            or not isinstance(issue.get("pull_request"), dict) or type(issue.get("number")) is not int):
        return "ignored"  # not a new comment, or one on an issue rather than a PR
    text = comment.get("body")
    body = text if isinstance(text, str) else ""
    m = _COMMAND.match(body)
    login, created = _login(event, "comment"), comment.get("created_at")
    if not login or not (m or _ATTEMPT.match(body)):
        return "ignored"
    if not m:  # `/perf` with text after it, a SHA too short: say what the forms are, run nothing
        return Command(pr=issue["number"], full=False, login=login, malformed=True)
    return Command(pr=issue["number"], full=m.group(1) == "full", login=login,
                   created_at=created if isinstance(created, str) else "", sha=(m.group(2) or "").lower())


def parse_label(event: dict[str, Any]) -> Command | Literal["ignored"]:
    """The run request of a pull_request ``labeled`` event: the perf labels only."""
    label, pull = event.get("label"), event.get("pull_request")
    name = label.get("name") if isinstance(label, dict) else None
    if event.get("action") != "labeled" or name not in (LABEL, FULL_LABEL) or not isinstance(pull, dict):
        return "ignored"
    head = (pull.get("head") or {}).get("sha") if isinstance(pull.get("head"), dict) else None
    number, login = event.get("number"), _login(event, "sender")
    if type(number) is not int or not isinstance(head, str) or not re.fullmatch(r"[0-9a-f]{40}", head) or not login:
        return "ignored"
    return Command(pr=number, full=name == FULL_LABEL, login=login, sha=head, via_label=True)


def can_write(client: GitHubClient, repo: str, login: str) -> tuple[bool, str]:
    """Whether ``login`` has write access to ``repo`` (admin, maintain or write), and the
    permission the API gave (``none`` when it knows no such collaborator)."""
    try:
        doc = client.get(f"/repos/{repo}/collaborators/{login}/permission", what=f"reading {login}'s permission",
                         permission="metadata: read")
    except GitHubError as exc:
        if exc.status == 404:
            return False, "none"
        raise
    permission = doc.get("permission") if isinstance(doc, dict) else None
    permission = permission if isinstance(permission, str) else "none"
    return permission in WRITE_PERMISSIONS, permission


def run_command(client: GitHubClient, repo: str, command: Command, workflow: str) -> Outcome:
    """Check the actor, bind the command to the head they saw, label the PR (a comment), then
    re-run the latest run of ``workflow`` for that head."""
    asked = "the perf label" if command.via_label else "/perf"
    label = FULL_LABEL if command.full else LABEL
    if command.malformed:  # nothing is asked of the API: the reply names no one's access
        return Outcome("refused: not one of the /perf forms", f"@{command.login}: nothing was run: {USAGE}.")
    allowed, permission = can_write(client, repo, command.login)
    if not allowed:
        if command.via_label:  # left on, the opt-in job would count it on the next push
            client.delete(f"/repos/{repo}/issues/{command.pr}/labels/{label}", what=f"removing the label {label}",
                          permission="pull-requests: write")
        return Outcome(f"refused: {command.login} has {permission} access",
                       f"@{command.login}: {asked} runs the GPU gate only for someone with write access to this "
                       f"repository; yours is `{permission}`. Ask a maintainer.")
    pull = client.get(f"/repos/{repo}/pulls/{command.pr}", what=f"reading PR #{command.pr}",
                      permission="pull-requests: read")
    head = (pull.get("head") or {}).get("sha") if isinstance(pull, dict) else None
    if not isinstance(head, str) or not re.fullmatch(r"[0-9a-f]{40}", head):
        raise ValueError(f"PR #{command.pr} has no head sha")
    again = "add the label again" if command.via_label else "comment /perf again"
    if command.sha and not head.startswith(command.sha):
        return Outcome(f"refused: the head is {head[:12]}, not {command.sha[:12]}",
                       f"@{command.login}: the head of this PR is now `{head[:12]}`, not `{command.sha[:12]}`; "
                       f"nothing was run. Review the new head, then {again}.")
    runs = client.get(f"/repos/{repo}/actions/workflows/{workflow}/runs?head_sha={head}&per_page=1",
                      what="finding the gate run of the PR head", permission="actions: read")
    found = runs.get("workflow_runs") if isinstance(runs, dict) else None
    run = found[0] if isinstance(found, list) and found and isinstance(found[0], dict) else None
    created = run.get("created_at") if run else None
    if (not command.sha and command.created_at and isinstance(created, str)
            and _instant(created) > _instant(command.created_at)):
        return Outcome(f"refused: {head[:12]} was pushed after the comment",
                       f"@{command.login}: this PR's head changed after your comment (now `{head[:12]}`); "
                       f"nothing was run. Review it, then comment `/perf` again (or `/perf {head[:12]}`).")
    if run is None and not command.sha:  # nothing shows which head the commenter saw
        return Outcome(f"refused: no {workflow} run of {head[:12]} yet",
                       f"@{command.login}: no `{workflow}` run of `{head[:12]}` exists yet, so nothing shows this "
                       f"is the head you reviewed; nothing was run. Comment `/perf {head[:12]}` to name it.")
    run_id = run.get("id") if run else None
    if run is not None and type(run_id) is not int:
        raise ValueError("the workflow run has no id")
    if run is not None and run.get("conclusion") == "action_required":  # a fork run held for approval
        return Outcome(f"refused: run {run_id} of {head[:12]} waits for approval",
                       f"@{command.login}: run {run_id} of `{head[:12]}` waits for a maintainer's approval "
                       f"(Actions tab); {asked} does not release it. Approve it there; it runs the gate with "
                       f"the labels as they are then.")
    if not command.via_label:
        client.post(f"/repos/{repo}/issues/{command.pr}/labels", {"labels": [label]},
                    what=f"labelling PR #{command.pr}", permission="pull-requests: write")
    if run is None:
        return Outcome(f"labelled #{command.pr} {label}; no {workflow} run of {head[:12]} to re-run",
                       f"@{command.login}: labelled `{label}`; no `{workflow}` run of `{head[:12]}` exists yet. "
                       "It runs with the label when it starts.")
    if run.get("status") != "completed":
        return Outcome(f"labelled #{command.pr} {label}; run {run_id} of {head[:12]} is {run.get('status')}",
                       f"@{command.login}: run {run_id} of `{head[:12]}` is still {run.get('status')}; it read "
                       f"the labels when it started, so it may not run the gate. When it finishes, {again}.")
    client.post(f"/repos/{repo}/actions/runs/{run_id}/rerun", {}, what=f"re-running run {run_id}",
                permission="actions: write")
    return Outcome(f"labelled #{command.pr} {label}; re-running run {run_id} of {head[:12]}")


def reply(client: GitHubClient, repo: str, pr: int, text: str) -> None:
    client.post(f"/repos/{repo}/issues/{pr}/comments", {"body": text}, what=f"replying on PR #{pr}",
                permission="pull-requests: write")


def _instant(text: str) -> float:
    """An ISO 8601 time from the API (``2026-12-05T10:00:00Z``) as seconds; ``ValueError``."""
    import datetime as dt

    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
