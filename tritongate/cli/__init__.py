"""The ``tritongate`` command: parse, call the library, print, map errors to exit codes.

Exit codes: 0 pass, 1 gate failed (regression or policy), 2 usage or input error,
3 preflight failed (``!!! PREFLIGHT_FAILED check=<name>`` on stderr), 4 internal error,
130 interrupted. One module per command family (run, gate, pair, calibrate, ir, inspect);
the option groups they share are in ``options``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from typing import Callable, Iterator, Sequence

from tritongate.cli.parser import build_parser, command_parser
from tritongate.errors import ExitCode, GateError, PreflightError

__all__ = ["build_parser", "main"]


def main(argv: Sequence[str] | None = None, *, prog: str | None = None) -> int:
    """Run one command line; the exit code (see the module docstring). ``prog``: a script
    that runs one command (``main(["run", ...], prog="record_baseline.py")``) is named so in
    that command's usage and errors, instead of ``tritongate run``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv[0] if argv else None)
    if prog and argv:
        with contextlib.suppress(KeyError):
            command_parser(parser, argv[0]).prog = prog
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help is 0, bad usage is 2
        return int(exc.code or 0)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        with _sigterm_interrupts():
            return int(func(args))
    except PreflightError as exc:
        print(exc.marker, file=sys.stderr)
        print(f"error: {_bounded(exc)}", file=sys.stderr)
        return int(ExitCode.PREFLIGHT)
    except GateError as exc:
        print(f"error: {_bounded(exc)}", file=sys.stderr)
        _print_exc_notes(exc)
        return int(exc.exit_code)
    except KeyboardInterrupt as exc:
        print("interrupted", file=sys.stderr)
        _print_exc_notes(exc)
        return int(ExitCode.INTERRUPTED)
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly, as a shell tool does
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 128 + signal.SIGPIPE
    except OSError as exc:  # the disk is full, a path is not writable, a file vanished
        where = f"{exc.filename}: " if exc.filename else ""
        text = _bounded(Exception(f"{where}{exc.strerror or exc}"))
        print(f"error: {text}; free space or fix the path and run again", file=sys.stderr)
        return int(ExitCode.USAGE)
    except Exception as exc:  # noqa: BLE001 - a bug: say so in one line, keep the traceback
        path = _save_traceback()
        text = " ".join(str(exc).split())[:300]
        print(f"internal error (a bug in tritongate): {type(exc).__name__}: {text}; traceback written to {path}",
              file=sys.stderr)
        return int(ExitCode.INTERNAL)


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM (a CI cancel, ``timeout``, ``kill``) stops a command as Ctrl-C does: what it
    wrote is left loading as incomplete and the exit code is 130, as the help says, not
    the 143 of a process the signal killed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _term(signum, frame):  # a signal handler: both arguments unused
        raise KeyboardInterrupt
    previous = signal.signal(signal.SIGTERM, _term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _print_exc_notes(exc: BaseException) -> None:
    """Where a run that stopped left its partial results."""
    for note in getattr(exc, "__notes__", ()):
        print(note, file=sys.stderr)


MAX_MESSAGE = 2000  # a message quoting a hostile input must not flood the log


def _bounded(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) <= MAX_MESSAGE else f"{text[:MAX_MESSAGE]}… ({len(text) - MAX_MESSAGE:,} more characters)"


def _save_traceback() -> str:
    """The current exception's traceback, in $TRITONGATE_LOG_DIR or the temp directory."""
    import tempfile
    import traceback

    env = os.environ.get("TRITONGATE_LOG_DIR")
    folder = env or tempfile.gettempdir()
    try:
        fd, path = tempfile.mkstemp(prefix="tritongate-traceback-", suffix=".txt", dir=folder)
        with os.fdopen(fd, "w") as f:
            traceback.print_exc(file=f)
        return path
    except OSError as exc:  # say which folder, and which variable chose it
        chosen = f"TRITONGATE_LOG_DIR={env!r}" if env else f"the temp directory {folder}"
        return f"nowhere: {chosen} cannot be written ({exc.strerror or exc}); point it at a writable folder"
