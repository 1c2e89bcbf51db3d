"""The parent's handle on one worker process: start, ask, wait with a deadline, kill.

A worker runs in its own process group (``start_new_session``), so a kill reaches
everything it started (compiler subprocesses too) and a Ctrl-C on the terminal reaches only
the parent, which then stops the workers itself.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from tritongate.childenv import die_with_parent
from tritongate.linepipe import LineReader, LineTooLong
from tritongate.pair.protocol import MAX_LINE, decode, encode

TERM_GRACE_S = 2.0
# A worker's start-up (importing torch and triton, a device context, planning the suite) is
# waited on for the row timeout, never less than the floor (a cold import takes tens of
# seconds on a busy runner) nor more than the ceiling: a hanging interpreter is given up on
# in a time the user chose, not a fixed ten minutes.
STARTUP_FLOOR_S = 60.0
STARTUP_CEILING_S = 600.0
STARTUP_COMMANDS = ("init", "plan")


def startup_timeout(row_timeout_s: float) -> float:
    """Seconds to wait for a worker's start-up, from ``--row-timeout``."""
    return min(STARTUP_CEILING_S, max(STARTUP_FLOOR_S, float(row_timeout_s)))


class WorkerFailure(Exception):
    """The worker could not answer: it died, hung, or its device context is gone."""

    def __init__(self, side: str, reason: str, *, kind: str) -> None:
        super().__init__(f"{side} worker {reason}")
        self.side = side
        self.reason = reason
        self.kind = kind  # "died" | "timeout" | "fatal"


class WorkerError(Exception):
    """The worker answered with an error (``kind``: row, preflight, usage)."""

    def __init__(self, side: str, answer: Mapping[str, Any]) -> None:
        super().__init__(str(answer.get("error", "unknown error")))
        self.side = side
        self.kind = str(answer.get("kind", "row"))
        self.check = answer.get("check")


@dataclass(frozen=True)
class Pending:
    """A request sent to a worker whose answer is still to be read."""

    seq: int
    cmd: str
    timeout_s: float
    deadline: float  # time.monotonic() by which the answer must be in


@dataclass(frozen=True)
class Answer:
    """One worker's answer to a request of ``ask_all``: its result, or why there is none."""

    result: dict[str, Any] | None
    error: WorkerFailure | WorkerError | None
    seconds: float  # from the request's send to its answer being read


def ask_all(requests: Sequence[tuple[Any, str, float, Mapping[str, Any]]]) -> list[Answer]:
    """``(worker, cmd, timeout_s, args)`` each: every request is sent before any answer is
    read, so the workers work side by side; a failure is returned in its place, not raised
    (a ``WorkerFailure`` has killed its worker, as in ``call``)."""
    sent: list[tuple[Pending | WorkerFailure, float]] = []
    for worker, cmd, timeout_s, args in requests:
        start = time.perf_counter()
        try:
            sent.append((worker.send(cmd, timeout_s, **args), start))
        except WorkerFailure as exc:
            sent.append((exc, start))
    answers = []
    for (worker, *_), (pending, start) in zip(requests, sent):
        result, error = None, pending if isinstance(pending, WorkerFailure) else None
        if error is None:
            try:
                result = worker.receive(pending)
            except (WorkerFailure, WorkerError) as exc:
                error = exc
        answers.append(Answer(result, error, time.perf_counter() - start))
    return answers


@dataclass
class WorkerSpec:
    side: str
    argv: list[str]
    env: dict[str, str]
    log_path: Path


class WorkerProcess:
    def __init__(self, spec: WorkerSpec) -> None:
        self.spec = spec
        self.side = spec.side
        self._proc: subprocess.Popen[bytes] | None = None
        self._lines: LineReader | None = None
        self._seq = 0
        self.starts = 0

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        self.spec.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.spec.log_path, "ab")
        try:
            log.write(f"--- worker start {self.starts + 1}: {' '.join(self.spec.argv)}\n".encode())
            log.flush()
            self._proc = subprocess.Popen(self.spec.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=log, env=self.spec.env, start_new_session=True,
                                          preexec_fn=die_with_parent)
        finally:
            log.close()
        assert self._proc.stdout is not None
        self._lines = LineReader(self._proc.stdout.fileno(), MAX_LINE)
        self.starts += 1

    def call(self, cmd: str, timeout_s: float, **args: Any) -> dict[str, Any]:
        """Send one request and wait for its answer. Raises ``WorkerFailure`` (the worker is
        then killed) or ``WorkerError`` (the worker is fine)."""
        return self.receive(self.send(cmd, timeout_s, **args))

    def send(self, cmd: str, timeout_s: float, **args: Any) -> Pending:
        """Send one request without waiting: the parent can ask several workers at once and
        collect each answer with ``receive`` (their deadlines run from here)."""
        if not self.alive:
            raise WorkerFailure(self.side, self._death(), kind="died")
        self._seq += 1
        try:
            assert self._proc is not None and self._proc.stdin is not None
            self._proc.stdin.write(encode({"seq": self._seq, "cmd": cmd, "args": args}))
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self.kill()
            raise WorkerFailure(self.side, self._death(), kind="died") from None
        return Pending(self._seq, cmd, timeout_s, time.monotonic() + timeout_s)

    def receive(self, pending: Pending) -> dict[str, Any]:
        """The answer to ``pending``; raises as ``call`` does."""
        answer = self._read(pending.seq, pending.deadline, pending.cmd, pending.timeout_s)
        if not answer.get("ok"):
            if answer.get("kind") == "fatal":
                self.kill()
                raise WorkerFailure(self.side, f"hit a fatal device error: {answer.get('error')}", kind="fatal")
            raise WorkerError(self.side, answer)
        return answer.get("result") or {}

    def _read(self, seq: int, deadline: float, cmd: str, timeout_s: float) -> dict[str, Any]:
        assert self._lines is not None
        while True:
            try:
                line = self._lines.read_line(deadline)
            except LineTooLong:
                self.kill()
                raise WorkerFailure(self.side, "sent an oversized answer", kind="died") from None
            except EOFError:
                self.kill()
                raise WorkerFailure(self.side, self._death(), kind="died") from None
            if line is None:
                self.kill()
                bound = (f"its start-up, bounded by --row-timeout (at least {STARTUP_FLOOR_S:.0f} s, at most "
                         f"{STARTUP_CEILING_S:.0f} s)") if cmd in STARTUP_COMMANDS else "--row-timeout"
                raise WorkerFailure(self.side, f"hung: no answer to {cmd!r} within {timeout_s:.0f} s ({bound})",
                                    kind="timeout")
            try:
                message = decode(line)
            except ValueError:
                self.kill()
                raise WorkerFailure(self.side, f"wrote something that is not a protocol message on its "
                                               f"answer channel: {line[:120]!r} (does this interpreter print "
                                               "at start-up, e.g. from sitecustomize?)", kind="died") from None
            if message.get("seq") == seq:
                return message
            # else an answer to a request we gave up on

    def _death(self) -> str:
        rc = self._proc.poll() if self._proc else None
        if rc is None:
            return "stopped answering"
        if rc < 0:
            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = f"signal {-rc}"
            what = f"died ({name})"
        else:
            what = f"exited with code {rc}"
        return f"{what}; last log lines: {self.log_tail()}"

    def log_tail(self, lines: int = 3) -> str:
        try:
            text = self.spec.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "(no log)"
        return " | ".join(line.strip() for line in text[-lines:]) or "(empty log)"

    def kill(self) -> None:
        """SIGTERM to the worker's process group, SIGKILL after a grace period (always, to the
        whole group: the leader may be gone while something it started is not); reap it."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=TERM_GRACE_S)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=10.0)
        except subprocess.TimeoutExpired:
            pass
        for stream in (proc.stdin, proc.stdout):
            try:
                if stream:
                    stream.close()
            except OSError:
                pass

    def close(self, timeout_s: float = 10.0) -> None:
        """Ask an idle worker to exit; kill it if it does not. Never raises."""
        if self.alive:
            try:
                self.call("shutdown", timeout_s)
                assert self._proc is not None
                self._proc.wait(timeout=timeout_s)
            except Exception:  # noqa: BLE001 - it is killed below either way
                pass
        self.kill()
