"""A device lane's persistent worker (the batch's side): op attempts without a fresh process each.

Each op of a batch used to be a fresh ``python -m tritongate run`` process, paying Python's
start and ``import torch, triton, tritongate.runner`` every time (seconds on a CPU, more with
a CUDA context). A ``Lane`` (one per device slot of the scheduler) keeps one worker process
(``tritongate.batch.worker``) and hands it attempt after attempt; ``run_attempt`` has
``proc.run_attempt``'s signature and result, so ``opflow`` classifies alike.

What stays as with a fresh process, and how:

- logs: the worker writes the attempt's stdout and stderr at the descriptor level into the
  same ``attempt-NN`` files; the exit status is the one the command would have had;
- a crash loses one op: a worker that dies during an attempt (a signal, ``os._exit``, the
  OOM killer) gives that attempt its status (negative: the signal), as a process would; the
  next attempt starts a new worker;
- the deadline and a stop kill the worker's whole process group (``proc.kill_group``:
  SIGTERM, grace, SIGKILL); ``.running`` names the worker's group while an attempt runs,
  so ``--resume`` ends an orphan as before; an idle worker whose batch died ends itself
  (its request pipe closes);
- hygiene: a worker that exited non-zero (a CUDA error is sticky in a process) ends itself;
  one that ran ``max_attempts`` attempts is replaced; one whose attempt left processes in
  its group is killed with them (what an op starts must not outlive it); the worker puts
  back argv, cwd, ``os.environ`` and the like after each attempt (see ``worker``).

What does not: imported modules and their in-process caches persist from op to op (Triton's
compiled kernels, torch's allocator; ``tritongate run`` clears the autotuners' caches
itself), threads an op leaves keep running, and ``atexit`` handlers run when the worker
ends. A worker is keyed by interpreter and environment: what must be set before torch or
CUDA initialises (``CUDA_VISIBLE_DEVICES``) is fixed per lane, so a lane never shares one.
Module state read from the environment at import is the exception the worker must own:
flag_gems reads its tuner DB's location once, so with ``--isolate-tuner-cache`` the worker
gets a private DB of its own (deleted when it ends) that its ops share, instead of one per
run that the first op would delete under the next (``autotune.tuner_cache``).

Only a command of the form ``PYTHON -m MODULE ...`` or ``PYTHON SCRIPT.py ...`` (PYTHON:
the batch's ``--python``) runs in a worker; anything else, and ``max_attempts=0`` (the
default), runs as a fresh process per attempt (``proc``).

Decision: a fresh process per op is the default, the worker is ``--reuse-worker``. The worker
removes almost all of an op's start-up (on an H200 4.6–5.0 s → 0.14–0.23 s per op after the
first, bench/results/2026-12-03_h200_batch_worker.md; on 2 CPU cores 4.2 s → 0.03 s,
..._cpu_scale_batch_worker.md), and what the batch records (rows, logs, exit status,
classification, resume) stays that of a fresh process (tests/batch/test_worker.py). But it
moves rows: on the H200 the ops after a worker's first measure 0.13–0.18 µs a launch slower
(7–17 % on kernels of 1–2 µs; a plain torch graph in the same process slows alike), the
same on repeated batches, and an op run first in a worker measures as in a fresh process
(bench/results/2026-12-03_h200_worker_vs_fresh.md). A record's times would then depend on
the ops before each one, and would not compare with a fresh process's.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from tritongate.autotune.tuner_cache import WORKER_DB_ENV, isolation_requested
from tritongate.batch.proc import (POLL_S, ProcResult, _write_running, group_members, kill_group, kill_leftovers,
                                   reason_to_end, run_attempt)
from tritongate.errors import UsageError

WORKER_MODULE = "tritongate.batch.worker"


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


def isolates_tuner_cache(argv: Sequence[str], env: Mapping[str, str]) -> bool:
    """Whether the attempt asks for a private FlagGems tuner DB (the run refuses a bad value itself)."""
    try:
        return isolation_requested("--isolate-tuner-cache" in argv, env)
    except UsageError:
        return False


def worker_key(python: str, env: Mapping[str, str], isolated: bool) -> tuple[Any, ...]:
    return (python, tuple(sorted(env.items())), isolated)


class _Worker:
    """One worker process, its pipes, how many attempts it ran and its private tuner DB, if any."""

    def __init__(self, python: str, env: Mapping[str, str], stdout: Path, stderr: Path, *, isolated: bool) -> None:
        # flag_gems reads its DB's location once, at import: a worker's ops share one, made
        # here and deleted with the worker (see tuner_cache)
        self.tuner_dir = tempfile.mkdtemp(prefix="tritongate-worker-tuner-") if isolated else None
        spawn_env = dict(env)
        if self.tuner_dir is not None:
            spawn_env[WORKER_DB_ENV] = f"sqlite:///{self.tuner_dir}/TunedConfig.db"
        req_r, self.req_w = os.pipe()
        self.rep_r, rep_w = os.pipe()
        try:
            # started with the first attempt's logs: a worker that cannot even start says why there
            with open(stdout, "ab") as out, open(stderr, "ab") as err:
                self.proc = subprocess.Popen([python, "-m", WORKER_MODULE, str(req_r), str(rep_w)],
                                             stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=spawn_env,
                                             start_new_session=True, pass_fds=(req_r, rep_w))
        except BaseException:
            for fd in (self.req_w, self.rep_r):
                os.close(fd)
            self.discard_tuner_dir()
            raise
        finally:
            os.close(req_r)
            os.close(rep_w)
        self.pgid = self.proc.pid  # a new session's leader leads its group
        self.key = worker_key(python, env, isolated)
        self.attempts = 0
        self._buffer = b""

    def send(self, doc: Mapping[str, Any]) -> None:
        os.write(self.req_w, json.dumps(doc).encode() + b"\n")  # one short line: fits the pipe

    def reply(self, timeout: float) -> dict[str, Any] | None:
        """The answer, if one came within ``timeout``; ``{}`` once the worker closed its end."""
        if b"\n" not in self._buffer:
            ready, _, _ = select.select([self.rep_r], [], [], timeout)
            if not ready:
                return None
            chunk = os.read(self.rep_r, 65536)
            if not chunk:
                return {}
            self._buffer += chunk
        line, sep, rest = self._buffer.partition(b"\n")
        if not sep:
            return None
        self._buffer = rest
        try:
            doc = json.loads(line)
        except ValueError:
            return {}
        return doc if isinstance(doc, dict) and isinstance(doc.get("rc"), int) else {}

    def close_pipes(self) -> None:
        """Once the worker is gone: its pipes closed, its tuner DB deleted."""
        for fd in (self.req_w, self.rep_r):
            try:
                os.close(fd)
            except OSError:
                pass
        self.req_w = self.rep_r = -1
        self.discard_tuner_dir()

    def discard_tuner_dir(self) -> None:
        if self.tuner_dir is not None:
            shutil.rmtree(self.tuner_dir, ignore_errors=True)
            self.tuner_dir = None

    def end(self, grace_s: float) -> None:
        """Close its request pipe (an idle worker exits); one that does not within ``grace_s``
        gets the group's SIGTERM, grace, SIGKILL."""
        if self.req_w >= 0:
            os.close(self.req_w)
            self.req_w = -1
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            kill_group(self.proc, self.pgid, grace_s)
        kill_leftovers(self.pgid)  # what it left running goes with it
        self.close_pipes()


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
        """``proc.run_attempt`` through this lane's worker (see the module docstring)."""
        call = worker_call(argv, self.pythons) if self.max_attempts > 0 else None
        if call is None:
            return run_attempt(argv, env=env, stdout=stdout, stderr=stderr, timeout_s=timeout_s,
                               grace_s=grace_s, stop=stop, running_file=running_file)
        t0 = time.monotonic()
        for path in (stdout, stderr):
            path.write_bytes(b"")  # the attempt's logs, empty, as a fresh process's are
        try:
            worker = self._start(str(argv[0]), env, call, stdout, stderr, grace_s, argv, running_file,
                                 isolated=isolates_tuner_cache(argv, env))
            return self._wait(worker, t0, timeout_s, grace_s, stop)
        except BaseException:
            self._kill(0.0)
            raise
        finally:
            if running_file is not None:
                running_file.unlink(missing_ok=True)

    def _start(self, python: str, env: Mapping[str, str], call: Mapping[str, Any], stdout: Path, stderr: Path,
               grace_s: float, argv: Sequence[str], running_file: Path | None, *, isolated: bool) -> _Worker:
        """Hand the attempt to a worker (``.running`` names it first); the worker it went to."""
        for retry in (False, True):
            started = self.started
            worker = self._worker(python, env, stdout, stderr, grace_s, isolated=isolated)
            worker.attempts += 1
            if running_file is not None:
                _write_running(running_file, worker.proc.pid, argv)
            try:
                worker.send({**call, "stdout": str(stdout), "stderr": str(stderr),
                             "last": worker.attempts >= self.max_attempts})
            except BrokenPipeError:
                if self.started == started and not retry:  # an old one died idle: the attempt never ran there
                    self._retire(grace_s)
                    continue
                # a new one that could not even start: its status and its stderr tell why
            return worker
        raise AssertionError("unreachable")

    def _worker(self, python: str, env: Mapping[str, str], stdout: Path, stderr: Path, grace_s: float, *,
                isolated: bool) -> _Worker:
        """The live worker for this interpreter, environment and tuner-DB isolation, or a new one."""
        w = self.worker
        if w is not None and (w.proc.poll() is not None or w.key != worker_key(python, env, isolated)):
            self._retire(grace_s)
        if self.worker is None:
            self.worker = _Worker(python, env, stdout, stderr, isolated=isolated)
            self.started += 1
        return self.worker

    def _wait(self, w: _Worker, t0: float, timeout_s: float | None, grace_s: float,
              stop: threading.Event) -> ProcResult:
        timed_out = interrupted = False
        answer: dict[str, Any] | None = None
        while True:
            if answer is None:
                answer = w.reply(POLL_S)
                if answer:
                    if answer["rc"] == 0 and w.attempts < self.max_attempts:
                        return self._done(w, answer["rc"], t0)
                    # it ends itself after this attempt: wait for that, as for a fresh process
            else:
                try:
                    w.proc.wait(timeout=POLL_S)
                except subprocess.TimeoutExpired:
                    pass
            rc = w.proc.poll()
            if rc is not None:  # it ended: after its answer, or died during the attempt
                break
            ending = reason_to_end(stop, t0, timeout_s)
            if ending:
                timed_out, interrupted = ending == "timed_out", ending == "interrupted"
                rc = kill_group(w.proc, w.pgid, grace_s)
                break
        kill_leftovers(w.pgid)  # the worker is gone; what the attempt started must not outlive it
        w.close_pipes()
        self.worker = None
        return ProcResult(rc=rc, wall_s=time.monotonic() - t0, timed_out=timed_out, interrupted=interrupted,
                          pgid=w.pgid)

    def _done(self, w: _Worker, rc: int, t0: float) -> ProcResult:
        """An attempt that exited 0 in a worker that stays, unless it left processes behind."""
        if [pid for pid in group_members(w.pgid) if pid != w.proc.pid]:
            self._kill(0.0)
        return ProcResult(rc=rc, wall_s=time.monotonic() - t0, timed_out=False, interrupted=False, pgid=w.pgid)

    def _retire(self, grace_s: float) -> None:
        if self.worker is not None:
            self.worker.end(grace_s)
            self.worker = None

    def _kill(self, grace_s: float) -> None:
        if self.worker is not None:
            w, self.worker = self.worker, None
            kill_group(w.proc, w.pgid, grace_s)
            w.close_pipes()

    def close(self, grace_s: float) -> None:
        """End the worker (idle: it exits when its request pipe closes)."""
        self._retire(grace_s)
