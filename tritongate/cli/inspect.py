"""``tritongate show`` and ``ops``: print a run, pair or verdict folder, list the ops and suites."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tritongate.argtypes import nonempty_text
from tritongate.cli.common import HelpFormatter, counted, exit_codes, terminal_safe, want_color
from tritongate.errors import ExitCode

_text = nonempty_text


def add_ops_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``ops``."""
    ops = sub.add_parser("ops", help="list the builtin ops and suites (and a suite's own ops)",
                         description="List every builtin op (shape arguments, dtypes, what it computes) and the "
                                     "builtin suites. With --suite: exactly what that suite runs, its ops (builtin "
                                     "or from its `modules:`) with the dtypes and number of shapes it runs them with.",
                         epilog=exit_codes(0, 2, 3, 4, zero="listed"),
                         formatter_class=HelpFormatter)
    ops.add_argument("--suite", type=_text, metavar="NAME|PATH",
                     help="also list the ops this suite's modules add")
    ops.set_defaults(func=cmd_ops)


def add_show_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``show``."""
    show = sub.add_parser(
        "show", help="validate a run, pair or verdict folder and print it (table, csv, json, md)",
        description="Load FOLDER, refusing a damaged, foreign or (without --allow-incomplete) unfinished one, "
                    "and print it: a run directory's rows; a verdict folder's verdict; a pair directory's two "
                    "runs and its verdict. --format csv, json or md print a document instead, and stdout holds "
                    "nothing but it: a run's rows, or the verdict (of a verdict folder or a pair directory).",
        epilog=exit_codes(0, 2, 4, zero="the folder is valid and was printed"), formatter_class=HelpFormatter)
    show.add_argument("run", type=_text, metavar="FOLDER",
                      help="a run directory (what `tritongate run` printed, or a pair's base/ or candidate/), a "
                           "pair directory (of `pair`, `loop` or `merge`) or a verdict folder (of `gate`)")
    show.add_argument("--allow-incomplete", action="store_true",
                      help="show a run whose writer did not finish (rows so far)")
    show.add_argument("--format", choices=["table", "csv", "json", "md"], default="table",
                      help="table (default: for people), csv (one line per row, raw µs; a run's samples too), "
                           "json (a run's rows with raw samples, or verdict.json, versioned), md (a run's GitHub "
                           "Markdown table, or verdict.md)")
    show.add_argument("--color", choices=["auto", "always", "never"], default="auto",
                      help="colour the table on a terminal (auto), or force it (table only)")
    show.set_defaults(func=cmd_show)


def cmd_show(args: argparse.Namespace) -> int:
    from tritongate.cli.folders import Kind, kind_of, load_run_dir

    path = Path(args.run)
    kind = kind_of(path)
    if kind is Kind.VERDICT:
        return _show_verdict(path, args.format)
    if kind is Kind.PAIR:
        if args.format != "table":  # a pair's result is its verdict
            return _show_verdict(path / "verdict", args.format, pair=path)
        for side in ("base", "candidate"):
            _show_run(load_run_dir(path / side, allow_incomplete=args.allow_incomplete), args)
            print()
        return _show_verdict(path / "verdict", "table", pair=path)
    return _show_run(load_run_dir(path, allow_incomplete=args.allow_incomplete), args)


def _write_document(text: str, fmt: str) -> None:
    from tritongate.report.untrusted import neutralize

    if fmt in ("csv", "md") and sys.stdout.isatty():  # names from the file must not drive the terminal
        text = "\n".join(neutralize(line) for line in text.splitlines()) + "\n"
    sys.stdout.write(text)


def _show_run(run, args: argparse.Namespace) -> int:
    from tritongate.report.table import render_rows

    if args.format != "table":  # data for other tools: nothing but the document on stdout
        from tritongate.report.export import render_run

        _write_document(render_run(run, args.format), args.format)
        return ExitCode.OK
    print(terminal_safe(f"{run.path}  status={run.status.value}  mode={run.mode}  rows={len(run.rows)}"))
    print(render_rows(run.rows, color=want_color(args.color, sys.stdout)), end="")
    return ExitCode.OK


def _show_verdict(folder: Path, fmt: str, *, pair: Path | None = None) -> int:
    """A verdict folder: a table of its rows, or verdict.json as csv / json, or verdict.md."""
    import json

    from tritongate.errors import UsageError
    from tritongate.gate.verdict_file import load_verdict

    if pair is not None and not (folder / "verdict.json").is_file():
        raise UsageError(f"{pair} is a pair directory without a verdict (its run stopped before the gate); "
                         f"show its runs: {pair / 'base'} and {pair / 'candidate'}")
    verdict = load_verdict(folder)
    if fmt == "csv":
        _write_document(verdict.to_pandas().to_csv(index=False, lineterminator="\n"), fmt)
    elif fmt == "json":  # ASCII: a hostile name's controls stay \u escapes
        sys.stdout.write(json.dumps(verdict.doc.model_dump(mode="json"), indent=1, allow_nan=False) + "\n")
    elif fmt == "md":
        md = folder / "verdict.md"
        if not md.is_file():
            raise UsageError(f"{folder} has verdict.json but no verdict.md; use --format json or csv")
        _write_document(md.read_text(encoding="utf-8"), fmt)
    else:
        print(terminal_safe(f"{folder}  {verdict.doc.headline}"))
        print(verdict_table(verdict.rows), end="")
    return ExitCode.OK


def verdict_table(rows) -> str:
    """One line per row: key, verdict, the paired change and why, for a terminal."""
    lines = [f"{'op':<18} {'case':<18} {'dtype':<9} {'verdict':<16} {'change':>8}  why"]
    for r in rows:  # each name made safe first: padding a name must not be undone
        op, case, dtype, why = (terminal_safe(v) for v in (r.op, r.case, r.dtype, "; ".join(r.reasons)))
        change = f"{r.effect:+.2%}" if r.effect is not None else ""
        lines.append(f"{op:<18} {case:<18} {dtype:<9} {r.verdict:<16} {change:>8}  {why}")
    lines.append(counted(len(rows), "row"))
    return "\n".join(lines) + "\n"


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
        print(f"suite {suite.name} ({suite.path}): {counted(len(suite.ops), 'op')}, {counted(rows, 'row')}"
              + (f"; {len(suite.dismissed)} inventory ops dismissed ({suite.dismiss})" if suite.dismissed else ""))
        for op in suite.ops:
            spec = registry.get(op.name)
            module = getattr(spec.build, "__module__", "?")
            where = "" if op.name in REGISTRY.names() else f"  (from {module})"
            count = len(suite.shapes.get(op.name, ()))
            line(op.name, f"{counted(count, 'shape')}: {spec.shape_doc}", ", ".join(op.dtypes),
                 spec.description + where)
    print(f"\nsuites in {ops_dir() / 'suites'}: {', '.join(builtin_suites())}")
    print(f"your own ops: a suite's `modules:` key (example: {ops_dir() / 'examples' / 'user_ops.yaml'}; "
          "see ops/README.md)")
    return ExitCode.OK
