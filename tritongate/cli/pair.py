"""``tritongate gate``, ``pair``, ``loop``, ``merge`` and ``overlay``: two builds' runs, paired and gated."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, Callable

from tritongate.argtypes import nonempty_text as _text
from tritongate.cli.common import (add_command, append_step_summary, counted, exit_codes, print_summary,
                                   progress_printer, split_values, want_color)
from tritongate.cli.folders import Kind, kind_of, load_run_dir, recorded_selection, suite_for_record
from tritongate.cli.options import (add_gate_options, add_pair_options, add_sample_time, artifact_url_option,
                                    baseline_state_option, calibration_option, changed_from_option, gate_policy, verdict_template_option)
from tritongate.errors import MeasurementError, UsageError
from tritongate.recorded import recorded_shapes

# a verdict that judged no row is no pass: exit 2, as `run` measuring no row
PAIR_EPILOG = exit_codes(0, 1, 2, 3, 4, 130, zero="pass: no regression, and some row judged (a pair that judged\n"
                                                 "       none, every row rejected or no row planned, exits 2 where\n"
                                                 "       the gate did not fail)")


def add_gate_parser(sub: argparse._SubParsersAction) -> None:
    gate = add_command(
        sub, "gate", cmd_gate, help="compare a candidate run with a base run and decide (verdict.json, verdict.md)",
        description="Join the rows of two run directories on (op, case, dtype) and give each a verdict: "
                    "REGRESSED, IMPROVED, UNCONFIRMED, UNCHANGED, IDENTICAL_BINARY, REJECTED, NOT_COMPARABLE, "
                    "MISSING or NEW. Any regression fails the gate (exit 1); so does a replayed config "
                    "that no longer compiles, and more missing rows than allowed. Rejected and "
                    "not-comparable rows are listed as unverified and fail only under --strict.",
        epilog=exit_codes(0, 1, 2, 4, zero="pass: no regression, and some row judged (a gate that judged\n"
                                                   "       none, every row rejected or no row, exits 2)"))
    gate.add_argument("base", type=_text, metavar="BASE_RUN", help="the run directory of the base build")
    gate.add_argument("cand", type=_text, metavar="CAND_RUN", help="the run directory of the candidate build")
    gate.add_argument("--out", type=_text, required=True, metavar="DIR", help="where verdict.json and verdict.md go")
    gate.add_argument("--allow-mismatch", action="store_true",
                      help="compare runs whose identities differ: every row becomes NOT_COMPARABLE")
    add_gate_options(gate)


def add_pair_parser(sub: argparse._SubParsersAction) -> None:
    pair = add_command(
        sub, "pair", cmd_pair, help="the PR check: base and candidate builds replay a baseline in alternating rounds",
        description="Start one worker per compiler build (an interpreter plus environment overlays), both on "
                    "one device, both replaying BASELINE_RECORD's autotune configs. Rows whose launched "
                    "kernels are byte-identical on both sides are IDENTICAL_BINARY without timing; the others "
                    "are timed in alternating rounds (A B, B A, ...) with one k for both sides, get more rounds "
                    "while short of their precision target, and are gated on the paired log ratios. Writes "
                    "OUT/pair-<suite>_<UTC>/{base,candidate}/ (ordinary run directories) and verdict/.",
        epilog=PAIR_EPILOG)
    pair.add_argument("baseline", type=_text, metavar="BASELINE_RECORD", help="a record run (tritongate run) to replay")
    pair.add_argument("--suite", type=_text, metavar="NAME|PATH",
                      help="builtin suite name or suite YAML (default: the one BASELINE_RECORD was recorded with; "
                           "another suite is refused)")
    pair.add_argument("--out", type=_text, required=True, metavar="DIR", help="parent directory of the pair directory")
    pair.add_argument("--backend", type=_text, default="auto", metavar="NAME", help="cuda, cpu, ... or auto (default)")
    add_pair_options(pair)
    pair.add_argument("--sample-ms", type=float, help=argparse.SUPPRESS)  # refused, saying why (cmd_pair)


def add_loop_parser(sub: argparse._SubParsersAction) -> None:
    loop = add_command(
        sub, "loop", cmd_loop, help="record a suite, pair the build against itself (or --cand-env ...), gate",
        description="The whole PR check on one machine: record the suite (live autotune), then run "
                    "`tritongate pair` on that record with the current interpreter on both sides (or the "
                    "--base-*/--cand-* builds), then gate. Prints the record, both run directories and "
                    "verdict.md.",
        epilog=PAIR_EPILOG)
    loop.add_argument("--suite", type=_text, default="smoke", metavar="NAME|PATH", help="default: smoke")
    loop.add_argument("--backend", type=_text, default="auto", metavar="NAME", help="cuda, cpu, ... or auto (default)")
    loop.add_argument("--out", type=_text, default="runs", metavar="DIR", help="default: runs")
    add_pair_options(loop, shard=False)
    add_sample_time(loop)


def add_merge_parser(sub: argparse._SubParsersAction) -> None:
    merge = add_command(
        sub, "merge", cmd_merge, help="join the shards of a sharded paired run (pair --shard I/N) and gate them as one",
        description="Check that the pair directories are the shards of one run (one suite, one shard count, "
                    "each index once, rows disjoint, measured alike), write OUT/base and OUT/candidate with "
                    "every shard's rows (each row keeps its own paired rounds) and TTGIR, and gate them into "
                    "OUT/verdict (verdict.json, verdict.md, ir-diff/).",
        epilog=exit_codes(0, 1, 2, 4, zero="pass: no regression, and some row judged (a merge that judged none is "
                                           "exit 2)"))
    merge.add_argument("shards", type=_text, nargs="+", metavar="PAIR_DIR",
                       help="the pair-<suite>_<UTC> directories the shards printed")
    merge.add_argument("--out", type=_text, required=True, metavar="DIR", help="an empty directory for the merged run")
    merge.add_argument("--allow-partial", action="store_true",
                       help="gate the shards given even when some are missing: their rows are listed MISSING, which "
                            "fails the gate unless --max-missing tolerates that many")
    add_gate_options(merge)


def add_overlay_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub, "overlay", cmd_overlay,
        help="make a compiler build from a patch of Triton's Python sources (seconds, no compile)",
        description="Make a venv at OUT whose Triton is the --base-python interpreter's installed build with "
                    "the patches applied to its Python sources (python/triton/**, third_party/*/backend/**, "
                    "or installed paths triton/**); the compiled libraries are linked, not rebuilt. A patch "
                    "that touches compiled code, or does not apply, is refused by name. The build records "
                    "each patch's sha256 (the run identity carries it). Prints the new interpreter as the "
                    "last line of stdout: pass it to `tritongate pair RECORD --cand-python`.",
        epilog=exit_codes(0, 2, 4, 130))
    p.add_argument("--base-python", type=_text, default=sys.executable, metavar="PY",
                   help="interpreter of the installed build to patch (default: this one)")
    p.add_argument("--patch", type=_text, action="append", required=True, metavar="FILE",
                   help="a unified diff (git diff / git format-patch); repeat to apply several in order")
    p.add_argument("--out", type=_text, required=True, metavar="DIR",
                   help="the new build's folder (must not exist)")


def cmd_gate(args: argparse.Namespace) -> int:
    from tritongate.gate.pipeline import Citations, gate_runs
    from tritongate.report.verdict_terminal import summary_lines

    out = Path(args.out)
    if kind_of(out) is Kind.RUN:
        raise UsageError(f"--out {out} is a run directory: a verdict written there would sit among the run's "
                         "own files; pass a folder of its own (e.g. a new 'verdict' folder)")
    policy = gate_policy(args)
    calibration = calibration_option(args)
    template = verdict_template_option(args)
    base = load_run_dir(Path(args.base), what="BASE_RUN: a run directory")
    cand = load_run_dir(Path(args.cand), what="CAND_RUN: a run directory")
    cite = Citations(baseline=baseline_state_option(args), calibration=calibration,
                     artifact_url=artifact_url_option(args))
    gated = gate_runs(base, cand, Path(args.out), policy, cite=cite, allow_mismatch=args.allow_mismatch,
                      template=template)
    append_step_summary(gated.written.md_path)
    for line in summary_lines(gated.written.doc):  # print_summary's, from the document rather than the file
        print(line)
    print(gated.written.md_path)
    print(gated.written.json_path)
    return judged_something(gated.result, Path(args.out), again="measure both runs again")


def cmd_pair(args: argparse.Namespace) -> int:
    if args.sample_ms is not None:
        raise UsageError("--sample-ms: a pair measures each row with its record's launches per sample; record the "
                         "baseline with --sample-ms (or give the op sample_ms in its suite) instead")
    args.suite = suite_for_record(Path(args.baseline), args.suite)
    # the rows the record has, not the whole suite's: its ops, dtypes and shapes where not given
    ops, dtypes = recorded_selection(Path(args.baseline))
    ops, dtypes = ([] if args.ops else ops), ([] if args.dtypes else dtypes)  # what the options leave to it
    if ops:
        args.ops = [",".join(ops)]
    if dtypes:
        args.dtypes = [",".join(dtypes)]
    if ops or dtypes:
        part = "; ".join(f"{what} {','.join(names)}" for what, names in (("ops", ops), ("dtypes", dtypes)) if names)
        print(f"note: {args.baseline} records only part of its suite ({part}): pairing those rows (--ops/--dtypes "
              "choose others)", file=sys.stderr)
    if args.shape_file is None:
        args.shape_file = recorded_shapes(Path(args.baseline))
    request = pair_request(args, Path(args.baseline), Path(args.out), gate_policy(args), calibration_option(args))
    return _run_pair(request, want_color(args.color, sys.stderr))


def cmd_loop(args: argparse.Namespace) -> int:
    out = Path(args.out)
    policy = gate_policy(args)  # bad policy options fail before anything is measured
    calibration = calibration_option(args)  # so does a bad calibration file
    _check_before_recording(args)  # and every other file the pair reads after the record
    print(f"1/2 record: {args.suite} ({args.backend})", file=sys.stderr, flush=True)
    record = record_suite(args, out)
    if isinstance(record, int):
        return record
    print(f"2/2 pair: base and candidate replay {record}, rounds alternating", file=sys.stderr, flush=True)
    return _run_pair(pair_request(args, record, out, policy, calibration), want_color(args.color, sys.stderr),
                     record=record)


def _check_before_recording(args: argparse.Namespace) -> None:
    """What ``loop`` reads after its record, read before it (a record can take an hour): the suite
    and shape file, the candidate build, the verdict template and the baseline state. The base
    build's interpreter is checked by starting it: it makes the record."""
    from tritongate.pair.build import CompilerBuild, parse_env_overlay
    from tritongate.suites import load_suite

    if args.changed_from:  # its diff must be of the record paired, and this record is not made yet
        raise UsageError(f"--changed-from {args.changed_from}: an ir-diff is made from the baseline record it is "
                         "paired with, and loop records a new one; use `tritongate pair RECORD --changed-from DIR`")
    load_suite(args.suite, shape_file=args.shape_file)
    CompilerBuild("candidate", python=args.cand_python or sys.executable,
                  env=parse_env_overlay(list(args.cand_env or ()), option="--cand-env")).check()
    verdict_template_option(args)
    baseline_state_option(args)


def record_suite(args: argparse.Namespace, out: Path) -> Path | int:
    """The record's path, or its exit code (its output passed on): recorded by the base build, as the
    nightly records main, so the configs replayed come from their own build; in its own process,
    so this one holds no device context while the paired workers measure."""
    import subprocess
    import tempfile

    from tritongate.batch.plan import RunOptions  # the one builder of a run's measurement options
    from tritongate.childenv import build_env, package_link_dir, with_overlay
    from tritongate.pair.build import parse_env_overlay

    base_python = args.base_python or sys.executable
    overlay = parse_env_overlay(args.base_env, option="--base-env")
    options = RunOptions(backend=args.backend, shape_file=args.shape_file, rounds=args.rounds,
                         samples_per_round=args.samples_per_round, l2=args.l2, sample_ms=args.sample_ms,
                         isolate_tuner_cache=bool(args.isolate_tuner_cache), allow_busy_gpu=bool(args.allow_busy_gpu))
    record_cmd = [base_python, "-m", "tritongate", "run", "--suite", args.suite, "--out", str(out),
                  "--color", args.color, *options.args()]
    for flag, values in (("--ops", args.ops), ("--dtypes", args.dtypes)):
        for v in values or ():
            record_cmd += [flag, v]
    # the base build's process, as every process a build runs: no runner file commands, this
    # tritongate first through a link folder (a temporary one: --out is the run's to check),
    # the overlay's PYTHONPATH added, never replacing the runner's
    with tempfile.TemporaryDirectory(prefix="tritongate-path-") as tmp:
        record_env = with_overlay(build_env(os.environ), overlay, lead=str(package_link_dir(Path(tmp))))
        try:
            proc = subprocess.run(record_cmd, stdout=subprocess.PIPE, text=True, env=record_env)
        except OSError as exc:
            raise UsageError(f"cannot start the base build's interpreter {base_python}: {exc}") from exc
    if proc.returncode != 0:
        sys.stdout.write(proc.stdout)
        return proc.returncode
    lines = proc.stdout.strip().splitlines()
    if not lines or not Path(lines[-1]).is_dir():  # an interpreter that is not this build's python
        raise UsageError(f"the base build's interpreter {base_python} made no record (`tritongate run` printed no "
                         "run directory); pass the venv's bin/python of that compiler build")
    return Path(lines[-1])


def pair_progress(color: bool) -> Callable[[Any], None]:
    """Paired-run progress: every row's line says both medians and the change, or why not."""
    return progress_printer(color, verb="pairing", row_text=lambda ev: ev.message, flagged_only=False)


def pair_request(args: argparse.Namespace, baseline: Path, out: Path, policy: Any, calibration: Any = None) -> Any:
    """``calibration``: the summary the verdict cites, loaded before anything is measured."""
    from tritongate.autotune.tuner_cache import isolation_requested
    from tritongate.pair.request import PairRequest, parse_builds

    base, cand = parse_builds(args.base_python, args.cand_python, args.base_env, args.cand_env)
    overrides = {k: v for k, v in (("rounds", args.rounds), ("samples_per_round", args.samples_per_round),
                                   ("l2", args.l2)) if v is not None}
    schedule = {k: v for k, v in (("max_rounds", args.max_rounds), ("row_budget_s", args.row_budget),
                                  ("run_budget_s", args.run_budget)) if v is not None}
    if args.row_timeout <= 0:
        raise UsageError(f"--row-timeout must be > 0 seconds, got {args.row_timeout}")
    return PairRequest(
        baseline=baseline, suite=args.suite, out=out, base=base, cand=cand, backend=args.backend,
        shape_file=Path(args.shape_file) if args.shape_file else None,
        only_ops=tuple(split_values(args.ops)), only_dtypes=tuple(split_values(args.dtypes)),
        config_overrides=overrides, schedule_overrides=schedule, time_identical=args.time_identical,
        share_inputs=args.inputs == "shared", row_timeout_s=args.row_timeout, allow_busy_gpu=args.allow_busy_gpu,
        isolate_tuner_cache=isolation_requested(args.isolate_tuner_cache), policy=policy,
        artifact_url=artifact_url_option(args), verdict_template=verdict_template_option(args),
        changed_from=changed_from_option(args, baseline, base, cand),
        baseline_state=baseline_state_option(args), calibration=calibration, shard=getattr(args, "shard", None))


def _run_pair(request: Any, color: bool, *, record: Path | None = None) -> int:
    """Run the pair, print its summary and the folders it wrote (and ``loop``'s record)."""
    from tritongate.pair.orchestrator import run_pair

    outcome = run_pair(request, pair_progress(color))  # SIGTERM stops it as Ctrl-C does: see main()
    timed = sum(1 for b, c in outcome.rows if c.samples)
    print(f"{counted(len(outcome.rows), 'row')} ({timed} timed) in {outcome.wall_s:.1f} s "
          f"({outcome.timed_s:.1f} s in the rows: compile, check, warm-up, timing)"
          + (f"; worker restarts: {outcome.restarts}" if any(outcome.restarts.values()) else ""))
    append_step_summary(outcome.verdict_md)
    print_summary(outcome.verdict_json)
    if record is not None:
        print(f"record:    {record}")
    print(f"base:      {outcome.base_path}")
    print(f"candidate: {outcome.cand_path}")
    print(f"verdict:   {outcome.verdict_md}")
    return judged_something(outcome.result, outcome.path, row_timeout_s=request.row_timeout_s)


def judged_something(result: Any, folder: Path, *, row_timeout_s: float | None = None,
                     again: str = "run the pair again") -> int:
    """The gate's exit code, but a pass of a verdict that judged no row is exit 2, as ``run`` measuring
    no row (a failed gate keeps its 1: a candidate failing where the base ran is a finding)."""
    from tritongate.pair.evidence import nothing_measured

    nothing = nothing_measured(result)
    if nothing is None or result.failures:
        return result.exit_code
    verdict = folder if (folder / "verdict.json").is_file() else folder / "verdict"
    raise MeasurementError(f"nothing was measured: {nothing.describe()}; the verdict in {verdict} says "
                           f"so; {nothing.fix(row_timeout_s=row_timeout_s, again=again)}")


def cmd_merge(args: argparse.Namespace) -> int:
    from tritongate.gate.pipeline import Citations, gate_runs
    from tritongate.pair.merge import merge_shards

    policy = gate_policy(args)
    template = verdict_template_option(args)  # a bad template stops the merge before it starts
    cite = Citations(baseline=baseline_state_option(args), calibration=calibration_option(args),
                     artifact_url=artifact_url_option(args))
    out = Path(args.out)
    merged = merge_shards([Path(p) for p in args.shards], out, allow_partial=args.allow_partial)
    partial = ([f"partial: shard(s) {', '.join(f'{i}/{merged.count}' for i in merged.missing)} missing; "
                f"{counted(len(merged.absent), 'row')} not measured, listed MISSING"] if merged.missing else [])
    from tritongate.gate.ir_blame import carry_blame
    from tritongate.gate.ir_evidence import IR_DIFF_DIR

    for shard in args.shards:  # every shard carried the same pre-screen's blame: the first found will do
        if carry_blame(Path(shard) / "verdict" / IR_DIFF_DIR, out / "verdict", IR_DIFF_DIR):
            break
    absent = {key: f"its shard {index}/{merged.count} was not given to the merge" for key, index in merged.absent.items()}
    gated = gate_runs(merged.base, merged.candidate, out / "verdict", policy, cite=cite, notes=partial,
                      template=template, absent=absent)
    append_step_summary(gated.written.md_path)
    print(f"merged {len(merged.shards)} of {counted(merged.count, 'shard')}, {counted(merged.rows, 'row')}")
    print_summary(gated.written.json_path)
    print(f"base:      {merged.base}")
    print(f"candidate: {merged.candidate}")
    print(f"verdict:   {gated.written.md_path}")
    return judged_something(gated.result, out, again="run the shards' pairs again")


def cmd_overlay(args: argparse.Namespace) -> int:
    from tritongate.overlay import make_overlay

    out = Path(args.out)
    if out.exists() or out.is_symlink():  # a link, even to nothing, is not a new folder
        raise UsageError(f"--out {out}: already exists; an overlay is made into a new folder")
    parent = next((p for p in out.parents if p.exists() or p.is_symlink()), None)
    if parent is not None and not parent.is_dir():
        raise UsageError(f"--out {out}: {parent} is not a folder; pass a new folder's path")
    build = make_overlay(args.base_python, [Path(p) for p in args.patch], out)
    hashes = ", ".join(f"{Path(p['path']).name} sha256 {p['sha256'][:12]}" for p in build.patches)
    print(f"overlay build: {len(build.files)} file(s) patched ({', '.join(build.files)}); {hashes}",
          file=sys.stderr)
    print(build.python)
    return 0
