"""A partner process that takes a turn on the GPU before each capture, so that a process
measuring alone times its graphs at the level paired workers do.

A process's CUDA graphs of small kernels replay ~0.18 µs a node slower once about three graphs
have been made since the GPU last switched to another context; another process's work on the
GPU (or a context created or destroyed) brings every graph back to the fast level, and making
graphs ends it again (H100s, driver 580: bench/results/2026-12-06_h100i_launch_state_switch.md).
Paired workers alternate on the GPU round by round, so both sides time at the fast level; a
record, a replay, a batch worker or the calibration's aim, measuring alone and capturing a graph
every round, would time at the slow one. With a partner's turn (one tiny kernel in its own
context) before every capture, no measurement ever has more than one graph made since a
switch, wherever it runs.

``TRITONGATE_GPU_TURNS=0`` measures without a partner (every round then at the slow level).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from typing import Any, Callable, Mapping

TURNS_ENV = "TRITONGATE_GPU_TURNS"
START_TIMEOUT_S = 180.0  # importing torch and making a context on a busy host
TURN_TIMEOUT_S = 30.0

# One tiny kernel on request, on the same device (the same CUDA_VISIBLE_DEVICES and index).
PARTNER_PROGRAM = """\
import sys
import torch
device = torch.device(sys.argv[1], int(sys.argv[2]))
api = getattr(torch, sys.argv[1])
x = torch.zeros(1, device=device)
api.synchronize(device)
sys.stdout.write("ready\\n"); sys.stdout.flush()
for _ in sys.stdin:
    x.add_(1)
    api.synchronize(device)
    sys.stdout.write("ok\\n"); sys.stdout.flush()
"""


def turns_requested(environ: Mapping[str, str] | None = None) -> bool:
    return (os.environ if environ is None else environ).get(TURNS_ENV, "1") != "0"


class GpuTurns:
    """The partner: started at once (it imports torch while the caller does its own start-up),
    waited for at the first turn. A partner that fails or dies stops taking turns and says why
    in ``state()``: measurements go on, their per-round launch-state readings show the level."""

    def __init__(self, api: str, index: int, *, argv: list[str] | None = None,
                 env: Mapping[str, str] | None = None, clock: Callable[[], float] | None = None) -> None:
        from tritongate.childenv import build_env

        self.turns = 0
        self.failure: str | None = None
        self._ready = False
        self._argv = argv or [sys.executable, "-c", PARTNER_PROGRAM, api, str(index)]
        # a file, not a pipe: a partner that warns a lot never blocks on a full pipe
        self._stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
        try:  # the partner is this tool's own program: no runner file commands or tokens for it
            self._proc: subprocess.Popen[str] | None = subprocess.Popen(
                self._argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, text=True,
                env=build_env(os.environ if env is None else env), start_new_session=True)
        except OSError as exc:
            self._proc = None
            self.failure = f"the partner could not start: {exc}"

    def _answer(self, timeout_s: float) -> str:
        """One line from the partner, or '' when it is gone or silent past ``timeout_s``."""
        import selectors

        assert self._proc is not None and self._proc.stdout is not None
        with selectors.DefaultSelector() as sel:
            sel.register(self._proc.stdout, selectors.EVENT_READ)
            if not sel.select(timeout_s):
                return ""
        return self._proc.stdout.readline().strip()

    def _fail(self, why: str) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None
        self._stderr.seek(0)
        tail = self._stderr.read().strip().splitlines()[-1:]
        self.failure = why + (f" ({tail[0][:300]})" if tail else "")

    def take_turn(self) -> bool:
        """Have the partner run its kernel and wait for it; False when there is no partner."""
        if self._proc is None:
            return False
        try:
            if not self._ready:
                if self._answer(START_TIMEOUT_S) != "ready":
                    self._fail(f"the partner did not start within {START_TIMEOUT_S:.0f} s")
                    return False
                self._ready = True
            assert self._proc.stdin is not None
            self._proc.stdin.write("turn\n")
            self._proc.stdin.flush()
            if self._answer(TURN_TIMEOUT_S) != "ok":
                self._fail(f"the partner stopped answering after {self.turns} turns")
                return False
        except (OSError, ValueError) as exc:  # a closed pipe: the partner died
            self._fail(f"the partner died after {self.turns} turns: {exc}")
            return False
        self.turns += 1
        return True

    def state(self) -> dict[str, Any]:
        return {"partner": self.failure is None, "turns": self.turns, "failure": self.failure}

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            try:
                if proc.stdin is not None:
                    proc.stdin.close()  # the partner's loop ends at end of input
                proc.wait(timeout=10)
            except (subprocess.SubprocessError, OSError):
                proc.kill()
                proc.wait()
        self._stderr.close()
