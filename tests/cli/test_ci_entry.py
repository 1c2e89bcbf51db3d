import pytest
import subprocess
import sys
from pathlib import Path

from tests.gate.helpers import pair, row

ROOT = Path(__file__).resolve().parents[2]


def test_ci_gate_passes_the_exit_code_through(tmp_path):
    base, cand = pair(tmp_path, [row()], [row(median=25, seed=1)])
    proc = subprocess.run([sys.executable, str(ROOT / "ci" / "gate.py"), str(base.path), str(cand.path),
                           "--out", str(tmp_path / "v")], capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    assert (tmp_path / "v" / "verdict.md").is_file()


def _ci(script, *args):
    return subprocess.run([sys.executable, str(ROOT / "ci" / script), *args], capture_output=True, text=True)


@pytest.mark.slow
def test_record_then_pair_through_the_ci_entry_points(tmp_path):
    rec = _ci("record_baseline.py", "--suite", "smoke", "--backend", "cpu", "--ops", "add",
              "--out", str(tmp_path / "base"))
    assert rec.returncode == 0, rec.stderr
    base = rec.stdout.strip().splitlines()[-1]
    assert (Path(base) / "autotune_records" / "meta.json").is_file()
    rep = _ci("replay_candidate.py", base, "--suite", "smoke", "--backend", "cpu", "--ops", "add",
              "--out", str(tmp_path / "cand"), "--max-rounds", "6",
              "--base-python", sys.executable, "--cand-python", sys.executable)
    assert rep.returncode == 0, rep.stderr
    paths = dict(line.split(":", 1) for line in rep.stdout.splitlines() if line.startswith(("base:", "candidate:")))
    for side in ("base", "candidate"):
        assert f"side={side}" in (Path(paths[side].strip()) / "run.log").read_text()


@pytest.mark.slow
def test_ci_entry_points_pass_preflight_failures_through(tmp_path):
    rep = _ci("replay_candidate.py", str(tmp_path / "nope"), "--suite", "smoke", "--backend", "cpu",
              "--out", str(tmp_path / "cand"), "--base-python", sys.executable, "--cand-python", sys.executable)
    assert rep.returncode == 3 and "check=replay_from" in rep.stderr
    usage = _ci("replay_candidate.py")
    assert usage.returncode == 2 and "--base-python and --cand-python required" in usage.stderr


def test_record_baseline_refuses_to_replay_as_a_usage_error(tmp_path):
    rec = _ci("record_baseline.py", "--suite", "smoke", "--out", str(tmp_path), "--replay-from", str(tmp_path))
    assert rec.returncode == 2 and "replay_candidate.py" in rec.stderr


def test_record_baseline_refuses_an_option_given_twice_before_recording(tmp_path):
    # a workflow that names two runner classes meant one of them; argparse would keep the last
    rec = _ci("record_baseline.py", "--suite", "smoke", "--backend", "cpu", "--out", str(tmp_path / "r"),
              "--publish", str(tmp_path / "store"), "--runner-class", "h200", "--runner-class=h100")
    assert rec.returncode == 2 and "--runner-class given twice ('h200', then 'h100'); give it once" in rec.stderr
    assert not (tmp_path / "r").exists() and not (tmp_path / "store").exists()
    run = _ci("record_baseline.py", "--suite", "smoke", "--backend", "cpu", "--out", str(tmp_path / "r"),
              "--out", str(tmp_path / "r2"))
    assert run.returncode == 2 and "--out given twice" in run.stderr and not (tmp_path / "r").exists()


# -- the entry points of the CI jobs (ci/resolve_refs.py, ci/aa_count.py, ci/gate_steps.sh) ------
EVENTS = ROOT / "tests" / "workflows" / "events"


def test_resolve_refs_merge_group_and_refusals(tmp_path):
    out = tmp_path / "out"
    ok = _ci("resolve_refs.py", "--event-name", "merge_group", "--event-path",
             str(EVENTS / "merge_group.checks_requested.json"), "--runner-class", "acme-h200",
             "--suite", "suites/my-pr.yaml", "--github-output", str(out))
    assert ok.returncode == 0, ok.stderr
    assert out.read_text().splitlines() == ["base=" + "3" * 40, "cand=" + "4" * 40, "how=merge_group.base_sha",
                                            "key=acme-h200-my-pr"]
    bad = _ci("resolve_refs.py", "--event-name", "workflow_dispatch", "--event-path",
              str(EVENTS / "workflow_dispatch.json"))
    assert bad.returncode == 2 and bad.stderr.startswith("error: resolve_refs.py:") and bad.stderr.count("\n") == 1


def test_aa_count_exit_codes(tmp_path):
    verdict = tmp_path / "verdict.json"
    verdict.write_text('{"rows": [{"timed": true, "timing_change": "within noise"}]}')
    assert _ci("aa_count.py", str(verdict), "0").returncode == 0
    verdict.write_text('{"rows": [{"timed": true, "timing_change": "slower"}]}')
    assert _ci("aa_count.py", str(verdict), "0").returncode == 1
    verdict.write_text("[]")
    assert _ci("aa_count.py", str(verdict), "0").returncode == 2


@pytest.mark.parametrize("doc", ['{"rows": [1, 2]}', '{"rows": {"a": {}}}', '{"rows": "slower"}', '{"rows": null}'])
def test_aa_count_a_verdict_it_cannot_read_is_2_never_1(tmp_path, doc):
    """Exit 1 means false alarms tonight: a verdict.json without a list of row objects is exit 2, one line."""
    verdict = tmp_path / "verdict.json"
    verdict.write_text(doc)
    proc = _ci("aa_count.py", str(verdict), "0")
    assert proc.returncode == 2 and proc.stderr.startswith("error: aa_count.py:") and proc.stderr.count("\n") == 1


def _find_baseline_args(tmp_path, days):
    fake = tmp_path / "py"
    fake.write_text('#!/bin/sh\necho "ARGS $*"\n')
    fake.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "RUNNER_TEMP": str(tmp_path), "GITHUB_OUTPUT": str(tmp_path / "o"),
           "BASE_PY": str(fake), "TG_BACKEND": "cpu", "TG_SUITE": "pr", "TG_RUNNER_CLASS": "acme-h200",
           "TG_MAX_AGE_DAYS": days}
    proc = subprocess.run(["bash", str(ROOT / "ci" / "gate_steps.sh"), "find-baseline"], env=env,
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_max_age_days_zero_is_zero_and_empty_is_the_default(tmp_path):
    assert "--max-age-days 0 " in _find_baseline_args(tmp_path, "0")
    assert "--max-age-days 7 " in _find_baseline_args(tmp_path, "")


def test_a_suite_path_is_the_workspaces_file(tmp_path):
    fake = tmp_path / "py"
    fake.write_text('#!/bin/sh\necho "ARGS $*"\n')
    fake.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "RUNNER_TEMP": str(tmp_path), "GITHUB_OUTPUT": str(tmp_path / "o"),
           "BASE_PY": str(fake), "TG_BACKEND": "cpu", "TG_SUITE": "perf/my-suite.yaml", "TG_RUNNER_CLASS": "acme-h200"}
    missing = subprocess.run(["bash", str(ROOT / "ci" / "gate_steps.sh"), "find-baseline"], env=env,
                             capture_output=True, text=True, cwd=tmp_path)
    assert missing.returncode == 2 and "no such file in the workspace" in missing.stdout
    (tmp_path / "perf").mkdir()
    (tmp_path / "perf" / "my-suite.yaml").write_text("ops: {}\n")
    found = subprocess.run(["bash", str(ROOT / "ci" / "gate_steps.sh"), "find-baseline"], env=env,
                           capture_output=True, text=True, cwd=tmp_path)
    assert found.returncode == 0 and "--suite perf/my-suite.yaml" in found.stdout
