"""What the bench scripts share: run a command, time it, keep its stderr in a log file; time a
launch by CUDA-graph replay; write a result's JSON and Markdown."""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any, Callable


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


def launch_graph(fn: Callable[[], None], launches: int) -> Any:
    """``fn`` once (compile, first touch), then a CUDA graph of ``launches`` calls of it."""
    import torch

    fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(launches):
            fn()
    return graph


def graph_sample_us(graph: Any, launches: int) -> float:
    """One replay of ``graph`` between two events: µs per launch."""
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1000 / launches


def graph_us_per_launch(fn: Callable[[], None], launches: int, reps: int) -> float:
    """``fn`` once (compile, first touch), then a CUDA graph of ``launches`` calls replayed
    once and then ``reps`` times, each between two events: the median per launch, in µs."""
    import torch

    graph = launch_graph(fn, launches)
    graph.replay()
    torch.cuda.synchronize()
    return statistics.median(graph_sample_us(graph, launches) for _ in range(reps))


def write_results(out: Path, name: str, doc: Any, lines: list[str]) -> None:
    """``out/<name>.json`` and ``out/<name>.md`` (the lines), and the lines on stdout."""
    (out / f"{name}.json").write_text(json.dumps(doc, indent=1))
    (out / f"{name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
