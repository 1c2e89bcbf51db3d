"""``tritongate calibrate``: how far this runner's verdicts can be trusted."""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import sys
from pathlib import Path
from typing import Any

from tritongate.argtypes import FRACTION_HINT, finite_number, fraction_list, nonempty_text as _text
from tritongate.cli.common import add_command, counted, split_values, want_color
from tritongate.cli.folders import load_run_dir, suite_for_record
from tritongate.cli.options import (add_gate_options, add_inputs_option, add_measurement_options, add_sample_time,
                                    add_schedule_options, gate_policy)
from tritongate.cli.pair import pair_progress, pair_request, record_suite
from tritongate.errors import ExitCode, GateError, UsageError
from tritongate.model.calibration import (CALIBRATION_JSON, DEFAULT_FRACTIONS, Calibration, false_verdicts,
                                          load_calibration)
from tritongate.report.untrusted import neutralize

FOOTER = """exit codes:
  0    calibrated (false verdicts and missed goals are findings: see calibration.md); the last line is calibration.md
  2    usage or input error (bad fractions, a baseline that is not a record run, a threshold raise
       refused without --allow-loosen: listed, nothing written; --resume of a folder that is not
       a calibration, with other settings, or with a damaged step.json or aim.json)
  3    preflight failed (the suite, the GPU)
  4    internal error
  130  interrupted: the steps finished so far are kept; go on with --resume CALDIR
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    cal = add_command(
        sub, "calibrate", cmd_calibrate,
        help="how far this runner's verdicts can be trusted: A/A and planted slowdowns",
        description="On this machine: record the suite (or take --baseline), then paired runs of the build "
                    "against itself with every row timed (A/A: every call is a false verdict); an aim step that times "
                    "each row, in one process, along a ladder of planted spins and keeps per --planted size the "
                    "spin that made it that much slower (a size it cannot pin down there is measured by a paired "
                    "run of that spin); and one paired run per size where the candidate's builtin "
                    "kernels spin that long (the base spinning 0). Writes OUT/calibrate-<suite>_<UTC>/ "
                    "with each step's pair directory, calibration.json (per row: A/A verdicts, detectable "
                    "effect, the smallest planted slowdown caught; per size class: catch rates), "
                    "calibration.md and calibration.png. Builtin ops only (the planted delay is theirs).",
        epilog=FOOTER)
    cal.add_argument("--suite", type=_text, metavar="NAME|PATH",
                     help="default: the suite of --baseline, else pr")
    cal.add_argument("--backend", type=_text, default="auto", metavar="NAME", help="cuda, cpu, ... or auto (default)")
    cal.add_argument("--out", type=_text, metavar="DIR",
                     help="parent of the calibration folder (default: runs; --resume goes on in its own)")
    cal.add_argument("--baseline", type=_text, metavar="RECORD_RUN",
                     help="a record run to replay (default: record one)")
    cal.add_argument("--planted", type=fraction_list, metavar="F,G",
                     help=f"planted slowdowns as fractions of each row's time, {FRACTION_HINT} (default "
                          f"{','.join(f'{f:g}' for f in DEFAULT_FRACTIONS)})".replace("%", "%%"))
    cal.add_argument("--aa-runs", type=int, metavar="N", help="A/A paired runs (default 1)")
    cal.add_argument("--resume", type=_text, metavar="CALDIR",
                     help="go on with a calibration that stopped part-way (its folder, calibrate-<suite>_<UTC>): "
                          "its own settings and record; finished steps are read back, not measured again")
    cal.add_argument("--python", type=_text, metavar="PY", help="the build's interpreter (default: this one)")
    t = cal.add_argument_group("thresholds")
    t.add_argument("--write-thresholds", type=_text, metavar="YAML",
                   help="set per-op minimum effects in this policy file (e.g. ops/gate.yaml) from the A/A runs: the "
                        "largest A/A effect of the op's rows x1.5, rounded up to 0.5%%, or the "
                        "default where that is enough; only the file's ops: block changes")
    t.add_argument("--allow-loosen", action="store_true",
                   help="allow --write-thresholds to raise a minimum effect (the gate then misses smaller changes "
                        "of that op); without it such a write is refused and listed")
    t.add_argument("--from", dest="from_calibration", type=_text, metavar="CALIBRATION",
                   help="derive thresholds from this calibration.json (or its folder) instead of measuring")
    add_measurement_options(cal)
    add_sample_time(cal)
    g = cal.add_argument_group("pairing")
    add_inputs_option(g)
    g.add_argument("--row-timeout", type=finite_number, default=600.0, metavar="S", help="as for pair (default 600)")
    add_schedule_options(g)
    add_gate_options(cal, calibration=False)
    cal.set_defaults(time_identical=True, shard=None, changed_from=None)


def _check_record(path: Path, option: str) -> None:
    """``path`` must be a finished record run (what a paired run replays)."""
    try:
        run = load_run_dir(path, what="a record run")
    except GateError as exc:
        raise UsageError(f"{option} {path}: {exc}") from None
    if run.mode != "record":
        raise UsageError(f"{option} {path}: a {run.mode} run, not a record run; pass the record it replayed, or "
                         "leave the option out to record one")


def _suite_setting(suite: str) -> str:
    """A suite file by its absolute path (a resume may run from elsewhere), a builtin suite by its name."""
    path = Path(suite)
    return _absolute(path, "--suite") if path.suffix in (".yaml", ".yml") or path.is_file() else suite


def _absolute(path: Path, option: str) -> str:
    """``path`` resolved, as a calibration keeps it; a link loop is the user's input, not a bug."""
    try:
        return str(path.resolve())
    except (OSError, RuntimeError) as exc:  # RuntimeError: Path.resolve's symlink loop (Python < 3.13)
        raise UsageError(f"{option} {path}: cannot be resolved ({exc}); pass a file") from None


def cmd_calibrate(args: argparse.Namespace) -> int:
    """A/A and planted-slowdown paired runs on this machine: calibration.json, .md, .png."""
    from tritongate.calibrate.resume import MEASURE, Settings, check_same, load_settings
    from tritongate.calibrate.run import calibration_dir, plantable_ops, run_calibration
    from tritongate.gate.policy import load_policy
    from tritongate.pair.orchestrator import run_pair

    if args.allow_loosen and not args.write_thresholds:
        raise UsageError("--allow-loosen needs --write-thresholds FILE")
    if args.from_calibration:  # thresholds from an earlier calibration: nothing is measured
        if not args.write_thresholds:
            raise UsageError("--from needs --write-thresholds FILE (it only derives thresholds)")
        if args.resume:
            raise UsageError("--from derives thresholds without measuring; it does not go with --resume")
        return _write_thresholds(load_calibration(Path(args.from_calibration)), args)
    if args.sample_ms is not None and (args.baseline or args.resume):
        raise UsageError("--sample-ms sets the sample length of the record calibrate makes; with --baseline or "
                         "--resume the record's own launches per sample are measured, drop it")
    if args.baseline and not args.resume:  # checked before anything is made or measured; its suite is the record's
        _check_record(Path(args.baseline), "--baseline")
        args.suite = suite_for_record(Path(args.baseline), args.suite, option="--baseline")
    # the settings the command line gives (None: not given), as a calibration keeps them
    given = {"suite": _suite_setting(args.suite) if args.suite else None, "aa_runs": args.aa_runs,
             "fractions": args.planted,
             "only_ops": tuple(split_values(args.ops)) or None, "only_dtypes": tuple(split_values(args.dtypes)) or None,
             "backend": None if args.backend == "auto" else args.backend,
             "shape_file": _absolute(Path(args.shape_file), "--shape-file") if args.shape_file else None,
             "python": args.python}
    if args.resume:  # go on with the calibration's own settings and record
        if args.baseline:
            raise UsageError("--resume goes on with the calibration's own record; drop --baseline")
        if args.out is not None:
            raise UsageError(f"--resume goes on in its own folder ({args.resume}); drop --out")
        out = Path(args.resume)
        settings = load_settings(out)
        check_same(settings, given)
        _check_record(Path(settings.record), f"--resume {out}: its record")
    else:
        defaults = {"suite": "pr", "aa_runs": 1, "fractions": DEFAULT_FRACTIONS, "only_ops": (), "only_dtypes": (),
                    "backend": "auto"}
        settings = Settings(record="", **{k: defaults.get(k) if v is None else v for k, v in given.items()})
    args.suite, args.aa_runs, args.backend = settings.suite, settings.aa_runs, settings.backend
    args.ops, args.dtypes = list(settings.only_ops), list(settings.only_dtypes)
    args.shape_file, args.python = settings.shape_file, settings.python
    if args.aa_runs < 1:
        raise UsageError(f"--aa-runs must be at least 1, got {args.aa_runs}")
    plantable = plantable_ops(args.suite)
    policy = gate_policy(args)
    if args.write_thresholds:  # a bad policy file fails now, not after the calibration
        load_policy(Path(args.write_thresholds))
    args.base_python = args.cand_python = args.python
    args.base_env = args.cand_env = None
    color = want_color(args.color, sys.stderr)
    if args.resume:
        record = Path(settings.record)
        print(f"resume:      {out} (record {record})", file=sys.stderr, flush=True)
    else:
        out = calibration_dir(Path(args.out or "runs"), args.suite)
        if args.baseline:
            record = Path(args.baseline)
        else:
            print(f"record: {args.suite} ({args.backend})", file=sys.stderr, flush=True)
            record = record_suite(args, out)
            if isinstance(record, int):
                return record
            print(f"record:      {record}")
        dataclasses.replace(settings, record=str(record.resolve())).write(out)
    template = pair_request(args, record, out, policy)
    steps, done = args.aa_runs + 1 + len(settings.fractions), itertools.count(1)
    try:
        cal, md, png = run_calibration(
            template, suite=args.suite, out=out, fractions=settings.fractions, aa_runs=args.aa_runs,
            plantable=plantable, run=lambda request: run_pair(request, pair_progress(color)),
            log=lambda text: print(f"[{next(done)}/{steps}] {text}", file=sys.stderr, flush=True),
            detail=lambda text: print(f"  {text}", file=sys.stderr, flush=True))
    except KeyboardInterrupt as exc:  # the finished steps are kept: say how to go on
        exc.add_note(f"the steps finished so far are kept in {out}; go on with `tritongate calibrate --resume {out}`, "
                     f"adding the measurement options it was started with, if any ({out / MEASURE} keeps them)")
        raise
    print_outcome(cal, out, md, png)
    return _write_thresholds(cal, args) if args.write_thresholds else ExitCode.OK


def _write_thresholds(cal: Any, args: argparse.Namespace) -> int:
    from tritongate.calibrate.thresholds import write_thresholds

    path = Path(args.write_thresholds)
    changes = write_thresholds(cal, path, allow_loosen=args.allow_loosen)
    for change in changes:
        print(f"threshold {neutralize(change.line())}")
    print(f"{path}: {counted(len(changes), 'per-op minimum effect')} changed" if changes else
          f"{path}: every per-op minimum effect already matches the calibration")
    return ExitCode.OK


def print_outcome(cal: Calibration, out: Path, md: Path, png: Path | None) -> None:
    print(f"A/A: {false_verdicts(cal.aa_false)} in {counted(cal.aa_rows, 'row')}")
    for f in cal.fractions:
        rate = cal.rate(f)
        print(f"planted {f:.0%}: caught on {rate.caught} of {counted(rate.rows, 'row')}")
    for g in cal.goals():
        print(f"goal {'met' if g.met else 'MISSED' if g.met is False else 'n/a'}: {g.text()}")
    from tritongate.calibrate.report import on_interpreter

    if on_interpreter(cal):
        print("note: on the Triton interpreter: the plant is a host busy-wait after each launch and the rates are "
              "the interpreter's on this host, nothing a GPU runner's gate uses; calibrate on the GPU runner")
    print(f"calibration: {out / CALIBRATION_JSON}")
    if png is not None:
        print(f"plot:        {png}")
    print(md)
    sys.stdout.flush()
