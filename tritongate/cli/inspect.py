"""``tritongate show`` and ``ops``: print a run directory, list the ops and suites."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tritongate.argtypes import nonempty_text
from tritongate.cli.common import exit_codes, terminal_safe, want_color
from tritongate.errors import ExitCode

_text = nonempty_text


def add_ops_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``ops``."""
    ops = sub.add_parser("ops", help="list the builtin ops and suites (and a suite's own ops)",
                         description="List every builtin op (shape arguments, dtypes, what it computes) and the "
                                     "builtin suites. With --suite: exactly what that suite runs, its ops (builtin "
                                     "or from its `modules:`) with the dtypes and number of shapes it runs them with.",
                         epilog=exit_codes(0, 2, 3, 4, zero="listed"),
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    ops.add_argument("--suite", type=_text, metavar="NAME|PATH",
                     help="also list the ops this suite's modules add")
    ops.set_defaults(func=cmd_ops)


def add_show_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``show``."""
    show = sub.add_parser("show", help="validate a run directory and print its results (table, csv, json, md)",
                          description="Load RUN_DIR, refusing a damaged, foreign or (without --allow-incomplete) "
                                      "unfinished run directory, and print its rows: a table for people, or csv, "
                                      "json or md, in which case stdout holds nothing but that document.",
                          epilog=exit_codes(0, 2, 4, zero="the run directory is valid and was printed"), formatter_class=argparse.RawDescriptionHelpFormatter)
    show.add_argument("run", type=_text, metavar="RUN_DIR", help="a directory printed by `tritongate run`")
    show.add_argument("--allow-incomplete", action="store_true",
                      help="show a run whose writer did not finish (rows so far)")
    show.add_argument("--format", choices=["table", "csv", "json", "md"], default="table",
                      help="table (default: for people), csv (one line per row, raw µs and samples), json "
                           "(the rows with raw samples, versioned), md (a GitHub Markdown table)")
    show.add_argument("--color", choices=["auto", "always", "never"], default="auto",
                      help="colour the table on a terminal (auto), or force it")
    show.set_defaults(func=cmd_show)


def cmd_show(args: argparse.Namespace) -> int:
    from tritongate.report.table import render_rows
    from tritongate.rundir import load_run

    run = load_run(Path(args.run), allow_incomplete=args.allow_incomplete)
    if args.format != "table":  # data for other tools: nothing but the document on stdout
        from tritongate.report.export import render_run
        from tritongate.report.untrusted import neutralize

        text = render_run(run, args.format)
        if args.format == "csv" and sys.stdout.isatty():  # names from the file must not drive the terminal
            text = "\n".join(neutralize(line) for line in text.splitlines()) + "\n"
        sys.stdout.write(text)
        return ExitCode.OK
    head = f"{run.path}  status={run.status.value}  mode={run.mode}  rows={len(run.rows)}"
    print(head)
    print(render_rows(run.rows, color=want_color(args.color, sys.stdout)), end="")
    return ExitCode.OK


def cmd_ops(args: argparse.Namespace) -> int:
    from tritongate.backends import prepare_environment, resolve_backend
    from tritongate.suites import builtin_suites, load_suite, ops_dir

    prepare_environment(resolve_backend("auto"))
    from tritongate.ops.builtin import REGISTRY

    def line(name: str, shape: str, dtypes: str, text: str) -> None:
        name_, shape, dtypes, text = (terminal_safe(v) for v in (name, shape, dtypes, text))
        print(f"{name_:<18} {shape:<34} {dtypes:<26} {text}")

    if not args.suite:
        for name in REGISTRY.names():
            spec = REGISTRY.get(name)
            line(name, spec.shape_doc, ", ".join(spec.dtypes), spec.description)
    else:  # exactly what the suite runs: its ops, the dtypes and shape count it runs them with
        from tritongate.ops.user import registry_for

        suite = load_suite(args.suite)
        registry = registry_for(suite.modules, search_dir=suite.path.parent)
        rows = sum(len(suite.shapes.get(op.name, ())) * len(op.dtypes) for op in suite.ops)
        print(f"suite {suite.name} ({suite.path}): {len(suite.ops)} ops, {rows} rows"
              + (f"; {len(suite.dismissed)} inventory ops dismissed ({suite.dismiss})" if suite.dismissed else ""))
        for op in suite.ops:
            spec = registry.get(op.name)
            module = getattr(spec.build, "__module__", "?")
            where = "" if op.name in REGISTRY.names() else f"  (from {module})"
            count = len(suite.shapes.get(op.name, ()))
            line(op.name, f"{count} shape{'s' if count != 1 else ''}: {spec.shape_doc}", ", ".join(op.dtypes),
                 spec.description + where)
    print(f"\nsuites in {ops_dir() / 'suites'}: {', '.join(builtin_suites())}")
    print(f"your own ops: a suite's `modules:` key (example: {ops_dir() / 'examples' / 'user_ops.yaml'}; "
          "see ops/README.md)")
    return ExitCode.OK
