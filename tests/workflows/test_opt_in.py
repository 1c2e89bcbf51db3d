"""Opt-in by label and the /perf command (tritongate/github/optin.py, ci/opt_in.py,
perf-command.yml), over documented pull_request and issue_comment payloads."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from tests.workflows.payloads import github_context, payload
from tests.workflows.replay import Evaluator, condition, load_yaml
from tests.workflows.test_pr_gate_steps import REPO, WORKFLOWS
from tritongate.github.optin import Command, decide, labels_that_count, parse_command, parse_label, run_command
from tritongate.github.rest import GitHubError


@pytest.mark.parametrize("event, labels, opt_in, run, full", [
    ("pull_request", [], True, False, False),              # opted in, no label: not run (and the check says so)
    ("pull_request", ["perf"], True, True, False),
    ("pull_request", ["perf-full"], True, True, True),
    ("pull_request", [], False, True, False),              # no opt-in mode: every PR runs
    ("pull_request", ["perf-full"], False, True, True),
    ("merge_group", [], True, True, False),                # the queue always runs
])
def test_decide(event: str, labels: list, opt_in: bool, run: bool, full: bool) -> None:
    d = decide(event, labels, opt_in=opt_in)
    assert (d.run, d.full) == (run, full)
    if not run:
        assert "add the label `perf`" in d.reason


def _comment(body: str, association: str = "MEMBER", on_pr: bool = True) -> dict:
    event = payload("issue_comment.created")
    event["comment"]["body"] = body
    event["comment"]["author_association"] = association
    if not on_pr:
        del event["issue"]["pull_request"]
    return event


WHEN = "2026-12-05T10:00:00Z"


@pytest.mark.parametrize("event, expected", [
    (_comment("/perf"), Command(42, False, "maintainer", WHEN)),
    (_comment("/perf full"), Command(42, True, "maintainer", WHEN)),
    (_comment("/perf", "COLLABORATOR"), Command(42, False, "maintainer", WHEN)),
    (_comment("/perf full 111111111111"), Command(42, True, "maintainer", WHEN, sha="111111111111")),
    (_comment("/perf 1111111"), Command(42, False, "maintainer", malformed=True)),  # a SHA prefix is 12 or more
    (_comment("/perf full ABCDEF012345"), Command(42, True, "maintainer", WHEN, sha="abcdef012345")),
    (_comment("/perf\r\n"), Command(42, False, "maintainer", WHEN)),
    # whatever the association (a private org member reads as CONTRIBUTOR): the API decides
    (_comment("/perf", "CONTRIBUTOR"), Command(42, False, "maintainer", WHEN)),
    (_comment("/perf", "NONE"), Command(42, False, "maintainer", WHEN)),
    (_comment("/perfect"), "ignored"),
    (_comment("please /perf"), "ignored"),
    (_comment("/perf full; rm -rf /"), Command(42, False, "maintainer", malformed=True)),  # answered, not run
    (_comment("/perf please\n\nthanks @everyone"), Command(42, False, "maintainer", malformed=True)),
    (_comment("> /perf\n\nlgtm"), "ignored"),             # a quoted reply
    (_comment("```\n/perf\n```"), "ignored"),             # a code block
    (_comment("/performance looks fine"), "ignored"),
    (_comment("/perf", on_pr=False), "ignored"),          # an issue, not a PR
])
def test_parse_command(event: dict, expected: Any) -> None:
    assert parse_command(event) == expected


HEAD = "1" * 40


class FakeClient:
    """The REST API as documented for the calls /perf makes: the collaborator permission
    (``permission`` admin|write|read|none, 404 for a stranger), the PR, the workflow's runs of
    a head (``status``, ``created_at``), the label, the re-run and the reply."""

    def __init__(self, runs: list[dict], permission: str | None = "write", head: str = HEAD) -> None:
        self.calls: list[tuple[str, str, Any]] = []
        self.runs, self.permission, self.head = runs, permission, head

    def get(self, path: str, **_: Any) -> Any:
        self.calls.append(("GET", path, None))
        if "/collaborators/" in path:
            if self.permission is None:
                raise GitHubError("not a collaborator", status=404)
            return {"permission": self.permission, "role_name": self.permission, "user": {"login": "x"}}
        if path.startswith("/repos/acme/triton/pulls/"):
            return {"head": {"sha": self.head}}
        return {"total_count": len(self.runs), "workflow_runs": self.runs}

    def post(self, path: str, body: dict, **_: Any) -> Any:
        self.calls.append(("POST", path, body))
        return {}

    def delete(self, path: str, **_: Any) -> Any:
        self.calls.append(("DELETE", path, None))
        return {}

    def writes(self) -> list[str]:
        return [path for method, path, _ in self.calls if method in ("POST", "DELETE")]


DONE = {"id": 77, "status": "completed", "conclusion": "failure", "created_at": "2026-12-05T09:00:00Z"}


def test_a_writer_s_command_labels_and_re_runs_the_heads_gate_run() -> None:
    client = FakeClient([DONE])
    out = run_command(client, "acme/triton", Command(42, True, "maintainer", WHEN), "pr-gate.yml")  # type: ignore
    assert client.calls == [
        ("GET", "/repos/acme/triton/collaborators/maintainer/permission", None),
        ("GET", "/repos/acme/triton/pulls/42", None),
        ("GET", f"/repos/acme/triton/actions/workflows/pr-gate.yml/runs?head_sha={HEAD}&per_page=1", None),
        ("POST", "/repos/acme/triton/issues/42/labels", {"labels": ["perf-full"]}),
        ("POST", "/repos/acme/triton/actions/runs/77/rerun", {})]
    assert "re-running run 77" in out.line and out.reply is None


def test_a_malformed_command_is_answered_with_the_forms_and_runs_nothing() -> None:
    """`/perf` followed by something else was meant as the command: it gets a reply naming the
    forms (never echoing the comment), before any permission is asked, and nothing is labelled or re-run."""
    client = FakeClient([DONE])
    out = run_command(client, "acme/triton", Command(42, False, "someone", malformed=True), "pr-gate.yml")
    assert client.calls == [] and out.line.startswith("refused:")
    assert out.reply and out.reply.startswith("@someone: nothing was run") and "`/perf full`" in out.reply


@pytest.mark.parametrize("permission", ["read", "none", None])  # triage reads as read; None: 404, no collaborator
def test_a_member_or_collaborator_without_write_access_is_refused_with_a_reply(permission) -> None:
    """author_association MEMBER or COLLABORATOR says nothing about the role: the API decides."""
    client = FakeClient([DONE], permission=permission)
    out = run_command(client, "acme/triton", Command(42, False, "member", WHEN), "pr-gate.yml")  # type: ignore
    assert out.line.startswith("refused:") and "write access" in out.reply and client.writes() == []


def test_a_head_pushed_after_the_comment_is_not_run() -> None:
    later = {**DONE, "created_at": "2026-12-05T10:05:00Z"}  # the run of a head pushed after the comment
    client = FakeClient([later])
    out = run_command(client, "acme/triton", Command(42, False, "maintainer", WHEN), "pr-gate.yml")  # type: ignore
    assert "changed after your comment" in out.reply and client.writes() == []
    # naming the head binds the command to it: the same run is then re-run
    out = run_command(client, "acme/triton", Command(42, False, "maintainer", WHEN, sha=HEAD[:12]),  # type: ignore
                      "pr-gate.yml")
    assert out.reply is None and client.writes()[-1].endswith("/runs/77/rerun")
    client = FakeClient([DONE], head="2" * 40)
    out = run_command(client, "acme/triton", Command(42, False, "maintainer", WHEN, sha=HEAD[:12]),  # type: ignore
                      "pr-gate.yml")
    assert "now `222222222222`" in out.reply and client.writes() == []


def test_a_run_in_progress_is_labelled_not_re_run_and_the_reply_says_so() -> None:
    client = FakeClient([{**DONE, "status": "in_progress", "conclusion": None}])
    out = run_command(client, "acme/triton", Command(42, False, "maintainer", WHEN), "pr-gate.yml")  # type: ignore
    assert client.writes() == ["/repos/acme/triton/issues/42/labels"] and "still in_progress" in out.reply
    client = FakeClient([])  # no run yet: nothing shows which head was reviewed
    out = run_command(client, "acme/triton", Command(42, False, "maintainer", WHEN), "pr-gate.yml")  # type: ignore
    assert "no `pr-gate.yml` run" in out.reply and "/perf 111111111111" in out.reply and client.writes() == []
    out = run_command(client, "acme/triton", Command(42, False, "maintainer", WHEN, sha=HEAD[:12]),  # type: ignore
                      "pr-gate.yml")
    assert client.writes() == ["/repos/acme/triton/issues/42/labels"] and "runs with the label" in out.reply


def test_a_fork_run_held_for_approval_is_not_released() -> None:
    held = {**DONE, "status": "completed", "conclusion": "action_required"}
    client = FakeClient([held])
    out = run_command(client, "acme/triton", Command(42, False, "maintainer", WHEN), "pr-gate.yml")  # type: ignore
    assert "waits for a maintainer's approval" in out.reply and client.writes() == []


def test_a_perf_label_added_by_someone_without_write_access_is_taken_off_again() -> None:
    """Left on, the opt-in job would count it on the next push."""
    client = FakeClient([DONE], permission="read")
    out = run_command(client, "acme/triton", parse_label(_labeled("perf")), "pr-gate.yml")  # type: ignore
    assert client.writes() == ["/repos/acme/triton/issues/42/labels/perf"] and "write access" in out.reply


def _labeled(name: str, *, fork: bool = False) -> dict:
    event = payload("pull_request.labeled")
    event["label"]["name"] = name
    if fork:
        event["pull_request"]["head"]["repo"] = {"full_name": "someone/triton"}
    return event


def test_only_the_perf_labels_are_requests_and_they_name_the_head_they_were_added_on() -> None:
    assert parse_label(_labeled("bug")) == "ignored" and parse_label(_labeled("needs-rebase")) == "ignored"
    command = parse_label(_labeled("perf-full"))
    assert command == Command(42, True, "Codertocat", sha=HEAD, via_label=True)
    client = FakeClient([DONE], head="2" * 40)  # pushed after the label: nothing runs
    assert "now `222222222222`" in run_command(client, "acme/triton", command, "perf-gate.yml").reply  # type: ignore
    client = FakeClient([DONE])
    out = run_command(client, "acme/triton", command, "perf-gate.yml")  # type: ignore
    assert client.writes() == ["/repos/acme/triton/actions/runs/77/rerun"] and out.reply is None  # no label added


def test_the_command_job_runs_for_a_perf_comment_or_a_perf_label_on_a_same_repository_pr() -> None:
    job = load_yaml(WORKFLOWS / "perf-command.yml")["jobs"]["command"]
    for event, runs in ((_comment("/perf"), True), (_comment("lgtm"), False), (_comment("/perf", on_pr=False), False)):
        ctx = {"github": {**github_context("issue_comment", "issue_comment.created"), "event": event}}
        assert condition(job["if"], Evaluator(ctx)) is runs
    for event, runs in ((_labeled("perf"), True), (_labeled("bug"), False), (_labeled("perf", fork=True), False)):
        ctx = {"github": {**github_context("pull_request", "pull_request.labeled"), "event": event}}
        assert condition(job["if"], Evaluator(ctx)) is runs


def test_the_gate_does_not_start_on_a_label() -> None:
    """Any label used to start a gate run (and cancel the one in flight); now only perf-command.yml
    acts on labels, and only on the perf ones."""
    from tests.workflows.test_policy import load, triggers

    assert "labeled" not in triggers(load(WORKFLOWS / "pr-gate.yml"))["pull_request"]["types"]
    for recipe in ("same-org", "cross-org"):
        text = (REPO / "examples" / recipe / "perf-gate.yml").read_text(encoding="utf-8")
        assert "labeled" not in text.split("merge_group")[0], recipe


@pytest.mark.parametrize("body, code, out", [("lgtm", 0, "not a /perf command"), ("/perf", 5, "")])
def test_the_command_line_ignores_other_comments_and_exits_5_when_the_api_cannot_be_reached(tmp_path, body, code,
                                                                                              out) -> None:
    """Any /perf is asked of the API (no association pre-filter); an unreachable API is exit 5
    with one error line, the attempted reply failing quietly."""
    path = tmp_path / "event.json"
    path.write_text(__import__("json").dumps(_comment(body, "CONTRIBUTOR")))
    env = {"PATH": os.environ["PATH"], "GITHUB_API_URL": "https://127.0.0.1:9", "GITHUB_TOKEN": "t"}
    proc = subprocess.run([sys.executable, "-I", str(REPO / "ci" / "perf_command.py"), "--event-path", str(path),
                           "--repo", "acme/triton"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == code and out in proc.stdout, proc.stderr
    assert "Traceback" not in proc.stderr and (code == 0 or proc.stderr.startswith("error: perf_command.py:"))


@pytest.mark.parametrize("opted_in, passes", [("false", False), ("true", True)])
def test_the_result_check_fails_when_not_opted_in(tmp_path, opted_in: str, passes: bool) -> None:
    step = load_yaml(WORKFLOWS / "pr-gate.yml")["jobs"]["result"]["steps"][0]
    (tmp_path / "s.sh").write_text(step["run"])
    env = {"PATH": os.environ["PATH"], "OPTED_IN": opted_in, "OPT_IN_REASON": "opt-in: add the label `perf`",
           "GATE": "success" if passes else "skipped", "JUDGE": "skipped",
           "GITHUB_STEP_SUMMARY": str(tmp_path / "summary")}
    proc = subprocess.run(["bash", "-eo", "pipefail", str(tmp_path / "s.sh")], env=env, capture_output=True, text=True)
    assert (proc.returncode == 0) is passes
    if not passes:
        assert "not run" in (tmp_path / "summary").read_text()


def test_not_opted_in_skips_both_the_prescreen_and_the_gpu() -> None:
    jobs = load_yaml(WORKFLOWS / "pr-gate.yml")["jobs"]
    ctx = {"github": github_context("pull_request", "pull_request.synchronize"), "vars": {},
           "inputs": {"compiler-mode": "source", "prescreen": True},
           "needs": {"opt-in": {"result": "success", "outputs": {"run": "false", "full": "false"}},
                     "prescreen": {"result": "skipped", "outputs": {}},
                     "judge": {"result": "skipped", "outputs": {}}}}
    for job in ("prescreen", "judge", "gate"):
        assert condition(jobs[job]["if"], Evaluator(ctx)) is False, job
    ctx["needs"]["opt-in"]["outputs"] = {"run": "true", "full": "true"}  # perf-full: straight to the GPU, every row
    assert condition(jobs["prescreen"]["if"], Evaluator(ctx)) is False
    assert condition(jobs["judge"]["if"], Evaluator(ctx)) is False
    assert condition(jobs["gate"]["if"], Evaluator(ctx)) is True


def test_perf_full_counts_without_opt_in_mode(tmp_path, monkeypatch) -> None:
    """`/perf full` in a repository that runs every PR: the re-run must see perf-full, so the
    labels are read live whether or not opt-in mode is on."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("opt_in_cli", REPO / "ci" / "opt_in.py")
    cli = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cli)  # type: ignore[union-attr]
    monkeypatch.setattr(cli, "labels_that_count", lambda client, repo, pr: (["perf-full"], []))
    out = tmp_path / "out"
    assert cli.main(["--event-name", "pull_request", "--repo", "acme/triton", "--pr", "42", "--opt-in", "false",
                     "--github-output", str(out)]) == 0
    assert "run=true" in out.read_text() and "full=true" in out.read_text()


@pytest.mark.parametrize("opt_in, code", [("false", 0), ("true", 5)])
def test_unreadable_labels_fail_only_where_they_decide_whether_the_gate_runs(tmp_path, monkeypatch, capsys,
                                                                            opt_in, code) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("opt_in_cli_2", REPO / "ci" / "opt_in.py")
    cli = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cli)  # type: ignore[union-attr]

    def down(client, repo, pr):
        raise GitHubError("GET /repos/acme/triton/issues/42/labels: 502", status=502)

    monkeypatch.setattr(cli, "labels_that_count", down)
    out = tmp_path / "out"
    assert cli.main(["--event-name", "pull_request", "--repo", "acme/triton", "--pr", "42", "--opt-in", opt_in,
                     "--github-output", str(out)]) == code
    if code == 0:
        assert "run=true" in out.read_text() and "full=false" in out.read_text()
        assert "perf-full label is not seen" in capsys.readouterr().err


class LabelClient:
    """The REST API as documented for reading who added a PR's labels: the live labels, the
    issue events (oldest first, `tests/workflows/events/api.issue_events.json`), and the
    collaborator permission of each adder (404 for a stranger)."""

    def __init__(self, labels: list[str], permissions: dict[str, str]) -> None:
        import json

        from tests.workflows.payloads import EVENTS

        self.labels, self.permissions = labels, permissions
        self.events = json.loads((EVENTS / "api.issue_events.json").read_text())
        self.asked: list[str] = []

    def get_pages(self, path: str, **_: Any) -> Any:
        if path.startswith("/repos/acme/triton/issues/42/labels"):
            return [{"name": name, "color": "ededed"} for name in self.labels]
        assert path.startswith("/repos/acme/triton/issues/42/events"), path
        return list(self.events)

    def get(self, path: str, **_: Any) -> Any:
        login = path.split("/collaborators/")[1].split("/")[0]
        self.asked.append(login)
        if login not in self.permissions:
            raise GitHubError("not a collaborator", status=404)
        return {"permission": self.permissions[login], "user": {"login": login}}


@pytest.mark.parametrize("permissions, counts", [
    ({"triager": "read", "maintainer": "admin"}, False),  # triage reads as read: its label is not a request
    ({}, False),                                          # a stranger (404)
    ({"triager": "write"}, True),
])
def test_a_perf_label_counts_only_when_its_last_adder_can_write(permissions: dict, counts: bool) -> None:
    """A triage role can label a fork PR `perf`; no workflow takes it off there (perf-command
    acts on same-repository labels only), so the opt-in job asks who added it last."""
    client = LabelClient(["bug", "perf"], permissions)
    labels, refused = labels_that_count(client, "acme/triton", 42)  # type: ignore[arg-type]
    assert client.asked == ["triager"]  # the last labeled event's actor, not the first adder's
    d = decide("pull_request", labels, opt_in=True, refused=refused)
    assert d.run is counts and ("perf" in labels) is counts and "bug" in labels
    if not counts:
        assert refused == [f"the label `perf` was added by @triager, whose access is "
                           f"`{permissions.get('triager', 'none')}`; it counts only when someone with write "
                           "access adds it (or comments /perf)"]
        assert d.reason.startswith("opt-in: the label `perf` was added by @triager") and "comment /perf" in d.reason


def test_a_label_the_perf_command_added_counts_without_asking() -> None:
    """/perf labels with GITHUB_TOKEN (actor github-actions[bot]) after checking the commenter;
    a fork PR's token cannot label, so that actor is a workflow of this repository."""
    client = LabelClient(["perf-full"], {})
    labels, refused = labels_that_count(client, "acme/triton", 42)  # type: ignore[arg-type]
    assert labels == ["perf-full"] and refused == [] and client.asked == []


def test_a_label_no_event_names_an_adder_for_does_not_count() -> None:
    client = LabelClient(["perf"], {"triager": "write"})
    client.events = [e for e in client.events if e.get("label", {}).get("name") != "perf"]
    labels, refused = labels_that_count(client, "acme/triton", 42)  # type: ignore[arg-type]
    assert labels == [] and "added by no one the API names" in refused[0]


def test_the_newest_labeled_event_decides_whatever_order_the_api_lists_them_in() -> None:
    client = LabelClient(["bug", "perf"], {"triager": "read", "maintainer": "admin"})
    client.events = list(reversed(client.events))
    labels, _ = labels_that_count(client, "acme/triton", 42)  # type: ignore[arg-type]
    assert client.asked == ["triager"] and labels == ["bug"]


@pytest.mark.parametrize("fails", ["events", "permission"])
def test_an_adder_that_cannot_be_checked_does_not_count_and_does_not_stop_the_job(fails: str) -> None:
    """A read-only token (a fork PR's) may be refused either read: the label is then not
    counted, with the reason, and `/perf` (whose label is the bot's) still runs the gate."""
    client = LabelClient(["perf"], {"triager": "write"})
    if fails == "events":
        client.events = None  # type: ignore[assignment]
        real = client.get_pages

        def pages(path: str, **kw: Any) -> Any:
            if "/events" in path:
                raise GitHubError("GET /repos/acme/triton/issues/42/events: 403", status=403)
            return real(path, **kw)

        client.get_pages = pages  # type: ignore[method-assign]
    else:
        client.get = lambda path, **_: (_ for _ in ()).throw(  # type: ignore[method-assign]
            GitHubError("Resource not accessible by integration", status=403))
    labels, refused = labels_that_count(client, "acme/triton", 42)  # type: ignore[arg-type]
    assert labels == [] and len(refused) == 1
    assert ("could not be read" if fails == "events" else "unreadable: Resource not accessible") in refused[0]


def test_labels_other_than_perf_ask_nothing_more() -> None:
    client = LabelClient(["bug"], {})
    client.events = None  # reading them would fail
    assert labels_that_count(client, "acme/triton", 42) == (["bug"], [])  # type: ignore[arg-type]


def test_the_command_line_says_why_a_label_does_not_count(tmp_path, monkeypatch, capsys) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("opt_in_cli_3", REPO / "ci" / "opt_in.py")
    cli = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cli)  # type: ignore[union-attr]
    why = "the label `perf` was added by @triager, whose access is `read`; it counts only when someone " \
          "with write access adds it (or comments /perf)"
    monkeypatch.setattr(cli, "labels_that_count", lambda client, repo, pr: (["bug"], [why]))
    out = tmp_path / "out"
    assert cli.main(["--event-name", "pull_request", "--repo", "acme/triton", "--pr", "42", "--opt-in", "true",
                     "--github-output", str(out)]) == 0
    assert "run=false" in out.read_text() and "added by @triager" in out.read_text()
    assert f"::warning::opt_in.py: {why}" in capsys.readouterr().err
