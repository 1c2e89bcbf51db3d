"""``tritongate history``: the store's nightly series, their change points, plots and reports.

Wired into ``tritongate.cli`` with ``add_history_parser(sub)`` (it sets ``func`` to
``run_history``). Library errors are ``GateError``s; ``tritongate.cli.main`` maps them to exit
codes.

Exit codes: 0 the history was written (change points are findings, not a failure), 2 usage or
input error (unknown store, no entries for that runner class and suite, an output that cannot
be written), 4 internal error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tritongate.argtypes import fraction, nonempty_text, number_in, whole_number
from tritongate.errors import ExitCode, UsageError

EXIT_CODES = ("exit codes:\n"
              "  0    written (change points are findings, not a failure); the last line is history.md\n"
              "  2    usage or input error (unknown store, no entries for the runner class and suite)\n"
              "  4    internal error\n")

_text = nonempty_text  # an unset variable in a workflow must not silently change what runs
_fraction = number_in(0, 1, open_low=True, open_high=True)
_count = whole_number


def _safe(value: object) -> str:
    from tritongate.report.untrusted import neutralize

    return neutralize(value)


def run_history(args: argparse.Namespace) -> int:
    """Read the store, analyse, write history.json, history.md, the plots (and the summary)."""
    from tritongate.baselines.manifest import suite_folder
    from tritongate.history.changepoints import Detection
    from tritongate.history.report import build_report, new_change_points_markdown, write_report
    from tritongate.history.series import load_history

    rule = Detection(min_effect=args.min_effect, p_value=args.p_value)
    history = load_history(Path(args.store), args.runner_class, suite_folder(args.suite), args.gpu,
                           compiler_repo=args.compiler_repo)
    report = build_report(history, rule, new_last=args.new_last)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    plots: dict[str, str] = {}
    if not args.no_plots:
        from tritongate.history.plot import plot_history

        plots = {op: path.relative_to(out).as_posix() for op, path in plot_history(report, out / "plots").items()}
    _, md_path = write_report(report, out, plots)
    if args.summary_out:  # appended, as to $GITHUB_STEP_SUMMARY: what the step wrote before stays
        summary = Path(args.summary_out)
        if summary.is_dir():
            raise UsageError(f"--summary-out {summary} is a directory; pass a file (e.g. $GITHUB_STEP_SUMMARY)")
        summary.parent.mkdir(parents=True, exist_ok=True)
        with open(summary, "a", encoding="utf-8") as f:
            f.write(new_change_points_markdown(report))
    for note in report.notes:
        print(f"note: {_safe(note)}", file=sys.stderr)
    print(_safe(report.headline()))
    print(md_path)
    return ExitCode.OK


def add_history_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``history`` on the CLI's sub-parsers; its ``func`` is ``run_history``."""
    p = sub.add_parser(
        "history", help="nightly history of the baseline store: per-row series, change points, plots",
        description="Read every entry the nightlies published for one runner class and suite (damaged ones "
                    "are skipped with a note), follow each row's median over the nights, and find change "
                    "points: PELT on log medians scaled by their noise, each confirmed by a minimum effect "
                    "and a Mann-Whitney U test between the neighbouring segments. Writes OUT/history.json, "
                    "OUT/history.md and OUT/plots/<op>.png.",
        epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", type=_text, required=True, metavar="DIR",
                   help="the baseline store folder (on GitHub a checkout of the data branch)")
    p.add_argument("--runner-class", type=_text, required=True, metavar="RC", help="e.g. h200")
    p.add_argument("--suite", type=_text, required=True, metavar="NAME|PATH",
                   help="the suite: a builtin name (pr) or its YAML file (named by its stem)")
    p.add_argument("--gpu", type=_text, metavar="NAME|SLUG",
                   help="only entries recorded on this GPU (needed when the runner class spans several)")
    p.add_argument("--compiler-repo", type=_text, metavar="OWNER/NAME|URL",
                   help="only entries of this compiler repository's builds (needed when the store holds several)")
    p.add_argument("--out", type=_text, required=True, metavar="DIR", help="where the reports and plots go")
    # not --min-effect: that is the gate's least change of one paired row; this one compares
    # unpaired nightly medians, a noisier quantity, so it has its own name and default
    p.add_argument("--min-change", dest="min_effect", type=fraction, default=0.02, metavar="F",
                   help="least relative change of the segment medians a change point needs, as a fraction: 0.01 "
                        "is 1 %% (default 0.02)")
    p.add_argument("--p-value", type=_fraction, default=0.01, metavar="P",
                   help="Mann-Whitney U significance a change point needs (default 0.01)")
    p.add_argument("--new-last", type=_count, default=1, metavar="N",
                   help="a change point is new when its first point after is among the last N entries (default 1)")
    p.add_argument("--no-plots", action="store_true", help="write no PNGs")
    p.add_argument("--summary-out", type=_text, metavar="FILE",
                   help="also write the new-change-points section alone here (e.g. $GITHUB_STEP_SUMMARY)")
    p.set_defaults(func=run_history)
    return p
