"""A baseline recorded in a PR's gate job or a deep scan (no usable one in the store) measures
at the nightly's sample length: each row's launches per sample come from the record, so a
fallback record at another length would time every row with other k than the nightly's.
The length travels as the `sample-ms` input (the reusable workflow fills it from the
`TRITONGATE_SAMPLE_MS` variable, as the nightly does) and reaches `record_baseline.py` as
`--sample-ms`; empty means the tool's default."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.workflows.replay import load_yaml

REPO = Path(__file__).resolve().parents[2]
GITHUB = REPO / ".github"


def _stand_in(tmp: Path, record: Path) -> Path:
    """An interpreter that writes its arguments, one a line, and prints a run folder."""
    py = tmp / "python"
    py.write_text(f'#!/bin/bash\nprintf "%s\\n" "$@" > {tmp}/argv\necho {record}\n')
    py.chmod(0o755)
    return py


def _record_argv(tmp: Path, sample_ms: str) -> list[str]:
    """What the stand-in was called with, holding `--sample-ms <sample_ms>` exactly when one is set."""
    argv = (tmp / "argv").read_text().splitlines()
    if sample_ms:
        assert argv[argv.index("--sample-ms") + 1] == sample_ms
    else:
        assert "--sample-ms" not in argv
    return argv


@pytest.mark.parametrize("sample_ms", ["", "2"])
def test_the_gate_jobs_fallback_record_takes_the_sample_length(tmp_path: Path, sample_ms: str) -> None:
    record = tmp_path / "record-dir"
    record.mkdir()
    env = {"PATH": os.environ["PATH"], "RUNNER_TEMP": str(tmp_path / "temp"), "GITHUB_OUTPUT": str(tmp_path / "out"),
           "BASE_PY": str(_stand_in(tmp_path, record)), "TG_SUITE": "pr", "TG_BACKEND": "cuda", "STATE": "missing",
           "TG_REQUIRE": "false", "TG_COMPILER_REPO": "o/r", "TG_SAMPLE_MS": sample_ms}
    proc = subprocess.run(["bash", str(REPO / "ci" / "gate_steps.sh"), "record"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    argv = _record_argv(tmp_path, sample_ms)
    assert argv[argv.index("--suite") + 1] == "pr"


@pytest.mark.parametrize("sample_ms", ["", "2"])
def test_the_deep_scans_fallback_record_takes_the_sample_length(tmp_path: Path, sample_ms: str) -> None:
    step = next(s for s in load_yaml(GITHUB / "workflows" / "deep-scan.yml")["jobs"]["baseline"]["steps"]
                if s.get("name", "").startswith("Take the store's record"))
    assert step["env"]["TG_SAMPLE_MS"] == "${{ vars.TRITONGATE_SAMPLE_MS }}"
    record = tmp_path / "record-dir"
    record.mkdir()
    temp = tmp_path / "temp"
    (temp / "tritongate").mkdir(parents=True)
    (temp / "tritongate" / "baseline-state.json").write_text("{}")
    script = tmp_path / "step.sh"
    script.write_text(step["run"], encoding="utf-8")
    env = {"PATH": os.environ["PATH"], "RUNNER_TEMP": str(temp), "BASE_PY": str(_stand_in(tmp_path, record)),
           "STATE": "missing", "FOUND": "", "TG_SUITE": "deep", "TG_BACKEND": "cuda", "TG_SHAPE_FILE": "",
           "TG_OPS": "", "TG_DTYPES": "", "BASE_COMMIT": "3" * 40, "COMPILER_REPO": "o/r",
           "TG_SAMPLE_MS": sample_ms}
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _record_argv(tmp_path, sample_ms)
    assert (temp / "tritongate" / "baseline").is_dir()


def test_the_gate_action_and_both_entry_points_carry_it() -> None:
    action = load_yaml(GITHUB / "actions" / "pr-gate" / "action.yml")
    assert action["inputs"]["sample-ms"]["default"] == ""
    record = next(s for s in action["runs"]["steps"] if s.get("id") == "record")
    assert record["env"]["TG_SAMPLE_MS"] == "${{ inputs.sample-ms }}"
    workflow = load_yaml(GITHUB / "workflows" / "pr-gate.yml")
    stages = {s["with"]["stage"]: s["with"] for job in workflow["jobs"].values() for s in job.get("steps", [])
              if str(s.get("uses", "")).endswith("actions/pr-gate")}
    assert stages["gate"]["sample-ms"] == "${{ inputs.sample-ms || vars.TRITONGATE_SAMPLE_MS }}"
    assert workflow[True]["workflow_call"]["inputs"]["sample-ms"]["default"] == ""  # PyYAML reads `on:` as True
    gate = load_yaml(REPO / "examples" / "cross-org" / "perf-gate.yml")
    stages = {s["with"]["stage"]: s["with"] for job in gate["jobs"].values() for s in job.get("steps", [])
              if "actions/pr-gate@" in str(s.get("uses", ""))}
    assert stages["gate"]["sample-ms"] == "${{ vars.TRITONGATE_SAMPLE_MS }}"
    nightly = load_yaml(REPO / "examples" / "cross-org" / "perf-nightly.yml")
    record_steps = [s["with"] for job in nightly["jobs"].values() for s in job.get("steps", [])
                    if "actions/record-baseline@" in str(s.get("uses", "")) and s["with"]["stage"] == "record"]
    assert [w["sample-ms"] for w in record_steps] == ["${{ vars.TRITONGATE_SAMPLE_MS }}"]
