"""``tritongate gate``: compare two run directories and decide."""

from __future__ import annotations

import argparse
from pathlib import Path

from tritongate.argtypes import nonempty_text
from tritongate.cli.common import HelpFormatter, exit_codes
from tritongate.cli.options import (add_gate_options, artifact_url_option, baseline_state_option,
                                    calibration_option, gate_policy, verdict_template_option)

_text = nonempty_text


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``gate``."""
    gate = sub.add_parser(
        "gate", help="compare a candidate run with a base run and decide (verdict.json, verdict.md)",
        description="Join the rows of two run directories on (op, case, dtype) and give each a verdict: "
                    "REGRESSED, IMPROVED, UNCHANGED, IDENTICAL_BINARY, REJECTED, NOT_COMPARABLE, "
                    "MISSING or NEW. Any regression fails the gate (exit 1); so does a replayed config "
                    "that no longer compiles, and more missing rows than allowed. Rejected and "
                    "not-comparable rows are listed as unverified and fail only under --strict.",
        epilog=exit_codes(0, 1, 2, 4, zero="pass: no regression, and some row judged (a gate that judged\n"
                                                   "       none, every row rejected or no row, exits 2)"),
        formatter_class=HelpFormatter)
    gate.add_argument("base", type=_text, metavar="BASE_RUN", help="the run directory of the base build")
    gate.add_argument("cand", type=_text, metavar="CAND_RUN", help="the run directory of the candidate build")
    gate.add_argument("--out", type=_text, required=True, metavar="DIR", help="where verdict.json and verdict.md go")
    gate.add_argument("--allow-mismatch", action="store_true",
                      help="compare runs whose identities differ: every row becomes NOT_COMPARABLE")
    add_gate_options(gate)
    gate.set_defaults(func=cmd_gate)


def cmd_gate(args: argparse.Namespace) -> int:
    from tritongate.cli.common import append_step_summary
    from tritongate.cli.folders import load_run_dir
    from tritongate.gate.pipeline import Citations, gate_runs
    from tritongate.report.verdict_terminal import summary_lines

    policy = gate_policy(args)
    calibration = calibration_option(args)
    template = verdict_template_option(args)
    base = load_run_dir(Path(args.base), what="BASE_RUN: a run directory")
    cand = load_run_dir(Path(args.cand), what="CAND_RUN: a run directory")
    cite = Citations(baseline=baseline_state_option(args), calibration=calibration,
                     artifact_url=artifact_url_option(args))
    gated = gate_runs(base, cand, Path(args.out), policy, cite=cite, allow_mismatch=args.allow_mismatch,
                      template=template)
    result, written = gated.result, gated.written
    append_step_summary(written.md_path)
    # print_summary's lines, from the document just written rather than the file read back
    for line in summary_lines(written.doc):
        print(line)
    print(written.md_path)
    print(written.json_path)
    from tritongate.cli.pair import judged_something

    return judged_something(result, Path(args.out))
