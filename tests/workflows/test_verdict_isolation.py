"""A verdict the PR cannot write (issue #37, item 2): no job that runs a build's code writes
rows-changed or the pre-screen's verdict.

Read from the YAML, for pr-gate.yml and for the cross-org recipe (which writes the same jobs
out): the gate and result jobs read rows-changed only from a judge job; that job runs
GitHub-hosted with a read-only token, checks out nothing but tritongate at the workflow's own
commit, and calls the pr-gate action only at stage judge; the side jobs have no job outputs.
And in the pr-gate action, walked stage by stage and mode by mode (each step's `if:`
evaluated, every step before it taken to have run and set its outputs): a stage that checks
out a compiler, builds one or runs a pre-screen half never runs a step that writes
rows-changed or the pre-screen's IR diff or verdict, and every step that runs a build's code
goes through the contained wrapper (ci/gate_steps.sh: no file commands, a throwaway HOME).
The replay of the same with a build that tries to write the file commands is in
test_prescreen_wiring.py."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.workflows.payloads import github_context
from tests.workflows.replay import Evaluator, condition, interpolate, load_yaml
from tests.workflows.test_pr_gate_steps import REPO, WORKFLOWS

ACTION = REPO / ".github" / "actions" / "pr-gate" / "action.yml"
FILES = {"pr-gate.yml": WORKFLOWS / "pr-gate.yml",
         "cross-org perf-gate.yml": REPO / "examples" / "cross-org" / "perf-gate.yml"}
MODES = ("source", "wheel", "installed", "overlay", "auto")
PR_GATE = re.compile(r"(^\./tritongate|/tritongate)/\.github/actions/pr-gate(@|$)")
# `run:` steps that run a compiler build's own code (its setup.py, its Triton, its interpreter)
BUILD_CODE = re.compile(r'(build\.sh|gate_steps\.sh)" (build|prescreen|prescreen-side|pair)\s*$')


def _stage_calls(job: dict) -> list[str]:
    return [str((s.get("with") or {}).get("stage", "gate")) for s in job.get("steps", [])
            if PR_GATE.search(s.get("uses", ""))]


class _AnyOutputs(dict):
    """The outputs of a step that ran: whatever is asked for is set (a baseline lookup's
    state is ok: the path on which the most steps run)."""

    def get(self, key: Any, default: Any = None) -> Any:
        return "ok" if key == "state" else "x"


def _action_walk(stage: str, mode: str) -> list[dict]:
    """The steps of the pr-gate action that run at ``stage`` in ``mode`` (on a pull_request,
    every earlier step having succeeded with all its outputs set)."""
    action = load_yaml(ACTION)
    inputs = {name: spec.get("default", "") for name, spec in action["inputs"].items()}
    inputs.update({"stage": stage, "compiler-mode": mode})
    steps: dict[str, dict] = {}
    ran = []
    ctx = {"github": github_context("pull_request", "pull_request.synchronize"), "inputs": inputs,
           "steps": steps, "runner": {"temp": "/tmp"}, "vars": {}}
    for step in action["runs"]["steps"]:
        runs = condition(step.get("if"), Evaluator(ctx, lambda: "success"))
        if "id" in step:
            steps[step["id"]] = ({"outcome": "success", "conclusion": "success", "outputs": _AnyOutputs()} if runs
                                 else {"outcome": "skipped", "conclusion": "skipped", "outputs": {}})
        if runs:
            ran.append(step)
    return ran


def _stages() -> list[str]:
    text = ACTION.read_text(encoding="utf-8")
    return sorted(set(re.findall(r"inputs\.stage == '([\w-]+)'", text)) | {"gate"})


def _writers() -> set[str]:
    """The ids of the steps the action's rows-changed, ir-diff and (pre-screen) verdict come from."""
    outputs = load_yaml(ACTION)["outputs"]
    ids = set()
    for name in ("rows-changed", "ir-diff"):
        ids |= set(re.findall(r"steps\.([\w-]+)\.outputs", outputs[name]["value"]))
    return ids


def _is_compiler_checkout(step: dict) -> bool:
    return step.get("uses", "").startswith("actions/checkout@") and \
        "compiler-repo" in str((step.get("with") or {}).get("repository", ""))


def _runs_build_code(step: dict) -> bool:
    return bool(BUILD_CODE.search(step.get("run", "").strip()))


@pytest.mark.parametrize("mode", MODES)
def test_no_stage_that_runs_a_builds_code_writes_rows_changed_or_the_ir_diff(mode: str) -> None:
    writers = _writers()
    assert writers, "the action's rows-changed comes from no step"
    for stage in _stages():
        ran = _action_walk(stage, mode)
        pr_code = [s["name"] for s in ran if _is_compiler_checkout(s) or _runs_build_code(s)]
        writing = [s["name"] for s in ran if s.get("id") in writers
                   or "tritongate-prescreen-" in str((s.get("with") or {}).get("name", ""))]
        assert not (pr_code and writing), f"stage {stage}, mode {mode}: {pr_code} and {writing} in one job"


@pytest.mark.parametrize("mode", MODES)
def test_the_judge_stage_checks_out_no_compiler_and_builds_nothing(mode: str) -> None:
    assert "judge" in _stages()
    ran = _action_walk("judge", mode)
    names = [s["name"] for s in ran]
    assert not [s["name"] for s in ran if s.get("uses", "").startswith("actions/checkout@")], names
    assert not [s["name"] for s in ran if _runs_build_code(s) or "build.sh" in s.get("run", "")], names
    assert any(s.get("id") == "judge" for s in ran), names
    # what it installs is PyPI wheels of pure data libraries, never the compiler or torch
    installs = "\n".join(s.get("run", "") for s in ran if "pip install" in s.get("run", ""))
    assert "--only-binary :all:" in installs and not re.search(r"\b(torch|triton)\b", installs), installs


@pytest.mark.parametrize("stage", ["prescreen-base", "prescreen-cand"])
@pytest.mark.parametrize("mode", MODES)
def test_a_half_builds_only_its_own_compiler_and_decides_nothing(stage: str, mode: str) -> None:
    ran = {s.get("id") for s in _action_walk(stage, mode)}
    side = stage.removeprefix("prescreen-")
    # one build per compiler: the PR half never builds the base; where the PR build is an
    # overlay of the base (modes overlay, auto), the base half makes it after its own half
    overlay = side == "base" and mode in ("overlay", "auto")
    assert ("base" in ran) is (side == "base") and ("cand" in ran) is (side == "cand"), (stage, mode, ran)
    assert ("cand-overlay" in ran) is overlay and ("side-cand" in ran) is overlay, (stage, mode, ran)
    assert "side" in ran and not ran & _writers() and "pair" not in ran and "record" not in ran


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("stage", ["gate", "prescreen-base", "prescreen-cand"])
def test_every_step_that_runs_a_builds_code_is_contained(stage: str, mode: str) -> None:
    """A build step and a half go through ci/gate_steps.sh (build, prescreen-side), whose
    `contained` runs them without the file commands; the baseline lookup too (in the PR half
    it runs on the PR build's interpreter). `pair` is the GPU job's measurement: its verdict is
    the gate's (docs/adopting.md, "What the gate does not defend against")."""
    for step in _action_walk(stage, mode):
        run = step.get("run", "")
        if "build-compiler/build.sh\" build" in run:
            raise AssertionError(f"{step['name']}: build.sh build runs outside ci/gate_steps.sh's wrapper")
        if step.get("id") in ("base", "cand", "cand-overlay"):
            assert run.strip().endswith('gate_steps.sh" build'), step["name"]
        if step.get("id") in ("side", "side-cand"):
            assert run.strip().endswith('gate_steps.sh" prescreen-side'), step["name"]
    script = (REPO / "ci" / "gate_steps.sh").read_text(encoding="utf-8")
    body = script[script.index("contained() {"):script.index("\n}\n", script.index("contained() {"))]
    for name in ("GITHUB_ENV", "GITHUB_PATH", "GITHUB_STEP_SUMMARY", "GITHUB_STATE", "GITHUB_TOKEN",
                 "ACTIONS_RUNTIME_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN"):
        assert f"-u {name} " in body, name
    assert 'HOME="$home" GITHUB_OUTPUT="$outfile"' in body and "::stop-commands::" in body
    for fn in ("build", "find_baseline", "prescreen_side"):
        start = script.index(f"\n{fn}() {{")
        assert "contained " in script[start:script.index("\n}\n", start)], fn


@pytest.mark.parametrize("label", FILES)
def test_rows_changed_and_the_zero_verdict_come_only_from_the_judge_job(label: str) -> None:
    jobs = load_yaml(FILES[label])["jobs"]
    sources = set()
    for job_id in ("gate", "result"):
        text = str(jobs[job_id])
        found = set(re.findall(r"needs\.([\w-]+)\.outputs\.(?:rows-changed|verdict|rows-total|key)", text))
        assert found, f"{label} {job_id}: reads no rows-changed"
        sources |= found
    assert sources == {"judge"}, f"{label}: rows-changed read from {sources}"
    judge = jobs["judge"]
    assert _stage_calls(judge) == ["judge"], f"{label}: the judge job calls pr-gate at {_stage_calls(judge)}"
    assert judge["runs-on"] == "ubuntu-latest", "the judge runs GitHub-hosted: a fresh machine, no PR leftovers"
    assert judge.get("permissions") in ({}, {"contents": "read"}), judge.get("permissions")
    for step in judge["steps"]:
        uses, with_ = step.get("uses", ""), step.get("with") or {}
        assert "run" not in step or not re.search(r"pip install|build\.sh|setup\.py", step["run"]), step
        if uses.startswith("actions/checkout@"):  # tritongate itself, at the workflow's own commit
            assert with_.get("repository") == "${{ job.workflow_repository }}", step
            assert with_.get("ref") == "${{ job.workflow_sha }}" and with_.get("persist-credentials") is False, step
        else:
            assert PR_GATE.search(uses) or "run" in step, f"{label} judge: {uses}"
    outputs = judge.get("outputs") or {}
    assert {"rows-changed", "rows-total", "key", "verdict"} <= set(outputs), outputs
    assert all("steps.judge." in v for v in outputs.values()), outputs


@pytest.mark.parametrize("label", FILES)
def test_the_side_jobs_build_one_compiler_each_and_hand_over_no_output(label: str) -> None:
    jobs = load_yaml(FILES[label])["jobs"]
    sides = {job_id: job for job_id, job in jobs.items()
             if any(stage.startswith("prescreen") for stage in _stage_calls(job))}
    assert sides, label
    for job_id, job in sides.items():
        assert "outputs" not in job, f"{label} {job_id}: a side's job outputs would reach the gate unjudged"
        matrix = job["strategy"]["matrix"]["side"]
        for mode in ("source", "auto", "wheel"):  # mode overlay may leave the PR half out: the base half makes it
            assert interpolate(matrix, Evaluator({"inputs": {"compiler-mode": mode}})) == ["base", "cand"], job_id
        assert _stage_calls(job) == ["prescreen-${{ matrix.side }}"], job_id
        assert "matrix.side" in job["concurrency"]["group"], "the two sides must not cancel each other"
        assert job["permissions"] == {"contents": "read"}, job_id
    assert jobs["judge"]["needs"] == ["opt-in", *sides], label
    assert "prescreen" not in str(jobs["gate"].get("needs")) and "prescreen" not in str(jobs["result"]["needs"])


@pytest.mark.parametrize("label", FILES)
def test_the_judge_runs_only_after_both_halves_and_under_their_condition(label: str) -> None:
    jobs = load_yaml(FILES[label])["jobs"]
    inputs = {"compiler-mode": "source", "prescreen": True, "full-run": False}
    for fixture in ("pull_request.synchronize", "pull_request.synchronize.fork"):
        for run_, full in (("true", "false"), ("true", "true"), ("false", "false")):
            for side_result in ("success", "failure", "skipped"):
                needs = {"opt-in": {"result": "success", "outputs": {"run": run_, "full": full}},
                         "prescreen": {"result": side_result, "outputs": {}}}
                ctx = {"github": github_context("pull_request", fixture), "vars": {}, "inputs": inputs,
                       "needs": needs}
                sides = condition(jobs["prescreen"]["if"], Evaluator(ctx, lambda: "success"))
                judged = condition(jobs["judge"]["if"], Evaluator(
                    ctx, lambda r=side_result: "success" if r == "success" else "failure"))
                assert judged is (sides and side_result == "success"), (label, fixture, run_, full, side_result)
