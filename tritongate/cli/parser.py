"""The ``tritongate`` argument parser, assembled from each command module's parsers."""

from __future__ import annotations

import argparse

from tritongate import __version__
from tritongate.cli import calibrate, inspect, pair, prescreen, run
from tritongate.cli.common import EPILOG, refuse_repeats, use_formatter

PROG = "tritongate"


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Every sub-command, in --help order; or only ``command``, where it is one of ``own``: it parses the
    same without importing the baseline and batch machinery a ``gate`` never uses."""
    parser = argparse.ArgumentParser(prog=PROG, description="Performance-regression gate for Triton compiler changes.",
                                     epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"tritongate {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    own = {"run": run.add_parser, "gate": pair.add_gate_parser, "pair": pair.add_pair_parser,
           "loop": pair.add_loop_parser, "calibrate": calibrate.add_parser, "ir": inspect.add_ir_parser,
           "ir-diff": inspect.add_ir_diff_parser, "prescreen": prescreen.add_parser, "ops": inspect.add_ops_parser,
           "merge": pair.add_merge_parser, "show": inspect.add_show_parser,
           "overlay": pair.add_overlay_parser}  # in --help order
    for name, add in own.items():
        if command not in own or name == command:
            add(sub)
    if command not in own:
        from tritongate.cli.baseline import add_baseline_parser, add_dashboard_parser, add_history_parser
        from tritongate.cli.batch import add_batch_parser

        add_baseline_parser(sub)
        add_batch_parser(sub)
        add_history_parser(sub)
        add_dashboard_parser(sub)
    use_formatter(parser)  # HelpFormatter for the parser and every command below it
    refuse_repeats(parser)
    return parser


def command_parser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    """The sub-parser of ``command`` (``KeyError`` if there is none)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[command]
    raise KeyError(command)
