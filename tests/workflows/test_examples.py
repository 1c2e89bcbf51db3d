"""The adoption recipes under examples/: linted (zizmor at the auditor persona,
check-jsonschema with GitHub's workflow schema) and replayed against this repository's
actions and reusable workflows (every input they pass exists, every required one is passed,
the cross-org gate decides as pr-gate.yml does, and its pre-screen jobs, both halves and the
judge, run through the real pr-gate action with a stand-in ci/prescreen.py)."""

from __future__ import annotations

import itertools
import re
import sys
from pathlib import Path

import pytest

from tests.workflows.payloads import github_context
from tests.workflows.replay import Evaluator, JobRun, condition, load_yaml
from tests.workflows.test_gate_action import publish_store, server_with_store
from tests.workflows.test_linters import run, tool
from tests.workflows.test_pr_gate_steps import REPO, WORKFLOWS, triggers
from tests.workflows.test_prescreen_wiring import Artifacts, pr_runner

EXAMPLES = REPO / "examples"
RECIPES = sorted(EXAMPLES.glob("*/*.yml"))
TG_USES = re.compile(r"^tritongate-org/tritongate/(\.github/(?:actions/[a-z-]+|workflows/[a-z-]+\.yml))@([0-9a-f]{40})$")


def test_there_are_same_org_and_cross_org_recipes() -> None:
    assert {p.relative_to(EXAMPLES).as_posix() for p in RECIPES} == {
        f"{kind}/perf-{name}.yml" for kind in ("same-org", "cross-org") for name in ("gate", "comment", "nightly", "command")}


def test_recipes_audit_clean_at_the_auditor_persona() -> None:
    proc = run([tool("zizmor"), "--offline", "--no-progress", "--persona=auditor",
                "--config", str(EXAMPLES / "zizmor.yml"), *map(str, RECIPES)])
    assert proc.returncode == 0 and "No findings to report" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    text = (EXAMPLES / "zizmor.yml").read_text()
    for rule, spec in load_yaml(EXAMPLES / "zizmor.yml")["rules"].items():
        block = text.split(f"  {rule}:", 1)[1]
        assert spec["ignore"] and block.count("#") >= 2, f"{rule}: say why it is kept"


def test_recipes_match_githubs_schema() -> None:
    proc = run([tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", *map(str, RECIPES)])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _tritongate_uses() -> list[tuple[Path, dict, str, str]]:
    found = []
    for path in RECIPES:
        doc = load_yaml(path)
        for job in doc["jobs"].values():
            for node in [job, *job.get("steps", [])]:
                m = TG_USES.match(node.get("uses", ""))
                if node.get("uses", "").startswith("tritongate-org/"):
                    assert m, f"{path.name}: {node['uses']} is not pinned to a 40-hex commit"
                    found.append((path, node, m.group(1), m.group(2)))
    return found


def test_every_input_a_recipe_passes_exists_and_every_required_one_is_passed() -> None:
    uses = _tritongate_uses()
    assert {target for _, _, target, _ in uses} == {
        ".github/workflows/pr-gate.yml", ".github/workflows/pr-comment.yml", ".github/workflows/nightly-baseline.yml",
        ".github/workflows/perf-command.yml", ".github/actions/pr-gate", ".github/actions/post-comment",
        ".github/actions/record-baseline", ".github/actions/opt-in", ".github/actions/build-compiler"}
    for path, node, target, _ in uses:
        if target.endswith(".yml"):
            declared = triggers(load_yaml(REPO / target))["workflow_call"]["inputs"]
        else:
            declared = load_yaml(REPO / target / "action.yml")["inputs"]
        given = set(node.get("with") or {})
        assert given <= set(declared), f"{path.name}: {target} has no input {given - set(declared)}"
        required = {name for name, spec in declared.items() if spec.get("required")}
        assert required <= given, f"{path.name}: {target} needs {required - given}"


def test_same_org_callers_grant_what_the_called_jobs_ask() -> None:
    levels = {"none": 0, "read": 1, "write": 2}
    for path, node, target, _ in _tritongate_uses():
        if not target.endswith(".yml"):
            continue
        granted = node.get("permissions") or {}
        for job_id, job in load_yaml(REPO / target)["jobs"].items():
            for scope, level in (job.get("permissions") or {}).items():
                assert levels[granted.get(scope, "none")] >= levels[level], f"{path.name}: {job_id} needs {scope}"


def _contexts(event: str, fixture: str, *, labels: tuple[str, ...], judge: str, changed: str) -> dict:
    github = github_context(event, fixture)
    if "pull_request" in github["event"]:
        github["event"]["pull_request"]["labels"] = [{"name": name} for name in labels]
    # what the opt-in job answers (the recipe has no opt-in mode): perf-full only on a PR
    full = "pull_request" in github["event"] and "perf-full" in labels
    opt_in = {"run": "true", "full": "true" if full else "false"}
    return {"github": github, "vars": {}, "inputs": {},
            "needs": {"judge": {"result": judge, "outputs": {"rows-changed": changed}},
                      "prescreen": {"result": judge, "outputs": {}},
                      "opt-in": {"result": "success", "outputs": opt_in}}}


@pytest.mark.parametrize("fixture, labels, judge, changed", list(itertools.product(
    [("pull_request", "pull_request.synchronize"), ("pull_request", "pull_request.synchronize.fork"),
     ("merge_group", "merge_group.checks_requested")],
    [(), ("perf-full",)], ["success", "failure", "skipped"], ["0", "3", "unknown", ""])))
def test_the_cross_org_gate_decides_as_the_reusable_workflow(fixture, labels, judge, changed) -> None:
    ours = load_yaml(WORKFLOWS / "pr-gate.yml")["jobs"]
    theirs = load_yaml(EXAMPLES / "cross-org" / "perf-gate.yml")["jobs"]
    ctx = _contexts(fixture[0], fixture[1], labels=labels, judge=judge, changed=changed)
    for job in ("gate",):
        assert condition(theirs[job]["if"], Evaluator(ctx)) == condition(ours[job]["if"], Evaluator(ctx)), job
    ours_dl = next(s for s in ours["gate"]["steps"] if s.get("id") == "changed")
    theirs_dl = next(s for s in theirs["gate"]["steps"] if s.get("id") == "changed")
    assert condition(theirs_dl["if"], Evaluator(ctx)) == condition(ours_dl["if"], Evaluator(ctx))
    # the pre-screen too (the reusable's compiler-mode and prescreen inputs at the recipe's values)
    screened = {**ctx, "inputs": {"compiler-mode": "source", "prescreen": True}}
    for job in ("prescreen", "judge"):
        assert condition(theirs[job]["if"], Evaluator(screened)) == condition(ours[job]["if"], Evaluator(screened))


@pytest.mark.slow
def test_the_cross_org_prescreen_jobs_run_through_the_action(tmp_path: Path) -> None:
    """The recipe's pre-screen jobs (its two halves, then the judge), their `uses:` resolved to
    this repository's action (a copy with a stand-in ci/prescreen.py), the halves handed over
    through a local artifact store; the one change: a cpu record of the smoke suite in mode
    installed instead of source builds and the `pr` suite on a GPU's baseline."""
    store = publish_store(tmp_path / "s")
    server = server_with_store(tmp_path, store)
    artifacts = Artifacts(tmp_path / "artifacts")
    jobs = load_yaml(EXAMPLES / "cross-org" / "perf-gate.yml")["jobs"]
    outputs = {}
    for name, matrix in (("prescreen", {"side": "base"}), ("prescreen", {"side": "cand"}), ("judge", {})):
        where = tmp_path / f"{name}-{matrix.get('side', '')}"
        r = pr_runner(where, server, changed=0)
        action_dir = r.action_dir
        contexts = {"github": r.github, "vars": {}, "inputs": {}, "matrix": matrix,
                    "runner": {"temp": str(r.runner_temp), "os": "Linux"},
                    "needs": {"opt-in": {"result": "success", "outputs": {"run": "true", "full": "false"}},
                              "prescreen": {"result": "success", "outputs": {}}}}
        assert condition(jobs[name]["if"], Evaluator(contexts)), name

        def uses(run_: JobRun, step: dict, with_values: dict, action_dir: Path = action_dir):
            if TG_USES.match(step["uses"]):
                values = {**with_values, "runner-class": "cpu-ci", "suite": "smoke", "backend": "cpu",
                          "compiler-mode": "installed", "python": sys.executable}
                return run_.run_composite(action_dir, values, run_.current_env)
            if step["uses"].startswith("actions/upload-artifact@"):
                artifacts.upload(with_values)
                return None
            if step["uses"].startswith("actions/download-artifact@"):
                return artifacts.download(with_values)
            if step["uses"].startswith("actions/setup-python@"):
                return "success", {"python-path": sys.executable}
            raise AssertionError(step["uses"])

        job_run = JobRun(r.workspace, r.runner_temp, contexts, r.env, uses)
        job_run.fakes["judge-deps"] = {}  # pip install from PyPI: this interpreter has them
        assert job_run.run_job(jobs[name]) == "success", job_run.log()
        outputs[name, matrix.get("side")] = job_run.contexts["steps"]
    judged = outputs["judge", None]["judge"]["outputs"]
    assert judged["rows-changed"] == "0" and judged["key"] == "cpu-ci-smoke"
    assert {"tritongate-half-base-cpu-ci-smoke", "tritongate-half-cand-cpu-ci-smoke", "tritongate-verdict-cpu-ci-smoke",
            "tritongate-prescreen-cpu-ci-smoke"} <= set(artifacts.uploaded)


def test_adopting_md_names_only_files_and_figures_that_exist() -> None:
    text = (REPO / "docs" / "adopting.md").read_text(encoding="utf-8")
    for path in set(re.findall(r"`?((?:examples|bench/results|ci|tests/workflows)/[\w./-]+\.(?:yml|md|py|sh))`?", text)):
        if path == "ci/prescreen.py":  # the pre-screen itself lands separately; its interface is tested here
            continue
        assert (REPO / path).exists(), path
    timing = text[text.index("## Expected job time"):]
    figures = re.findall(r"(\d+\.\d) s\b", timing)
    rows = re.findall(r"^\|[^|\n]+\| (\d+\.\d) s \| (bench/results/[\w.-]+\.md) \|$", timing, flags=re.M)
    assert figures and sorted(figures) == sorted(f for f, _ in rows), "every figure names the file it comes from"
    for figure, source in rows:
        assert f"{figure} s" in (REPO / source).read_text(encoding="utf-8"), (figure, source)
    measured, not_measured = timing.split("**Not measured**", 1)
    assert "compiler source builds" in not_measured and "pre-screen *job* on a real runner" in not_measured
    # the overlay build is measured (bench/overlay_build.py); no source build time is claimed as measured
    assert "source build" not in measured
    assert "compiler build" not in measured.replace("no compiler build", "").replace("compiler build as an overlay", "")
