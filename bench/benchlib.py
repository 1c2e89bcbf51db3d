"""What the bench scripts share: run a command, time it, keep its stderr in a log file."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any


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


def software() -> dict[str, Any]:
    """What a result was measured with: python, torch, CUDA, triton, the GPU and its driver."""
    info: dict[str, Any] = {"python": platform.python_version()}
    try:
        import torch
        import triton

        info.update(torch=torch.__version__, cuda=torch.version.cuda, triton=triton.__version__,
                    gpu=torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)
    except Exception as exc:  # noqa: BLE001 - a result without a GPU still says what it had
        info["error"] = str(exc)
    try:
        info["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                        capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception:  # noqa: BLE001 - no nvidia-smi here
        info["driver"] = None
    return info


def software_line(info: dict[str, Any]) -> str:
    return (f"{info.get('gpu')}, driver {info.get('driver')}, torch {info.get('torch')}, "
            f"triton {info.get('triton')}")
