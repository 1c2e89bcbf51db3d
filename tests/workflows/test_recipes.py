"""The two adoption recipes are generated from one source and do the same thing.

examples/same-org/*.yml and examples/cross-org/*.yml are rendered from
examples/templates/<file>.j2 by scripts/gen_recipes.py; a committed recipe that differs from
that output (a hand edit of one of them) fails here. And whatever the templates say, the two
recipes of each file must agree once same-org's call of a reusable workflow is expanded into
that workflow's jobs: the same `name:`, triggers and top-level permissions; the same jobs with
the same names, needs, `if:` (evaluated over a grid of events, variables and needs results),
permissions, runners, timeouts and third-party steps; the same settings passed to tritongate
(a reusable workflow's `with:` keys, mapped onto the action inputs they feed); and one pin for
every `uses:` of tritongate."""

from __future__ import annotations

import copy
import importlib.util
import itertools
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterator

import pytest

from tests.workflows.payloads import github_context
from tests.workflows.replay import Evaluator, condition, interpolate, load_yaml
from tests.workflows.test_pr_gate_steps import REPO, triggers

_spec = importlib.util.spec_from_file_location("gen_recipes", REPO / "scripts" / "gen_recipes.py")
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)

EXAMPLES = REPO / "examples"
FILES = gen.workflows()
TG = gen.PIN["tritongate"]
TG_USES = re.compile(rf"^{re.escape(TG)}/(\.github/(?:actions/[\w-]+|workflows/[\w.-]+\.yml))@(\S+)$")
LOCAL_ACTION = "./tritongate/.github/actions/"

# Jobs of a reusable workflow whose `contents: read` only checks tritongate out: the cross-org
# job calls an action instead (Actions fetches it), so it goes without.
CHECKOUT_ONLY_CONTENTS = {("perf-gate.yml", "opt-in"), ("perf-comment.yml", "comment")}


# -- (a), (c): the committed recipes are the templates' output -------------------------------------
def test_the_committed_recipes_are_what_the_templates_produce() -> None:
    assert FILES == ["perf-command.yml", "perf-comment.yml", "perf-gate.yml", "perf-nightly.yml"]
    assert gen.stale() == [], "a recipe was edited by hand: edit examples/templates/, run python scripts/gen_recipes.py"
    assert gen.main(["--check"]) == 0


def test_the_check_names_a_hand_edited_or_stray_recipe_and_the_generator_repairs_it(tmp_path, capsys) -> None:
    root = tmp_path / "repo"
    (root / "examples").mkdir(parents=True)
    for sub in ("templates", *gen.RECIPES):
        (root / "examples" / sub).mkdir()
        for path in (EXAMPLES / sub).iterdir():
            (root / "examples" / sub / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    gen.write(root)  # whatever the committed recipes hold (the test above judges them)
    assert gen.stale(root) == []
    edited = root / "examples" / "cross-org" / "perf-gate.yml"
    edited.write_text(edited.read_text(encoding="utf-8").replace("timeout-minutes: 240", "timeout-minutes: 30"))
    (root / "examples" / "same-org" / "perf-extra.yml").write_text("name: x\n")
    assert gen.main(["--check"], root=root) == 1
    err = capsys.readouterr().err
    assert "stale: examples/cross-org/perf-gate.yml" in err and "examples/same-org/perf-extra.yml" in err
    assert "perf-comment" not in err
    assert gen.write(root) == ["examples/cross-org/perf-gate.yml"]
    assert gen.stale(root) == ["examples/same-org/perf-extra.yml"]  # no template: named, never deleted
    assert sorted(p.name for p in edited.parent.iterdir()) == [f"{name}" for name in FILES]  # no temp file left


def test_a_template_that_renders_invalid_yaml_writes_nothing(tmp_path) -> None:
    root = tmp_path / "repo"
    (root / "examples" / "templates").mkdir(parents=True)
    (root / "examples" / "templates" / "perf-x.yml.j2").write_text("jobs: [<< suite >>\n")
    with pytest.raises(ValueError, match="invalid YAML"):
        gen.write(root)
    assert not (root / "examples" / "same-org").exists()


# -- one pin -------------------------------------------------------------------------------------
def test_every_tritongate_uses_of_both_recipes_takes_the_one_pin() -> None:
    line = re.compile(rf"^\s*(?:- )?uses: {re.escape(TG)}/\S+@(\S+) # (\S+)$")
    refs = set()
    for kind in gen.RECIPES:
        for name in FILES:
            text = (EXAMPLES / kind / name).read_text(encoding="utf-8")
            for raw in text.splitlines():
                if "uses:" in raw and TG in raw:
                    m = line.match(raw)
                    assert m, f"{kind}/{name}: {raw.strip()}"
                    refs.add(m.groups())
            for node in _uses_nodes(load_yaml(EXAMPLES / kind / name)):
                if node["uses"].startswith(f"{TG}/"):
                    m = TG_USES.match(node["uses"])
                    assert m, f"{kind}/{name}: {node['uses']}"
                    refs.add((m.group(2), gen.PIN["version"]))
    assert refs == {(gen.PIN["sha"], gen.PIN["version"])}
    for template in (EXAMPLES / "templates").glob("*.j2"):  # the pin is written in the generator only
        text = template.read_text(encoding="utf-8")
        assert gen.PIN["sha"] not in text and TG not in text and gen.PIN["version"] not in text, template.name


def _uses_nodes(doc: dict) -> Iterator[dict]:
    for job in doc["jobs"].values():
        for node in [job, *job.get("steps", [])]:
            if "uses" in node:
                yield node


# -- the recipes, expanded to the jobs that run ----------------------------------------------------
@dataclass
class Job:
    raw: dict
    inputs: dict  # the `inputs` context its expressions see (a reusable workflow's), else {}
    env: dict = field(default_factory=dict)  # the workflow's env
    reusable: bool = False

    def get(self, key: str, default: Any = None) -> Any:
        return self.raw.get(key, default)


@dataclass
class Expanded:
    doc: dict
    jobs: dict[str, Job]
    given: dict[str, list]  # workflow input -> the values the recipe gives it
    called: dict | None  # the reusable workflow a job calls, if one does


def _called(uses: str) -> dict | None:
    m = TG_USES.match(uses)
    return load_yaml(REPO / m.group(1)) if m and m.group(1).endswith(".yml") else None


def expand(doc: dict) -> Expanded:
    jobs: dict[str, Job] = {}
    given: dict[str, list] = {}
    called = None
    for job_id, job in doc["jobs"].items():
        reusable = _called(job.get("uses", ""))
        if reusable is None:
            assert job_id not in jobs, job_id
            jobs[job_id] = Job(job, {}, doc.get("env") or {})
            continue
        assert called is None, "one reusable workflow per recipe file"
        called = reusable
        declared = triggers(reusable)["workflow_call"]["inputs"]
        inputs = {name: spec.get("default") for name, spec in declared.items()} | dict(job.get("with") or {})
        for name, value in (job.get("with") or {}).items():
            given.setdefault(name, []).append(value)
        for inner_id, inner in reusable["jobs"].items():
            assert inner_id not in jobs, inner_id
            jobs[inner_id] = Job(inner, inputs, reusable.get("env") or {}, reusable=True)
    return Expanded(doc, jobs, given, called)


def _norm(value: Any) -> Any:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        text = " ".join(value.split())
        return json.loads(text) if text.startswith("[") and text.endswith("]") else text
    return value


def _runs_on(job: Job) -> list:
    value = interpolate(job.get("runs-on"), Evaluator({"inputs": job.inputs, "vars": {}}))
    return value if isinstance(value, list) else [value]


def _tg_calls(job: Job) -> dict[tuple[str, str | None], dict]:
    """(action, stage) -> `with:` of each step that calls a tritongate action."""
    calls = {}
    for step in job.get("steps", []):
        uses = step.get("uses", "")
        m = TG_USES.match(uses)
        if uses.startswith(LOCAL_ACTION):
            action = uses[len(LOCAL_ACTION):]
        elif m and "/actions/" in m.group(1):
            action = m.group(1).rsplit("/", 1)[1]
        else:
            continue
        with_ = dict(step.get("with") or {})
        key = (action, with_.get("stage"))
        assert key not in calls, key
        calls[key] = with_
    return calls


def _third_party(job: Job) -> dict[str, dict]:
    """Other actions a job's steps use, less a reusable workflow's checkout of tritongate."""
    out = {}
    for step in job.get("steps", []):
        uses = step.get("uses", "")
        if not uses or uses.startswith((LOCAL_ACTION, f"{TG}/")):
            continue
        with_ = step.get("with") or {}
        if uses.startswith("actions/checkout@") and "job.workflow_repository" in str(with_.get("repository")):
            continue
        out[uses] = {k: _norm(v) for k, v in with_.items()}
    return out


def _action_inputs(action: str) -> dict:
    return load_yaml(REPO / ".github" / "actions" / action / "action.yml")["inputs"]


def _map_calls(name: str, job_id: str, job: Job, reference: dict, given: dict[str, list]) -> None:
    """Turn a cross-org job's action calls (and its runner) into the reusable workflow inputs
    they stand for: a `with:` key the reusable workflow fills from `inputs.N` counts as N; one
    it fills from the run (github, needs, steps, runner) must be passed, with the same
    expression; an action input of the reusable workflow's own name counts as that input."""
    declared = triggers(reference)["workflow_call"]["inputs"]
    ref_job = Job(reference["jobs"][job_id], {}, reference.get("env") or {})
    ref_calls = _tg_calls(ref_job)
    own_calls = _tg_calls(job)
    missing = set(ref_calls) - set(own_calls)
    assert not missing, f"{name} {job_id}: the reusable workflow calls {missing}, the cross-org job does not"
    ref_runner = re.findall(r"\binputs\.([\w-]+)", str(ref_job.get("runs-on")))
    if ref_runner:
        given.setdefault(ref_runner[0], []).append(_runs_on(job))
    for call, with_ in own_calls.items():
        ref_with = ref_calls.get(call, {})
        for key, value in with_.items():
            if key == "stage":
                continue
            ref_value = ref_with.get(key)
            refs = re.findall(r"\binputs\.([\w-]+)", str(ref_value)) if ref_value is not None else []
            if refs:
                given.setdefault(refs[0], []).append(value)
            elif ref_value is not None:
                assert _norm(value) == _norm(ref_value), f"{name} {job_id} {call}: {key}: {value!r} != {ref_value!r}"
            elif key in declared:
                given.setdefault(key, []).append(value)
            else:
                raise AssertionError(f"{name} {job_id} {call}: passes {key}, which same-org cannot pass")
        defaults = _action_inputs(call[0])
        for key, ref_value in ref_with.items():
            if key in with_ or key == "stage" or re.search(r"\binputs\.", str(ref_value)):
                continue
            if re.search(r"\b(github|needs|steps|runner|job)\.", str(ref_value)):
                raise AssertionError(f"{name} {job_id} {call}: must pass {key}: {ref_value}")
            constant = interpolate(ref_value, Evaluator({"env": ref_job.env}))
            assert _norm(constant) == _norm(defaults[key].get("default")), f"{name} {job_id} {call}: must pass {key}"


def _pair(name: str) -> tuple[Expanded, Expanded]:
    same, cross = (expand(load_yaml(EXAMPLES / kind / name)) for kind in gen.RECIPES)
    assert same.called is not None, f"same-org/{name} calls no reusable workflow of tritongate"
    for exp in (same, cross):
        for job_id, job in exp.doc["jobs"].items():
            if not job.get("uses"):
                _map_calls(name, job_id, exp.jobs[job_id], same.called, exp.given)
    return same, cross


@pytest.mark.parametrize("name", FILES)
def test_both_recipes_have_the_same_name_triggers_and_top_level_permissions(name: str) -> None:
    same, cross = (load_yaml(EXAMPLES / kind / name) for kind in gen.RECIPES)
    assert same["name"] == cross["name"]
    assert triggers(same) == triggers(cross)
    assert same["permissions"] == cross["permissions"] == {}


@pytest.mark.parametrize("name", FILES)
def test_both_recipes_run_the_same_jobs_with_the_same_needs_permissions_and_runners(name: str) -> None:
    same, cross = _pair(name)
    assert sorted(same.jobs) == sorted(cross.jobs)
    for job_id, ours in same.jobs.items():
        theirs = cross.jobs[job_id]
        where = f"{name} {job_id}"
        assert ours.get("name") == theirs.get("name"), where
        assert _needs(ours) == _needs(theirs), where
        assert ours.get("timeout-minutes") == theirs.get("timeout-minutes"), where
        assert (ours.get("concurrency") or {}).get("cancel-in-progress") == \
            (theirs.get("concurrency") or {}).get("cancel-in-progress"), where
        assert _runs_on(ours) == _runs_on(theirs), where
        assert _third_party(ours) == _third_party(theirs), where
        assert _permissions(name, job_id, ours) == _permissions(name, job_id, theirs), where
        assert set(_tg_calls(theirs)) >= set(_tg_calls(ours)), where


def _needs(job: Job) -> list[str]:
    needs = job.get("needs") or []
    return sorted([needs] if isinstance(needs, str) else needs)


def _permissions(name: str, job_id: str, job: Job) -> dict:
    perms = dict(job.get("permissions") or {})
    if (name, job_id) in CHECKOUT_ONLY_CONTENTS and job.reusable:
        assert perms.pop("contents", None) == "read", f"{name} {job_id}: update CHECKOUT_ONLY_CONTENTS"
    return perms


@pytest.mark.parametrize("name", FILES)
def test_both_recipes_give_tritongate_the_same_settings(name: str) -> None:
    same, cross = _pair(name)
    assert sorted(same.given) == sorted(cross.given), name
    for key, values in same.given.items():
        want = {json.dumps(_norm(v)) for v in values}
        got = {json.dumps(_norm(v)) for v in cross.given[key]}
        assert len(want) == 1 and got == want, f"{name}: {key}: same-org {want}, cross-org {got}"


# -- `if:` ------------------------------------------------------------------------------------------
APPROVED = {"TRITONGATE_FORK_APPROVAL": "require-approval-for-all-outside-collaborators"}
NEEDS = {
    "opt-in": [("success", {"run": "true", "full": "false", "reason": ""}),
               ("success", {"run": "true", "full": "true", "reason": ""}),
               ("success", {"run": "false", "full": "false", "reason": "opt-in"}), ("failure", {})],
    "prescreen": [("success", {}), ("failure", {}), ("skipped", {})],  # the two halves: no outputs
    "judge": [("success", {"rows-changed": "0", "verdict": "true", "key": "k", "ir-diff": "true"}),
              ("success", {"rows-changed": "3", "verdict": "true", "key": "k", "ir-diff": "true"}),
              ("success", {"rows-changed": "34", "verdict": "false", "key": "k", "ir-diff": "false"}),
              ("success", {"rows-changed": "unknown", "verdict": "false", "key": "k", "ir-diff": "false"}),
              ("failure", {}), ("skipped", {})],
    "gate": [("success", {}), ("failure", {}), ("skipped", {})],
    "record": [("success", {"entry": "acme-h200/pr/NVIDIA H200/e"}), ("success", {"entry": ""}),
               ("failure", {}), ("skipped", {})],
}


def _events() -> Iterator[tuple[str, dict]]:
    yield "pull_request", github_context("pull_request", "pull_request.synchronize")
    yield "pull_request fork", github_context("pull_request", "pull_request.synchronize.fork")
    collaborator = github_context("pull_request", "pull_request.synchronize.fork")
    collaborator["event"]["pull_request"]["author_association"] = "COLLABORATOR"
    yield "pull_request fork by a collaborator", collaborator
    yield "pull_request labeled", github_context("pull_request", "pull_request.labeled")
    yield "merge_group", github_context("merge_group", "merge_group.checks_requested")
    yield "schedule", github_context("schedule", "schedule")
    yield "workflow_dispatch", github_context("workflow_dispatch", "workflow_dispatch")
    yield "workflow_dispatch off main", github_context("workflow_dispatch", "workflow_dispatch",
                                                       ref="refs/heads/feature", ref_name="feature")
    yield "issue_comment", github_context("issue_comment", "issue_comment.created")
    for event, conclusion in itertools.product(("pull_request", "push"), ("success", "failure", "cancelled")):
        ctx = github_context("workflow_run", "workflow_run.completed.fork")
        ctx["event"]["workflow_run"].update(event=event, conclusion=conclusion)
        yield f"workflow_run {event} {conclusion}", ctx


def _contexts(job: Job, needs_ids: list[str]) -> Iterator[tuple[str, dict, bool]]:
    unknown = set(needs_ids) - set(NEEDS)
    assert not unknown, f"add outcomes of {unknown} to NEEDS"
    for (label, github), vars_ in itertools.product(list(_events()), ({}, APPROVED)):
        for outcome in itertools.product(*(NEEDS[n] for n in needs_ids)):
            needs = {n: {"result": r, "outputs": o} for n, (r, o) in zip(needs_ids, outcome)}
            ok = all(r == "success" for r, _ in outcome)
            ctx = {"github": copy.deepcopy(github), "vars": vars_, "inputs": job.inputs, "needs": needs,
                   "env": job.env, "job": {"workflow_repository": TG}}
            yield f"{label}, vars {vars_}, needs {needs}", ctx, ok


@pytest.mark.parametrize("name", FILES)
def test_every_job_of_both_recipes_runs_under_the_same_conditions(name: str) -> None:
    same, cross = _pair(name)
    for job_id, ours in same.jobs.items():
        theirs = cross.jobs[job_id]
        differ = []
        for label, ctx, ok in _contexts(ours, _needs(ours)):
            state = "success" if ok else "failure"  # implicit success(): every needed job succeeded
            a = condition(ours.get("if"), Evaluator(ctx, lambda: state))
            b = condition(theirs.get("if"), Evaluator({**ctx, "inputs": theirs.inputs, "env": theirs.env},
                                                      lambda: state))
            if a != b:
                differ.append(f"same-org {a}, cross-org {b}: {label}")
        assert not differ, f"{name} {job_id}: {len(differ)} cases differ, e.g.\n" + "\n".join(differ[:3])
