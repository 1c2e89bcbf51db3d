"""The gate job of pr-gate.yml and its composite action .github/actions/pr-gate, replayed
step by step on the CPU (tests/workflows/replay.py) with documented event payloads.

The baseline store is a real data branch in a bare repository under a local "GitHub"
(GITHUB_SERVER_URL is a file:// folder), read by ci/store.sh as on GitHub. Compiler mode
`installed` (the runner's interpreter on both sides); remote actions are skipped and the
test checks what their inputs name.

Scenarios: a published baseline (state ok, the gate passes); no data branch yet (the job
records one with the base build; the PR build does twice the work, so the gate fails); a
store that cannot be read (the job fails; it does not pass for "no baseline"); the same with
require-baseline; and the base commit of a pull_request taken from the merge commit's
first parent, not from the payload's base.sha.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.workflows.payloads import github_context, payload
from tests.workflows.replay import JobRun, load_yaml
from tests.workflows.test_pr_gate_steps import REPO, SHA_HEAD, SHA_MERGE, WORKFLOWS, call_inputs, clean_env

PR_GATE_DIR = REPO / ".github" / "actions" / "pr-gate"
PR_GATE = "./tritongate/.github/actions/pr-gate"
BRANCH = "tritongate-baselines"
TG_SHA = "4" * 40


def _git(*args: str, cwd: Path | None = None) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def server_with_store(tmp: Path, store: Path | None, *, repo: bool = True) -> Path:
    """A local "GitHub": acme/triton.git, with the data branch holding ``store`` (when given)."""
    server = tmp / "server"
    origin = server / "acme" / "triton.git"
    if not repo:
        server.mkdir(parents=True)
        return server
    _git("init", "-q", "--bare", str(origin))
    if store is not None:
        seed = tmp / "seed"
        _git("init", "-q", "-b", BRANCH, str(seed))
        for item in store.iterdir():
            subprocess.run(["cp", "-R", str(item), str(seed)], check=True)
        _git("add", "-A", cwd=seed)
        _git("commit", "-q", "-m", "seed", cwd=seed)
        _git("push", "-q", str(origin), f"HEAD:refs/heads/{BRANCH}", cwd=seed)
    return server


def publish_store(tmp: Path, compiler_repo: str = "acme/triton") -> Path:
    """A store with one nightly's entry, built from ``compiler_repo`` (the gate job's PRs are
    acme/triton's)."""
    store = tmp / "store"
    proc = subprocess.run([sys.executable, str(REPO / "ci" / "record_baseline.py"), "--suite", "smoke",
                           "--backend", "cpu", "--out", str(tmp / "record"), "--publish", str(store),
                           "--runner-class", "cpu-ci", "--compiler-repo", compiler_repo],
                          capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "TRITONGATE_"))})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return store


@dataclass
class Outcome:
    run: JobRun
    status: str
    summary: str
    uploads: dict[str, dict]
    action: dict  # the pr-gate step's outputs

    @property
    def steps(self) -> dict:
        """The steps of the pr-gate action (the job's own steps are checkout, pin check, gate)."""
        return self.run.inner_steps


def run_gate_job(tmp: Path, server: Path, *, cand_python: str | None = None, **inputs: object) -> Outcome:
    doc = load_yaml(WORKFLOWS / "pr-gate.yml")
    job = doc["jobs"]["gate"]
    workspace, runner_temp = tmp / "ws", tmp / "runner" / "temp"
    workspace.mkdir()
    runner_temp.mkdir(parents=True)
    (workspace / "tritongate").symlink_to(REPO, target_is_directory=True)
    (workspace / "baseline-store").mkdir()  # a stale store from an earlier job: the action removes it
    (workspace / "baseline-store" / "stale").write_text("from an earlier job\n")
    values = {"runner-labels": '["self-hosted", "linux", "cpu-test"]', "runner-class": "cpu-ci", "suite": "smoke",
              "ops": "add", "backend": "cpu", "compiler-mode": "installed", "python": sys.executable,
              "tritongate-ref": TG_SHA, **inputs}
    github = github_context("pull_request", "pull_request.synchronize", server_url=server.as_uri(),
                            token="ghs_test", action_path=str(PR_GATE_DIR))
    contexts = {"inputs": call_inputs(doc, **values), "vars": {}, "needs": {},
                "runner": {"temp": str(runner_temp), "os": "Linux"}, "github": github,
                "job": {"workflow_repository": "acme/tritongate", "workflow_sha": TG_SHA}}
    event_path = tmp / "event.json"
    event_path.write_text(json.dumps(github["event"]))
    uploads: dict[str, dict] = {}
    action: dict = {}

    def uses(run: JobRun, step: dict, with_values: dict) -> tuple[str, dict] | None:
        ref = step["uses"]
        if ref == PR_GATE:
            status, outputs = run.run_composite(PR_GATE_DIR, with_values, run.current_env)
            action.update(outputs)
            return status, outputs
        if ref.startswith("actions/checkout@"):
            assert with_values.get("path") == "tritongate", with_values  # the only checkout in mode installed
            assert with_values["ref"] == TG_SHA and with_values["repository"] == "acme/tritongate"
            return None
        if ref.startswith("actions/upload-artifact@"):
            uploads[with_values["name"]] = with_values
            return None
        raise AssertionError(f"unexpected action {ref}")

    env = {**clean_env(tmp, workspace, runner_temp), "GITHUB_SERVER_URL": server.as_uri(),
           "GITHUB_EVENT_PATH": str(event_path)}
    run = JobRun(workspace, runner_temp, contexts, env, uses)
    if cand_python:  # the PR build: here, an interpreter doing twice the work per launch
        run.step_env["cand"] = {"TG_PYTHON": cand_python}
    status = run.run_job(job)
    return Outcome(run, status, "".join(run.summaries), uploads, action)


def _check_common(out: Outcome) -> Path:
    steps, log = out.steps, out.run.log()
    assert steps["base"]["outputs"]["python"] == sys.executable, log
    assert steps["base"]["outputs"]["commit"] == "", log  # installed mode: no commit is claimed
    assert steps["refs"]["outputs"]["key"] == "cpu-ci-smoke", log
    verdict_dir = Path(out.action["verdict-dir"])
    assert json.loads((verdict_dir / "pr.json").read_text()) == {"pr": 42, "head_sha": SHA_HEAD, "key": "cpu-ci-smoke"}
    # one artifact per runner class and suite: two callers' classes never collide
    assert set(out.uploads) == {"tritongate-verdict-cpu-ci-smoke", "tritongate-runs-gate-cpu-ci-smoke"}, log
    assert Path(out.uploads["tritongate-verdict-cpu-ci-smoke"]["path"]) == verdict_dir
    assert (Path(out.uploads["tritongate-runs-gate-cpu-ci-smoke"]["path"]) / "baseline-state.json").is_file()
    return verdict_dir


@pytest.mark.slow
def test_gate_job_with_a_published_baseline_passes(tmp_path: Path) -> None:
    out = run_gate_job(tmp_path, server_with_store(tmp_path, publish_store(tmp_path)))
    log = out.run.log()
    assert out.status == "success", log
    assert out.steps["store"]["outputs"]["store"] == "present", log
    assert not (out.run.workspace / "baseline-store" / "stale").exists(), log
    assert out.steps["baseline"]["outputs"]["state"] == "ok", log
    assert out.steps["record"]["outcome"] == "skipped", log
    assert out.action["exit-code"] == "0", log
    verdict = json.loads((_check_common(out) / "verdict.json").read_text())
    assert verdict["passed"] is True and verdict["counts"].get("REGRESSED", 0) == 0


@pytest.mark.slow
def test_gate_job_without_a_data_branch_records_a_baseline_and_fails_on_a_regression(tmp_path: Path) -> None:
    slower = tmp_path / "slower-python"
    slower.write_text(f'#!/bin/sh\nTRITONGATE_PLANTED_WORK=8 exec "{sys.executable}" "$@"\n')
    slower.chmod(0o755)
    out = run_gate_job(tmp_path, server_with_store(tmp_path, None), cand_python=str(slower))
    log = out.run.log()
    assert out.status == "failure", log
    assert out.steps["store"]["outputs"]["store"] == "absent", log
    assert out.steps["baseline"]["outputs"]["state"] == "missing", log
    assert out.steps["record"]["outcome"] == "success", log
    assert out.action["exit-code"] == "1", log
    assert out.steps["cand"]["outputs"]["python"] == str(slower), log
    verdict = json.loads((_check_common(out) / "verdict.json").read_text())
    assert verdict["passed"] is False and verdict["counts"]["REGRESSED"] == 2, verdict["counts"]


@pytest.mark.slow
def test_another_repositorys_baseline_is_not_this_prs(tmp_path: Path) -> None:
    # the store holds a FlagTree nightly under the same runner class and suite: an acme/triton PR records its own
    out = run_gate_job(tmp_path, server_with_store(tmp_path, publish_store(tmp_path, "git@github.com:flagos-ai/FlagTree.git")))
    log = out.run.log()
    assert out.status == "success", log
    assert out.steps["baseline"]["outputs"]["state"] == "missing", log
    reason = out.steps["baseline"]["outputs"]["reason"]
    assert reason.startswith("no smoke baseline for acme/triton on runner class cpu-ci (cpu) in "), reason
    assert "are for flagos-ai/FlagTree (1)" in reason or "is for flagos-ai/FlagTree (1)" in reason, reason
    assert out.steps["record"]["outcome"] == "success", log
    verdict_md = (_check_common(out) / "verdict.md").read_text()
    assert "Baseline missing: no smoke baseline for acme/triton on runner class cpu-ci" in verdict_md


def test_a_store_that_cannot_be_read_fails_the_job_instead_of_re_recording(tmp_path: Path) -> None:
    out = run_gate_job(tmp_path, server_with_store(tmp_path, None, repo=False))
    log = out.run.log()
    assert out.status == "failure", log
    assert out.steps["store"]["outcome"] == "failure" and "cannot read acme/triton" in log, log
    assert "record" not in out.steps or out.steps["record"]["outcome"] == "skipped", log


def test_require_baseline_refuses_to_record_in_the_pr_job(tmp_path: Path) -> None:
    out = run_gate_job(tmp_path, server_with_store(tmp_path, None), **{"require-baseline": True})
    log = out.run.log()
    assert out.status == "failure", log
    assert out.steps["record"]["outcome"] == "failure" and "require-baseline is true" in log, log
    assert "pair" not in out.steps or out.steps["pair"]["outcome"] == "skipped", log


def test_a_mismatching_tritongate_ref_input_fails_first(tmp_path: Path) -> None:
    out = run_gate_job(tmp_path, server_with_store(tmp_path, None), **{"tritongate-ref": "9" * 40})
    assert out.status == "failure"
    assert out.run.records[1].name == "Check the pinned tritongate-ref" and out.run.records[1].outcome == "failure"
    assert "refs" not in out.steps, out.run.log()


# -- base vs candidate ------------------------------------------------------------------------------
def _merge_repo(tmp: Path) -> tuple[Path, str, str, str]:
    """A repository whose HEAD is a PR merge commit built on a main that moved on: the payload's
    base.sha is main's old tip, the merge commit's first parent is its new one."""
    repo = tmp / "compiler"
    _git("init", "-q", "-b", "main", str(repo))
    (repo / "a").write_text("1\n")
    _git("add", "a", cwd=repo)
    _git("commit", "-q", "-m", "old main", cwd=repo)
    old_main = _git("rev-parse", "HEAD", cwd=repo).strip()
    _git("checkout", "-q", "-b", "pr", cwd=repo)
    (repo / "b").write_text("pr\n")
    _git("add", "b", cwd=repo)
    _git("commit", "-q", "-m", "the PR", cwd=repo)
    _git("checkout", "-q", "main", cwd=repo)
    (repo / "c").write_text("someone else\n")
    _git("add", "c", cwd=repo)
    _git("commit", "-q", "-m", "another PR merged meanwhile", cwd=repo)
    new_main = _git("rev-parse", "HEAD", cwd=repo).strip()
    _git("merge", "-q", "--no-ff", "-m", "merge", "pr", cwd=repo)
    merge = _git("rev-parse", "HEAD", cwd=repo).strip()
    return repo, old_main, new_main, merge


def _resolve(tmp: Path, event_name: str, event: dict, sha: str, merge_checkout: Path | None = None,
             base_ref: str = "") -> subprocess.CompletedProcess:
    """The action's "Resolve the base and candidate commits" step, run as the runner runs it."""
    step = next(s for s in load_yaml(PR_GATE_DIR / "action.yml")["runs"]["steps"] if s.get("id") == "refs")
    ws = tmp / "ws-resolve"
    ws.mkdir()
    if merge_checkout is not None:
        subprocess.run(["cp", "-R", str(merge_checkout), str(ws / ".tritongate-merge")], check=True)
    (tmp / "event.json").write_text(json.dumps(event))
    (tmp / "out").write_text("")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp), "GITHUB_ACTION_PATH": str(PR_GATE_DIR),
           "GITHUB_EVENT_PATH": str(tmp / "event.json"), "GITHUB_OUTPUT": str(tmp / "out"),
           "TG_MODE": "source", "TG_BASE_REF": base_ref, "TG_CAND_REF": "", "TG_RUNNER_CLASS": "acme-h200",
           "TG_SUITE": "pr", "TG_SHA": sha, "TG_EVENT": event_name}
    (tmp / "step.sh").write_text(step["run"])
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(tmp / "step.sh")], cwd=ws,
                          env=env, capture_output=True, text=True, timeout=60)


def _outputs(tmp: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in (tmp / "out").read_text().splitlines())


def test_the_base_is_the_merge_commits_first_parent_not_the_payloads_base(tmp_path: Path) -> None:
    repo, old_main, new_main, merge = _merge_repo(tmp_path)
    event = payload("pull_request.synchronize")
    event["pull_request"]["base"]["sha"] = old_main  # what GitHub sends: the base when the PR was last synced
    proc = _resolve(tmp_path, "pull_request", event, merge, merge_checkout=repo)
    assert proc.returncode == 0, proc.stderr
    out = _outputs(tmp_path)
    assert out["base"] == new_main != old_main and out["cand"] == merge, out
    assert out["key"] == "acme-h200-pr"


def test_a_merge_checkout_of_another_commit_is_refused(tmp_path: Path) -> None:
    repo, _, _, merge = _merge_repo(tmp_path)
    proc = _resolve(tmp_path, "pull_request", payload("pull_request.synchronize"), SHA_MERGE, merge_checkout=repo)
    assert proc.returncode == 2 and "not the event's merge commit" in proc.stderr


def test_merge_group_uses_its_documented_base_sha(tmp_path: Path) -> None:
    event = payload("merge_group.checks_requested")
    proc = _resolve(tmp_path, "merge_group", event, event["merge_group"]["head_sha"])
    assert proc.returncode == 0, proc.stderr
    out = _outputs(tmp_path)
    assert out["base"] == event["merge_group"]["base_sha"] and out["cand"] == event["merge_group"]["head_sha"]


@pytest.mark.parametrize("event_name, fixture", [("workflow_dispatch", "workflow_dispatch"),
                                                 ("schedule", "schedule")])
def test_events_without_a_base_need_the_base_ref_input(tmp_path: Path, event_name: str, fixture: str) -> None:
    proc = _resolve(tmp_path, event_name, payload(fixture), "5" * 40)
    assert proc.returncode == 2 and "pass the base-ref input" in proc.stderr
    again = tmp_path / "again"
    again.mkdir()
    ok = _resolve(again, event_name, payload(fixture), "5" * 40, base_ref="main")
    assert ok.returncode == 0 and "base=main" in ok.stdout


@pytest.mark.slow
def test_the_compiler_repo_input_picks_that_repositorys_baseline(tmp_path: Path) -> None:
    # the same FlagTree entry is this PR's baseline once the job names FlagTree as its compiler
    store = publish_store(tmp_path, "git@github.com:flagos-ai/FlagTree.git")
    out = run_gate_job(tmp_path, server_with_store(tmp_path, store), **{"compiler-repo": "flagos-ai/FlagTree"})
    log = out.run.log()
    assert out.steps["baseline"]["outputs"]["state"] == "ok", log
    assert "record" not in out.steps or out.steps["record"]["outcome"] == "skipped", log
