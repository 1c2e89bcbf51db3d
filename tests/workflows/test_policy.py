"""Security and convention rules for .github/ (DESIGN.md §7, reference/gha_conventions.md).

Structural checks of the parsed YAML: default-deny permissions, SHA-pinned actions, timeouts,
no pull_request_target, no persisted credentials, no secrets or write tokens on self-hosted
runners, no expressions inside scripts (they go through env:), the comment job on a
GitHub-hosted runner that never checks out PR code, and the composite action under the same
rules. Plus a syntax check of every script with `bash -n`.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
GITHUB = REPO / ".github"
WORKFLOW_FILES = sorted((GITHUB / "workflows").glob("*.yml"))
ACTION_FILES = sorted((GITHUB / "actions").glob("*/action.yml"))
EXPECTED_WORKFLOWS = {"pr-gate.yml", "pr-comment.yml", "nightly-baseline.yml", "deep-scan.yml", "tests.yml",
                      "perf-command.yml"}
GITHUB_HOSTED = re.compile(r"^(ubuntu|windows|macos)-[\w.-]+$")
PINNED = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+(/[^@\s]+)?@[0-9a-f]{40}$")
# merge_group: the queue runs the base branch plus PRs already approved for merging.
TRIGGERS_FOR_SELF_HOSTED = {"pull_request", "workflow_call", "workflow_dispatch", "schedule", "merge_group"}

# `${{ }}` inside a `run:` script is template injection waiting to happen; values reach
# scripts through `env:`. Exceptions, each with its reason: (file, job, step name) -> reason.
RUN_EXPRESSION_ALLOWLIST: dict[tuple[str, str, str], str] = {}

# Jobs that may hold a write permission, and which.
WRITE_PERMISSIONS = {
    ("pr-comment.yml", "comment"): {"pull-requests"},   # the sticky comment
    ("nightly-baseline.yml", "publish"): {"contents"},  # push to the baseline data branch
    ("perf-command.yml", "command"): {"pull-requests", "actions"},  # label the PR, re-run the gate
}


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def triggers(doc: dict) -> dict:
    value = doc.get("on", doc.get(True))  # PyYAML reads the bare key `on` as True
    if isinstance(value, str):
        return {value: None}
    if isinstance(value, list):
        return {name: None for name in value}
    return value or {}


def workflows() -> Iterator[tuple[str, dict]]:
    for path in WORKFLOW_FILES:
        yield path.name, load(path)


def jobs() -> Iterator[tuple[str, str, dict, dict]]:
    for name, doc in workflows():
        for job_id, job in doc["jobs"].items():
            yield name, job_id, job, doc


def steps() -> Iterator[tuple[str, str, dict]]:
    """(file, job id or 'action', step) over every workflow job and every composite action."""
    for name, job_id, job, _ in jobs():
        for step in job.get("steps", []):
            yield name, job_id, step
    for path in ACTION_FILES:
        for step in load(path)["runs"].get("steps", []):
            yield f"{path.parent.name}/action.yml", "action", step


def strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from strings(key)
            yield from strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from strings(item)


def self_hosted(job: dict) -> bool:
    """Anything but a literal GitHub-hosted label counts as self-hosted (expressions too)."""
    runs_on = job.get("runs-on")
    return not (isinstance(runs_on, str) and GITHUB_HOSTED.match(runs_on))


def test_the_expected_files_exist() -> None:
    assert {p.name for p in WORKFLOW_FILES} == EXPECTED_WORKFLOWS
    assert [p.parent.name for p in ACTION_FILES] == ["build-compiler", "opt-in", "post-comment", "pr-gate",
                                                     "record-baseline"]


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.name)
def test_permissions_default_deny(path: Path) -> None:
    doc = load(path)
    assert "permissions" in doc and doc["permissions"] == {}, "top level must be `permissions: {}`"
    for job_id, job in doc["jobs"].items():
        assert "permissions" in job, f"{job_id}: every job names its permissions"
        granted = job["permissions"] or {}
        assert isinstance(granted, dict), f"{job_id}: permissions as a map, never read-all/write-all"
        writes = {scope for scope, level in granted.items() if level == "write"}
        assert writes <= WRITE_PERMISSIONS.get((path.name, job_id), set()), f"{job_id}: unexpected write {writes}"


def test_write_permissions_are_where_expected() -> None:
    found = {(name, job_id): {s for s, lvl in (job.get("permissions") or {}).items() if lvl == "write"}
             for name, job_id, job, _ in jobs()}
    for key, scopes in WRITE_PERMISSIONS.items():
        assert found[key] == scopes, key


def test_every_action_is_local_or_pinned_by_sha_with_a_version_comment() -> None:
    for path in [*WORKFLOW_FILES, *ACTION_FILES]:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = re.match(r"^\s*(?:-\s+)?uses:\s*(\S+)(.*)$", line)
            if not m:
                continue
            ref, rest = m.groups()
            where = f"{path.name}:{number}"
            if ref.startswith("./"):
                continue
            assert PINNED.match(ref), f"{where}: {ref} is not pinned by a 40-hex commit"
            assert re.match(r"^\s+#\s*v\d+(\.\d+)*\s*$", rest), f"{where}: add the version as `# vX.Y.Z`"
    # and the parsed view agrees (no flow-style `uses` the line scan could miss)
    for name, _, step in steps():
        if "uses" in step:
            assert step["uses"].startswith("./") or PINNED.match(step["uses"]), (name, step["uses"])
    for name, job_id, job, _ in jobs():
        if "uses" in job:
            assert PINNED.match(job["uses"]), (name, job_id)


def test_every_job_has_a_timeout() -> None:
    for name, job_id, job, _ in jobs():
        minutes = job.get("timeout-minutes")
        assert isinstance(minutes, int) and 0 < minutes <= 360, f"{name}:{job_id} needs timeout-minutes (≤ 360)"


def test_no_pull_request_target() -> None:
    for path in WORKFLOW_FILES:
        assert "pull_request_target" not in triggers(load(path)), path.name
        assert "pull_request_target" not in path.read_text(encoding="utf-8"), path.name


def test_every_checkout_drops_its_credentials() -> None:
    checkouts = [(name, step) for name, _, step in steps() if step.get("uses", "").startswith("actions/checkout@")]
    assert checkouts
    for name, step in checkouts:
        assert (step.get("with") or {}).get("persist-credentials") is False, f"{name}: {step.get('name')}"


def test_self_hosted_jobs_hold_no_secret_and_no_write_token() -> None:
    seen = 0
    for name, job_id, job, doc in jobs():
        if not self_hosted(job):
            continue
        seen += 1
        text = "\n".join(strings(job))
        assert "secrets." not in text and "secrets:" not in text, f"{name}:{job_id} uses a secret"
        assert "github.token" not in text, f"{name}:{job_id} hands the token to a step"
        assert "write" not in (job.get("permissions") or {}).values(), f"{name}:{job_id}"
        assert set(triggers(doc)) <= TRIGGERS_FOR_SELF_HOSTED, f"{name}: self-hosted job under {set(triggers(doc))}"
    assert seen >= 4  # gate, nightly record, deep-scan baseline and scan


def test_no_expression_inside_a_script() -> None:
    used = set()
    for name, job_id, step in steps():
        script = step.get("run")
        if script is None:
            continue
        key = (name, job_id, step.get("name", ""))
        if "${{" in script:
            assert key in RUN_EXPRESSION_ALLOWLIST, f"{key}: pass values through env:, not ${{{{ }}}} in run:"
            used.add(key)
    assert used == set(RUN_EXPRESSION_ALLOWLIST), "stale allow-list entries"


def test_scripts_are_bash_and_parse(tmp_path: Path) -> None:
    for index, (name, job_id, step) in enumerate(steps()):
        if "run" not in step:
            continue
        if job_id == "action":
            assert step.get("shell") == "bash", f"{name}: composite run steps name their shell"
        script = tmp_path / f"{index}.sh"
        script.write_text(step["run"], encoding="utf-8")
        proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert proc.returncode == 0, f"{name}:{job_id}:{step.get('name')}: {proc.stderr}"
    proc = subprocess.run(["bash", "-n", str(GITHUB / "actions" / "build-compiler" / "build.sh")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_concurrency_everywhere() -> None:
    for name, job_id, job, doc in jobs():
        assert "concurrency" in job or "concurrency" in doc, f"{name}:{job_id} needs a concurrency group"


def test_composite_actions_take_inputs_through_env_only() -> None:
    action = load(GITHUB / "actions" / "build-compiler" / "action.yml")
    assert set(action["inputs"]) == {"repo", "ref", "mode", "wheel", "cache-root", "python", "patch", "patch-from",
                                     "base-commit", "overlay-base", "flagtree-backend", "trusted"}
    assert set(action["outputs"]) == {"python", "commit", "built", "patch-sha256", "wheel"}
    for path in ACTION_FILES:
        for step in load(path)["runs"]["steps"]:
            if "run" in step:
                assert "${{" not in step["run"] and "inputs." not in step["run"], f"{path.parent.name}: {step['name']}"
                assert all("${{" not in key for key in step.get("env", {}))


def test_composite_actions_load_nothing_from_the_workspace() -> None:
    """A composite action called from another organisation has no tritongate checkout: its
    scripts come from the action's own folder, its nested actions are pinned remote ones."""
    for path in ACTION_FILES:
        for step in load(path)["runs"]["steps"]:
            assert not step.get("uses", "").startswith("./"), f"{path.parent.name}: {step.get('name')}"
            script = step.get("run", "")
            for ref in re.findall(r"(\S*ci/[a-z_]+\.(?:py|sh))", script):
                assert ref.startswith('"$GITHUB_ACTION_PATH/'), f"{path.parent.name}: {ref}"


def test_pr_gate_is_reusable_gated_and_prescreened() -> None:
    doc = load(GITHUB / "workflows" / "pr-gate.yml")
    on = triggers(doc)
    assert set(on) == {"pull_request", "workflow_call", "merge_group"}
    # a label starts no gate run: perf-command.yml re-runs one, for the perf labels only
    assert "labeled" not in on["pull_request"]["types"]
    inputs = on["workflow_call"]["inputs"]
    for name in ("runner-labels", "prescreen-runner-labels", "suite", "base-ref", "compiler-repo", "compiler-mode",
                 "ops", "max-age-days", "runner-class", "tritongate-ref", "full-run", "require-baseline"):
        assert name in inputs, name
    assert "tritongate-repo" not in inputs, "the workflow knows its own repository (job.workflow_repository)"
    jobs_ = doc["jobs"]
    pre, judge, gate, result = jobs_["prescreen"], jobs_["judge"], jobs_["gate"], jobs_["result"]
    for job in (pre, judge, gate):
        assert "TRITONGATE_FORK_APPROVAL" in job["if"] and "head.repo.full_name" in job["if"]
        assert job["concurrency"]["cancel-in-progress"] is True
        assert "runner-class" in job["concurrency"]["group"] and "pull_request.number" in job["concurrency"]["group"]
        assert job["permissions"] == {"contents": "read"}
        checkout = job["steps"][0]
        assert checkout["with"]["ref"] == "${{ job.workflow_sha }}"
        assert checkout["with"]["repository"] == "${{ job.workflow_repository }}"
        action = next(s for s in job["steps"] if s.get("uses") == "./tritongate/.github/actions/pr-gate")
        assert action["with"]["stage"] == {id(pre): "prescreen-${{ matrix.side }}", id(judge): "judge",
                                           id(gate): "gate"}[id(job)]
    assert GITHUB_HOSTED.match(pre["runs-on"].split("'")[1].strip('["]')) or "ubuntu-latest" in pre["runs-on"]
    assert judge["runs-on"] == "ubuntu-latest"  # no build, no PR code: a fresh GitHub-hosted machine
    assert pre["needs"] == "opt-in" and judge["needs"] == ["opt-in", "prescreen"] and gate["needs"] == ["opt-in", "judge"]
    assert "rows-changed != '0'" in gate["if"] and "opt-in.outputs.full" in gate["if"] and "inputs.full-run" in gate["if"]
    assert "needs.opt-in.outputs.run == 'true'" in gate["if"] and "needs.opt-in.outputs.run == 'true'" in pre["if"]
    changed = next(s for s in gate["steps"] if s.get("id") == "changed")
    assert changed["with"]["name"] == "tritongate-prescreen-${{ needs.judge.outputs.key }}"
    assert result["needs"] == ["opt-in", "judge", "gate"] and result["if"] == "always()"
    assert result["runs-on"] == "ubuntu-latest" and result["permissions"] == {}


def test_the_gate_action_uploads_keyed_artifacts_and_ends_with_the_gate_result() -> None:
    action = load(GITHUB / "actions" / "pr-gate" / "action.yml")
    steps_ = action["runs"]["steps"]
    uploads = [s for s in steps_ if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert {s["with"]["name"].split("${{")[0] for s in uploads} == {
        "tritongate-verdict-", "tritongate-prescreen-", "tritongate-runs-", "tritongate-half-", "tritongate-wheel-"}
    assert all("steps.refs.outputs.key" in s["with"]["name"] for s in uploads)
    assert steps_[-1]["name"] == "Gate result" and steps_[-1]["if"].startswith("always()")
    assert next(s for s in steps_ if s.get("id") == "pair")["run"].endswith("gate_steps.sh\" pair")


def test_comment_job_runs_default_branch_code_on_a_github_hosted_runner() -> None:
    doc = load(GITHUB / "workflows" / "pr-comment.yml")
    gate = load(GITHUB / "workflows" / "pr-gate.yml")
    action = load(GITHUB / "actions" / "post-comment" / "action.yml")
    on = triggers(doc)
    assert on["workflow_run"]["workflows"] == [gate["name"]]
    assert on["workflow_run"]["types"] == ["completed"]
    job = doc["jobs"]["comment"]
    assert GITHUB_HOSTED.match(job["runs-on"]) and job["runs-on"].startswith("ubuntu-")
    assert job["permissions"] == {"contents": "read", "actions": "read", "pull-requests": "write"}
    assert "workflow_run.event == 'pull_request'" in job["if"]
    checkout = job["steps"][0]
    assert checkout["with"]["ref"] == "${{ job.workflow_sha }}", "the default branch's tritongate, never the PR"
    post = next(s for s in job["steps"] if s.get("uses") == "./tritongate/.github/actions/post-comment")
    assert post["with"] == {"run-id": "${{ github.event.workflow_run.id }}",
                            "head-sha": "${{ github.event.workflow_run.head_sha }}",
                            "event-pr": "${{ github.event.workflow_run.pull_requests[0].number }}",
                            # a fork PR is looked up from these; the PR names them, so they reach the
                            # script only through env: and are checked there (never in a run: line)
                            "head-repo": "${{ github.event.workflow_run.head_repository.full_name }}",
                            "head-branch": "${{ github.event.workflow_run.head_branch }}"}
    text = "\n".join(strings(job)) + "\n".join(strings(action))
    runs = "\n".join(s.get("run", "") for s in [*job["steps"], *action["runs"]["steps"]])
    for needle in ("head_branch", "head_repository", "inputs.head-branch", "inputs.head-repo"):
        assert needle not in runs, needle
    for needle in ("pull_request.head", "-e ", "requirements", "install ."):
        assert needle not in text, needle
    installs = [s["run"] for s in action["runs"]["steps"] if "pip install" in s.get("run", "")]
    assert len(installs) == 1 and "--only-binary :all:" in installs[0]
    wanted = set(re.findall(r'"([a-z]+)[<>=]', installs[0]))
    assert wanted == {"pydantic", "rich", "numpy", "scipy", "pyyaml"}, "the renderer needs these and nothing else"
    download = next(s for s in action["runs"]["steps"] if s.get("uses", "").startswith("actions/download-artifact@"))
    assert download["with"]["pattern"] == "tritongate-verdict-*" and download["with"]["run-id"] == "${{ inputs.run-id }}"
    assert str(download["with"]["path"]).startswith("${{ runner.temp }}"), "untrusted data stays out of the workspace"
    posting = next(s for s in action["runs"]["steps"] if "post_comments.sh" in s.get("run", ""))
    assert posting["env"]["HEAD_SHA"] == "${{ inputs.head-sha }}"
    assert posting["env"]["RUN_ID"] == "${{ inputs.run-id }}"  # the only run page the comment links
    assert posting["env"]["BOT_LOGIN"] == "${{ inputs.bot-login }}"


def test_the_comment_renderer_imports_no_compiler_and_no_pandas() -> None:
    """What pr-comment.yml installs is enough: rendering a verdict imports none of the rest."""
    code = ("import sys, json, pathlib, tempfile\n"
            f"sys.path.insert(0, {str(REPO)!r})\n"
            "from tritongate.github.comment import read_verdict\n"
            "d = pathlib.Path(tempfile.mkdtemp())\n"
            "(d / 'verdict.json').write_text(json.dumps({'schema_version': 3, 'passed': True, 'exit_code': 0,\n"
            "    'headline': 'h', 'base': {}, 'candidate': {}, 'rows': []}))\n"
            "read_verdict(d)\n"
            "heavy = sorted({n.split('.')[0] for n in sys.modules} & {'torch', 'triton', 'pandas',\n"
            "    'matplotlib', 'ruptures', 'requests'})\n"
            "assert not heavy, heavy\n")
    proc = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_nightly_writes_only_from_main_and_not_from_the_gpu() -> None:
    doc = load(GITHUB / "workflows" / "nightly-baseline.yml")
    assert set(triggers(doc)) == {"schedule", "workflow_dispatch", "workflow_call"}
    assert triggers(doc)["workflow_call"]["inputs"]["runner-class"]["required"] is True
    record, publish = doc["jobs"]["record"], doc["jobs"]["publish"]
    for job in (record, publish):
        assert "github.event_name == 'schedule'" in job["if"]
        assert "github.ref == format('refs/heads/{0}', github.event.repository.default_branch)" in job["if"]
    assert self_hosted(record) and record["permissions"] == {"contents": "read"}
    assert publish["runs-on"] == "ubuntu-latest" and publish["permissions"] == {"contents": "write"}
    stages = {job_id: next(s for s in job["steps"] if s.get("uses") == "./tritongate/.github/actions/record-baseline")
              ["with"]["stage"] for job_id, job in (("record", record), ("publish", publish))}
    assert stages == {"record": "record", "publish": "publish"}
    action = load(GITHUB / "actions" / "record-baseline" / "action.yml")
    scripts = "\n".join(s.get("run", "") for s in action["runs"]["steps"])
    assert "verify_entry.py" in scripts and "store.sh\" push" in scripts
    steps_text = (REPO / "ci" / "nightly_steps.sh").read_text()
    assert "record_baseline.py" in steps_text and "--publish" in steps_text
    assert "--time-identical" in steps_text and "aa_count.py" in steps_text


def test_no_token_on_a_command_line() -> None:
    """git's argv is readable by every process on the runner: tokens go through GIT_CONFIG_* env."""
    for path in [*WORKFLOW_FILES, *ACTION_FILES, *sorted((REPO / "ci").glob("*.sh"))]:
        text = path.read_text(encoding="utf-8")
        assert "extraheader=" not in text and "git -c " not in text, path


def test_deep_scan_shards_and_merges() -> None:
    doc = load(GITHUB / "workflows" / "deep-scan.yml")
    inputs = triggers(doc)["workflow_dispatch"]["inputs"]
    for name in ("ops", "suite", "shape-file", "dtypes", "base-ref", "cand-ref", "shards"):
        assert name in inputs, name
    assert inputs["shards"]["default"] == 4
    scan = doc["jobs"]["scan"]
    assert scan["strategy"]["matrix"]["shard"] == "${{ fromJSON(needs.plan.outputs.shards) }}"
    assert scan["strategy"]["fail-fast"] is False
    pair = next(s for s in scan["steps"] if s.get("id") == "pair")
    assert '--shard "$SHARD/$SHARDS"' in pair["run"]
    merge = doc["jobs"]["merge"]
    assert set(merge["needs"]) >= {"scan"} and "tritongate merge" in "\n".join(s.get("run", "") for s in merge["steps"])


def test_tests_workflow_runs_the_readme_command() -> None:
    doc = load(GITHUB / "workflows" / "tests.yml")
    assert set(triggers(doc)) == {"push", "pull_request"}
    job = doc["jobs"]["test"]
    assert job["runs-on"] == "ubuntu-latest" and job["permissions"] == {"contents": "read"}
    assert any(s.get("run") == "bash scripts/dev.sh test" for s in job["steps"])


def test_the_build_action_installs_pyprojects_runtime_dependencies() -> None:
    """A build venv runs tritongate from its checkout: it needs every dependency pyproject.toml
    declares (torch and the compiler come from the build itself)."""
    import tomllib

    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    script = (GITHUB / "actions" / "build-compiler" / "build.sh").read_text()
    block = re.search(r"^TG_DEPS=\((.*?)\)$", script, re.S | re.M)
    assert block, "TG_DEPS not found in build.sh"
    installed = re.findall(r'"([^"]+)"', block.group(1))
    assert sorted(installed) == sorted(d for d in declared if not d.startswith(("torch", "triton")))


def test_flagtree_backend_reaches_every_compiler_build_step() -> None:
    """FlagTree builds per backend (FLAGTREE_BACKEND); it also keys the build cache, so the
    nightly's and the PR's builds must get it the same way."""
    for name in ("build-compiler", "pr-gate", "record-baseline"):
        action = load(GITHUB / "actions" / name / "action.yml")
        builds = [s for s in action["runs"]["steps"] if "build.sh" in s.get("run", "")]
        assert builds and "flagtree-backend" in action["inputs"], name
        for step in builds:
            assert step["env"]["FLAGTREE_BACKEND"] == "${{ inputs.flagtree-backend }}", (name, step["name"])


def test_the_deep_scan_tells_no_store_from_an_unreadable_one(tmp_path: Path) -> None:
    """The GPU job's store checkout used to continue on any error, so an unreadable store read
    as "none yet" and the scan re-recorded. Now the plan job asks git, with the token: branch
    present, absent (exit 2: recorded), or the job fails naming the cause."""
    import os
    import subprocess

    doc = load(GITHUB / "workflows" / "deep-scan.yml")
    step = next(s for s in doc["jobs"]["plan"]["steps"] if s.get("id") == "store")
    checkout = next(s for s in doc["jobs"]["baseline"]["steps"] if s.get("name") == "Check out the baseline store")
    assert "continue-on-error" not in checkout and checkout["if"] == "needs.plan.outputs.store == 'present'"
    assert doc["jobs"]["baseline"]["needs"] == "plan"
    origin = tmp_path / "acme" / "triton.git"
    subprocess.run(["git", "init", "-q", "--bare", str(origin)], check=True)
    script = tmp_path / "store.sh"
    script.write_text(step["run"])
    seed = tmp_path / "seed"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q", "-b", "tritongate-baselines", str(seed)], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "store"], cwd=seed, check=True)
    with_store = tmp_path / "with-store.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(seed), str(with_store)], check=True)
    for url, code, said in ((origin.as_uri(), 0, "store=absent"), (with_store.as_uri(), 0, "store=present"),
                            ((tmp_path / "nope.git").as_uri(), 1, "")):
        out = tmp_path / "out"
        out.write_text("")
        env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "TOKEN": "t", "URL": url, "GITHUB_OUTPUT": str(out)}
        proc = subprocess.run(["bash", "-e", str(script)], env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == code, proc.stdout + proc.stderr
        assert said in out.read_text() and (code == 0 or "cannot be read" in proc.stdout)
