"""``tritongate prescreen``: which baseline rows two compiler builds can run differently, on a CPU.

``ci/prescreen.py`` is this command with ``$GITHUB_OUTPUT`` lines added: both take the
arguments ``add_arguments`` declares and run ``screen`` then ``print_result``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from tritongate.argtypes import nonempty_text as _text
from tritongate.cli.common import (DEFAULT_BLAME, add_command, append_step_summary, append_step_summary_text,
                                   blaming_line, exit_codes)
from tritongate.errors import ExitCode, PreflightError, UsageError
from tritongate.report.untrusted import neutralize

MAX_TABLE_ROWS = 200  # a launch-path change times every row: prescreen.json lists them all


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The pre-screen's options (``tritongate prescreen`` and ``ci/prescreen.py``)."""
    p.add_argument("--baseline", type=_text, required=True, metavar="RECORD_DIR",
                   help="a baseline record (a store entry, or a run directory) with its ttgir/index.tsv; its "
                        "launched variants are compiled for the GPU target it was recorded for")
    p.add_argument("--base-python", type=_text, metavar="PY",
                   help="the base build's interpreter (with torch, triton, numpy, pyyaml, pydantic and rich; "
                        "not tritongate: this one's is put on its path); needed but with --judge")
    p.add_argument("--cand-python", type=_text, metavar="PY", help="the candidate build's interpreter")
    p.add_argument("--base-env", type=_text, action="append", metavar="K=V",
                   help="environment for the base build's compiles and captures only (repeatable)")
    p.add_argument("--cand-env", type=_text, action="append", metavar="K=V",
                   help="environment for the candidate build's only, e.g. DISABLE_MMA_V3=1 to screen a compiler "
                        "knob with one interpreter as both builds (repeatable)")
    split = p.add_mutually_exclusive_group()
    split.add_argument("--side", choices=("base", "cand"),
                       help="only this build's half (its recompile, capture and launch-path hashes into DIR, "
                            "DIR/side-SIDE.json), with its --base-python or --cand-python: in CI each build's half "
                            "runs in its own job, and --judge in one that holds neither build")
    split.add_argument("--judge", action="store_true",
                       help="compare the two halves already in DIR (both --side runs, or their artifacts "
                            "downloaded there) and classify the rows; runs no compiler code")
    p.add_argument("--out", type=_text, required=True, metavar="DIR",
                   help="where prescreen.json, ir-diff/ (for `pair --changed-from`) and, when no row changed, "
                        "verdict/ go")
    p.add_argument("--suite", type=_text, metavar="NAME|PATH",
                   help="the suite the baseline was recorded with (default: the name its identity gives)")
    p.add_argument("--blame", type=int, nargs="?", const=DEFAULT_BLAME, default=0, metavar="N",
                   help=f"for up to N (default {DEFAULT_BLAME}) changed kernels, compile each under both builds "
                        "with every compiler pass dumped and name the first pass whose output differs "
                        "(DIR/ir-diff/blame.json, as `ir-diff --blame` writes it; seconds to a minute a kernel)")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub, "prescreen", cmd_prescreen,
        help="which baseline rows two compiler builds can run differently (CPU only, no GPU time)",
        description="Recompile the baseline record's launched kernel variants for its GPU target under each "
                    "build's interpreter (TTGIR down to cubin), recapture what each build launches for each row, "
                    "compare the builds' launch-path files, and list the rows that can change with why. Pair only "
                    "those on a GPU: `tritongate pair RECORD --changed-from DIR/ir-diff`. When no row changed, "
                    "DIR/verdict/ holds a verdict whose every row is IDENTICAL_BINARY. The last line of stdout is "
                    "DIR/prescreen.json.",
        epilog=exit_codes(0, 2, 4, 130, zero="screened (changed rows are a finding, not a failure)"))
    add_arguments(p)


def screen(args: argparse.Namespace) -> Any:
    """Run the pre-screen (and the blame) for ``args``, printing the changed rows' table and each
    blamed kernel as it is done; the ``PrescreenResult`` (None for ``--side``: one build's half)."""
    from tritongate.prescreen import run_prescreen
    from tritongate.prescreen.rows import changed_rows, notes

    if args.blame < 0:
        raise UsageError(f"--blame {args.blame}: pass a count of kernels, 0 or more")
    # read here: a suite the captures cannot read would count every row as changed; the judge
    # captures nothing and may run where the suite file is not (a path in the compiler's checkout)
    if args.suite and not args.judge:
        from tritongate.suites import load_suite

        try:
            load_suite(args.suite)
        except PreflightError as exc:  # bad input, exit 2 as every pre-screen input
            raise UsageError(f"--suite {args.suite}: {exc}") from None
    needed = [f"{args.side}_python"] if args.side else [] if args.judge else ["base_python", "cand_python"]
    for name in needed:
        if not getattr(args, name):
            raise UsageError(f"--{name.replace('_', '-')} PY is needed" + (f" with --side {args.side}" if args.side
                                                                          else "; pass both builds' interpreters"))
    if args.blame and (args.side or args.judge):
        raise UsageError("--blame compiles under both builds: run it without --side/--judge")
    envs = _env_overlays(args)

    def started() -> None:  # the inputs are checked: the compiles and captures take tens of seconds
        which = {"base": "the base build", "cand": "the candidate build"}.get(args.side or "", "the two builds")
        print(neutralize(f"screening {args.baseline}: recompiling its launched kernels for its GPU target and "
                         f"capturing its rows under {which} ..."), file=sys.stderr, flush=True)

    if args.side:
        from tritongate.prescreen import prepare_side

        python = args.base_python if args.side == "base" else args.cand_python
        prepare_side(Path(args.baseline), {args.side: python}, Path(args.out), suite=args.suite,
                     envs={args.side: envs[args.side]}, started=started)
        from tritongate.prescreen.side import side_json

        print(Path(args.out) / side_json(args.side))  # what the judge's job downloads
        return None
    if args.judge:
        from tritongate.prescreen import judge

        result = judge(Path(args.baseline), Path(args.out), suite=args.suite)
    else:
        result = run_prescreen(Path(args.baseline), args.base_python, args.cand_python, Path(args.out),
                               suite=args.suite, envs=envs, started=started)
    print(changed_table(changed_rows(result.document)), end="", flush=True)
    for note in notes(result.document):
        print(f"note: {neutralize(note)}")
    if not args.judge and os.path.abspath(args.base_python) == os.path.abspath(args.cand_python) \
            and envs["base"] == envs["cand"]:
        print("note: base and candidate are the same build (same interpreter, no overlay difference): an A/A "
              "check of the screen, not a test of a compiler change")
    if args.blame and result.document.get("target") is None:
        print("  (--blame: nothing was compiled for this record's target, so no pass can be blamed)")
    elif args.blame and result.rows_changed:
        _blame(result, args, envs)
    if result.verdict_dir is not None:
        append_step_summary(result.verdict_dir / "verdict.md")
    else:  # rows to time: the job's summary says how many and why (a non-CUDA record: every row)
        append_step_summary_text(step_summary(result))
    return result


def step_summary(result: Any) -> str:
    """The count line and the notes, as the job summary shows them when rows are to be timed."""
    from tritongate.prescreen.rows import count_line, notes
    from tritongate.report.untrusted import markdown_cell

    lines = ["### tritongate pre-screen", "", markdown_cell(count_line(result.document, "the pre-screen's ir-diff"))]
    return "\n".join([*lines, *(f"- {markdown_cell(n)}" for n in notes(result.document))]) + "\n"


def changed_table(rows: list[Any]) -> str:
    """One line per changed row: its key and why it is timed (empty when none changed)."""
    if not rows:
        return ""
    lines = [f"{'op':<18} {'case':<18} {'dtype':<9} why"]
    for r in rows[:MAX_TABLE_ROWS]:  # each name made safe first: padding a name must not be undone
        op, case, dtype, why = (neutralize(v) for v in (r.op, r.case, r.dtype, r.why))
        lines.append(f"{op:<18} {case:<18} {dtype:<9} {why}")
    if len(rows) > MAX_TABLE_ROWS:
        lines.append(f"... {len(rows) - MAX_TABLE_ROWS} more rows (prescreen.json lists them all)")
    return "\n".join(lines) + "\n"


def _env_overlays(args: argparse.Namespace) -> dict[str, dict[str, str]]:
    """``--base-env``/``--cand-env`` per side, validated; the interpreter switch is the pre-screen's
    own (off for the compiles, on for the captures), so an overlay cannot set it."""
    from tritongate.pair.build import parse_env_overlay

    envs = {"base": parse_env_overlay(args.base_env, option="--base-env"),
            "cand": parse_env_overlay(args.cand_env, option="--cand-env")}
    if args.judge and (envs["base"] or envs["cand"]):
        raise UsageError("--base-env/--cand-env with --judge: the judge runs no build; give them to each --side run")
    other = {"base": "cand", "cand": "base"}.get(args.side or "")
    if other and envs[other]:
        raise UsageError(f"--{other}-env with --side {args.side}: give it to the --side {other} run")
    for side, env in envs.items():
        if "TRITON_INTERPRET" in env:
            raise UsageError(f"--{side}-env TRITON_INTERPRET=...: the pre-screen compiles without the interpreter and "
                             "captures with it, whatever a build sets; drop it")
    return envs


def _blame(result: Any, args: argparse.Namespace, envs: dict[str, dict[str, str]]) -> None:
    from tritongate.prescreen.blame import blame_prescreen

    def show(k: Any) -> None:
        what = k.summary if not k.error else f"not blamed: {k.error}"
        print(f"  blame  {neutralize(k.case)}  {neutralize(k.kernel)}  {neutralize(k.variant)}: {neutralize(what)}",
              flush=True)

    def starting(i: int, n: int, k: Any) -> None:
        print(blaming_line(i, n, k.case, k.kernel, k.variant), file=sys.stderr, flush=True)

    outcome = blame_prescreen(result.out, result.document, args.base_python, args.cand_python, args.blame,
                              starting=starting, progress=show, envs=envs)
    for k in outcome.not_blamed:
        print(f"  not blamed  {neutralize(k['case'])}  {neutralize(k['kernel'])}  {neutralize(k['variant'])}")
    if outcome.not_blamed:
        print(f"  ({len(outcome.not_blamed)} changed kernels not blamed: --blame N for more)")
    print(f"blame: {outcome.path}")


def print_result(result: Any) -> None:
    """The count line, the verdict folder when no row changed, and prescreen.json last."""
    from tritongate.prescreen import PRESCREEN_JSON
    from tritongate.prescreen.rows import count_line

    print(count_line(result.document, shlex.quote(str(result.out / "ir-diff"))))  # copied into a shell
    if result.verdict_dir is not None:
        print(f"verdict: {result.verdict_dir}")
    print(result.out / PRESCREEN_JSON)


def cmd_prescreen(args: argparse.Namespace) -> int:
    result = screen(args)
    if result is not None:  # None: one side's half, for the judge
        print_result(result)
    return ExitCode.OK
