"""The IR tests that compile real kernels for cuda:90 (``tests/ir/compiled/check_*.py``) run
in a fresh process without the interpreter: once a test session has run kernels under
TRITON_INTERPRET=1, Triton's language module is the interpreter's and real compiles fail."""

from __future__ import annotations

import pytest
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_compiling_ir_tests_pass_in_a_process_of_their_own():
    env = {**os.environ, "TRITON_INTERPRET": "0"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "python_files=check_*.py",
                           "-o", "addopts=", str(ROOT / "tests" / "ir" / "compiled")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and " failed" not in done.stdout
