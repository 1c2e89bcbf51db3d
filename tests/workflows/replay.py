"""Replaying a GitHub Actions job on this machine: an evaluator for the expression forms the
workflows use, and a runner that executes `run:` steps with bash the way the runner does
(`bash --noprofile --norc -eo pipefail`), `env:` evaluated, `$GITHUB_OUTPUT` lines fed into
`steps.<id>.outputs`, one `$GITHUB_STEP_SUMMARY` per step, `if:` with the runner's status
rules, and local composite actions run through the same machinery. Remote actions go to a
handler the test gives (it fakes or skips them, and says which)."""

from __future__ import annotations

import json
import math
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml


def load_yaml(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


# -- a GitHub Actions expression evaluator, for the forms the workflows use -----------------------
_TOKEN = re.compile(r"""
    \s*(?:
      (?P<str>'(?:[^']|'')*')
    | (?P<num>-?\d+(?:\.\d+)?)
    | (?P<op>==|!=|<=|>=|&&|\|\||[!<>()\[\],.*])
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


class _Filtered(list):
    """The result of an object filter (`labels.*.name`): a property maps over its items."""


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
                if name == "*":  # object filter: the values of a list or an object
                    value = _Filtered(value if isinstance(value, list) else
                                      list(value.values()) if isinstance(value, dict) else [])
                elif isinstance(value, _Filtered):
                    value = _Filtered(item.get(name) for item in value if isinstance(item, dict))
                else:
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
    if whole and "}}" not in whole.group(1):  # one expression, not `${{ a }}/x/${{ b }}`
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
class OutputFormatError(ValueError):
    """What the runner reports as "Unable to process file command 'output' successfully"."""


def parse_output_text(text: str) -> dict[str, str]:
    """An environment file read as the Linux runner reads it (actions/runner FileCommandManager):
    lines end at "\n" only, empty lines are skipped, a line is `NAME=VALUE` when its first `=`
    comes before its first `<<`, else `NAME<<DELIMITER` followed by the value's lines up to the
    first line that is exactly the delimiter (the newline before it not part of the value)."""
    out: dict[str, str] = {}
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the file's last newline ends its last line
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line:
            continue
        eq, heredoc = line.find("="), line.find("<<")
        if eq >= 0 and (heredoc < 0 or eq < heredoc):
            key, value = line.split("=", 1)
            if not key:
                raise OutputFormatError(f"invalid format {line!r}: the name is empty")
            out[key] = value
        elif heredoc >= 0:
            key, delimiter = line.split("<<", 1)
            if not key or not delimiter:
                raise OutputFormatError(f"invalid format {line!r}: empty name or delimiter")
            body: list[str] = []
            while i < len(lines) and lines[i] != delimiter:
                body.append(lines[i])
                i += 1
            if i == len(lines):
                raise OutputFormatError(f"matching delimiter not found {delimiter!r}")
            i += 1
            out[key] = "\n".join(body)
        else:
            raise OutputFormatError(f"invalid format {line!r}")
    return out


def parse_github_output(path: Path) -> dict[str, str]:
    return parse_output_text(path.read_text(encoding="utf-8")) if path.exists() else {}


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
    step_env: dict[str, dict] = field(default_factory=dict)  # step id -> env a test changes (and says so)
    inner_steps: dict[str, dict] = field(default_factory=dict)  # the steps context of the last composite run
    fakes: dict[str, dict] = field(default_factory=dict)  # step id -> outputs: the step is not run (tests say why)

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
            step_env = {**env, **{k: to_string(interpolate(v, ev)) for k, v in (step.get("env") or {}).items()},
                        **self.step_env.get(step.get("id", ""), {})}
            if step.get("id") in self.fakes:
                outputs = self.fakes[step["id"]]
                self.records.append(StepRecord(name, "faked", "success"))
            elif "uses" in step:
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
        self.inner_steps = contexts["steps"]
        ev = Evaluator({**contexts, "env": env})
        outputs = {name: to_string(interpolate(spec["value"], ev)) for name, spec in (action.get("outputs") or {}).items()}
        return status, outputs

    def log(self) -> str:
        return "\n".join(f"--- {r.name} [{r.kind}: {r.outcome}]\n{r.log}" for r in self.records)


