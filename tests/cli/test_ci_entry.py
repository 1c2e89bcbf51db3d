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


def test_ci_entry_points_pass_preflight_failures_through(tmp_path):
    rep = _ci("replay_candidate.py", str(tmp_path / "nope"), "--suite", "smoke", "--backend", "cpu",
              "--out", str(tmp_path / "cand"), "--base-python", sys.executable, "--cand-python", sys.executable)
    assert rep.returncode == 3 and "check=replay_from" in rep.stderr
    usage = _ci("replay_candidate.py")
    assert usage.returncode == 2 and "--base-python and --cand-python required" in usage.stderr


def test_record_baseline_refuses_to_replay_as_a_usage_error(tmp_path):
    rec = _ci("record_baseline.py", "--suite", "smoke", "--out", str(tmp_path), "--replay-from", str(tmp_path))
    assert rec.returncode == 2 and "replay_candidate.py" in rec.stderr
