"""What the bench scripts share: run a command, time it, keep its stderr in a log file."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path


def timed(cmd: list[str], log: Path, *, env: dict[str, str] | None = None,
          timeout: float | None = None) -> tuple[int, float, list[str]]:
    """(exit code, wall seconds, stdout lines); 124 and no lines when ``timeout`` ran out."""
    t0 = time.perf_counter()
    with open(log, "w") as err:
        try:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=err, text=True, timeout=timeout,
                                  env={**os.environ, **(env or {})})
        except subprocess.TimeoutExpired:
            return 124, time.perf_counter() - t0, []
    return proc.returncode, time.perf_counter() - t0, proc.stdout.strip().splitlines()


def fresh_work_dir(name: str) -> Path:
    """``$TMPDIR/<name>`` (default /tmp), emptied: a bench run never reads an earlier one's files."""
    work = Path(os.environ.get("TMPDIR", "/tmp")) / name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    return work
