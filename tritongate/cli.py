"""The ``tritongate`` command: parse, call the library, print, map errors to exit codes.

Exit codes: 0 pass, 1 gate failed (regression or policy), 2 usage or input error,
3 preflight failed (``!!! PREFLIGHT_FAILED check=<name>`` on stderr).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Callable, Sequence

from tritongate import __version__
from tritongate.errors import ExitCode, GateError, PreflightError

EPILOG = """exit codes:
  0  pass
  1  gate failed (a regression, or a policy violation)
  2  usage or input error (bad arguments, malformed or incompatible files)
  3  preflight failed (stderr names the check: !!! PREFLIGHT_FAILED check=<name>)
"""


def want_color(choice: str, stream: object) -> bool:
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


def cmd_show(args: argparse.Namespace) -> int:
    from tritongate.report.table import render_rows
    from tritongate.rundir import load_run

    run = load_run(Path(args.run), allow_incomplete=args.allow_incomplete)
    head = f"{run.path}  status={run.status.value}  mode={run.mode}  rows={len(run.rows)}"
    print(head)
    print(render_rows(run.rows, color=want_color(args.color, sys.stdout)), end="")
    return ExitCode.OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tritongate",
        description="Performance-regression gate for Triton compiler changes.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"tritongate {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    show = sub.add_parser("show", help="validate a run directory and print its results table",
                          epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    show.add_argument("run", metavar="RUN_DIR", help="a directory printed by `tritongate run`")
    show.add_argument("--allow-incomplete", action="store_true",
                      help="show a run whose writer did not finish (rows so far)")
    show.add_argument("--color", choices=["auto", "always", "never"], default="auto")
    show.set_defaults(func=cmd_show)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help is 0, bad usage is 2
        return int(exc.code or 0)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return int(func(args))
    except PreflightError as exc:
        print(exc.marker, file=sys.stderr)
        print(f"error: {exc}", file=sys.stderr)
        return int(ExitCode.PREFLIGHT)
    except GateError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
