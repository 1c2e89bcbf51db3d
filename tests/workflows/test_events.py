"""Job conditions of the workflows, evaluated over documented event payloads
(tests/workflows/events/, each with its source): a condition that reads a field GitHub does
not send for an event is caught here."""

from __future__ import annotations

import pytest

from tests.workflows.payloads import EVENTS, github_context, payload
from tests.workflows.replay import Evaluator, condition, load_yaml
from tests.workflows.test_pr_gate_steps import WORKFLOWS


def test_every_fixture_names_its_source() -> None:
    readme = (EVENTS / "README.md").read_text(encoding="utf-8")
    for path in EVENTS.glob("*.json"):
        assert f"`{path.name}`" in readme, f"{path.name}: add its source to events/README.md"


def test_a_schedule_event_has_no_repository_object() -> None:
    assert payload("schedule") == {"schedule": "23 3 * * *"}


@pytest.mark.parametrize("event_name, fixture, runs", [
    ("schedule", "schedule", True),                        # the nightly itself
    ("workflow_dispatch", "workflow_dispatch", True),      # a maintainer's run on main
])
@pytest.mark.parametrize("job", ["record", "publish"])
def test_the_nightly_runs_on_its_own_events(event_name: str, fixture: str, runs: bool, job: str) -> None:
    doc = load_yaml(WORKFLOWS / "nightly-baseline.yml")
    ctx = {"github": github_context(event_name, fixture), "vars": {}, "inputs": {},
           "needs": {"record": {"outputs": {"entry": "h200/pr/gpu/x"}, "result": "success"}}}
    assert condition(doc["jobs"][job]["if"], Evaluator(ctx)) is runs


def test_the_nightly_refuses_a_dispatch_on_another_branch() -> None:
    doc = load_yaml(WORKFLOWS / "nightly-baseline.yml")
    github = github_context("workflow_dispatch", "workflow_dispatch", ref="refs/heads/feature", ref_name="feature")
    ctx = {"github": github, "vars": {}, "inputs": {}, "needs": {}}
    assert condition(doc["jobs"]["record"]["if"], Evaluator(ctx)) is False
