"""The ``tritongate`` argument parser, assembled from each command module's parsers."""

from __future__ import annotations

import argparse

from tritongate import __version__
from tritongate.cli import build, calibrate, gate, inspect, ir, pair, run
from tritongate.cli.common import EPILOG, HelpFormatter, use_formatter

PROG = "tritongate"


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Every sub-command, in the order ``tritongate --help`` lists them. ``command``: where it
    is one of this package's own commands, only that one (its command line parses the same,
    without importing the modules of the other commands: the baseline, batch and calibrate
    machinery a ``gate`` never uses)."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Performance-regression gate for Triton compiler changes.",
        epilog=EPILOG,
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"tritongate {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    own = {"run": run.add_parser, "gate": gate.add_parser, "pair": pair.add_pair_parser, "loop": pair.add_loop_parser,
           "calibrate": calibrate.add_parser, "ir": ir.add_ir_parser, "ir-diff": ir.add_ir_diff_parser,
           "ops": inspect.add_ops_parser, "merge": pair.add_merge_parser, "show": inspect.add_show_parser,
           "overlay": build.add_overlay_parser}
    if command in own:
        own[command](sub)
        use_formatter(parser)
        return parser

    run.add_parser(sub)
    gate.add_parser(sub)
    pair.add_pair_parser(sub)
    pair.add_loop_parser(sub)
    calibrate.add_parser(sub)
    ir.add_ir_parser(sub)
    ir.add_ir_diff_parser(sub)
    inspect.add_ops_parser(sub)
    pair.add_merge_parser(sub)
    inspect.add_show_parser(sub)
    build.add_overlay_parser(sub)

    from tritongate.cli.baseline import add_baseline_parser
    from tritongate.cli.batch import add_batch_parser
    from tritongate.cli.history import add_history_parser

    add_baseline_parser(sub)
    add_batch_parser(sub)
    add_history_parser(sub)
    use_formatter(parser)  # the other packages' commands wrap their descriptions alike
    return parser


def command_parser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    """The sub-parser of ``command`` (``KeyError`` if there is none)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[command]
    raise KeyError(command)
