"""The ``tritongate`` command: parse, call the library, print, map errors to exit codes.

Exit codes: 0 pass, 1 gate failed (regression or policy), 2 usage or input error,
3 preflight failed (``!!! PREFLIGHT_FAILED check=<name>`` on stderr), 4 internal error,
130 interrupted. One module per command family; the option groups they share are in ``options``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from typing import Sequence

from tritongate.cli.common import GIVEN, report_errors, sigterm_interrupts
from tritongate.cli.parser import build_parser, command_parser

__all__ = ["build_parser", "main"]

MAX_MESSAGE = 2000  # a message quoting a hostile input must not flood the log


def main(argv: Sequence[str] | None = None, *, prog: str | None = None) -> int:
    """Run one command line; the exit code (see the module docstring). ``prog``: the name of a script
    that runs one command (``record_baseline.py``), in that command's usage and errors."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv[0] if argv else None)
    if prog and argv:
        with contextlib.suppress(KeyError):
            command_parser(parser, argv[0]).prog = prog
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help is 0, bad usage is 2
        return int(exc.code or 0)
    vars(args).pop(GIVEN, None)

    def run() -> int:
        try:
            with sigterm_interrupts():
                return int(args.func(args))
        except BrokenPipeError:  # the reader went away (`| head`): stop quietly, as a shell tool does
            with contextlib.suppress(OSError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
            return 128 + signal.SIGPIPE
    return report_errors(run, _bounded, traceback=True)


def _bounded(value: object) -> str:
    text = str(value)
    return text if len(text) <= MAX_MESSAGE else f"{text[:MAX_MESSAGE]}… ({len(text) - MAX_MESSAGE:,} more characters)"
