"""Both builds' commands at once, with one time bound for both."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tritongate.prescreen.sides import run_both


def test_each_side_logs_and_a_side_past_the_bound_is_killed(tmp_path: Path) -> None:
    env = dict(os.environ)
    commands = {"base": ([sys.executable, "-c", "print('compiled')"], env),
                "cand": ([sys.executable, "-c", "import time; time.sleep(30)"], env)}
    logs = {side: tmp_path / f"{side}.log" for side in commands}
    codes, walls = run_both(commands, logs, timeout_s=1.0)
    assert codes["base"] == 0 and codes["cand"] < 0  # killed
    assert logs["base"].read_text() == "compiled\n" and set(walls) == {"base", "cand"}
