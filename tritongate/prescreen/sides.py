"""Both builds' commands at once (one core each on a 2-core runner), each logged to a file."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Mapping


def run_both(commands: Mapping[str, tuple[list[str], dict[str, str]]], logs: Mapping[str, Path],
             timeout_s: float) -> tuple[dict[str, int], dict[str, float]]:
    """Start every side's ``(argv, env)`` with its output in ``logs[side]``, wait for all within
    ``timeout_s`` together; one still running then is killed (a negative exit status). Each
    side's exit status and seconds from the start."""
    procs: dict[str, subprocess.Popen[bytes]] = {}
    files, t0, walls = [], time.monotonic(), {}
    try:
        for side, (cmd, env) in commands.items():
            files.append(open(logs[side], "w", encoding="utf-8"))
            procs[side] = subprocess.Popen(cmd, stdout=files[-1], stderr=subprocess.STDOUT, env=env)
        for side, proc in procs.items():
            try:
                proc.wait(timeout=max(timeout_s - (time.monotonic() - t0), 1.0))
            except subprocess.TimeoutExpired:
                pass  # killed below
            walls[side] = round(time.monotonic() - t0, 3)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        for f in files:
            f.close()
    return {side: proc.returncode for side, proc in procs.items()}, walls
