"""The batch's persistent op worker (this process's side): run op attempts one after another.

``python -m tritongate.batch.worker REQ_FD REP_FD``: each JSON line on pipe REQ_FD
(``{"module": M | "path": SCRIPT, "args": [...], "stdout": LOG, "stderr": LOG, "last": B}``) runs
what ``python -m M ARGS`` (or ``python SCRIPT ARGS``) would, in this process (``runpy``), with
descriptors 1 and 2 on the logs (C extensions and subprocesses land there too), and is answered
``{"rc": N, "pid": P, "keep": [PIDS]}`` on REP_FD once they are flushed, N being the status that
process would have had and PIDS the worker's own helpers that stay for the next attempt (its
GPU-turn partner). After a non-zero status or a ``last`` request the worker exits with it; otherwise it puts back
what an op may change (``_State``) and waits for the next, its imports kept. End of REQ_FD: exit 0.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import runpy
import signal
import sys
import traceback
import warnings
from typing import Any, BinaryIO, Mapping, Sequence

from tritongate.harness.gpu_turns import partner_pids

_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGPIPE, signal.SIGUSR1, signal.SIGUSR2)


class _State:
    """What an op may change in the process, taken when the worker starts."""

    def __init__(self) -> None:
        self.argv = list(sys.argv)
        self.path = list(sys.path)
        self.environ = dict(os.environ)
        self.cwd = os.getcwd()
        self.umask = os.umask(0o022)
        os.umask(self.umask)
        self.stdio = (sys.stdin, sys.stdout, sys.stderr)
        self.handlers = {s: signal.getsignal(s) for s in _SIGNALS}
        self.filters = list(warnings.filters)

    def restore(self) -> None:
        sys.argv = list(self.argv)
        sys.path[:] = self.path  # in place: modules may hold the list itself
        for key in [k for k in os.environ if k not in self.environ]:
            del os.environ[key]
        for key, value in self.environ.items():
            if os.environ.get(key) != value:
                os.environ[key] = value
        os.chdir(self.cwd)
        os.umask(self.umask)
        sys.stdin, sys.stdout, sys.stderr = self.stdio
        for sig, handler in self.handlers.items():
            if handler is not None and signal.getsignal(sig) is not handler:
                signal.signal(sig, handler)
        if warnings.filters != self.filters:
            warnings.filters[:] = self.filters
            mutated = getattr(warnings, "_filters_mutated", None)  # the "once" caches follow the filters
            if mutated is not None:
                mutated()


def _flush() -> None:
    """Python's buffers and C stdio's (a C extension's printf), before the descriptors move."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):  # closed or replaced by the op
            stream.flush()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).fflush(None)


def _redirect(stdout: str, stderr: str) -> None:
    """Descriptors 1 and 2 onto the attempt's logs (appended: the batch created them)."""
    _flush()
    for fd, path in ((1, stdout), (2, stderr)):
        target = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.dup2(target, fd)
        os.close(target)


def exit_status(code: object) -> int:
    """The status ``sys.exit(code)`` gives a process (None: 0; an int: its low byte; else 1,
    the value printed to stderr, as Python does)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def run_entry(request: Mapping[str, Any]) -> int:
    """Run the request's module (as ``-m``) or script with its arguments; its exit status
    (negative: the signal a fresh process would have died of)."""
    args = [str(a) for a in request.get("args", [])]
    try:
        if request.get("module"):
            sys.argv = ["-m", *args]  # runpy puts the module's file in argv[0], as -m does
            runpy.run_module(str(request["module"]), run_name="__main__", alter_sys=True)
        else:
            path = str(request["path"])
            sys.argv = [path, *args]
            sys.path.insert(0, os.path.dirname(os.path.abspath(path)))  # as `python PATH` does
            runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:
        return exit_status(exc.code)
    except KeyboardInterrupt:
        traceback.print_exc()
        return -int(signal.SIGINT)  # Python ends itself with SIGINT after an uncaught Ctrl-C
    except BaseException:  # noqa: BLE001 - the op's bug: its traceback, exit 1, as Python does
        sys.excepthook(*sys.exc_info())
        return 1
    return 0


def serve(requests: BinaryIO, replies: BinaryIO) -> int:
    """Answer requests until the pipe ends (0) or an attempt ends the worker (its status)."""
    state = _State()
    for line in requests:
        try:
            request = json.loads(line)
            stdout, stderr = str(request["stdout"]), str(request["stderr"])
        except (ValueError, KeyError, TypeError):
            return 2  # not the batch talking: stop rather than guess
        _redirect(stdout, stderr)
        rc = run_entry(request)
        _flush()
        state.restore()
        ending = rc != 0 or bool(request.get("last"))
        if not ending:
            _redirect(os.devnull, os.devnull)  # before answering: the batch reads the logs once answered
        try:
            replies.write(json.dumps({"rc": rc, "pid": os.getpid(), "keep": partner_pids()}).encode() + b"\n")
            replies.flush()
        except OSError:  # the batch is gone
            return rc
        if ending:
            return rc
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    req_fd, rep_fd = int(args[0]), int(args[1])
    for fd in (req_fd, rep_fd):  # never handed to what an op executes
        os.set_inheritable(fd, False)
    with os.fdopen(req_fd, "rb") as requests, os.fdopen(rep_fd, "wb") as replies:
        rc = serve(requests, replies)
    if rc < 0:
        _flush()
        signal.signal(-rc, signal.SIG_DFL)
        os.kill(os.getpid(), -rc)
    return rc


if __name__ == "__main__":
    sys.exit(main())
