"""An op attempt's process: a fresh one each time (``run_attempt``), or a device lane's reused worker.

Either runs in a new session, so a terminal's Ctrl-C reaches the batch, not the op, and the op dies
with everything it started as one process group: SIGTERM, a grace period, SIGKILL. While an attempt
runs, ``.running`` in its op folder names its group, for ``--resume`` to end what a batch killed with
``kill -9`` left holding the device (the attempt's process itself dies with the batch's device thread:
``die_with_parent``; what it started may not). A ``Lane`` (the default; not with ``--fresh-process``) hands its attempts to one
worker process (``tritongate.batch.worker``), replaced after an attempt that did not exit 0 (a CUDA
error is sticky) or left processes behind (besides the GPU-turn partner the worker names as its
own), after ``max_attempts``, and for another interpreter,
environment or private flag_gems tuner DB (what a module reads at import stays).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from tritongate.atomicio import write_json_atomic
from tritongate.autotune.tuner_cache import WORKER_DB_ENV, isolation_requested
from tritongate.childenv import die_with_parent
from tritongate.errors import UsageError
from tritongate.linepipe import LineReader, LineTooLong

MAX_REPLY = 1 << 16  # a worker's answer is one short JSON line

RUNNING = ".running"
POLL_S = 0.05
WORKER_MODULE = "tritongate.batch.worker"


@dataclass(frozen=True)
class ProcResult:
    rc: int  # negative: killed by that signal
    wall_s: float
    timed_out: bool
    interrupted: bool
    pgid: int


def _stat(pid: int) -> list[str] | None:
    """/proc/PID/stat's fields after the command name (state, ppid, pgrp, ...); None: no such process."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _start_ticks(pid: int) -> str | None:
    """The process's start time in clock ticks (Linux): tells a live orphan from a new
    process that reused its pid."""
    fields = _stat(pid)
    return fields[19] if fields else None


def _parent(pid: int) -> int | None:
    fields = _stat(pid)
    return int(fields[1]) if fields else None


def own_helpers(worker_pid: int, claimed: object) -> set[int]:
    """The helpers a worker says stay for its next attempt (its GPU-turn partner), believed
    only for its own children."""
    if not isinstance(claimed, list):
        return set()
    return {pid for pid in claimed if isinstance(pid, int) and _parent(pid) == worker_pid}


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of the group, from /proc (empty where there is none)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        fields = _stat(int(entry.name))
        if fields and int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def _group_alive(pgid: int) -> bool:
    """A group of zombies only (reaped by nobody in some containers) counts as gone."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not Path("/proc").is_dir() or bool(group_members(pgid))


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _await_gone(pgid: int) -> None:
    """Up to 5 s for a killed group's members to go (they exit asynchronously)."""
    deadline = time.monotonic() + 5.0
    while _group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(POLL_S)


def kill_group(proc: subprocess.Popen[bytes], pgid: int, grace_s: float) -> int:
    """SIGTERM to the group, up to ``grace_s`` for the leader to exit, then SIGKILL to the
    group (stragglers included); returns the leader's exit status."""
    _signal_group(pgid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)
    _signal_group(pgid, signal.SIGKILL)
    rc = proc.wait()
    _await_gone(pgid)
    return rc


def kill_leftovers(pgid: int) -> None:
    """SIGKILL to what is left of a group whose leader ended (what it started must not outlive
    it: a device held by an orphan)."""
    if _group_alive(pgid):
        _signal_group(pgid, signal.SIGKILL)


def _ending(stop: threading.Event, t0: float, timeout_s: float | None) -> str | None:
    """``interrupted`` once ``stop`` is set, ``timed_out`` past the deadline, else None."""
    if stop.is_set():
        return "interrupted"
    return "timed_out" if timeout_s is not None and time.monotonic() - t0 >= timeout_s else None


def _result(rc: int, t0: float, pgid: int, ending: str | None = None) -> ProcResult:
    return ProcResult(rc=rc, wall_s=time.monotonic() - t0, timed_out=ending == "timed_out",
                      interrupted=ending == "interrupted", pgid=pgid)


def _write_running(path: Path, pid: int, argv: Sequence[str]) -> None:
    write_json_atomic(path, {"pid": pid, "pgid": pid, "start_ticks": _start_ticks(pid), "argv": list(argv)})


def run_attempt(argv: Sequence[str], *, env: Mapping[str, str], stdout: Path, stderr: Path,
                timeout_s: float | None, grace_s: float, stop: threading.Event,
                running_file: Path | None = None) -> ProcResult:
    """Run ``argv`` to its end, its deadline (``timed_out``) or ``stop`` (``interrupted``)."""
    t0 = time.monotonic()
    with open(stdout, "wb") as out, open(stderr, "wb") as err:
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                env=dict(env), start_new_session=True, preexec_fn=die_with_parent)
    pgid = proc.pid  # a new session's leader leads its group
    if running_file is not None:
        _write_running(running_file, proc.pid, argv)
    ending = None
    try:
        while True:
            with contextlib.suppress(subprocess.TimeoutExpired):
                rc = proc.wait(timeout=POLL_S)
                break
            ending = _ending(stop, t0, timeout_s)
            if ending:
                rc = kill_group(proc, pgid, grace_s)
                break
        kill_leftovers(pgid)
    except BaseException:
        kill_group(proc, pgid, 0.0)
        raise
    finally:
        if running_file is not None:
            running_file.unlink(missing_ok=True)
    return _result(rc, t0, pgid, ending)


def reap_orphan(running_file: Path, grace_s: float) -> str | None:
    """End the process group a dead batch left running for this op (verified by its start
    time, so a reused pid is never hit); a line saying what was done, or None."""
    try:
        doc = json.loads(running_file.read_text(encoding="utf-8"))
        pid, pgid, ticks = int(doc["pid"]), int(doc["pgid"]), doc.get("start_ticks")
    except (OSError, ValueError, KeyError, TypeError):
        running_file.unlink(missing_ok=True)
        return None
    note = None
    leader = _start_ticks(pid)
    # the leader itself, or members of a group whose leader is gone (no new group can take
    # that id while they live)
    if (ticks is not None and leader == ticks) or (leader is None and Path("/proc").is_dir() and _group_alive(pgid)):
        _signal_group(pgid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while _start_ticks(pid) == ticks and time.monotonic() < deadline:
            time.sleep(POLL_S)
        _signal_group(pgid, signal.SIGKILL)
        _await_gone(pgid)
        note = f"ended process group {pgid} left running by an earlier batch process"
    running_file.unlink(missing_ok=True)
    return note


def worker_call(argv: Sequence[str], pythons: Sequence[str]) -> dict[str, Any] | None:
    """What a worker runs for ``argv`` (module or script, arguments), or None when the command
    is not ``PYTHON -m MODULE ...`` / ``PYTHON SCRIPT.py ...`` with one of ``pythons``."""
    argv = [str(a) for a in argv]
    if len(argv) < 2 or argv[0] not in pythons:
        return None
    if argv[1] == "-m" and len(argv) >= 3:
        return {"module": argv[2], "args": argv[3:]}
    if argv[1].endswith(".py") and not argv[1].startswith("-"):
        return {"path": argv[1], "args": argv[2:]}
    return None


class _Worker:
    """One worker process, its pipes, how many attempts it ran and its private tuner DB, if any."""

    def __init__(self, key: tuple[Any, ...], env: Mapping[str, str], stdout: Path, stderr: Path) -> None:
        self.key = key  # (python, environment items, a private tuner DB?): what the worker is for
        python, _, isolated = key
        # flag_gems reads its DB's location once, at import: a worker's ops share one, made
        # here and deleted with the worker (see tuner_cache)
        self.tuner_dir = tempfile.mkdtemp(prefix="tritongate-worker-tuner-") if isolated else None
        spawn_env = {**env, WORKER_DB_ENV: f"sqlite:///{self.tuner_dir}/TunedConfig.db"} if isolated else dict(env)
        req_r, self.req_w = os.pipe()
        self.rep_r, rep_w = os.pipe()
        try:
            # started with the first attempt's logs: a worker that cannot even start says why there
            with open(stdout, "ab") as out, open(stderr, "ab") as err:
                self.proc = subprocess.Popen([python, "-m", WORKER_MODULE, str(req_r), str(rep_w)],
                                             stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=spawn_env,
                                             start_new_session=True, pass_fds=(req_r, rep_w),
                                             preexec_fn=die_with_parent)
        except BaseException:
            self.close_pipes()
            raise
        finally:
            os.close(req_r)
            os.close(rep_w)
        self.pgid = self.proc.pid  # a new session's leader leads its group
        self.attempts = 0
        self._lines = LineReader(self.rep_r, MAX_REPLY)

    def reply(self, timeout: float) -> dict[str, Any] | None:
        """The answer, if one came within ``timeout``; ``{}`` once the worker closed its end
        (or wrote something that is not an answer)."""
        try:
            line = self._lines.read_line(time.monotonic() + timeout)
        except (EOFError, LineTooLong):
            return {}
        if line is None:
            return None
        try:
            doc = json.loads(line)
        except ValueError:
            return {}
        return doc if isinstance(doc, dict) and isinstance(doc.get("rc"), int) else {}

    def close_pipes(self) -> None:
        """Once the worker is gone: its pipes closed, its tuner DB deleted."""
        for fd in (self.req_w, self.rep_r):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.req_w = self.rep_r = -1
        if self.tuner_dir is not None:
            shutil.rmtree(self.tuner_dir, ignore_errors=True)
            self.tuner_dir = None


class Lane:
    """The worker of one device lane (one thread of the scheduler uses it)."""

    def __init__(self, pythons: Sequence[str], *, max_attempts: int) -> None:
        """``max_attempts``: per worker before it is replaced (bounds leaks; 0: fresh processes)."""
        self.pythons = tuple(str(p) for p in pythons)
        self.max_attempts = max_attempts
        self.worker: _Worker | None = None
        self.started = 0  # workers started (for the tests and the bench)

    def run_attempt(self, argv: Sequence[str], *, env: Mapping[str, str], stdout: Path, stderr: Path,
                    timeout_s: float | None, grace_s: float, stop: threading.Event,
                    running_file: Path | None = None) -> ProcResult:
        """``run_attempt`` through this lane's worker (see the module docstring)."""
        call = worker_call(argv, self.pythons) if self.max_attempts > 0 else None
        if call is None:
            return run_attempt(argv, env=env, stdout=stdout, stderr=stderr, timeout_s=timeout_s,
                               grace_s=grace_s, stop=stop, running_file=running_file)
        t0 = time.monotonic()
        for path in (stdout, stderr):
            path.write_bytes(b"")  # the attempt's logs, empty, as a fresh process's are
        try:
            isolated = isolation_requested("--isolate-tuner-cache" in argv, env)
        except UsageError:  # the run refuses a bad value itself
            isolated = False
        key = (str(argv[0]), tuple(sorted(env.items())), isolated)
        try:
            w = self._hand_over(key, env, {**call, "stdout": str(stdout), "stderr": str(stderr)}, grace_s,
                                argv, running_file)
            return self._wait(w, t0, timeout_s, grace_s, stop)
        except BaseException:
            self._kill()
            raise
        finally:
            if running_file is not None:
                running_file.unlink(missing_ok=True)

    def _hand_over(self, key: tuple[Any, ...], env: Mapping[str, str], request: Mapping[str, Any], grace_s: float,
                   argv: Sequence[str], running_file: Path | None) -> _Worker:
        """Hand the attempt to a worker (``.running`` names it first); the worker it went to."""
        for retry in (False, True):
            started = self.started
            if self.worker is not None and (self.worker.proc.poll() is not None or self.worker.key != key):
                self.close(grace_s)
            if self.worker is None:
                self.worker = _Worker(key, env, Path(request["stdout"]), Path(request["stderr"]))
                self.started += 1
            w = self.worker
            w.attempts += 1
            if running_file is not None:
                _write_running(running_file, w.proc.pid, argv)
            try:  # one short line: fits the pipe
                os.write(w.req_w, json.dumps({**request, "last": w.attempts >= self.max_attempts}).encode() + b"\n")
            except BrokenPipeError:
                if self.started == started and not retry:  # an old one died idle: the attempt never ran there
                    self.close(grace_s)
                    continue
                # a new one that could not even start: its status and its stderr tell why
            return w
        raise AssertionError("unreachable")

    def _wait(self, w: _Worker, t0: float, timeout_s: float | None, grace_s: float,
              stop: threading.Event) -> ProcResult:
        ending = None
        answer: dict[str, Any] | None = None
        while True:
            if answer is None:
                answer = w.reply(POLL_S)
                if answer and answer["rc"] == 0 and w.attempts < self.max_attempts:
                    # exited 0 in a worker that stays, unless it left processes behind
                    own = {w.proc.pid} | own_helpers(w.proc.pid, answer.get("keep"))
                    if [pid for pid in group_members(w.pgid) if pid not in own]:
                        self._kill()
                    return _result(answer["rc"], t0, w.pgid)
                # else it ends itself after this attempt: wait for that, as for a fresh process
            else:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    w.proc.wait(timeout=POLL_S)
            rc = w.proc.poll()
            if rc is not None:  # it ended: after its answer, or died during the attempt
                break
            ending = _ending(stop, t0, timeout_s)
            if ending:
                rc = kill_group(w.proc, w.pgid, grace_s)
                break
        kill_leftovers(w.pgid)  # the worker is gone; what the attempt started must not outlive it
        w.close_pipes()
        self.worker = None
        return _result(rc, t0, w.pgid, ending)

    def _kill(self) -> None:
        if self.worker is not None:
            w, self.worker = self.worker, None
            kill_group(w.proc, w.pgid, 0.0)
            w.close_pipes()

    def close(self, grace_s: float) -> None:
        """End the worker: closing its request pipe ends an idle one; one still there after ``grace_s``
        gets the group's SIGTERM, grace, SIGKILL; what it left running goes with it."""
        w = self.worker
        if w is not None:
            if w.req_w >= 0:
                os.close(w.req_w)
                w.req_w = -1
            try:
                w.proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                kill_group(w.proc, w.pgid, grace_s)
            kill_leftovers(w.pgid)
            w.close_pipes()
            self.worker = None
