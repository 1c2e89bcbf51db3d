"""The real pass blame behind the ``blame`` golden verdict: how it was made, and how to make it again.

A real Triton source change (``bench/patches/drop-coalesce.patch``: the NVIDIA backend no longer
runs ``tritongpu-coalesce``) is overlaid on the installed Triton (``tritongate overlay``'s
``make_overlay``). Both builds recompile the launched variants of the CPU-captured record
``examples/ir-index/pr-cpu-capture`` ahead of time for cuda:90 (``tritongate ir``, as the
pre-screen runs it: no GPU needed), and ``tritongate ir-diff BASE CAND --blame 4`` compiles the
first four changed variants under both builds with every pass dumped and writes ``blame.json``.

Committed (``golden/blame/``): that ``blame.json`` and the diff's ``index.tsv`` (every variant
compared, its status and rows), as written. Remade with::

    .venv/bin/python -m tests.report.blame_fixture          # about a minute on two cores

and checked against the committed copy by ``test_blame_fixture.py`` (marked ``slow``).
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RECORD = ROOT / "examples" / "ir-index" / "pr-cpu-capture"
PATCH = ROOT / "bench" / "patches" / "drop-coalesce.patch"
FIXTURE = Path(__file__).parent / "golden" / "blame"
BLAME_N = 4
TARGET = "cuda:90"


def _ir(python: str, out: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRITON_DISABLE_LINE_INFO": "1"}
    env.pop("TRITON_INTERPRET", None)  # ahead-of-time compiles: the interpreter would make nothing
    env["TRITON_CACHE_DIR"] = str(out.with_name(out.name + ".triton-cache"))  # each build compiles for real
    done = subprocess.run([python, "-m", "tritongate", "ir", "--from", str(RECORD), "--target", TARGET,
                           "--out", str(out)], env=env, capture_output=True, text=True, timeout=1800, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"{python} -m tritongate ir failed (exit {done.returncode}): {done.stderr[-2000:]}")


def produce(work: Path) -> Path:
    """Both builds' ``tritongate ir`` folders and their ``ir-diff --blame``; returns the diff folder."""
    from tritongate.cli import main
    from tritongate.overlay import make_overlay

    work.mkdir(parents=True, exist_ok=True)
    build = make_overlay(sys.executable, [PATCH], work / "overlay")
    _ir(sys.executable, work / "base")
    _ir(str(build.python), work / "cand")
    out = work / "ir-diff"
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["ir-diff", str(work / "base"), str(work / "cand"), "--out", str(out), "--blame", str(BLAME_N)])
    if code != 0:
        raise RuntimeError(f"tritongate ir-diff --blame exited {code}")
    return out


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="blame-fixture-"))
    try:
        out = produce(work)
        FIXTURE.mkdir(parents=True, exist_ok=True)
        for name in ("blame.json", "index.tsv"):
            shutil.copyfile(out / name, FIXTURE / name)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"wrote {FIXTURE}/blame.json and index.tsv")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
