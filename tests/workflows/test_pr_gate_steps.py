"""The PR gate job of .github/workflows/pr-gate.yml, run step by step on the CPU.

The `run:` scripts are taken from the YAML as they are (never copied here) and executed in
order with bash, the way the runner does: `shell: bash` (`bash --noprofile --norc -eo
pipefail`), the job's and the step's `env:` with their `${{ }}` expressions evaluated by the
small evaluator below, `$GITHUB_OUTPUT` lines fed into later `steps.<id>.outputs`, one
`$GITHUB_STEP_SUMMARY` file per step, `if:` conditions with the runner's status rules. The
local composite action (build-compiler, mode installed) runs for real, through the same
machinery; only remote actions (checkout, upload-artifact) are skipped, and the test says
which ones and checks that what they would have uploaded exists.

Scenario "published": a cpu record of the smoke suite (`--ops add`) is published into the
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
import math
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from tests.workflows.payloads import payload

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = REPO / ".github" / "workflows"
ACTION_DIR = REPO / ".github" / "actions" / "build-compiler"
BUILD_ACTION = "./tritongate/.github/actions/build-compiler"
SHA_HEAD = "1" * 40
SHA_MERGE = "2" * 40
SHA_BASE = "3" * 40


def load_yaml(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def triggers(doc: dict) -> dict:
    """`on:` (PyYAML reads the bare key `on` as the boolean True)."""
    value = doc.get("on", doc.get(True))
    if isinstance(value, str):
        return {value: None}
    if isinstance(value, list):
        return {name: None for name in value}
    return value or {}


# -- a GitHub Actions expression evaluator, for the forms the workflows use -----------------------
_TOKEN = re.compile(r"""
    \s*(?:
      (?P<str>'(?:[^']|'')*')
    | (?P<num>-?\d+(?:\.\d+)?)
    | (?P<op>==|!=|<=|>=|&&|\|\||[!<>()\[\],.])
    | (?P<ident>[A-Za-z_][A-Za-z0-9_-]*)
    )""", re.VERBOSE)


def _tokens(text: str) -> list[tuple[str, Any]]:
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ValueError(f"cannot parse expression at {text[pos:]!r}")
        pos = m.end()
        kind = m.lastgroup
        value = m.group(kind)
        if kind == "str":
            value = value[1:-1].replace("''", "'")
        elif kind == "num":
            value = float(value)
        out.append((kind, value))
    return out


def truthy(value: Any) -> bool:
    """Falsy: null, false, 0, NaN and the empty string; everything else (objects too) is truthy."""
    if isinstance(value, (dict, list)):
        return True
    if isinstance(value, float) and math.isnan(value):
        return False
    return value not in (None, False, 0, "")


def _number(value: Any) -> float:
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip()) if value.strip() else 0.0
        except ValueError:
            return math.nan
    return math.nan


def loose_equal(a: Any, b: Any) -> bool:
    """GitHub's `==`: strings compare case-insensitively, objects by identity, and values of
    different types are compared as numbers (null and '' are 0, a non-numeric string NaN)."""
    if isinstance(a, str) and isinstance(b, str):
        return a.casefold() == b.casefold()
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        return a is b
    if a is None and b is None:
        return True
    return _number(a) == _number(b)


def to_string(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


class Evaluator:
    """Recursive descent over: literals, context paths (a.b-c[0]), ==, !=, !, &&, ||,
    parentheses and the functions contains, startsWith, endsWith, format, fromJSON, toJSON,
    success, failure, always, cancelled. `||` and `&&` return operands, as GitHub's do."""

    def __init__(self, contexts: dict, status: Callable[[], str] = lambda: "success") -> None:
        self.contexts = contexts
        self.status = status

    def evaluate(self, text: str) -> Any:
        self.toks, self.i = _tokens(text), 0
        value = self._or()
        if self.i != len(self.toks):
            raise ValueError(f"trailing tokens in {text!r}: {self.toks[self.i:]}")
        return value

    def _peek(self, value: str | None = None) -> bool:
        return self.i < len(self.toks) and (value is None or self.toks[self.i] == ("op", value))

    def _take(self, value: str) -> None:
        if not self._peek(value):
            raise ValueError(f"expected {value!r} at {self.toks[self.i:]}")
        self.i += 1

    def _or(self) -> Any:
        left = self._and()
        while self._peek("||"):
            self.i += 1
            right = self._and()
            left = left if truthy(left) else right
        return left

    def _and(self) -> Any:
        left = self._cmp()
        while self._peek("&&"):
            self.i += 1
            right = self._cmp()
            left = right if truthy(left) else left
        return left

    def _cmp(self) -> Any:
        left = self._unary()
        while self._peek("==") or self._peek("!="):
            op = self.toks[self.i][1]
            self.i += 1
            right = self._unary()
            left = loose_equal(left, right) if op == "==" else not loose_equal(left, right)
        return left

    def _unary(self) -> Any:
        if self._peek("!"):
            self.i += 1
            return not truthy(self._unary())
        return self._postfix(self._primary())

    def _primary(self) -> Any:
        kind, value = self.toks[self.i]
        self.i += 1
        if kind in ("str", "num"):
            return value
        if (kind, value) == ("op", "("):
            inner = self._or()
            self._take(")")
            return inner
        if kind != "ident":
            raise ValueError(f"unexpected {value!r}")
        if value in ("true", "false"):
            return value == "true"
        if value == "null":
            return None
        if self._peek("("):
            self.i += 1
            args = []
            while not self._peek(")"):
                args.append(self._or())
                if self._peek(","):
                    self.i += 1
            self._take(")")
            return self._call(value, args)
        return self.contexts.get(value)

    def _postfix(self, value: Any) -> Any:
        while True:
            if self._peek("."):
                self.i += 1
                _, name = self.toks[self.i]
                self.i += 1
                value = value.get(name) if isinstance(value, dict) else None
            elif self._peek("["):
                self.i += 1
                index = self._or()
                self._take("]")
                if isinstance(value, list) and isinstance(index, float) and 0 <= index < len(value):
                    value = value[int(index)]
                elif isinstance(value, dict) and isinstance(index, str):
                    value = value.get(index)
                else:
                    value = None
            else:
                return value

    def _call(self, name: str, args: list) -> Any:
        lname = name.lower()
        if lname == "contains":
            haystack, needle = args
            if isinstance(haystack, list):
                return any(loose_equal(item, needle) for item in haystack)
            return to_string(needle).casefold() in to_string(haystack).casefold()
        if lname == "startswith":
            return to_string(args[0]).casefold().startswith(to_string(args[1]).casefold())
        if lname == "endswith":
            return to_string(args[0]).casefold().endswith(to_string(args[1]).casefold())
        if lname == "format":
            return re.sub(r"\{(\d+)\}", lambda m: to_string(args[1 + int(m.group(1))]), args[0])
        if lname == "fromjson":
            return json.loads(args[0])
        if lname == "tojson":
            return json.dumps(args[0])
        if lname == "always":
            return True
        if lname == "cancelled":
            return False
        if lname == "success":
            return self.status() == "success"
        if lname == "failure":
            return self.status() == "failure"
        raise ValueError(f"unknown function {name}")


_EXPR = re.compile(r"\$\{\{(.*?)\}\}", re.DOTALL)
_STATUS_FUNCTIONS = re.compile(r"\b(success|failure|always|cancelled)\s*\(", re.IGNORECASE)


def interpolate(value: Any, ev: Evaluator) -> Any:
    """A YAML value with `${{ }}` parts: the expression's value when it is the whole string."""
    if not isinstance(value, str):
        return value
    whole = _EXPR.fullmatch(value.strip())
    if whole:
        return ev.evaluate(whole.group(1))
    return _EXPR.sub(lambda m: to_string(ev.evaluate(m.group(1))), value)


def condition(expr: Any, ev: Evaluator) -> bool:
    """A step's or job's `if:`: implicit `success() &&` unless a status function is used."""
    if expr is None:
        return ev.status() == "success"
    if isinstance(expr, bool):
        return expr
    text = expr.strip()
    whole = _EXPR.fullmatch(text)
    if whole:
        text = whole.group(1)
    value = ev.evaluate(text)
    if not _STATUS_FUNCTIONS.search(text):
        return ev.status() == "success" and truthy(value)
    return truthy(value)


# -- a runner for one job -------------------------------------------------------------------------
def parse_github_output(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            key, delim = line.split("<<", 1)
            body = []
            i += 1
            while lines[i] != delim:
                body.append(lines[i])
                i += 1
            out[key] = "\n".join(body)
        elif "=" in line:
            key, value = line.split("=", 1)
            out[key] = value
        i += 1
    return out


@dataclass
class StepRecord:
    name: str
    kind: str  # run | skipped-uses | composite | if-false
    outcome: str
    log: str = ""


@dataclass
class JobRun:
    workspace: Path
    runner_temp: Path
    contexts: dict
    base_env: dict
    uses_handler: Callable[["JobRun", dict, dict], tuple[str, dict] | None]
    status: str = "success"
    current_env: dict = field(default_factory=dict)
    records: list[StepRecord] = field(default_factory=list)
    summaries: list[str] = field(default_factory=list)
    counter: int = 0

    def evaluator(self, contexts: dict, status: Callable[[], str] | None = None) -> Evaluator:
        return Evaluator(contexts, status or (lambda: self.status))

    def run_script(self, script: str, env: dict, shell: str, action_path: Path | None = None) -> tuple[int, dict, str]:
        assert shell == "bash", f"only bash steps are expected, got {shell!r}"
        self.counter += 1
        scratch = self.runner_temp.parent / "steps" / str(self.counter)
        scratch.mkdir(parents=True)
        script_file, out_file, summary_file = scratch / "script.sh", scratch / "output", scratch / "summary.md"
        script_file.write_text(script, encoding="utf-8")
        out_file.touch()
        summary_file.touch()
        full_env = {**self.base_env, **{k: to_string(v) for k, v in env.items()},
                    "GITHUB_OUTPUT": str(out_file), "GITHUB_STEP_SUMMARY": str(summary_file),
                    "GITHUB_ENV": str(scratch / "env"), "GITHUB_PATH": str(scratch / "path")}
        if action_path is not None:
            full_env["GITHUB_ACTION_PATH"] = str(action_path)
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script_file)],
                              cwd=self.workspace, env=full_env, capture_output=True, text=True, timeout=300)
        assert not (scratch / "env").exists(), "a step wrote $GITHUB_ENV (not expected: outputs go through $GITHUB_OUTPUT)"
        self.summaries.append(summary_file.read_text(encoding="utf-8"))
        return proc.returncode, parse_github_output(out_file), proc.stdout + proc.stderr

    def run_steps(self, steps: list[dict], contexts: dict, env: dict, shell: str | None,
                  action_path: Path | None = None, prefix: str = "") -> str:
        """Runs steps; returns the status ('success' or 'failure') they leave."""
        status = "success"
        step_ctx = contexts.setdefault("steps", {})
        for step in steps:
            name = prefix + (step.get("name") or step.get("uses") or "run")
            ev = self.evaluator({**contexts, "env": env}, lambda: status)
            outcome, outputs = "success", {}
            if not condition(step.get("if"), ev):
                self.records.append(StepRecord(name, "if-false", "skipped"))
                if "id" in step:
                    step_ctx[step["id"]] = {"outputs": {}, "outcome": "skipped", "conclusion": "skipped"}
                continue
            step_env = {**env, **{k: to_string(interpolate(v, ev)) for k, v in (step.get("env") or {}).items()}}
            if "uses" in step:
                with_values = {k: interpolate(v, Evaluator({**contexts, "env": step_env}, lambda: status))
                               for k, v in (step.get("with") or {}).items()}
                self.current_env = step_env
                handled = self.uses_handler(self, step, with_values)
                if handled is None:
                    self.records.append(StepRecord(name, "skipped-uses", "skipped"))
                else:
                    outcome, outputs = handled
                    self.records.append(StepRecord(name, "composite" if step["uses"].startswith("./") else "faked",
                                                   outcome))
            else:
                rc, outputs, log = self.run_script(step["run"], step_env, step.get("shell") or shell, action_path)
                outcome = "success" if rc == 0 else "failure"
                self.records.append(StepRecord(name, "run", outcome, log + f"\n[exit {rc}]"))
            conclusion = "success" if outcome == "success" or step.get("continue-on-error") else "failure"
            if "id" in step:
                step_ctx[step["id"]] = {"outputs": outputs, "outcome": outcome, "conclusion": conclusion}
            if conclusion == "failure":
                status = "failure"
        return status

    def run_job(self, job: dict, workflow_env: dict | None = None, overrides: dict | None = None) -> str:
        """`workflow_env`: the workflow's top-level env:; `overrides`: env values a test changes
        after evaluation (and says so)."""
        ev = self.evaluator(self.contexts)
        env = {k: to_string(interpolate(v, ev)) for k, v in (workflow_env or {}).items()}
        env.update({k: to_string(interpolate(v, self.evaluator({**self.contexts, "env": env})))
                    for k, v in (job.get("env") or {}).items()})
        env.update(overrides or {})
        shell = ((job.get("defaults") or {}).get("run") or {}).get("shell")
        self.status = self.run_steps(job["steps"], self.contexts, env, shell)
        return self.status

    def run_composite(self, action_dir: Path, with_values: dict, env: dict) -> tuple[str, dict]:
        action = load_yaml(action_dir / "action.yml")
        assert action["runs"]["using"] == "composite"
        inputs = {name: spec.get("default", "") for name, spec in (action.get("inputs") or {}).items()}
        unknown = set(with_values) - set(inputs)
        assert not unknown, f"inputs the action does not declare: {unknown}"
        inputs.update({k: to_string(v) for k, v in with_values.items()})
        contexts = {**{k: v for k, v in self.contexts.items() if k in ("github", "runner", "vars")},
                    "inputs": inputs, "steps": {}}
        status = self.run_steps(action["runs"]["steps"], contexts, env, None, action_path=action_dir,
                                prefix=f"{action['name']}: ")
        ev = Evaluator({**contexts, "env": env})
        outputs = {name: to_string(interpolate(spec["value"], ev)) for name, spec in (action.get("outputs") or {}).items()}
        return status, outputs

    def log(self) -> str:
        return "\n".join(f"--- {r.name} [{r.kind}: {r.outcome}]\n{r.log}" for r in self.records)


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


def pr_event(*, fork: bool = False, association: str = "CONTRIBUTOR", repo: str = "acme/triton") -> dict:
    head_repo = {"full_name": "someone/triton" if fork else repo}
    return {"pull_request": {"number": 42, "author_association": association,
                             "head": {"sha": SHA_HEAD, "repo": head_repo}, "base": {"sha": SHA_BASE}}}


def clean_env(tmp: Path, workspace: Path, runner_temp: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITHUB_", "RUNNER_", "ACTIONS_", "TRITONGATE_"))}
    env.update({"CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(workspace),
                "RUNNER_TEMP": str(runner_temp), "GITHUB_REPOSITORY": "acme/triton", "GITHUB_RUN_ID": "1234",
                "GITHUB_SERVER_URL": "https://github.com", "GITHUB_SHA": SHA_MERGE,
                "GITHUB_EVENT_NAME": "pull_request", "TRITONGATE_LOG_DIR": str(tmp / "logs"),
                "NO_COLOR": "1"})
    return env


@dataclass
class Outcome:
    run: JobRun
    status: str
    summary: str
    uploads: dict[str, dict]


def run_gate_job(tmp: Path, *, store: Path | None, cand_python: str) -> Outcome:
    doc, job = gate_job()
    workspace, runner_temp = tmp / "ws", tmp / "runner" / "temp"
    workspace.mkdir()
    runner_temp.mkdir(parents=True)
    (workspace / "tritongate").symlink_to(REPO, target_is_directory=True)
    (workspace / "baseline-store").mkdir()  # a stale store from an earlier job: the first step removes it
    (workspace / "baseline-store" / "stale").write_text("from an earlier job\n")
    inputs = call_inputs(doc, **{"tritongate-repo": "acme/tritongate", "tritongate-ref": "4" * 40,
                                 "runner-labels": '["self-hosted", "linux", "cpu-test"]',
                                 "runner-class": "cpu-ci", "suite": "smoke", "ops": "add", "backend": "cpu",
                                 "compiler-mode": "installed", "python": sys.executable})
    contexts = {"inputs": inputs, "vars": {}, "runner": {"temp": str(runner_temp), "os": "Linux"},
                "github": {"event_name": "pull_request", "repository": "acme/triton", "sha": SHA_MERGE,
                           "ref": "refs/pull/42/merge", "run_id": "1234", "server_url": "https://github.com",
                           "event": pr_event()}}
    uploads: dict[str, dict] = {}

    def uses(run: JobRun, step: dict, with_values: dict) -> tuple[str, dict] | None:
        ref = step["uses"]
        if ref == BUILD_ACTION:
            assert with_values["mode"] == "installed", with_values
            if step.get("id") == "cand":  # the PR build: here, the same interpreter doing twice the work
                with_values = {**with_values, "python": cand_python}
            return run.run_composite(ACTION_DIR, with_values, run.current_env)
        if ref.startswith("actions/checkout@"):
            if with_values.get("path") == "baseline-store":
                assert not (run.workspace / "baseline-store").exists(), "the stale store was not removed"
                if store is None:
                    return "failure", {}  # no data branch yet: the checkout fails, continue-on-error
                shutil.copytree(store, run.workspace / "baseline-store")
            return None  # tritongate: linked by the fixture; the store: copied here
        if ref.startswith("actions/upload-artifact@"):
            uploads[with_values["name"]] = with_values
            return None
        raise AssertionError(f"unexpected action {ref}")

    run = JobRun(workspace, runner_temp, contexts, clean_env(tmp, workspace, runner_temp), uses)
    status = run.run_job(job)
    return Outcome(run, status, "".join(run.summaries), uploads)


def publish_store(tmp: Path) -> Path:
    store = tmp / "store"
    proc = subprocess.run([sys.executable, str(REPO / "ci" / "record_baseline.py"), "--suite", "smoke", "--ops", "add",
                           "--backend", "cpu", "--out", str(tmp / "record"), "--publish", str(store),
                           "--runner-class", "cpu-ci"],
                          capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "TRITONGATE_"))})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1].startswith("baseline: ")
    return store


REMOTE_STEPS = ["Check out tritongate", "Check out the baseline store",
                "Upload the verdict (verdict.md, verdict.json, ir-diff/, pr.json)",
                "Upload the run directories (base, candidate, baseline lookup, fallback record)"]


def _records(run: JobRun, kind: str) -> list[str]:
    return [r.name for r in run.records if r.kind == kind]


def _check_common(out: Outcome) -> Path:
    run, log = out.run, out.run.log()
    steps = run.contexts["steps"]
    # the local action ran for real (mode installed), twice
    assert _records(run, "composite") == ["Build the base compiler", "Build the PR compiler"], log
    assert steps["base"]["outputs"]["python"] == sys.executable, log
    assert steps["base"]["outputs"]["commit"] == "", log  # installed mode: no commit is claimed
    verdict_dir = Path(steps["pair"]["outputs"]["verdict-dir"])
    verdict_md = (verdict_dir / "verdict.md").read_text(encoding="utf-8")
    assert verdict_md.startswith("<!-- tritongate-verdict -->"), verdict_md[:200]
    # the job summary holds the verdict, appended by the tool
    assert verdict_md.strip() in out.summary, out.summary[:2000]
    # pr.json for the comment job
    assert json.loads((verdict_dir / "pr.json").read_text()) == {"pr": 42, "head_sha": SHA_HEAD}
    # the remote actions were skipped, and what the uploads name exists
    assert set(out.uploads) == {"tritongate-verdict", "tritongate-runs"}, log
    assert Path(out.uploads["tritongate-verdict"]["path"]) == verdict_dir
    assert (Path(out.uploads["tritongate-runs"]["path"]) / "baseline-state.json").is_file()
    pair_dir = Path(steps["pair"]["outputs"]["pair-dir"])
    assert pair_dir.parent.parent == Path(out.uploads["tritongate-runs"]["path"])
    assert (pair_dir / "base" / "results.json").is_file() and (pair_dir / "candidate" / "results.json").is_file()
    return verdict_dir


def test_gate_job_with_a_published_baseline_passes(tmp_path: Path) -> None:
    store = publish_store(tmp_path)
    out = run_gate_job(tmp_path, store=store, cand_python=sys.executable)
    run, log = out.run, out.run.log()
    steps = run.contexts["steps"]
    assert out.status == "success", log
    assert _records(run, "skipped-uses") == REMOTE_STEPS, log
    assert _records(run, "run") == ["Clean the workspace", "tritongate build-compiler: Plan the build",
                                    "tritongate build-compiler: Build or reuse the compiler venv",
                                    "tritongate build-compiler: Plan the build",
                                    "tritongate build-compiler: Build or reuse the compiler venv",
                                    "Find the baseline record", "Paired check (base build vs PR build)",
                                    "Note the PR for the comment job", "Gate result"], log
    assert "Record a baseline with the base build (fallback)" in _records(run, "if-false"), log
    assert steps["baseline"]["outputs"]["state"] == "ok", log
    assert steps["baseline"]["outputs"]["record"].startswith(str(run.workspace / "baseline-store")), log
    assert steps["pair"]["outputs"]["exit-code"] == "0", log
    verdict_dir = _check_common(out)
    verdict = json.loads((verdict_dir / "verdict.json").read_text())
    assert verdict["passed"] is True and verdict["counts"]["REGRESSED"] == 0
    state = json.loads((run.runner_temp / "tritongate" / "baseline-state.json").read_text())
    assert state["state"] == "ok"


def test_gate_job_records_a_fallback_baseline_and_fails_on_a_regression(tmp_path: Path) -> None:
    slower = tmp_path / "slower-python"  # the "PR build": every launch runs its kernels twice
    slower.write_text(f'#!/bin/sh\nTRITONGATE_PLANTED_WORK=2 exec "{sys.executable}" "$@"\n')
    slower.chmod(0o755)
    out = run_gate_job(tmp_path, store=None, cand_python=str(slower))
    run, log = out.run, out.run.log()
    steps = run.contexts["steps"]
    assert out.status == "failure", log
    # the store checkout failed (continue-on-error), so the job went on
    assert [r.outcome for r in run.records if r.name == "Check out the baseline store"] == ["failure"], log
    assert steps["baseline"]["outputs"]["state"] == "missing", log
    assert steps["record"]["outcome"] == "success", log
    assert Path(steps["record"]["outputs"]["record"]).is_dir(), log
    assert steps["pair"]["outputs"]["exit-code"] == "1", log
    # uploads ran although the gate failed; the last step failed with the gate's exit code
    assert _records(run, "skipped-uses") == [REMOTE_STEPS[0], *REMOTE_STEPS[2:]], log
    assert run.records[-1].name == "Gate result" and run.records[-1].outcome == "failure", log
    assert "[exit 1]" in run.records[-1].log, log
    assert steps["cand"]["outputs"]["python"] == str(slower)
    verdict_dir = _check_common(out)
    verdict = json.loads((verdict_dir / "verdict.json").read_text())
    assert verdict["passed"] is False and verdict["counts"]["REGRESSED"] == 2, verdict["counts"]
    assert "REGRESSED" in out.summary or "Regressions" in out.summary


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
    ("merge queue", "merge_group", {}, "", True),
])
def test_fork_guard(case: str, event_name: str, event: dict, fork_var: str, runs: bool) -> None:
    doc = load_yaml(WORKFLOWS / "pr-gate.yml")
    contexts = {"github": {"event_name": event_name, "repository": "acme/triton", "event": event},
                "vars": {"TRITONGATE_FORK_APPROVAL": fork_var} if fork_var else {}, "inputs": {}}
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
    ({"TG_MODE": "compile"}, "mode must be source, wheel or installed"),
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
    (venv / ".tritongate-complete").write_text("done\n")  # a finished build: the checkout is skipped
    (tmp_path / "out").unlink()
    subprocess.run(["bash", str(ACTION_DIR / "build.sh"), "plan"], env=env, check=True)
    assert parse_github_output(tmp_path / "out") == {"slug": "triton-lang__triton", "commit": commit,
                                                     "cached": "true", "src": ""}


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


@pytest.mark.parametrize("event_pr, pr_json, posted_pr", [
    ("7", None, "7"),                                      # same-repository PR: the event names it
    ("", '{"pr": 42, "head_sha": "x"}', "42"),             # fork PR: the artifact's number
    ("", '{"pr": "42; rm -rf /"}', None),                  # not an integer
    ("", '{"pr": 0}', None),
    ("", "[" * 5000, None),                                # too big
    ("", None, None),                                      # no pr.json
])
def test_comment_step_takes_the_pr_number_safely(tmp_path: Path, event_pr: str, pr_json: str | None,
                                                 posted_pr: str | None) -> None:
    step = _step("pr-comment.yml", "comment", "Post the sticky comment")
    fake_ci = tmp_path / "tritongate" / "ci"
    fake_ci.mkdir(parents=True)  # stands in for post_comment.py: prints what it was asked to do
    (fake_ci / "post_comment.py").write_text("import sys; print('ARGS', sys.argv[1:])\n")
    verdict = tmp_path / "verdict"
    verdict.mkdir()
    if pr_json is not None:
        (verdict / "pr.json").write_text(pr_json)
    proc = _run_step(step, {"GITHUB_TOKEN": "t", "REPO": "acme/triton", "EVENT_PR": event_pr,
                            "HEAD_SHA": SHA_HEAD, "VERDICT_DIR": str(verdict)}, tmp_path)
    if posted_pr is None:
        assert proc.returncode != 0 and "ARGS" not in proc.stdout, proc.stdout + proc.stderr
    else:
        assert proc.returncode == 0, proc.stderr
        assert f"'--pr', '{posted_pr}', '--head-sha', '{SHA_HEAD}'" in proc.stdout


@pytest.mark.parametrize("calls, aa_exit, fails", [
    (["within noise"] * 30, "0", False),
    (["within noise"] * 28 + ["slower", "faster"], "1", True),
    (["within noise"] * 29 + ["slower"], "0", True),  # an identical-binary row whose timing was called: still false
    (["within noise"] * 30, "2", True),
])
def test_nightly_counts_the_aa_false_alarms(tmp_path: Path, calls: list, aa_exit: str, fails: bool) -> None:
    step = _step("nightly-baseline.yml", "record", "Count the A/A false alarms")
    verdict = tmp_path / "verdict"
    verdict.mkdir()
    rows = [{"timed": True, "verdict": "IDENTICAL_BINARY", "timing_change": c} for c in calls]
    (verdict / "verdict.json").write_text(json.dumps({"counts": {"IDENTICAL_BINARY": len(rows)}, "rows": rows}))
    summary = tmp_path / "summary.md"
    proc = _run_step(step, {"PY": sys.executable, "VERDICT_DIR": str(verdict), "AA_EXIT": aa_exit,
                            "GITHUB_STEP_SUMMARY": str(summary)}, tmp_path)
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


def test_nightly_records_checks_and_pushes_one_entry(tmp_path: Path) -> None:
    doc = load_yaml(WORKFLOWS / "nightly-baseline.yml")
    branch = doc["env"]["BASELINE_BRANCH"]
    suite = tmp_path / "tiny.yaml"  # one row, so the record and the A/A take seconds
    suite.write_text("description: one row\ndtypes: [float16]\nops:\n  add: {shapes: [[4096]]}\n")
    # GITHUB_SERVER_URL: two "GitHub"s, bare repositories, one with the data branch, one without
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

    def job_run(name: str, server: Path, needs: dict, uses: Callable) -> tuple[JobRun, str]:
        workspace, runner_temp = tmp_path / name / server.name / "ws", tmp_path / name / server.name / "temp"
        workspace.mkdir(parents=True)
        runner_temp.mkdir(parents=True)
        github = {"event_name": "schedule", "repository": "acme/tritongate", "sha": SHA_MERGE,
                  "ref": "refs/heads/main", "run_id": "99", "server_url": server.as_uri(),
                  "event": payload("schedule")}  # documented: the cron string, nothing else
        contexts = {"inputs": {}, "vars": {}, "github": github, "needs": needs,
                    "runner": {"temp": str(runner_temp), "os": "Linux"}}
        job = doc["jobs"][name]
        assert condition(job["if"], Evaluator(contexts)), f"{name} would not run on main"
        env = {**clean_env(tmp_path, workspace, runner_temp), "GITHUB_SERVER_URL": server.as_uri(),
               "GITHUB_REPOSITORY": "acme/tritongate", "GITHUB_RUN_ID": "99", "GITHUB_EVENT_NAME": "schedule"}
        run = JobRun(workspace, runner_temp, contexts, env, uses)
        # the one change to the job: the cpu backend and a one-row suite instead of cuda and `pr`
        status = run.run_job(job, doc.get("env"), {"TG_BACKEND": "cpu", "TG_SUITE": str(suite)}
                             if name == "record" else None)
        return run, status

    def checkout_store(run: JobRun, server: Path, with_values: dict) -> tuple[str, dict] | None:
        assert with_values["ref"] == branch and with_values["path"] == "baseline-store"
        if server == servers[False]:
            return "failure", {}  # no data branch yet
        origin = server / "acme" / "tritongate.git"
        _git("clone", "-q", "--depth", "1", "-b", branch, origin.as_uri(), str(run.workspace / "baseline-store"))
        return None

    uploads: dict[str, dict] = {}

    def record_uses(run: JobRun, step: dict, with_values: dict) -> tuple[str, dict] | None:
        ref = step["uses"]
        if ref == BUILD_ACTION:  # mode source cannot run here: the build of main, faked
            assert with_values["mode"] == "source" and with_values["ref"] == "main"
            return "success", {"python": sys.executable, "commit": "5" * 40}
        if ref.startswith("actions/checkout@"):
            if with_values.get("path") == "baseline-store":
                return checkout_store(run, servers[True], with_values)
            (run.workspace / "tritongate").symlink_to(REPO, target_is_directory=True)
            return None
        if ref.startswith("actions/upload-artifact@"):
            uploads[with_values["name"]] = with_values
            return None
        raise AssertionError(ref)

    record, status = job_run("record", servers[True], {}, record_uses)
    assert status == "success", record.log()
    entry = record.contexts["steps"]["publish"]["outputs"]["entry"]
    assert re.fullmatch(r"h200/tiny/cpu/[0-9]{8}T[0-9]{6}Z-5555555[0-9a-f]*(-[0-9]+)?", entry), entry
    entry_path = Path(uploads["tritongate-baseline-entry"]["path"])
    assert (entry_path / "manifest.json").is_file()
    summary = "".join(record.summaries)
    assert "**0** of 1 rows called slower or faster" in summary, summary
    # tonight's history: one entry, too short for change points, reported and uploaded
    history = record.runner_temp / "tritongate" / "history"
    assert (history / "history.json").is_file() and (history / "history.md").is_file(), record.log()
    assert "change points" in summary.lower(), summary
    assert set(uploads) == {"tritongate-baseline-entry", "tritongate-nightly-runs"}

    for exists, server in servers.items():
        def publish_uses(run: JobRun, step: dict, with_values: dict, server: Path = server) -> tuple[str, dict] | None:
            ref = step["uses"]
            if ref.startswith("actions/checkout@"):
                return checkout_store(run, server, with_values)
            if ref.startswith("actions/download-artifact@"):
                assert with_values["name"] == "tritongate-baseline-entry"
                shutil.copytree(entry_path, with_values["path"])
                return None
            raise AssertionError(ref)

        needs = {"record": {"outputs": {"entry": entry}, "result": "success"}}
        publish, status = job_run("publish", server, needs, publish_uses)
        assert status == "success", publish.log()
        pushed = _git("--git-dir", str(server / "acme" / "tritongate.git"), "ls-tree", "-r", "--name-only",
                      branch).splitlines()
        assert f"{entry}/manifest.json" in pushed, pushed
        assert ("README.md" in pushed) is exists  # nothing already on the branch was lost
