"""The ``tritongate`` command: parse, call the library, print, map errors to exit codes.

Exit codes: 0 pass, 1 gate failed (regression or policy), 2 usage or input error,
3 preflight failed (``!!! PREFLIGHT_FAILED check=<name>`` on stderr).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import signal
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from tritongate import __version__
from tritongate.argtypes import finite_number, nonempty_text, shard_spec
from tritongate.errors import ExitCode, GateError, PreflightError, UsageError

EXIT_CODE_TEXT = {
    0: "pass",
    1: "gate failed (a regression, or a policy violation)",
    2: "usage or input error (bad arguments, malformed or incompatible files, a file that\n"
       "       cannot be written)",
    3: "preflight failed (stderr names the check: !!! PREFLIGHT_FAILED check=<name>)",
    4: "internal error (a bug: one line on stderr, the traceback written to a file)",
    130: "interrupted (Ctrl-C, SIGTERM); run directories left behind load as incomplete",
}


def exit_codes(*codes: int, zero: str = "pass") -> str:
    """The exit-code footer of a subcommand's --help: the codes it can return."""
    text = {**EXIT_CODE_TEXT, 0: zero}
    return "exit codes:\n" + "".join(f"  {c:<4} {text[c]}\n" for c in codes)


EPILOG = exit_codes(0, 1, 2, 3, 4, 130)


def want_color(choice: str, stream: object) -> bool:
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


def cmd_show(args: argparse.Namespace) -> int:
    from tritongate.report.table import render_rows
    from tritongate.rundir import load_run

    run = load_run(Path(args.run), allow_incomplete=args.allow_incomplete)
    if args.format != "table":  # data for other tools: nothing but the document on stdout
        from tritongate.report.export import render_run
        from tritongate.report.untrusted import neutralize

        text = render_run(run, args.format)
        if args.format == "csv" and sys.stdout.isatty():  # names from the file must not drive the terminal
            text = "\n".join(neutralize(line) for line in text.splitlines()) + "\n"
        sys.stdout.write(text)
        return ExitCode.OK
    head = f"{run.path}  status={run.status.value}  mode={run.mode}  rows={len(run.rows)}"
    print(head)
    print(render_rows(run.rows, color=want_color(args.color, sys.stdout)), end="")
    return ExitCode.OK


def _run_row_text(ev) -> str:
    """A finished row of `run`: its median, or why it has none, and its markers."""
    from tritongate.report.units import format_time

    r = ev.row
    s = r.summary
    what = f"{format_time(s.median):>10}" if s else (f"not timed ({r.skipped.value})" if r.skipped else "     error")
    return what + (f"  {'; '.join(r.markers)}" if r.markers else "")


def _progress_printer(color: bool, *, verb: str = "measuring", row_text=_run_row_text,
                      flagged_only: bool = True):
    """Progress on stderr: a live bar with an ETA on a terminal (finished rows printed above
    it: only flagged ones when ``flagged_only``), one line per row otherwise. Text from the
    rows is printed, never read as terminal markup."""
    from tritongate.progress import Progress
    from tritongate.report.untrusted import neutralize

    if color:
        from rich.console import Console
        from rich.markup import escape
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn,
                                   TimeElapsedColumn, TimeRemainingColumn)

        bar = Bar(TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TimeRemainingColumn(), console=Console(stderr=True), transient=True)
        task = None

        def show(ev: Progress) -> None:
            nonlocal task
            if ev.kind == "start":
                bar.start()
                task = bar.add_task("starting", total=ev.total)
            elif ev.kind == "row_start" and ev.planned is not None:
                p = ev.planned
                bar.update(task, description=f"{p.op} {p.case} {p.dtype}")
            elif ev.kind == "row_done":
                bar.advance(task)
                r = ev.row
                if r is not None and (not flagged_only or r.markers or r.status.value != "ok"):
                    style = "yellow" if r.markers or r.status.value != "ok" else "default"
                    bar.console.print(escape(neutralize(f"{r.op} {r.case} {r.dtype}: {row_text(ev).strip()}")),
                                      style=style, highlight=False)
            elif ev.kind == "note":
                bar.console.print(escape(neutralize(f"note: {ev.message}")), style="yellow", highlight=False)
            elif ev.kind == "finish":
                bar.stop()
        return show

    def show_plain(ev: Progress) -> None:
        if ev.kind == "start":
            print(f"{verb} {ev.total} rows into {ev.message}", file=sys.stderr, flush=True)
        elif ev.kind == "row_done" and ev.row is not None:
            r, width = ev.row, len(str(ev.total))
            op, case, dtype, text = (neutralize(v) for v in (r.op, r.case, r.dtype, row_text(ev)))
            print(f"[{ev.index + 1:>{width}}/{ev.total}] {op:<18} {case:<18} {dtype:<9} {text}",
                  file=sys.stderr, flush=True)
        elif ev.kind == "note":
            print(f"note: {neutralize(ev.message)}", file=sys.stderr, flush=True)
    return show_plain


def cmd_run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from tritongate.autotune.parallel_sweep import requested_gpus
    from tritongate.autotune.tuner_cache import isolation_requested
    from tritongate.backends import default_measure_config, resolve_backend
    from tritongate.report.table import render_rows
    from tritongate.runner import RunRequest, run_suite

    backend = resolve_backend(args.backend)
    config = default_measure_config(backend)
    overrides = {k: v for k, v in (("rounds", args.rounds), ("samples_per_round", args.samples_per_round),
                                   ("l2", args.l2)) if v is not None}
    if overrides:
        try:
            config = replace(config, **overrides)
        except ValueError as exc:
            raise UsageError(f"bad measurement option: {exc}") from exc
    request = RunRequest(
        suite=args.suite, backend=backend, out=Path(args.out),
        shape_file=Path(args.shape_file) if args.shape_file else None,
        only_ops=tuple(_split(args.ops)), only_dtypes=tuple(_split(args.dtypes)),
        config=config, allow_busy_gpu=args.allow_busy_gpu,
        replay_from=Path(args.replay_from) if args.replay_from else None,
        isolate_tuner_cache=isolation_requested(args.isolate_tuner_cache),
        only_rows=_only_rows(args.only_rows) if args.only_rows else None,
        sweep_gpus=requested_gpus(args.sweep_gpus),
    )
    color = want_color(args.color, sys.stdout)
    outcome = run_suite(request, _progress_printer(want_color(args.color, sys.stderr)))
    print(render_rows(outcome.rows, color=color, title=f"{outcome.path.name}  ({backend.name}, "
                                                       f"{request.mode}, {len(outcome.rows)} rows)"), end="")
    flagged = outcome.flagged
    print(f"{len(outcome.rows)} rows in {outcome.wall_s:.1f} s; "
          f"{len(flagged)} flagged (markers or errors; see run.log)")
    print(outcome.path)
    return ExitCode.OK


def _only_rows(path: str) -> frozenset[tuple[str, str, str]]:
    """A JSON list of [op, case, dtype] (written by the parallel sweep and the batch runner)."""
    import json

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"--only-rows {path}: unreadable ({type(exc).__name__}: {exc}); "
                         "expected a JSON list of [op, case, dtype]") from None
    if not isinstance(data, list) or not all(isinstance(r, list) and len(r) == 3 and all(isinstance(x, str) and x
                                                                                          for x in r) for r in data):
        raise UsageError(f"--only-rows {path}: expected a JSON list of [op, case, dtype] string triples")
    return frozenset(tuple(r) for r in data)


def cmd_gate(args: argparse.Namespace) -> int:
    from tritongate.gate.output import write_verdict
    from tritongate.gate.verdict import run_gate
    from tritongate.rundir import load_run

    policy = _gate_policy(args)
    calibration = _calibration(args)
    base = load_run(Path(args.base))
    cand = load_run(Path(args.cand))
    result = run_gate(base, cand, policy, allow_mismatch=args.allow_mismatch)
    artifact = _artifact_url(args)
    json_path, md_path = write_verdict(result, Path(args.out), artifact_url=artifact,
                                       baseline=_baseline_state(args), calibration=calibration)
    _print_notes(result)
    print(result.headline())
    for verdict in ("REGRESSED", "IMPROVED", "REJECTED", "NOT_COMPARABLE", "MISSING"):
        for r in (r for r in result.rows if r.verdict.value == verdict):
            change = f" {r.timing.effect:+.2%} time" if r.timing else ""
            print(f"  {verdict:<15} {r.op} {r.case} {r.dtype}{change}  {'; '.join(r.reasons)}")
    print(md_path)
    print(json_path)
    return result.exit_code


def cmd_merge(args: argparse.Namespace) -> int:
    """Join the shards of a sharded paired run and gate them as one."""
    from tritongate.gate.output import write_verdict
    from tritongate.gate.verdict import run_gate
    from tritongate.pair.merge import merge_shards
    from tritongate.rundir import load_run

    policy = _gate_policy(args)
    baseline = _baseline_state(args)
    calibration = _calibration(args)
    artifact = _artifact_url(args)
    out = Path(args.out)
    merged = merge_shards([Path(p) for p in args.shards], out, allow_partial=args.allow_partial)
    result = run_gate(load_run(merged.base), load_run(merged.candidate), policy)
    if merged.missing:
        result.notes.insert(0, f"partial: shard(s) {', '.join(f'{i}/{merged.count}' for i in merged.missing)} "
                               "missing; their rows are not in this verdict")
    json_path, md_path = write_verdict(result, out / "verdict", artifact_url=artifact, baseline=baseline,
                                       calibration=calibration)
    _print_notes(result)
    print(f"merged {len(merged.shards)} of {merged.count} shards, {merged.rows} rows")
    print(result.headline())
    print(f"base:      {merged.base}")
    print(f"candidate: {merged.candidate}")
    print(f"verdict:   {md_path}")
    return result.exit_code


def _print_notes(result) -> None:
    """The verdict's notes and warnings, on stderr as well as at the top of verdict.md."""
    from tritongate.report.untrusted import neutralize

    for note in result.notes:
        print(f"note: {neutralize(note)}", file=sys.stderr)


def _pair_progress(color: bool):
    """Paired-run progress: every row's line says both medians and the change, or why not."""
    return _progress_printer(color, verb="pairing", row_text=lambda ev: ev.message, flagged_only=False)


def _pair_request(args: argparse.Namespace, baseline: Path, out: Path, policy, calibration=None):
    """``calibration``: the summary cited in the verdict (the caller loads it with
    ``_calibration`` before anything is measured; ``calibrate`` passes none)."""
    from tritongate.autotune.tuner_cache import isolation_requested
    from tritongate.pair.orchestrator import PairRequest, parse_builds
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
        only_ops=tuple(_split(args.ops)), only_dtypes=tuple(_split(args.dtypes)),
        config_overrides=overrides, schedule_overrides=schedule, time_identical=args.time_identical,
        share_inputs=args.inputs == "shared", row_timeout_s=args.row_timeout, allow_busy_gpu=args.allow_busy_gpu,
        isolate_tuner_cache=isolation_requested(args.isolate_tuner_cache), policy=policy,
        artifact_url=_artifact_url(args), changed_from=_changed_from(args),
        baseline_state=_baseline_state(args), calibration=calibration, shard=getattr(args, "shard", None))


def _baseline_state(args: argparse.Namespace):
    if not getattr(args, "baseline_state", None):
        return None
    from tritongate.gate.baseline_state import load_baseline_state

    return load_baseline_state(Path(args.baseline_state))


def _calibration(args: argparse.Namespace):
    """The runner's latest calibration summary: --calibration, else $TRITONGATE_CALIBRATION
    (empty: none), else None. A bad file is a ``UsageError`` naming it."""
    from tritongate.calibrate.model import CALIBRATION_ENV, load_summary

    option = getattr(args, "calibration", None)
    if option:
        return load_summary(Path(option))
    value = os.environ.get(CALIBRATION_ENV, "").strip()
    if not value:
        return None
    try:
        return load_summary(Path(value))
    except GateError as exc:  # say where the path came from: the user typed no option
        exc.args = (f"{CALIBRATION_ENV}={value}: {exc}",)
        raise


def _shard(value: str) -> tuple[int, int]:
    """``I/N``: the I-th of N shards (1-based), for argparse."""
    try:
        return shard_spec(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _changed_from(args: argparse.Namespace):
    if not getattr(args, "changed_from", None):
        return None
    from tritongate.ir.changed import load_changed_rows

    return load_changed_rows(Path(args.changed_from))


def _run_pair(request, color: bool) -> int:
    import signal

    from tritongate.pair.orchestrator import run_pair

    # CI cancels a job with SIGTERM: stop the workers and leave incomplete run dirs, like Ctrl-C.
    def _term(signum, frame):  # noqa: ARG001
        raise KeyboardInterrupt
    previous = signal.signal(signal.SIGTERM, _term)
    try:
        outcome = run_pair(request, _pair_progress(color))
    finally:
        signal.signal(signal.SIGTERM, previous)
    result = outcome.result
    _print_notes(result)
    for verdict in ("REGRESSED", "IMPROVED", "REJECTED", "NOT_COMPARABLE", "MISSING"):
        for r in (r for r in result.rows if r.verdict.value == verdict):
            change = f" {r.timing.effect:+.2%} time" if r.timing else ""
            print(f"  {verdict:<15} {r.op} {r.case} {r.dtype}{change}  {'; '.join(r.reasons)}")
    timed = sum(1 for b, c in outcome.rows if c.samples)
    print(f"{len(outcome.rows)} rows ({timed} timed) in {outcome.wall_s:.1f} s "
          f"({outcome.timed_s:.1f} s in the rows: compile, check, warm-up, timing)"
          + (f"; worker restarts: {outcome.restarts}" if any(outcome.restarts.values()) else ""))
    print(result.headline())
    print(f"base:      {outcome.base_path}")
    print(f"candidate: {outcome.cand_path}")
    print(f"verdict:   {outcome.verdict_md}")
    return result.exit_code


def _gate_policy(args: argparse.Namespace):
    from tritongate.gate.policy import load_policy

    return load_policy(Path(args.policy) if args.policy else None, min_effect=args.min_effect,
                       noise_z=args.noise_z, min_samples=args.min_samples,
                       max_missing=args.max_missing, strict=args.strict or None)


def cmd_pair(args: argparse.Namespace) -> int:
    request = _pair_request(args, Path(args.baseline), Path(args.out), _gate_policy(args), _calibration(args))
    return _run_pair(request, want_color(args.color, sys.stderr))


def cmd_loop(args: argparse.Namespace) -> int:
    """Record the suite, then pair the current build against itself (or against the
    --cand-env/--cand-python build), then gate: the whole PR check on one machine."""
    out = Path(args.out)
    policy = _gate_policy(args)  # bad policy options fail before anything is measured
    calibration = _calibration(args)  # so does a bad calibration file
    print(f"1/2 record: {args.suite} ({args.backend})", file=sys.stderr, flush=True)
    record = _record(args, out)
    if isinstance(record, int):
        return record
    print(f"record:    {record}")
    print(f"2/2 pair: base and candidate replay {record.name}, rounds alternating", file=sys.stderr, flush=True)
    return _run_pair(_pair_request(args, record, out, policy, calibration), want_color(args.color, sys.stderr))


def _record(args: argparse.Namespace, out: Path) -> Path | int:
    """Record the suite with the base build (its interpreter and overlay), as the nightly job
    records main: the configs replayed then come from the build they belong to. In its own
    process, so this one holds no device context while paired workers measure. The record's
    path, or the record's exit code when it failed (its output passed on)."""
    import subprocess

    from tritongate.pair.build import parse_env_overlay

    base_python = args.base_python or sys.executable
    record_env = {**os.environ, **parse_env_overlay(args.base_env, option="--base-env")}
    record_cmd = [base_python, "-m", "tritongate", "run", "--suite", args.suite, "--backend", args.backend,
                  "--out", str(out), "--color", args.color]
    if args.isolate_tuner_cache:
        record_cmd.append("--isolate-tuner-cache")
    for flag, value in (("--shape-file", args.shape_file), ("--rounds", args.rounds),
                        ("--samples-per-round", args.samples_per_round), ("--l2", args.l2)):
        if value is not None:
            record_cmd += [flag, str(value)]
    for flag, values in (("--ops", args.ops), ("--dtypes", args.dtypes)):
        for v in values or ():
            record_cmd += [flag, v]
    if args.allow_busy_gpu:
        record_cmd.append("--allow-busy-gpu")
    if base_python != sys.executable:  # the build's interpreter imports this tritongate, and only it
        from tritongate.pair.build import package_path_dir

        link = package_path_dir(out / ".tritongate-pythonpath")
        record_env["PYTHONPATH"] = os.pathsep.join(
            [str(link)] + ([record_env["PYTHONPATH"]] if record_env.get("PYTHONPATH") else []))
    try:
        proc = subprocess.run(record_cmd, stdout=subprocess.PIPE, text=True, env=record_env)
    except OSError as exc:
        raise UsageError(f"cannot start the base build's interpreter {base_python}: {exc}") from exc
    if proc.returncode != 0:
        sys.stdout.write(proc.stdout)
        return proc.returncode
    return Path(proc.stdout.strip().splitlines()[-1])


def _check_record(path: Path, option: str) -> None:
    """``path`` must be a finished record run (what a paired run replays)."""
    from tritongate.rundir import load_run

    try:
        run = load_run(path)
    except GateError as exc:
        raise UsageError(f"{option} {path}: {exc}") from None
    if run.mode != "record":
        raise UsageError(f"{option} {path}: a {run.mode} run, not a record run; pass the record it replayed, or "
                         "leave the option out to record one")


def _suite_setting(suite: str) -> str:
    """A suite as a calibration keeps it: a file by its absolute path (a resume may run from
    elsewhere), a builtin suite by its name."""
    path = Path(suite)
    return str(path.resolve()) if path.suffix in (".yaml", ".yml") or path.is_file() else suite


def cmd_calibrate(args: argparse.Namespace) -> int:
    """A/A and planted-slowdown paired runs on this machine: calibration.json, .md, .png."""
    from tritongate.calibrate.commands import (calibration_dir, parse_fractions, plantable_ops, print_outcome,
                                               run_calibration)
    from tritongate.pair.orchestrator import run_pair

    if args.allow_loosen and not args.write_thresholds:
        raise UsageError("--allow-loosen needs --write-thresholds FILE")
    if args.from_calibration:  # thresholds from an earlier calibration: nothing is measured
        if not args.write_thresholds:
            raise UsageError("--from needs --write-thresholds FILE (it only derives thresholds)")
        if args.resume:
            raise UsageError("--from derives thresholds without measuring; it does not go with --resume")
        from tritongate.calibrate.model import load_calibration

        return _write_thresholds(load_calibration(Path(args.from_calibration)), args)
    from tritongate.calibrate.model import DEFAULT_FRACTIONS
    from tritongate.calibrate.resume import Settings, check_same, load_settings

    # the settings the command line gives (None: not given), as a calibration keeps them
    given = {"suite": _suite_setting(args.suite) if args.suite else None, "aa_runs": args.aa_runs,
             "fractions": parse_fractions(args.planted) if args.planted else None,
             "only_ops": tuple(_split(args.ops)) or None, "only_dtypes": tuple(_split(args.dtypes)) or None,
             "backend": None if args.backend == "auto" else args.backend,
             "shape_file": str(Path(args.shape_file).resolve()) if args.shape_file else None,
             "python": args.python}
    if args.resume:  # go on with the calibration's own settings and record
        if args.baseline:
            raise UsageError("--resume goes on with the calibration's own record; drop --baseline")
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
    fractions = settings.fractions
    if args.aa_runs < 1:
        raise UsageError(f"--aa-runs must be at least 1, got {args.aa_runs}")
    plantable = plantable_ops(args.suite)
    if args.baseline:  # a record run of this suite, checked before anything is made or measured
        _check_record(Path(args.baseline), "--baseline")
    policy = _gate_policy(args)
    if args.write_thresholds:  # a bad policy file fails now, not after the calibration
        from tritongate.gate.policy import load_policy

        load_policy(Path(args.write_thresholds))
    args.base_python = args.cand_python = args.python
    args.base_env = args.cand_env = None
    color = want_color(args.color, sys.stderr)
    if args.resume:
        record = Path(settings.record)
        print(f"resume:      {out} (record {record})", file=sys.stderr, flush=True)
    else:
        out = calibration_dir(Path(args.out), args.suite)
        if args.baseline:
            record = Path(args.baseline)
        else:
            print(f"record: {args.suite} ({args.backend})", file=sys.stderr, flush=True)
            record = _record(args, out)
            if isinstance(record, int):
                return record
            print(f"record:      {record}")
        dataclasses.replace(settings, record=str(record.resolve())).write(out)
    template = _pair_request(args, record, out, policy)
    steps = args.aa_runs + 1 + len(fractions)
    done = [0]

    def log(text: str) -> None:
        done[0] += 1
        print(f"[{done[0]}/{steps}] {text}", file=sys.stderr, flush=True)

    cal, md, png = run_calibration(template, suite=args.suite, out=out, fractions=fractions, aa_runs=args.aa_runs,
                                   run=lambda request: run_pair(request, _pair_progress(color)), log=log,
                                   plantable=plantable, detail=lambda text: print(f"  {text}", file=sys.stderr,
                                                                                  flush=True))
    print_outcome(cal, out, md, png)
    if args.write_thresholds:
        return _write_thresholds(cal, args)
    return ExitCode.OK


def _write_thresholds(cal: Any, args: argparse.Namespace) -> int:
    from tritongate.calibrate.thresholds import write_thresholds

    path = Path(args.write_thresholds)
    changes = write_thresholds(cal, path, allow_loosen=args.allow_loosen)
    for change in changes:
        print(f"threshold {terminal_safe(change.line())}")
    print(f"{path}: {len(changes)} per-op minimum effect(s) changed" if changes else
          f"{path}: every per-op minimum effect already matches the calibration")
    return ExitCode.OK


def cmd_ir(args: argparse.Namespace) -> int:
    from tritongate.ir.aot import Target, add_module_paths, recompile
    from tritongate.ir.index import INDEX, read_index
    from tritongate.ir.store import TTGIR_DIR
    from tritongate.rundir import load_run

    target = Target.parse(args.target)
    run = load_run(Path(args.from_run), allow_incomplete=True)  # a crashed run's IR is evidence too
    index = Path(args.from_run) / TTGIR_DIR / INDEX
    if not index.is_file():
        raise UsageError(f"{args.from_run} has no {TTGIR_DIR}/{INDEX}: its IR was not captured (interpreter "
                         "runs compile nothing; runs of tritongate before IR capture have none); record on a GPU")
    try:
        variants = read_index(index)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    add_module_paths(run.identity)
    total = sum(1 for v in variants if not v.sweep_loser)

    def progress(i: int, n: int, v: Any) -> None:
        print(f"[{i + 1}/{n}] {terminal_safe(v.case)} {terminal_safe(v.kernel)} {terminal_safe(v.name)}",
              file=sys.stderr, flush=True)

    codegen = run.identity.get("codegen_env") or {}
    outcome = recompile(variants, target, Path(args.out), codegen_env=codegen, progress=progress)
    for failure in outcome.failed:
        print(f"not compiled: {terminal_safe(failure)}", file=sys.stderr)
    print(f"{outcome.compiled} of {total} launched variants recompiled for {target}; "
          f"{len(outcome.failed)} failed")
    print(Path(args.out) / TTGIR_DIR)
    return ExitCode.OK


def cmd_ir_diff(args: argparse.Namespace) -> int:
    from collections import Counter

    from tritongate.ir.diff import diff_trees, write_diff_dir

    try:
        diffs = diff_trees(Path(args.base), Path(args.cand))
    except FileNotFoundError as exc:
        raise UsageError(f"{exc}; pass two run directories (or ttgir/ folders) with captured IR") from exc
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    out = write_diff_dir(diffs, Path(args.out))
    counts = Counter(d.status for d in diffs)
    print(", ".join(f"{counts[s]} {s}" for s in sorted(counts)) or "no launched variants on either side")
    for d in sorted((d for d in diffs if d.status == "changed"), key=lambda d: -(d.added + d.removed))[:20]:
        print(f"  changed  {terminal_safe(d.case)}  {terminal_safe(d.kernel)}  {terminal_safe(d.name)}  "
              f"+{d.added} -{d.removed}")
    print(out)
    return ExitCode.OK


def terminal_safe(text: str) -> str:
    """A line built from names a user module or file chose, printed without obeying controls."""
    from tritongate.report.untrusted import neutralize

    return neutralize(text)


def cmd_ops(args: argparse.Namespace) -> int:
    from tritongate.backends import prepare_environment, resolve_backend
    from tritongate.suites import builtin_suites, load_suite, ops_dir

    prepare_environment(resolve_backend("auto"))
    from tritongate.ops.builtin import REGISTRY

    def line(name: str, shape: str, dtypes: str, text: str) -> None:
        name_, shape, dtypes, text = (terminal_safe(v) for v in (name, shape, dtypes, text))
        print(f"{name_:<18} {shape:<34} {dtypes:<26} {text}")

    if not args.suite:
        for name in REGISTRY.names():
            spec = REGISTRY.get(name)
            line(name, spec.shape_doc, ", ".join(spec.dtypes), spec.description)
    else:  # exactly what the suite runs: its ops, the dtypes and shape count it runs them with
        from tritongate.ops.user import registry_for

        suite = load_suite(args.suite)
        registry = registry_for(suite.modules, search_dir=suite.path.parent)
        rows = sum(len(suite.shapes.get(op.name, ())) * len(op.dtypes) for op in suite.ops)
        print(f"suite {suite.name} ({suite.path}): {len(suite.ops)} ops, {rows} rows"
              + (f"; {len(suite.dismissed)} inventory ops dismissed ({suite.dismiss})" if suite.dismissed else ""))
        for op in suite.ops:
            spec = registry.get(op.name)
            module = getattr(spec.build, "__module__", "?")
            where = "" if op.name in REGISTRY.names() else f"  (from {module})"
            count = len(suite.shapes.get(op.name, ()))
            line(op.name, f"{count} shape{'s' if count != 1 else ''}: {spec.shape_doc}", ", ".join(op.dtypes),
                 spec.description + where)
    print(f"\nsuites in {ops_dir() / 'suites'}: {', '.join(builtin_suites())}")
    print(f"your own ops: a suite's `modules:` key (example: {ops_dir() / 'examples' / 'user_ops.yaml'}; "
          "see ops/README.md)")
    return ExitCode.OK


_text = nonempty_text
_finite = finite_number


def _url(value: str) -> str:
    from tritongate.report.untrusted import safe_url

    try:
        return safe_url(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _artifact_url(args: argparse.Namespace) -> str | None:
    """--artifact-url, else $TRITONGATE_ARTIFACT_URL (validated: it becomes a link)."""
    from tritongate.report.untrusted import safe_url

    if args.artifact_url:
        return args.artifact_url
    env = os.environ.get("TRITONGATE_ARTIFACT_URL")
    if not env:
        return None
    try:
        return safe_url(env)
    except ValueError as exc:
        raise UsageError(f"TRITONGATE_ARTIFACT_URL: {exc}") from None


def _split(values: list[str] | None) -> list[str]:
    return [v for item in values or [] for v in item.replace(",", " ").split() if v]


def _measure_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("measurement")
    g.add_argument("--shape-file", type=_text, metavar="YAML", help="shapes keyed by op name; overrides the suite's")
    g.add_argument("--ops", type=_text, action="append", metavar="A,B", help="only these ops of the suite")
    g.add_argument("--dtypes", type=_text, action="append", metavar="D,E", help="only these dtypes (e.g. float16)")
    g.add_argument("--rounds", type=int, help="rounds (pairs) per row (default 5; 6 on cpu)")
    g.add_argument("--samples-per-round", type=int, help="samples per round (default 5; 2 on cpu)")
    g.add_argument("--l2", choices=["warm", "flush"], help="warm (default: L2 kept warm, as CUDA graphs measure) or flush (L2 cleared before every sample, like triton.testing.do_bench; k = 1)")
    g.add_argument("--isolate-tuner-cache", action="store_true",
                   help="private FlagGems LibTuner DB per worker (also TRITONGATE_ISOLATE_TUNER_CACHE=1)")
    g.add_argument("--allow-busy-gpu", action="store_true",
                   help="measure even when other processes use the GPU (rows get GPU_BUSY)")
    g.add_argument("--color", choices=["auto", "always", "never"], default="auto",
                   help="colour and a live progress bar on a terminal (auto), or force it")


def _inputs_option(g: argparse._ArgumentGroup) -> None:
    g.add_argument("--inputs", choices=["shared", "own"], default="shared",
                   help="shared (default): in each pair the side timed second reads the inputs the first side "
                        "built (CUDA IPC), so both see the same memory placement and it cancels in the pair; "
                        "own: each side builds its own (the interpreter, and ops whose builder lists no tensors, "
                        "always do)")


def _pair_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("compiler builds and pairing")
    _inputs_option(g)
    g.add_argument("--base-python", type=_text, metavar="PY", help="the base build's interpreter (default: this one)")
    g.add_argument("--cand-python", type=_text, metavar="PY", help="the candidate build's interpreter (default: this one)")
    g.add_argument("--base-env", action="append", metavar="K=V", help="environment for the base worker only")
    g.add_argument("--cand-env", action="append", metavar="K=V",
                   help="environment for the candidate worker only (e.g. DISABLE_MMA_V3=1)")
    g.add_argument("--time-identical", action="store_true",
                   help="time rows whose kernels are byte-identical on both sides too (an A/A check)")
    g.add_argument("--shard", type=_shard, metavar="I/N",
                   help="measure only the I-th of N shards of the rows (every N-th row of the plan, from the "
                        "I-th); `tritongate merge` joins the shards' pair directories into one verdict")
    g.add_argument("--changed-from", type=_text, metavar="DIR",
                   help="an ir-diff folder of the two builds' ahead-of-time IR of the baseline record "
                        "(tritongate ir, then tritongate ir-diff): rows whose kernels all compiled identically "
                        "are IDENTICAL_BINARY without running; the others, and rows DIR does not list, are measured")
    g.add_argument("--row-timeout", type=_finite, default=600.0, metavar="S",
                   help="a worker that does not answer within S seconds is killed and restarted; its row is "
                        "REJECTED (default 600)")
    g.add_argument("--max-rounds", type=int, metavar="N",
                   help="pairs a row may grow to while short of its precision target (default 80; cpu 24)")
    g.add_argument("--row-budget", type=_finite, metavar="S", help="wall seconds one row's timing may take (default 30; cpu 8)")
    g.add_argument("--run-budget", type=_finite, metavar="S",
                   help="wall seconds the run may spend on extra pairs (default 600; cpu 300)")


def _gate_options(p: argparse.ArgumentParser, *, calibration: bool = True) -> None:
    """``calibration``: offer --calibration (not to ``calibrate``, whose verdicts are the
    calibration)."""
    g = p.add_argument_group("gate")
    g.add_argument("--policy", type=_text, metavar="YAML", help="thresholds file (default ops/gate.yaml)")
    g.add_argument("--baseline-state", type=_text, metavar="JSON",
                   help="what `tritongate baseline find --state-out` found: shown at the top of verdict.md "
                        "(a stale, mismatched or missing baseline with the command that refreshes it)")
    if calibration:
        g.add_argument("--calibration", type=_text, metavar="PATH",
                       help="the runner's latest `tritongate calibrate` output (calibration.json or its folder), "
                            "cited in verdict.md's footer; default $TRITONGATE_CALIBRATION")
    g.add_argument("--min-effect", type=_finite, help="default minimum effect, e.g. 0.01 for 1%%")
    g.add_argument("--noise-z", type=_finite, help="noise floor confidence as normal SDs, applied through Student's t for the row's degrees of freedom (default 4)")
    g.add_argument("--min-samples", type=int, help="samples each side needs for a verdict (default 10)")
    g.add_argument("--max-missing", type=int, help="missing rows tolerated (default 0)")
    g.add_argument("--strict", action="store_true", help="rejected and not-comparable rows fail too")
    g.add_argument("--artifact-url", type=_url, metavar="URL",
                   help="link to the uploaded run dirs and IR diffs (or TRITONGATE_ARTIFACT_URL)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tritongate",
        description="Performance-regression gate for Triton compiler changes.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"tritongate {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    run = sub.add_parser(
        "run", help="measure a suite into a new run directory (record mode)",
        description="Measure every op x shape x dtype row of a suite and write DIR/<suite>_<UTC>/. "
                    "The run directory's path is the last line of stdout.",
        epilog=exit_codes(0, 2, 3, 4, 130, zero="the run completed (rows that failed are marked in it)"), formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("--suite", type=_text, required=True, metavar="NAME|PATH",
                     help="a builtin suite name (ops/suites/NAME.yaml: smoke, pr, deep) or a suite YAML")
    run.add_argument("--backend", type=_text, default="auto", metavar="NAME",
                     help="auto (default: cuda if a CUDA device is visible, else cpu), cuda (CUDA-graph "
                          "timer), cpu (Triton interpreter, host timer), rocm, musa, ascend (device-event "
                          "timer); CI jobs that must measure a GPU name it (--backend cuda)")
    run.add_argument("--out", type=_text, required=True, metavar="DIR", help="parent directory of the run directory")
    run.add_argument("--shape-file", type=_text, metavar="YAML", help="shapes keyed by op name; overrides the suite's")
    run.add_argument("--ops", type=_text, action="append", metavar="A,B", help="only these ops of the suite")
    run.add_argument("--dtypes", type=_text, action="append", metavar="D,E", help="only these dtypes (e.g. float16)")
    run.add_argument("--rounds", type=int, help="rounds per row (default 5; 2 on cpu)")
    run.add_argument("--samples-per-round", type=int, help="samples per round (default 5; 3 on cpu)")
    run.add_argument("--l2", choices=["warm", "flush"], help="warm (default: L2 kept warm, as CUDA graphs measure) or flush (L2 cleared before every sample, like triton.testing.do_bench; k = 1)")
    run.add_argument("--replay-from", type=_text, metavar="RECORD_RUN",
                     help="replay the autotune configs of this record run instead of tuning live "
                          "(a key it lacks, or a config that no longer compiles, tunes live and marks "
                          "the row AUTOTUNE_REPLAY_FALLBACK); replay runs write no records")
    run.add_argument("--isolate-tuner-cache", action="store_true",
                     help="give FlagGems' persistent LibTuner cache a private, per-run DB "
                          "(also TRITONGATE_ISOLATE_TUNER_CACHE=1 or ZL_ISOLATE_TUNER_CACHE=1)")
    run.add_argument("--allow-busy-gpu", action="store_true",
                     help="measure even when other processes use the GPU (rows get GPU_BUSY)")
    run.add_argument("--sweep-gpus", type=int, metavar="N",
                     help="record mode: spread the autotune sweep over N GPUs in shard processes (also "
                          "PARALLEL_WARMUP_GPUS=N; TRITONGATE_SWEEP_DEVICES=0,1 picks them); measurement stays "
                          "serial on one GPU; winners that differ across shards are counted and logged")
    run.add_argument("--only-rows", type=_text, metavar="JSON",
                     help="measure only these rows: a JSON list of [op, case, dtype] (the parallel sweep's and "
                          "the batch runner's shards)")
    run.add_argument("--color", choices=["auto", "always", "never"], default="auto",
                     help="colour on a terminal (auto), or force it; run.log is always plain")
    run.set_defaults(func=cmd_run)

    gate = sub.add_parser(
        "gate", help="compare a candidate run with a base run and decide (verdict.json, verdict.md)",
        description="Join the rows of two run directories on (op, case, dtype) and give each a verdict: "
                    "REGRESSED, IMPROVED, UNCHANGED, IDENTICAL_BINARY, REJECTED, NOT_COMPARABLE, "
                    "MISSING or NEW. Any regression fails the gate (exit 1); so does a replayed config "
                    "that no longer compiles, and more missing rows than allowed. Rejected and "
                    "not-comparable rows are listed as unverified and fail only under --strict.",
        epilog=exit_codes(0, 1, 2, 4), formatter_class=argparse.RawDescriptionHelpFormatter)
    gate.add_argument("base", type=_text, metavar="BASE_RUN")
    gate.add_argument("cand", type=_text, metavar="CAND_RUN")
    gate.add_argument("--out", type=_text, required=True, metavar="DIR", help="where verdict.json and verdict.md go")
    gate.add_argument("--allow-mismatch", action="store_true",
                      help="compare runs whose identities differ: every row becomes NOT_COMPARABLE")
    _gate_options(gate)
    gate.set_defaults(func=cmd_gate)

    pair = sub.add_parser(
        "pair", help="the PR check: base and candidate builds replay a baseline in alternating rounds",
        description="Start one worker per compiler build (an interpreter plus environment overlays), both on "
                    "one device, both replaying BASELINE_RECORD's autotune configs. Rows whose launched "
                    "kernels are byte-identical on both sides are IDENTICAL_BINARY without timing; the others "
                    "are timed in alternating rounds (A B, B A, ...) with one k for both sides, get more pairs "
                    "while short of their precision target, and are gated on the paired log ratios. Writes "
                    "OUT/pair-<suite>_<UTC>/{base,candidate}/ (ordinary run directories) and verdict/.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    pair.add_argument("baseline", type=_text, metavar="BASELINE_RECORD", help="a record run (tritongate run) to replay")
    pair.add_argument("--suite", type=_text, required=True, metavar="NAME|PATH", help="builtin suite name or suite YAML")
    pair.add_argument("--out", type=_text, required=True, metavar="DIR", help="parent directory of the pair directory")
    pair.add_argument("--backend", type=_text, default="auto", metavar="NAME", help="cuda, cpu, ... or auto (default)")
    _measure_options(pair)
    _pair_options(pair)
    _gate_options(pair)
    pair.set_defaults(func=cmd_pair)

    loop = sub.add_parser(
        "loop", help="record a suite, pair the build against itself (or --cand-env ...), gate",
        description="The whole PR check on one machine: record the suite (live autotune), then run "
                    "`tritongate pair` on that record with the current interpreter on both sides (or the "
                    "--base-*/--cand-* builds), then gate. Prints the record, both run directories and "
                    "verdict.md.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    loop.add_argument("--suite", type=_text, default="smoke", metavar="NAME|PATH", help="default: smoke")
    loop.add_argument("--backend", type=_text, default="auto", metavar="NAME", help="cuda, cpu, ... or auto (default)")
    loop.add_argument("--out", type=_text, default="runs", metavar="DIR", help="default: runs")
    _measure_options(loop)
    _pair_options(loop)
    _gate_options(loop)
    loop.set_defaults(func=cmd_loop)

    from tritongate.calibrate.commands import FOOTER as CALIBRATE_FOOTER

    cal = sub.add_parser(
        "calibrate", help="how far this runner's verdicts can be trusted: A/A and planted slowdowns",
        description="On this machine: record the suite (or take --baseline), then paired runs of the build "
                    "against itself with every row timed (A/A: every call is a false verdict); an aim step that times "
                    "each row, in one process, along a ladder of planted spins and keeps per --planted size the "
                    "spin that made it that much slower (a size it cannot pin down there is measured by a paired "
                    "run of that spin); and one paired run per size where the candidate's builtin "
                    "kernels spin that long (the base spinning 0). Writes OUT/calibrate-<suite>_<UTC>/ "
                    "with each step's pair directory, calibration.json (per row: A/A verdicts, detectable "
                    "effect, the smallest planted slowdown caught; per size class: catch rates), "
                    "calibration.md and calibration.png. Builtin ops only (the planted delay is theirs).",
        epilog=CALIBRATE_FOOTER, formatter_class=argparse.RawDescriptionHelpFormatter)
    cal.add_argument("--suite", type=_text, metavar="NAME|PATH", help="default: pr")
    cal.add_argument("--backend", type=_text, default="auto", metavar="NAME", help="cuda, cpu, ... or auto (default)")
    cal.add_argument("--out", type=_text, default="runs", metavar="DIR", help="default: runs")
    cal.add_argument("--baseline", type=_text, metavar="RECORD", help="a record run to replay (default: record one)")
    cal.add_argument("--planted", type=_text, metavar="P,Q",
                     help="planted slowdowns in per cent of each row's time (default 1,2,5)")
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
    _measure_options(cal)
    g = cal.add_argument_group("pairing")
    _inputs_option(g)
    g.add_argument("--row-timeout", type=_finite, default=600.0, metavar="S", help="as for pair (default 600)")
    g.add_argument("--max-rounds", type=int, metavar="N", help="as for pair")
    g.add_argument("--row-budget", type=_finite, metavar="S", help="as for pair")
    g.add_argument("--run-budget", type=_finite, metavar="S", help="as for pair")
    _gate_options(cal, calibration=False)
    cal.set_defaults(func=cmd_calibrate, time_identical=True, shard=None, changed_from=None)

    ir = sub.add_parser(
        "ir", help="recompile a run's launched kernel variants ahead of time (no GPU needed)",
        description="Read RUN/ttgir/index.tsv and compile every launched variant (same signature, constexprs, "
                    "specialization and options) for --target under this interpreter's Triton. DIR/ttgir/ has a "
                    "run's layout: `tritongate ir-diff` compares it with the run, or with another compiler's.",
        epilog=exit_codes(0, 2, 4, 130, zero="done (variants that failed to compile are listed)"),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ir.add_argument("--from", dest="from_run", type=_text, required=True, metavar="RUN",
                    help="a run directory recorded on a GPU (it has ttgir/index.tsv)")
    ir.add_argument("--target", type=_text, default="cuda:90", metavar="BACKEND:ARCH",
                    help="cuda:90 (default: H100/H200), cuda:100, ...")
    ir.add_argument("--out", type=_text, required=True, metavar="DIR")
    ir.set_defaults(func=cmd_ir)

    ird = sub.add_parser(
        "ir-diff", help="normalized TTGIR diffs between two runs' (or AOT folders') launched variants",
        description="Pair the launched variants of BASE and CAND by (case, kernel, variant name), compare their TTGIR "
                    "with locations and source paths stripped, and write DIR/<case>/<kernel>/<variant>.diff, "
                    "DIR/index.tsv (changed / identical / only on one side) and DIR/summary.md.",
        epilog=exit_codes(0, 2, 4, zero="compared (changed kernels are a finding, not a failure)"),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ird.add_argument("base", type=_text, metavar="BASE", help="a run directory, an `ir` output, or a ttgir/ folder")
    ird.add_argument("cand", type=_text, metavar="CAND")
    ird.add_argument("--out", type=_text, required=True, metavar="DIR")
    ird.set_defaults(func=cmd_ir_diff)

    ops = sub.add_parser("ops", help="list the builtin ops and suites (and a suite's own ops)",
                         epilog=exit_codes(0, 2, 3, 4, zero="listed"),
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    ops.add_argument("--suite", type=_text, metavar="NAME|PATH",
                     help="also list the ops this suite's modules add")
    ops.set_defaults(func=cmd_ops)

    merge = sub.add_parser(
        "merge", help="join the shards of a sharded paired run (pair --shard I/N) and gate them as one",
        description="Check that the pair directories are the shards of one run (one suite, one shard count, "
                    "each index once, rows disjoint, measured alike), write OUT/base and OUT/candidate with "
                    "every shard's rows (each row keeps its own paired rounds) and TTGIR, and gate them into "
                    "OUT/verdict (verdict.json, verdict.md, ir-diff/).",
        epilog=exit_codes(0, 1, 2, 4), formatter_class=argparse.RawDescriptionHelpFormatter)
    merge.add_argument("shards", type=_text, nargs="+", metavar="PAIR_DIR",
                       help="the pair-<suite>_<UTC> directories the shards printed")
    merge.add_argument("--out", type=_text, required=True, metavar="DIR", help="an empty directory for the merged run")
    merge.add_argument("--allow-partial", action="store_true",
                       help="gate the shards given even when some are missing (the verdict says which)")
    _gate_options(merge)
    merge.set_defaults(func=cmd_merge)

    show = sub.add_parser("show", help="validate a run directory and print its results (table, csv, json, md)",
                          epilog=exit_codes(0, 2, 4, zero="the run directory is valid and was printed"), formatter_class=argparse.RawDescriptionHelpFormatter)
    show.add_argument("run", type=_text, metavar="RUN_DIR", help="a directory printed by `tritongate run`")
    show.add_argument("--allow-incomplete", action="store_true",
                      help="show a run whose writer did not finish (rows so far)")
    show.add_argument("--format", choices=["table", "csv", "json", "md"], default="table",
                      help="table (default: for people), csv (one line per row, raw µs and samples), json "
                           "(the rows with raw samples, versioned), md (a GitHub Markdown table)")
    show.add_argument("--color", choices=["auto", "always", "never"], default="auto")
    show.set_defaults(func=cmd_show)

    from tritongate.baselines.commands import add_baseline_parser
    from tritongate.batch.commands import add_batch_parser
    from tritongate.history.commands import add_history_parser

    add_baseline_parser(sub)
    add_batch_parser(sub)
    add_history_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help is 0, bad usage is 2
        return int(exc.code or 0)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return int(func(args))
    except PreflightError as exc:
        print(exc.marker, file=sys.stderr)
        print(f"error: {_bounded(exc)}", file=sys.stderr)
        return int(ExitCode.PREFLIGHT)
    except GateError as exc:
        print(f"error: {_bounded(exc)}", file=sys.stderr)
        _print_exc_notes(exc)
        return int(exc.exit_code)
    except KeyboardInterrupt as exc:
        print("interrupted", file=sys.stderr)
        _print_exc_notes(exc)
        return int(ExitCode.INTERRUPTED)
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly, as a shell tool does
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 128 + signal.SIGPIPE
    except OSError as exc:  # the disk is full, a path is not writable, a file vanished
        where = f"{exc.filename}: " if exc.filename else ""
        text = _bounded(Exception(f"{where}{exc.strerror or exc}"))
        print(f"error: {text}; free space or fix the path and run again", file=sys.stderr)
        return int(ExitCode.USAGE)
    except Exception as exc:  # noqa: BLE001 - a bug: say so in one line, keep the traceback
        path = _save_traceback()
        text = " ".join(str(exc).split())[:300]
        print(f"internal error (a bug in tritongate): {type(exc).__name__}: {text}; traceback written to {path}",
              file=sys.stderr)
        return int(ExitCode.INTERNAL)


def _print_exc_notes(exc: BaseException) -> None:
    """Where a run that stopped left its partial results."""
    for note in getattr(exc, "__notes__", ()):
        print(note, file=sys.stderr)


MAX_MESSAGE = 2000  # a message quoting a hostile input must not flood the log


def _bounded(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) <= MAX_MESSAGE else f"{text[:MAX_MESSAGE]}… ({len(text) - MAX_MESSAGE:,} more characters)"


def _save_traceback() -> str:
    """The current exception's traceback, in $TRITONGATE_LOG_DIR or the temp directory."""
    import tempfile
    import traceback

    folder = os.environ.get("TRITONGATE_LOG_DIR") or tempfile.gettempdir()
    try:
        fd, path = tempfile.mkstemp(prefix="tritongate-traceback-", suffix=".txt", dir=folder)
        with os.fdopen(fd, "w") as f:
            traceback.print_exc(file=f)
        return path
    except OSError:
        return "(could not be written)"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
