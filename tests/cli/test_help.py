"""Every command says what it does, and every option and argument what it means."""

from __future__ import annotations

import argparse
from typing import Iterator

from tritongate.cli import build_parser


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield " ".join(("tritongate",) + path), parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from commands(sub, path + (name,))


def test_every_command_has_a_description():
    found = dict(commands(build_parser()))
    assert {"tritongate show", "tritongate ops", "tritongate baseline find", "tritongate batch"} <= set(found)
    assert [name for name, p in found.items() if not (p.description or "").strip()] == []


def test_every_option_and_argument_has_help():
    missing = [f"{name} {'/'.join(a.option_strings) or a.metavar or a.dest}"
               for name, p in commands(build_parser()) for a in p._actions
               if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))  # it lists the commands
               and not (a.help or "").strip()]
    assert missing == []
