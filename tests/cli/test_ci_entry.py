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
