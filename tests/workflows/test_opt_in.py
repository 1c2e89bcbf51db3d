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
from tritongate.github.optin import Command, decide, parse_command, run_command


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


@pytest.mark.parametrize("event, expected", [
    (_comment("/perf"), Command(42, False)),
    (_comment("/perf full"), Command(42, True)),
    (_comment("/perf", "COLLABORATOR"), Command(42, False)),
    (_comment("/perf", "CONTRIBUTOR"), "refused"),
    (_comment("/perf", "FIRST_TIME_CONTRIBUTOR"), "refused"),
    (_comment("/perf", "NONE"), "refused"),
    (_comment("/perfect"), "ignored"),
    (_comment("please /perf"), "ignored"),
    (_comment("/perf full; rm -rf /"), "ignored"),
    (_comment("/perf", on_pr=False), "ignored"),          # an issue, not a PR
])
def test_parse_command(event: dict, expected: Any) -> None:
    assert parse_command(event) == expected


class FakeClient:
    def __init__(self, runs: list[dict]) -> None:
        self.calls: list[tuple[str, str, Any]] = []
        self.runs = runs

    def get(self, path: str, **_: Any) -> Any:
        self.calls.append(("GET", path, None))
        if path.startswith("/repos/acme/triton/pulls/"):
            return {"head": {"sha": "1" * 40}}
        return {"workflow_runs": self.runs}

    def post(self, path: str, body: dict, **_: Any) -> Any:
        self.calls.append(("POST", path, body))
        return {}


def test_the_command_labels_and_re_runs_the_heads_gate_run() -> None:
    client = FakeClient([{"id": 77}])
    line = run_command(client, "acme/triton", Command(42, True), "pr-gate.yml")  # type: ignore[arg-type]
    assert client.calls == [
        ("GET", "/repos/acme/triton/pulls/42", None),
        ("POST", "/repos/acme/triton/issues/42/labels", {"labels": ["perf-full"]}),
        ("GET", f"/repos/acme/triton/actions/workflows/pr-gate.yml/runs?head_sha={'1' * 40}&per_page=1", None),
        ("POST", "/repos/acme/triton/actions/runs/77/rerun", {})]
    assert "re-running run 77" in line
    client = FakeClient([])
    assert "no pr-gate.yml run" in run_command(client, "acme/triton", Command(42, False), "pr-gate.yml")  # type: ignore


def test_a_refused_command_writes_nothing(tmp_path) -> None:
    path = tmp_path / "event.json"
    path.write_text(__import__("json").dumps(_comment("/perf", "CONTRIBUTOR")))
    env = {"PATH": os.environ["PATH"], "GITHUB_API_URL": "https://127.0.0.1:9", "GITHUB_TOKEN": "t"}
    proc = subprocess.run([sys.executable, "-I", str(REPO / "ci" / "perf_command.py"), "--event-path", str(path),
                           "--repo", "acme/triton"], env=env, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0 and proc.stdout.startswith("refused:"), proc.stderr


def test_the_command_job_runs_only_for_a_perf_comment_on_a_pr() -> None:
    job = load_yaml(WORKFLOWS / "perf-command.yml")["jobs"]["command"]
    for event, runs in ((_comment("/perf"), True), (_comment("lgtm"), False), (_comment("/perf", on_pr=False), False)):
        ctx = {"github": {**github_context("issue_comment", "issue_comment.created"), "event": event}}
        assert condition(job["if"], Evaluator(ctx)) is runs


@pytest.mark.parametrize("opted_in, passes", [("false", False), ("true", True)])
def test_the_result_check_fails_when_not_opted_in(tmp_path, opted_in: str, passes: bool) -> None:
    step = load_yaml(WORKFLOWS / "pr-gate.yml")["jobs"]["result"]["steps"][0]
    (tmp_path / "s.sh").write_text(step["run"])
    env = {"PATH": os.environ["PATH"], "OPTED_IN": opted_in, "OPT_IN_REASON": "opt-in: add the label `perf`",
           "GATE": "success" if passes else "skipped", "PRESCREEN": "skipped",
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
                     "prescreen": {"result": "skipped", "outputs": {}}}}
    assert condition(jobs["prescreen"]["if"], Evaluator(ctx)) is False
    assert condition(jobs["gate"]["if"], Evaluator(ctx)) is False
    ctx["needs"]["opt-in"]["outputs"] = {"run": "true", "full": "true"}  # perf-full: straight to the GPU, every row
    assert condition(jobs["prescreen"]["if"], Evaluator(ctx)) is False
    assert condition(jobs["gate"]["if"], Evaluator(ctx)) is True
