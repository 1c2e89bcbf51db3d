"""The offline workflow linters: zizmor (security audits) and check-jsonschema (GitHub's schemas).

Both come from requirements-cpu.txt; a missing tool is a failure, never a skip. Network is
cut for them (proxies pointing at a closed port, no token): zizmor runs `--offline`, and
check-jsonschema's builtin schemas are vendored in the package. Each linter also gets a
known-bad input, so a linter that silently checks nothing cannot pass.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
GITHUB = REPO / ".github"
DEAD_PROXY = "http://127.0.0.1:9"


def tool(name: str) -> str:
    here = Path(sys.executable).parent / name
    found = str(here) if here.exists() else shutil.which(name)
    assert found, f"{name} is not installed: `pip install -r requirements-cpu.txt`"
    return found


def offline_env() -> dict[str, str]:
    # nothing of a surrounding Actions job (tokens, GITHUB_ACTIONS output modes) reaches the tools
    env = {k: v for k, v in os.environ.items()
           if k not in ("GH_TOKEN", "ZIZMOR_CONFIG", "CI") and not k.startswith(("GITHUB_", "RUNNER_"))}
    env.update({k: DEAD_PROXY for k in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY")})
    env.pop("NO_PROXY", None)
    env.pop("no_proxy", None)
    return env


def run(args: list[str], cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, env=offline_env(), capture_output=True, text=True, timeout=120)


def test_zizmor_finds_nothing_but_what_zizmor_yml_justifies() -> None:
    # .github/zizmor.yml is discovered from the repository; every ignore there has its reason.
    proc = run([tool("zizmor"), "--offline", "--strict-collection", "--no-progress", ".github/"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "No findings to report" in proc.stdout + proc.stderr


def test_zizmor_auditor_persona_finds_nothing_unjustified() -> None:
    proc = run([tool("zizmor"), "--offline", "--strict-collection", "--no-progress", "--persona=auditor", ".github/"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "No findings to report" in proc.stdout + proc.stderr
    # the kept ones are kept on purpose: without the config the auditor still sees them
    bare = run([tool("zizmor"), "--offline", "--no-config", "--no-progress", "--persona=auditor", ".github/"])
    for audit in ("self-hosted-runner", "self-repository", "dangerous-triggers"):
        assert audit in bare.stdout, audit


def test_every_kept_zizmor_finding_is_justified() -> None:
    text = (GITHUB / "zizmor.yml").read_text(encoding="utf-8")
    rules = yaml.safe_load(text)["rules"]
    assert set(rules) == {"dangerous-triggers", "self-repository", "self-hosted-runner"}, \
        "a new ignore needs its reason here and there"
    # the text of each rule: from its `  <rule>:` line to the next rule's
    blocks = dict(re.findall(r"(?ms)^  ([a-z-]+):\n(.*?)(?=^  [a-z-]+:\n|\Z)", text))
    for rule, spec in rules.items():
        comments = [line for line in blocks[rule].splitlines() if line.strip().startswith("#")]
        assert spec["ignore"] and len(comments) >= 3, f"{rule}: explain in zizmor.yml why it is kept"


def test_zizmor_audits_every_file_and_catches_injection(tmp_path: Path) -> None:
    proc = run([tool("zizmor"), "--offline", "--strict-collection", "--no-progress", ".github/"])
    log = proc.stdout + proc.stderr
    for path in [*sorted((GITHUB / "workflows").glob("*.yml")), *sorted((GITHUB / "actions").glob("*/action.yml"))]:
        assert f"completed {path.relative_to(REPO)}" in log, f"zizmor did not audit {path}"
    bad = tmp_path / ".github" / "workflows"
    bad.mkdir(parents=True)
    (bad / "bad.yml").write_text(
        "on: pull_request\n"
        "jobs:\n"
        "  x:\n"
        "    runs-on: ubuntu-latest\n"
        "    steps:\n"
        "      - uses: actions/checkout@v4\n"
        "      - run: echo \"${{ github.event.pull_request.title }}\"\n", encoding="utf-8")
    proc = run([tool("zizmor"), "--offline", "--no-config", "--no-progress", str(tmp_path / ".github")], cwd=tmp_path)
    assert proc.returncode != 0
    for audit in ("template-injection", "unpinned-uses", "artipacked", "excessive-permissions"):
        assert audit in proc.stdout, audit


def test_workflows_match_githubs_schema(tmp_path: Path) -> None:
    workflows = sorted(str(p) for p in (GITHUB / "workflows").glob("*.yml"))
    proc = run([tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", *workflows])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    stepz: []\n", encoding="utf-8")
    proc = run([tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(bad)])
    assert proc.returncode != 0, proc.stdout


def test_action_matches_githubs_schema(tmp_path: Path) -> None:
    actions = sorted(str(p) for p in (GITHUB / "actions").glob("*/action.yml"))
    assert actions
    proc = run([tool("check-jsonschema"), "--builtin-schema", "vendor.github-actions", *actions])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    bad = tmp_path / "action.yml"
    bad.write_text("name: x\ndescription: y\nruns:\n  using: composite\n  steps:\n    - run: echo\n",
                   encoding="utf-8")  # a composite run step without `shell`
    proc = run([tool("check-jsonschema"), "--builtin-schema", "vendor.github-actions", str(bad)])
    assert proc.returncode != 0, proc.stdout
