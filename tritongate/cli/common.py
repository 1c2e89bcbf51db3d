"""What every command module shares: exit-code footers and error reporting, colour, progress
printers, argparse value types and the job summary."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

from tritongate.argtypes import names_in, shard_spec
from tritongate.errors import ExitCode, GateError, PreflightError, UsageError
from tritongate.report.units import counted as counted, format_time  # counted re-exported: every command counts
from tritongate.report.untrusted import neutralize, safe_url

# `--blame N`'s N when given bare, on every command that has it (prescreen, ir-diff)
DEFAULT_BLAME = 10

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


def add_command(sub: argparse._SubParsersAction, name: str, func: Callable[[argparse.Namespace], int],
                **kw: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(name, **kw)
    p.set_defaults(func=func)
    return p


class HelpFormatter(argparse.HelpFormatter):
    """Text wrapped to the terminal, but one laid out in indented lines (a footer) kept as it is."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if any(line[:1].isspace() for line in text.strip("\n").splitlines()[1:]):  # indented: laid out
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def use_formatter(parser: argparse.ArgumentParser) -> None:
    """``HelpFormatter`` for ``parser`` and every sub-command below it, so every --help wraps alike."""
    parser.formatter_class = HelpFormatter
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                use_formatter(sub)


GIVEN = "_options_given"  # the namespace's record of the valued options the command line set


class _StoreOnce(argparse._StoreAction):
    """A valued option given twice is refused: argparse would keep the last silently, and
    ``--runner-class h200 ... --runner-class h100`` in a workflow is a mistake, not a choice."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        given: dict[str, Any] = namespace.__dict__.setdefault(GIVEN, {})
        if self.dest in given:
            parser.error(f"{'/'.join(self.option_strings)} given twice ({given[self.dest]!r}, then {values!r}); "
                         "give it once")
        given[self.dest] = values
        super().__call__(parser, namespace, values, option_string)


def refuse_repeats(parser: argparse.ArgumentParser) -> None:
    """Every valued option of ``parser`` and the sub-commands below it may be given once."""
    for action in parser._actions:
        if type(action) is argparse._StoreAction and action.option_strings:
            action.__class__ = _StoreOnce
        elif isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                refuse_repeats(sub)


def want_color(choice: str, stream: object) -> bool:
    """--color: always, never, or auto (a terminal, unless $NO_COLOR is set)."""
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


def _run_row_text(ev: Any) -> str:
    """A finished row of `run`: its median, or why it has none, and its markers."""
    r, s = ev.row, ev.row.summary
    what = f"{format_time(s.median):>10}" if s else (f"not timed ({r.skipped.value})" if r.skipped else "     error")
    return what + (f"  {'; '.join(r.markers)}" if r.markers else "")


def captured_row_text(ev: Any) -> str:
    """A finished row of an IR index capture: no time (nothing was executed), its markers."""
    from tritongate.report.table import CAPTURED

    r = ev.row
    what = "     error" if r.status.value == "error" else CAPTURED  # its capture failed: nothing indexed
    return what + (f"  {'; '.join(r.markers)}" if r.markers else "")


def progress_printer(color: bool, *, verb: str = "measuring", row_text: Callable[[Any], str] = _run_row_text,
                     flagged_only: bool = True) -> Callable[[Any], None]:
    """Progress on stderr: a live bar with an ETA on a terminal (finished rows above it, only
    flagged ones when ``flagged_only``), else a line per row; row text is never read as markup."""
    from tritongate.progress import Progress

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
                bar.update(task, description=f"{ev.planned.op} {ev.planned.case} {ev.planned.dtype}")
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


def blaming_line(i: int, n: int, case: str, kernel: str, variant: str) -> str:
    """The line printed (on stderr, as progress: stdout keeps the results) as the ``i``-th (from 0)
    of ``n`` blames starts: its compiles with every pass dumped take seconds to a minute, and the
    blame's own line comes only after them."""
    return f"  blaming {i + 1} of {n}: {neutralize(case)}  {neutralize(kernel)}  {neutralize(variant)} ..."


def append_step_summary(markdown_path: Path) -> None:
    """verdict.md appended to ``$GITHUB_STEP_SUMMARY`` when a workflow step sets it."""
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        append_step_summary_text(Path(markdown_path).read_text(encoding="utf-8"),
                                 where=f"the verdict itself is in {Path(markdown_path).parent}")


def append_step_summary_text(markdown: str, where: str = "the same is printed above") -> None:
    """Markdown appended to ``$GITHUB_STEP_SUMMARY`` when a workflow step sets it."""
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if not summary:
        return
    try:
        with open(summary, "a", encoding="utf-8") as f:
            f.write(markdown + "\n")
    except OSError as exc:
        raise UsageError(f"GITHUB_STEP_SUMMARY={summary} cannot be appended to ({exc.strerror or exc}); {where}; "
                         "unset the variable or point it at a file") from exc


def print_summary(verdict_json: Any) -> None:
    """The verdict in a few lines, the same words as verdict.md (read back from verdict.json)."""
    from tritongate.gate.verdict_file import load_verdict
    from tritongate.report.verdict_terminal import summary_lines

    for line in summary_lines(load_verdict(verdict_json).doc):
        print(line)


def argtype(convert: Callable[[str], Any], errors: type[Exception] = ValueError) -> Callable[[str], Any]:
    """``convert`` as an argparse type: its ``errors`` are one-line usage errors."""
    def parse(value: str) -> Any:
        try:
            return convert(value)
        except errors as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return parse


shard_arg = argtype(shard_spec)  # I/N: the I-th of N shards (1-based)
url_arg = argtype(safe_url)  # a link the verdict may show (http/https, no controls)


def split_values(values: list[str] | None) -> list[str]:
    """Repeated options whose values may also be comma- or space-separated lists."""
    return [v for item in values or [] for v in names_in(item)]


@contextlib.contextmanager
def sigterm_interrupts(*message: str) -> Iterator[None]:
    """SIGTERM (a CI cancel, ``timeout``, ``kill``) stops a command as Ctrl-C does: what it wrote
    loads as incomplete, and the exit code is 130 as the help says, not the 143 of a killed process."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(*message)
    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main_alone(add_parsers: Callable[[Any], Any], argv: list[str], text: Callable[[object], str] = str,
               **report: Any) -> int:
    """``tritongate COMMAND ...`` of some commands alone (``python -m tritongate.batch``, ``ci/``)."""
    parser = argparse.ArgumentParser(prog="tritongate")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    add_parsers(sub)
    refuse_repeats(parser)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help is 0, bad usage 2
        return int(exc.code or 0)
    vars(args).pop(GIVEN, None)
    return report_errors(lambda: args.func(args), text, **report)


def _os_hint(exc: OSError, default: str) -> str:
    """What to do about a failed file operation: only a full disk is fixed by freeing space."""
    import errno

    if exc.errno in (errno.ENOTDIR, errno.EEXIST, errno.EISDIR):
        return "a file stands where a folder is needed (or the other way round): fix the path and run again"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return "the path is not writable here: pass another one, or fix its permissions"
    if exc.errno == errno.ENOENT:
        return "fix the path and run again"
    return default


def report_errors(func: Callable[[], int], text: Callable[[object], str] = str, *, traceback: bool = False,
                  hint: str = "free space or fix the path and run again") -> int:
    """``func()``, an error it raises one line on stderr (``text`` makes it printable) and
    the exit code ``tritongate.cli`` documents; ``traceback``: a bug's is kept in a file."""
    try:
        return int(func())
    except PreflightError as exc:
        print(exc.marker, file=sys.stderr)
        print(f"error: {text(exc)}", file=sys.stderr)
        return int(ExitCode.PREFLIGHT)
    except GateError as exc:
        print(f"error: {text(exc)}", file=sys.stderr)
        for note in getattr(exc, "__notes__", ()):  # where a run that stopped left its partial results
            print(note, file=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt as exc:
        print("interrupted", file=sys.stderr)
        for note in getattr(exc, "__notes__", ()):
            print(note, file=sys.stderr)
        return int(ExitCode.INTERRUPTED)
    except OSError as exc:  # the disk is full, a path is not writable, a file vanished
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {text(f'{where}{exc.strerror or exc}')}; {_os_hint(exc, hint)}", file=sys.stderr)
        return int(ExitCode.USAGE)
    except Exception as exc:  # noqa: BLE001 - a bug: one line, never exit 1 (that means "gate failed")
        detail = " ".join((str(exc) if traceback else text(exc)).split())[:300]
        kept = f"; traceback written to {_save_traceback()}" if traceback else ""
        print(f"internal error (a bug in tritongate): {type(exc).__name__}: {detail}{kept}", file=sys.stderr)
        return int(ExitCode.INTERNAL)


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
