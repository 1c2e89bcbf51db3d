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

import atexit
import os
import subprocess
import sys
import tempfile
import time
from typing import Any, Mapping

from tritongate.linepipe import LineReader, LineTooLong

TURNS_ENV = "TRITONGATE_GPU_TURNS"
START_TIMEOUT_S = 60.0  # importing torch and making a context on a busy host
TURN_TIMEOUT_S = 30.0
MAX_LINE = 4096

# One tiny kernel on request, on the same device (the same CUDA_VISIBLE_DEVICES and index).
# Answers go to a private copy of stdout and anything a library prints goes to stderr, so
# only the partner's own words reach the parent; the working folder leaves sys.path first,
# so a source checkout there cannot shadow the installed torch.
PARTNER_PROGRAM = """\
import os, sys
if sys.path and sys.path[0] in ("", os.getcwd()):
    sys.path.pop(0)
answers = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
import torch
device = torch.device(sys.argv[1], int(sys.argv[2]))
api = getattr(torch, sys.argv[1])
x = torch.zeros(1, device=device)
api.synchronize(device)
answers.write("ready\\n")
for _ in sys.stdin:
    x.add_(1)
    api.synchronize(device)
    answers.write("ok\\n")
"""


def turns_requested(environ: Mapping[str, str] | None = None) -> bool:
    return (os.environ if environ is None else environ).get(TURNS_ENV, "1") != "0"


class GpuTurns:
    """The partner: started at once, so that it imports torch while the caller does its own
    start-up, and waited for at the first turn. A partner that fails or dies stops taking turns
    and says why in ``state()``: measurements go on, and their per-round launch-state readings
    show the level they ran at."""

    def __init__(self, api: str, index: int, *, argv: list[str] | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        from tritongate.childenv import build_env, die_with_parent

        self.turns = 0
        self.failure: str | None = None
        self._ready = False
        self._lines: LineReader | None = None
        argv = argv or [sys.executable, "-c", PARTNER_PROGRAM, api, str(index)]
        # a file, not a pipe: a partner that warns a lot never blocks on a full pipe
        self._stderr = tempfile.TemporaryFile()
        try:  # the partner is this tool's own program: no runner file commands or tokens for it
            self._proc: subprocess.Popen[bytes] | None = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                env=build_env(os.environ if env is None else env), preexec_fn=die_with_parent)
        except OSError as exc:
            self._proc = None
            self.failure = f"the partner could not start: {exc}"
        else:
            assert self._proc.stdout is not None
            self._lines = LineReader(self._proc.stdout.fileno(), MAX_LINE)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _wait_for(self, word: str, timeout_s: float) -> str:
        """Read the partner's lines until ``word``; '' when it is, 'gone' when the partner
        closed its output, 'silent' when ``timeout_s`` passed first."""
        assert self._lines is not None
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                line = self._lines.read_line(deadline)
            except EOFError:
                return "gone"
            except LineTooLong:
                continue  # a library's chatter, not an answer
            if line is None:
                return "silent"
            if line.strip() == word.encode():
                return ""

    def _fail(self, why: str) -> None:
        self._stop(kill=True)
        self._stderr.seek(0)
        tail = self._stderr.read().decode("utf-8", "replace").strip().splitlines()[-1:]
        self.failure = why + (f" ({tail[0][:300]})" if tail else "")

    def take_turn(self) -> bool:
        """Have the partner run its kernel and wait for it; False when there is no partner."""
        if self._proc is None:
            return False
        try:
            if not self._ready:
                outcome = self._wait_for("ready", START_TIMEOUT_S)
                if outcome:
                    self._fail("the partner exited before it was ready" if outcome == "gone"
                               else f"the partner was not ready within {START_TIMEOUT_S:.0f} s")
                    return False
                self._ready = True
            assert self._proc.stdin is not None
            self._proc.stdin.write(b"turn\n")
            self._proc.stdin.flush()
            outcome = self._wait_for("ok", TURN_TIMEOUT_S)
            if outcome:
                self._fail(f"the partner {'exited' if outcome == 'gone' else 'stopped answering'} "
                           f"after {self.turns} turns")
                return False
        except OSError as exc:  # a closed pipe: the partner died
            self._fail(f"the partner died after {self.turns} turns: {exc}")
            return False
        self.turns += 1
        return True

    def state(self) -> dict[str, Any]:
        return {"partner": self.failure is None, "turns": self.turns, "failure": self.failure}

    def _stop(self, *, kill: bool) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            if kill:
                proc.kill()
            elif proc.stdin is not None:
                proc.stdin.close()  # the partner's loop ends at the end of its input
            proc.wait(timeout=10)
        except (subprocess.SubprocessError, OSError):
            proc.kill()
            proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:  # a request still buffered for a partner that died
                    pass

    def close(self) -> None:
        """End the partner: at the end of its input once it is ready, at once before (a
        partner still importing torch would otherwise go on to make a context)."""
        self._stop(kill=not self._ready)
        self._stderr.close()


# One partner per process and device, kept from run to run: a batch worker's ops each make a
# device, and starting a partner (Python, torch, a CUDA context) took 2.5 s of a 3.0-3.6 s
# replay of a `pr` op on an H100 (bench/results/2026-12-06_h100k_partner_checks.md).
_partners: dict[tuple[int, str, int, str], GpuTurns] = {}


class PartnerLease:
    """One run's use of its process's partner: the turns it counts, and a stop it reports, are
    this run's own."""

    def __init__(self, partner: GpuTurns) -> None:
        self._partner = partner
        self.turns = 0
        self.failure: str | None = None

    @property
    def pid(self) -> int | None:
        return self._partner.pid

    def take_turn(self) -> bool:
        if self.failure is not None:
            return False
        if self._partner.take_turn():
            self.turns += 1
            return True
        self.failure = f"{self._partner.failure or 'the partner was closed'} (this run: {self.turns} turns)"
        return False

    def state(self) -> dict[str, Any]:
        return {"partner": self.failure is None, "turns": self.turns, "failure": self.failure}


def lease_partner(api: str, index: int, visibility_var: str = "CUDA_VISIBLE_DEVICES") -> PartnerLease:
    """The process's partner for this device, started now where there is none, or the last one
    failed or died; ended when the process exits. One at a time: a partner for another device
    or visibility (an earlier run's) is ended, so it holds no context on a GPU nobody here
    measures. Keyed by process too: a forked child never uses its parent's pipes."""
    me = os.getpid()
    key = (me, api, index, os.environ.get(visibility_var, ""))
    for other in [k for k in _partners if k[0] == me and k != key]:
        _partners.pop(other).close()
    partner = _partners.get(key)
    if partner is None or partner.failure is not None or not partner.alive:
        if partner is not None:
            partner.close()
        partner = _partners[key] = GpuTurns(api, index)
        atexit.register(partner.close)
    return PartnerLease(partner)


def partner_pids() -> list[int]:
    """This process's live partners: a batch worker names them to its lane as its own, so that
    they are not taken for processes an op left behind."""
    me = os.getpid()
    return sorted(pid for key, partner in _partners.items()
                  if key[0] == me and partner.alive and (pid := partner.pid) is not None)
