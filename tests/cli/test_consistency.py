"""One CLI: an option means the same, has one default, unit and metavar on every command
that takes it; a command takes no option it would ignore; help wraps but keeps its footers."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from tests.cli.test_help import commands
from tritongate.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]


def _options() -> dict[str, list[tuple[str, argparse.Action]]]:
    """Every option string, with the commands that take it and their actions."""
    found: dict[str, list[tuple[str, argparse.Action]]] = defaultdict(list)
    for name, p in commands(build_parser()):
        for a in p._actions:
            if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction, argparse._VersionAction)):
                for opt in a.option_strings:
                    found[opt].append((name, a))
    return found


SHARED = ["--suite", "--backend", "--out", "--shape-file", "--ops", "--dtypes", "--rounds", "--samples-per-round",
          "--l2", "--color", "--isolate-tuner-cache", "--allow-busy-gpu", "--inputs", "--row-timeout", "--max-rounds",
          "--row-budget", "--run-budget", "--shard", "--policy", "--baseline-state", "--calibration", "--min-effect",
          "--noise-z", "--min-samples", "--max-missing", "--strict", "--artifact-url"]


@pytest.mark.parametrize("opt", SHARED)
def test_a_shared_option_has_one_metavar_type_and_choices_on_every_command(opt):
    uses = _options()[opt]
    assert len(uses) >= 2, uses
    # the same converter: a shard spec or a fraction read alike everywhere
    kinds = {(a.metavar, getattr(a.type, "__qualname__", a.type), tuple(a.choices or ()), a.nargs) for _, a in uses}
    assert len(kinds) <= 1 or opt in ("--suite", "--shard"), [(n, a.metavar, a.type) for n, a in uses]
    assert len({a.metavar for _, a in uses}) == 1 or opt == "--suite", [(n, a.metavar) for n, a in uses]


def test_history_names_its_threshold_apart_from_the_gates():
    """history's change-point threshold compares unpaired nightly medians: another quantity,
    so another name (and default) than the gate's --min-effect."""
    options = _options()
    assert "tritongate history" not in {n for n, _ in options["--min-effect"]}
    uses = options["--min-change"]
    assert {n for n, _ in uses} == {"tritongate history", "tritongate dashboard"}
    assert all(c.default == 0.02 and c.metavar == "F" and "0.01 is 1 %" in c.help for _, c in uses)


@pytest.mark.parametrize("opt", ["--rounds", "--samples-per-round", "--max-rounds", "--row-budget", "--run-budget",
                                 "--min-effect", "--noise-z", "--min-samples", "--row-timeout", "--l2", "--inputs"])
def test_a_measurement_or_gate_option_has_one_default_and_one_help(opt):
    uses = _options()[opt]
    assert len(uses) >= 2, uses
    assert len({a.default for _, a in uses}) == 1, [(n, a.default) for n, a in uses]
    stated = {a.help for _, a in uses if not a.help.startswith("as for pair")}
    assert len(stated) == 1, stated


def test_counts_take_n_and_relative_sizes_take_f_as_fractions():
    options = _options()
    for opt in ("--rounds", "--samples-per-round", "--max-rounds", "--min-samples", "--max-missing", "--aa-runs"):
        assert {a.metavar for _, a in options[opt]} == {"N"}, opt
    for opt in ("--min-effect",):
        for _, a in options[opt]:
            assert a.metavar == "F" and "fraction" in a.help and "0.01 is 1 %" in a.help
    (_, planted), = options["--planted"]
    assert planted.metavar == "F,G" and "fraction" in planted.help and "default 0.01,0.02,0.05" in planted.help


def test_the_stated_schedule_and_gate_defaults_are_the_code_defaults():
    from tritongate.gate.policy import GatePolicy, load_policy
    from tritongate.pair.orchestrator import default_schedule

    gpu, cpu = default_schedule("cuda", 5), default_schedule("cpu", 6)
    options = _options()
    helps = {opt: options[opt][0][1].help for opt in ("--max-rounds", "--row-budget", "--run-budget", "--min-effect",
                                                       "--noise-z", "--min-samples")}
    assert f"(default {gpu.max_rounds}; {cpu.max_rounds} on cpu)" in helps["--max-rounds"]
    assert f"(default {gpu.row_budget_s:g}; {cpu.row_budget_s:g} on cpu)" in helps["--row-budget"]
    assert f"(default {gpu.run_budget_s:g}; {cpu.run_budget_s:g} on cpu)" in helps["--run-budget"]
    policy = load_policy(None)
    assert policy.min_effect == GatePolicy().min_effect
    assert f"{policy.min_effect:g})" in helps["--min-effect"]
    assert f"(default {policy.noise_z:g})" in helps["--noise-z"]
    assert f"(default {policy.min_samples})" in helps["--min-samples"]


@pytest.mark.parametrize("argv,option", [
    (["calibrate", "--strict"], "--strict"),
    (["calibrate", "--max-missing", "3"], "--max-missing"),
    (["calibrate", "--artifact-url", "https://example.com/x"], "--artifact-url"),
    (["loop", "--shard", "1/2"], "--shard"),
])
def test_options_a_command_would_ignore_are_refused(argv, option, capsys):
    assert main(argv) == 2
    assert f"unrecognized arguments: {option}" in capsys.readouterr().err


@pytest.mark.parametrize("argv,words", [
    (["gate", "a", "b", "--out", "o", "--min-effect", "2"],
     "--min-effect: expected a fraction: 0.01 is 1 %, got '2' (that would be 200%); for 2 % pass 0.02"),
    (["gate", "a", "b", "--out", "o", "--min-effect", "1"], "for 1 % pass 0.01"),
    (["history", "--store", "s", "--runner-class", "h200", "--suite", "pr", "--out", "o", "--min-change", "5"],
     "for 5 % pass 0.05"),
    (["calibrate", "--planted", "1,2,5"], "per cent? for 1, 2, 5 % pass 0.01,0.02,0.05"),
    (["calibrate", "--planted", "0,0.01"], "expected fractions above 0"),
    (["calibrate", "--planted", "two"], "expected fractions separated by commas"),
])
def test_a_per_cent_number_where_a_fraction_goes_is_refused_with_the_fraction(argv, words, capsys):
    assert main(argv) == 2
    assert words in capsys.readouterr().err


def test_fractions_parse():
    from tritongate.argtypes import fraction, fraction_list

    assert fraction("0.02") == 0.02 and fraction("0") == 0.0
    assert fraction_list("0.05, 0.01,0.02") == (0.01, 0.02, 0.05)


def test_descriptions_wrap_and_exit_code_footers_stay_as_laid_out(monkeypatch):
    from tritongate.cli.common import EPILOG
    from tritongate.cli.pair import PAIR_EPILOG

    monkeypatch.setenv("COLUMNS", "72")
    for name, p in commands(build_parser()):
        text = p.format_help()
        footer = p.epilog or ""
        body = text[:text.index(footer)] if footer and footer in text else text
        too_long = [ln for ln in body.splitlines() if len(ln) > 72 and not ln.lstrip().startswith("usage:")]
        assert too_long == [], name
        if footer:
            assert footer.rstrip() in text, name  # the footer as written, line for line
    pair_help = next(p for n, p in commands(build_parser()) if n == "tritongate pair").format_help()
    assert PAIR_EPILOG.rstrip() in pair_help
    assert EPILOG.rstrip() in build_parser().format_help()


def test_record_baseline_help_is_named_for_the_script():
    proc = subprocess.run([sys.executable, str(ROOT / "ci" / "record_baseline.py"), "--help"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: record_baseline.py [-h] --suite NAME|PATH"), proc.stdout[:200]
    assert "publishing (record_baseline.py only)" in proc.stdout


def test_prog_names_the_script_in_usage_errors_too(capsys):
    assert main(["run", "--bogus"], prog="record_baseline.py") == 2
    assert "record_baseline.py: error: " in capsys.readouterr().err
    assert main(["run", "--bogus"]) == 2
    assert "tritongate run: error: " in capsys.readouterr().err


def test_counts_agree_with_their_noun():
    from tritongate.cli.common import counted

    assert [counted(n, "row") for n in (0, 1, 2)] == ["0 rows", "1 row", "2 rows"]
    assert counted(1, "shape") == "1 shape" and counted(3, "op") == "3 ops"


def test_progress_of_one_row_says_row(capsys):
    from tritongate.cli.common import progress_printer
    from tritongate.progress import Progress

    progress_printer(False, verb="pairing")(Progress("start", total=1, message="out/x"))
    progress_printer(False)(Progress("start", total=2, message="out/y"))
    assert capsys.readouterr().err.splitlines() == ["pairing 1 row into out/x", "measuring 2 rows into out/y"]


def test_paired_progress_and_help_say_rounds_not_pairs():
    """A verdict counts rounds; the progress line of a paired row and the help say the same word."""
    from tests.gate.helpers import row
    from tritongate.pair.rows import row_summary as _row_summary

    texts = [a.help for _, p in commands(build_parser()) for a in p._actions if a.help]
    texts += [p.description for _, p in commands(build_parser()) if p.description]
    assert [t for t in texts if re.search(r"\bpairs\b", t)] == []
    line = _row_summary(row(seed=1), row(seed=2))
    assert line.endswith("paired, 5 rounds)"), line


def test_a_confirmed_row_s_progress_line_shows_the_figure_its_verdict_shows():
    """A call measured again on fresh worker pairs is shown by the verdict with the
    confirmation's estimate; the progress line said the estimate over every round instead."""
    from tests.gate.helpers import paired_run, row
    from tritongate.gate.policy import GatePolicy
    from tritongate.gate.row_judging import judge_rows
    from tritongate.pair.rows import row_summary as _row_summary

    base, cand = paired_run(row(rounds=80), row(median=20.6, seed=1, rounds=80))
    start = base.measurement.pairing.confirm_from
    assert 0 < start < len(base.samples) // 5  # the schedule confirmed the call
    (verdict,) = judge_rows([(base, cand)], GatePolicy())
    line = _row_summary(base, cand)
    assert f"{verdict.timing.effect:+.2%} paired on the {len(base.samples) // 5 - start} confirming rounds" in line, line
