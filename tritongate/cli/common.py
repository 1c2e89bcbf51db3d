"""What every command module shares: exit-code footers, colour, safe terminal text,
progress printers and argparse value types."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from tritongate.argtypes import shard_spec
from tritongate.report.units import counted as counted  # re-exported: every command counts with it

EXIT_CODE_TEXT = {
    0: "pass",
    1: "gate failed (a regression, or a policy violation)",
    2: "usage or input error (bad arguments, malformed or incompatible files, a file that\n"
       "       cannot be written)",
    3: "preflight failed (stderr names the check: !!! PREFLIGHT_FAILED check=<name>)",
    4: "internal error (a bug: one line on stderr, the traceback written to a file)",
    130: "interrupted (Ctrl-C, SIGTERM); run directories left behind load as incomplete",
}


def exit_codes(*codes: int, zero: str = "pass") -> str:
    """The exit-code footer of a subcommand's --help: the codes it can return."""
    text = {**EXIT_CODE_TEXT, 0: zero}
    return "exit codes:\n" + "".join(f"  {c:<4} {text[c]}\n" for c in codes)


EPILOG = exit_codes(0, 1, 2, 3, 4, 130)


class HelpFormatter(argparse.HelpFormatter):
    """Descriptions and help wrapped to the terminal; a text laid out by hand in indented
    lines (the exit-code footers) kept as it is."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if any(line[:1].isspace() for line in text.strip("\n").splitlines()[1:]):  # indented: laid out
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def use_formatter(parser: argparse.ArgumentParser) -> None:
    """``HelpFormatter`` for ``parser`` and every sub-command below it (those of other
    packages too), so every --help wraps alike."""
    parser.formatter_class = HelpFormatter
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                use_formatter(sub)


def want_color(choice: str, stream: object) -> bool:
    """--color: always, never, or auto (a terminal, unless $NO_COLOR is set)."""
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


def _run_row_text(ev) -> str:
    """A finished row of `run`: its median, or why it has none, and its markers."""
    from tritongate.report.units import format_time

    r = ev.row
    s = r.summary
    what = f"{format_time(s.median):>10}" if s else (f"not timed ({r.skipped.value})" if r.skipped else "     error")
    return what + (f"  {'; '.join(r.markers)}" if r.markers else "")


def progress_printer(color: bool, *, verb: str = "measuring", row_text=_run_row_text,
                     flagged_only: bool = True):
    """Progress on stderr: a live bar with an ETA on a terminal (finished rows printed above
    it: only flagged ones when ``flagged_only``), one line per row otherwise. Text from the
    rows is printed, never read as terminal markup."""
    from tritongate.progress import Progress
    from tritongate.report.untrusted import neutralize

    if color:
        from rich.console import Console
        from rich.markup import escape
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn,
                                   TimeElapsedColumn, TimeRemainingColumn)

        bar = Bar(TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TimeRemainingColumn(), console=Console(stderr=True), transient=True)
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
                r = ev.row
                if r is not None and (not flagged_only or r.markers or r.status.value != "ok"):
                    style = "yellow" if r.markers or r.status.value != "ok" else "default"
                    bar.console.print(escape(neutralize(f"{r.op} {r.case} {r.dtype}: {row_text(ev).strip()}")),
                                      style=style, highlight=False)
            elif ev.kind == "note":
                bar.console.print(escape(neutralize(f"note: {ev.message}")), style="yellow", highlight=False)
            elif ev.kind == "finish":
                bar.stop()
        return show

    def show_plain(ev: Progress) -> None:
        if ev.kind == "start":
            print(f"{verb} {counted(ev.total, 'row')} into {ev.message}", file=sys.stderr, flush=True)
        elif ev.kind == "row_done" and ev.row is not None:
            r, width = ev.row, len(str(ev.total))
            op, case, dtype, text = (neutralize(v) for v in (r.op, r.case, r.dtype, row_text(ev)))
            print(f"[{ev.index + 1:>{width}}/{ev.total}] {op:<18} {case:<18} {dtype:<9} {text}",
                  file=sys.stderr, flush=True)
        elif ev.kind == "note":
            print(f"note: {neutralize(ev.message)}", file=sys.stderr, flush=True)
    return show_plain


def append_step_summary(markdown_path: Path) -> None:
    """verdict.md appended to ``$GITHUB_STEP_SUMMARY`` when a workflow step sets it (what the
    step wrote there before stays)."""
    from tritongate.errors import UsageError

    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if not summary:
        return
    try:
        text = Path(markdown_path).read_text(encoding="utf-8")
        with open(summary, "a", encoding="utf-8") as f:
            f.write(text + "\n")
    except OSError as exc:
        raise UsageError(f"GITHUB_STEP_SUMMARY={summary} cannot be appended to ({exc.strerror or exc}); the verdict "
                         f"itself is in {Path(markdown_path).parent}; unset the variable or point it at a file") from exc


def print_summary(verdict_json) -> None:
    """The verdict in a few lines, the same words as verdict.md (read back from verdict.json):
    headline, what changed, the unresolved rows, where it ran, notes."""
    from tritongate.gate.verdict_file import load_verdict
    from tritongate.report.verdict_terminal import summary_lines

    for line in summary_lines(load_verdict(verdict_json).doc):
        print(line)


def shard_arg(value: str) -> tuple[int, int]:
    """``I/N``: the I-th of N shards (1-based), for argparse."""
    try:
        return shard_spec(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def terminal_safe(text: str) -> str:
    """A line built from names a user module or file chose, printed without obeying controls."""
    from tritongate.report.untrusted import neutralize

    return neutralize(text)


def url_arg(value: str) -> str:
    """A link the verdict may show (http/https, no controls), for argparse."""
    from tritongate.report.untrusted import safe_url

    try:
        return safe_url(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def split_values(values: list[str] | None) -> list[str]:
    """Repeated options whose values may also be comma- or space-separated lists."""
    return [v for item in values or [] for v in item.replace(",", " ").split() if v]
