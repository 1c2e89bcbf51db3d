"""The deep scan's baseline step: the store's record serves a scan of the whole suite on its own
shapes; a scan given a shape file, ops or dtypes records those rows with the base build (the
store's record did not hold them: its shards replayed rows without configs, NOT JUDGED, exit 0)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.workflows.replay import load_yaml
from tritongate.gate.baseline_state import load_baseline_state
from tests.workflows.test_fallback_sample_length import GITHUB, _stand_in


def _run_step(tmp_path: Path, **selection: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    step = next(s for s in load_yaml(GITHUB / "workflows" / "deep-scan.yml")["jobs"]["baseline"]["steps"]
                if s.get("name", "").startswith("Take the store's record"))
    found, recorded = tmp_path / "store-record", tmp_path / "fresh-record"
    for folder in (found, recorded):
        folder.mkdir()
        (folder / "which").write_text(folder.name)
    temp = tmp_path / "temp"
    (temp / "tritongate").mkdir(parents=True)
    (temp / "tritongate" / "baseline-state.json").write_text(json.dumps(
        {"state": "ok", "reason": "", "refresh": "", "record": str(found), "age_days": 0.5}))
    script = tmp_path / "step.sh"
    script.write_text(step["run"], encoding="utf-8")
    env = {"PATH": os.environ["PATH"], "RUNNER_TEMP": str(temp), "BASE_PY": str(_stand_in(tmp_path, recorded)),
           "STATE": "ok", "FOUND": str(found), "TG_SUITE": "deep", "TG_BACKEND": "cuda", "TG_SHAPE_FILE": "",
           "TG_OPS": "", "TG_DTYPES": "", "BASE_COMMIT": "3" * 40, "COMPILER_REPO": "o/r", "TG_SAMPLE_MS": "",
           **selection}
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc, temp / "tritongate" / "baseline"


def test_a_scan_of_the_whole_suite_takes_the_store_s_record(tmp_path: Path) -> None:
    proc, baseline = _run_step(tmp_path)
    assert (baseline / "which").read_text() == "store-record" and not (tmp_path / "argv").exists()
    assert load_baseline_state(baseline.with_name("baseline.state.json")).state == "ok"


@pytest.mark.parametrize("selection", [{"TG_SHAPE_FILE": "ops/deep_shapes.yaml"}, {"TG_OPS": "add"},
                                       {"TG_DTYPES": "float16"}])
def test_a_scan_of_other_rows_records_them(tmp_path: Path, selection: dict[str, str]) -> None:
    proc, baseline = _run_step(tmp_path, **selection)
    assert (baseline / "which").read_text() == "fresh-record"
    assert "not the store record's rows; recording them" in proc.stdout
    # the verdict cites what was replayed: not the store's record
    state = load_baseline_state(baseline.with_name("baseline.state.json"))
    assert state.state == "mismatched" and str(tmp_path / "store-record") in state.doc.reason
    assert "This check replayed a baseline recorded with the base build in this job" in state.line(str(baseline))
    argv = (tmp_path / "argv").read_text().splitlines()
    (key, value), = selection.items()
    flag = {"TG_SHAPE_FILE": "--shape-file", "TG_OPS": "--ops", "TG_DTYPES": "--dtypes"}[key]
    assert argv[argv.index(flag) + 1].endswith(value)


def test_the_deep_scan_builds_its_candidate_outside_the_trusted_cache() -> None:
    """Any ref may be dispatched as the candidate: its build must not write the shared cache whose
    venvs PR jobs reuse as trusted (it did: build-compiler always built trusted)."""
    steps = load_yaml(GITHUB / "workflows" / "deep-scan.yml")["jobs"]
    builds = {s["name"]: s["with"] for job in steps.values() for s in job.get("steps", [])
              if str(s.get("uses", "")).endswith("actions/build-compiler")}
    assert builds["Build the candidate compiler"]["trusted"] == "false"
    assert all("trusted" not in w for name, w in builds.items() if "candidate" not in name)  # the base: trusted
    action = load_yaml(GITHUB / "actions" / "build-compiler" / "action.yml")
    assert action["inputs"]["trusted"]["default"] == "true"
    for step in action["runs"]["steps"]:  # every step that runs build.sh gets the setting
        if "build.sh" in str(step.get("run", "")):
            assert step["env"]["TG_CACHE_WRITE"] == "${{ inputs.trusted == 'false' && 'false' || 'true' }}"
