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
from tritongate.errors import ExitCode, GateError, PreflightError, UsageError

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


def _progress_printer(color: bool):
    """Progress on stderr: a live bar on a terminal, one line per row otherwise."""
    from tritongate.runner import Progress

    if color:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeElapsedColumn

        bar = Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True)
        task = None

        def show(ev: Progress) -> None:
            nonlocal task
            if ev.kind == "start":
                bar.start()
                task = bar.add_task("starting", total=ev.total)
            elif ev.kind == "row_start" and ev.planned is not None:
                p = ev.planned
                bar.update(task, description=f"{p.op} {p.case} {p.dtype}")
            elif ev.kind == "row_done":
                bar.advance(task)
                if ev.row is not None and (ev.row.markers or ev.row.status.value != "ok"):
                    bar.console.print(f"[yellow]{ev.row.op} {ev.row.case} {ev.row.dtype}: "
                                      f"{'; '.join(ev.row.markers) or ev.row.error}[/]", markup=True,
                                      highlight=False)
            elif ev.kind == "finish":
                bar.stop()
        return show

    def show_plain(ev: Progress) -> None:
        if ev.kind == "start":
            print(f"measuring {ev.total} rows into {ev.message}", file=sys.stderr, flush=True)
        elif ev.kind == "row_done" and ev.row is not None:
            r, width = ev.row, len(str(ev.total))
            s = r.summary
            what = f"{s.median:10.3f} us" if s else "     error"
            flag = f"  {'; '.join(r.markers)}" if r.markers else ""
            print(f"[{ev.index + 1:>{width}}/{ev.total}] {r.op:<18} {r.case:<18} {r.dtype:<9} {what}{flag}",
                  file=sys.stderr, flush=True)
    return show_plain


def cmd_run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from tritongate.autotune.tuner_cache import isolation_requested
    from tritongate.backends import default_measure_config, resolve_backend
    from tritongate.report.table import render_rows
    from tritongate.runner import RunRequest, run_suite

    backend = resolve_backend(args.backend)
    config = default_measure_config(backend)
    overrides = {k: v for k, v in (("rounds", args.rounds), ("samples_per_round", args.samples_per_round),
                                   ("l2", args.l2)) if v is not None}
    if overrides:
        try:
            config = replace(config, **overrides)
        except ValueError as exc:
            raise UsageError(f"bad measurement option: {exc}") from exc
    request = RunRequest(
        suite=args.suite, backend=backend, out=Path(args.out),
        shape_file=Path(args.shape_file) if args.shape_file else None,
        only_ops=tuple(_split(args.ops)), only_dtypes=tuple(_split(args.dtypes)),
        config=config, allow_busy_gpu=args.allow_busy_gpu,
        replay_from=Path(args.replay_from) if args.replay_from else None,
        isolate_tuner_cache=isolation_requested(args.isolate_tuner_cache),
    )
    color = want_color(args.color, sys.stdout)
    outcome = run_suite(request, _progress_printer(want_color(args.color, sys.stderr)))
    print(render_rows(outcome.rows, color=color, title=f"{outcome.path.name}  ({backend.name}, "
                                                       f"{request.mode}, {len(outcome.rows)} rows)"), end="")
    flagged = outcome.flagged
    print(f"{len(outcome.rows)} rows in {outcome.wall_s:.1f} s; "
          f"{len(flagged)} flagged (markers or errors; see run.log)")
    print(outcome.path)
    return ExitCode.OK


def cmd_ops(args: argparse.Namespace) -> int:
    from tritongate.backends import prepare_environment, resolve_backend
    from tritongate.suites import builtin_suites, ops_dir

    prepare_environment(resolve_backend("auto"))
    from tritongate.ops.builtin import REGISTRY

    for name in REGISTRY.names():
        spec = REGISTRY.get(name)
        print(f"{name:<18} {spec.shape_doc:<34} {', '.join(spec.dtypes):<26} {spec.description}")
    print(f"\nsuites in {ops_dir() / 'suites'}: {', '.join(builtin_suites())}")
    return ExitCode.OK


def _split(values: list[str] | None) -> list[str]:
    return [v for item in values or [] for v in item.replace(",", " ").split() if v]


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

    run = sub.add_parser(
        "run", help="measure a suite into a new run directory (record mode)",
        description="Measure every op x shape x dtype row of a suite and write DIR/<suite>_<UTC>/. "
                    "The run directory's path is the last line of stdout.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("--suite", required=True, metavar="NAME|PATH",
                     help="a builtin suite name (ops/suites/NAME.yaml: smoke, pr, deep) or a suite YAML")
    run.add_argument("--backend", default="cuda", metavar="NAME",
                     help="cuda (default; CUDA-graph timer), cpu (Triton interpreter, host timer), "
                          "rocm, musa, ascend (device-event timer), or auto (cuda if visible, else cpu)")
    run.add_argument("--out", required=True, metavar="DIR", help="parent directory of the run directory")
    run.add_argument("--shape-file", metavar="YAML", help="shapes keyed by op name; overrides the suite's")
    run.add_argument("--ops", action="append", metavar="A,B", help="only these ops of the suite")
    run.add_argument("--dtypes", action="append", metavar="D,E", help="only these dtypes (e.g. float16)")
    run.add_argument("--rounds", type=int, help="rounds per row (default 5; 2 on cpu)")
    run.add_argument("--samples-per-round", type=int, help="samples per round (default 5; 3 on cpu)")
    run.add_argument("--l2", choices=["warm", "flush"], help="L2 policy (default warm)")
    run.add_argument("--replay-from", metavar="RECORD_RUN",
                     help="replay the autotune configs of this record run instead of tuning live "
                          "(a key it lacks, or a config that no longer compiles, tunes live and marks "
                          "the row AUTOTUNE_REPLAY_FALLBACK); replay runs write no records")
    run.add_argument("--isolate-tuner-cache", action="store_true",
                     help="give FlagGems' persistent LibTuner cache a private, per-run DB "
                          "(also TRITONGATE_ISOLATE_TUNER_CACHE=1 or ZL_ISOLATE_TUNER_CACHE=1)")
    run.add_argument("--allow-busy-gpu", action="store_true",
                     help="measure even when other processes use the GPU (rows get GPU_BUSY)")
    run.add_argument("--color", choices=["auto", "always", "never"], default="auto",
                     help="colour on a terminal (auto), or force it; run.log is always plain")
    run.set_defaults(func=cmd_run)

    ops = sub.add_parser("ops", help="list the builtin ops and suites")
    ops.set_defaults(func=cmd_ops)

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
