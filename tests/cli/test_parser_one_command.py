"""``build_parser(command)`` builds only that command's parser: the same parser, help and all."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tritongate.cli import build_parser, main
from tritongate.cli.parser import command_parser

OWN = ["run", "gate", "pair", "loop", "calibrate", "ir", "ir-diff", "ops", "merge", "show", "overlay"]


@pytest.mark.parametrize("name", OWN)
def test_one_command_is_built_as_in_the_whole_parser(name):
    alone, whole = command_parser(build_parser(name), name), command_parser(build_parser(), name)
    assert alone.format_help() == whole.format_help()
    assert alone.prog == whole.prog


def test_another_name_gets_the_whole_parser(capsys):
    assert main(["--help"]) == 0
    assert "history" in capsys.readouterr().out
    assert main(["no-such-command"]) == 2
    assert "choose from" in capsys.readouterr().err


def test_a_gate_command_line_does_not_import_the_other_commands():
    code = ("import sys; from tritongate.cli import main; main(['gate', '--help']); "
            "print(sorted(m for m in sys.modules if m.split('.')[1:2] in (['batch'], ['baselines'], ['calibrate'])))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_a_valued_option_given_twice_is_refused_and_a_flag_twice_is_not(tmp_path, capsys):
    # argparse keeps the last silently: a workflow that names two runner classes meant one of them
    argv = ["baseline", "list", "--store", str(tmp_path), "--runner-class", "h200", "--runner-class", "h100"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--runner-class given twice ('h200', then 'h100'); give it once" in err
    assert main(["baseline", "list", "--store", str(tmp_path / "a"), "--store=" + str(tmp_path / "b")]) == 2
    assert "--store given twice" in capsys.readouterr().err
    (tmp_path / "s").mkdir()
    assert main(["baseline", "list", "--store", str(tmp_path / "s"), "--json", "--json"]) == 0
    capsys.readouterr()
    args = build_parser().parse_args(["baseline", "list", "--store", "s", "--runner-class", "h200"])
    assert args.runner_class == "h200"
