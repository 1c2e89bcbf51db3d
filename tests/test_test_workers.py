"""The suite runs one worker per core, but never the GPU tests: they time kernels on one GPU."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("expr,workers", [("gpu", 0), ("gpu and not slow", 0), ("not gpu", None),
                                          ("not slow and not gpu", None), ("not slow", None)])
def test_a_run_that_selects_gpu_tests_runs_them_in_one_process(expr, workers):
    from tests.conftest import pytest_xdist_auto_num_workers

    class Config:
        def getoption(self, name, default=None):
            assert name == "markexpr"
            return expr

    assert pytest_xdist_auto_num_workers(Config()) == workers


@pytest.mark.slow
def test_the_gpu_selection_starts_no_worker():
    # without a GPU the selected tests are skipped, which is enough to see how they would run
    done = subprocess.run([sys.executable, "-m", "pytest", "-m", "gpu", "-rs", "tests/gpu"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 5), done.stdout[-2000:] + done.stderr[-2000:]
    assert "bringing up nodes" not in done.stdout + done.stderr and "test_cuda_timers.py" in done.stdout
    spread = subprocess.run([sys.executable, "-m", "pytest", "-m", "not gpu", "-q", "-n", "2",
                             "tests/test_argtypes.py"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert spread.returncode == 0 and "bringing up nodes" in spread.stdout + spread.stderr
