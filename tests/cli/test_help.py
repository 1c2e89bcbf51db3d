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


def test_the_measurement_defaults_in_the_help_are_the_code_defaults():
    import re

    from tritongate.backends import CPU_MEASURE
    from tritongate.harness.measure import MeasureConfig

    gpu, cpu = MeasureConfig(), CPU_MEASURE
    stated = {}
    for name, p in commands(build_parser()):
        for a in p._actions:
            if a.dest in ("rounds", "samples_per_round"):
                m = re.search(r"default (\d+); (\d+) on cpu", a.help)
                stated[(name, a.dest)] = (int(m[1]), int(m[2])) if m else a.help
    assert {"tritongate run", "tritongate pair", "tritongate batch"} <= {name for name, _ in stated}
    assert stated == {key: (getattr(gpu, key[1]), getattr(cpu, key[1])) for key in stated}
