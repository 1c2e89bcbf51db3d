"""``tritongate batch`` and ``tritongate batch-merge``: argparse → library calls → exit codes.

``main`` runs them alone (``python -m tritongate.batch``); the batch directory is stdout's last line."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Sequence, TextIO

from tritongate.argtypes import nonempty_text as _text, number_in
from tritongate.batch.plan import (WORKER_ATTEMPTS, BatchRequest, RunOptions, parse_devices, parse_shard,
                                   request_from_manifest)
from tritongate.batch.scheduler import BatchEvent, run_batch
from tritongate.batch.shards import merge_batches
from tritongate.batch.status import OpStatus
from tritongate.cli.common import (add_command, argtype, counted, main_alone, report_errors, sigterm_interrupts,
                                   split_values)
from tritongate.cli.options import add_measurement_options, add_sample_time
from tritongate.errors import ExitCode, MeasurementError, UsageError
from tritongate.report.untrusted import neutralize

EXIT_CODES = ("exit codes:\n"
              "  0    every op PASS or SKIP, at least one PASS (the last stdout line is the batch directory)\n"
              "  1    the batch completed, some op FAIL or TIMEOUT (see ops_status.csv)\n"
              "  2    usage or input error (bad arguments, a batch planned differently or edited, a merge\n"
              "       refused), or a batch that measured nothing (every op SKIP, or no op planned)\n"
              "  3    preflight failed (the suite or shape file: !!! PREFLIGHT_FAILED check=<name>)\n"
              "  4    internal error\n"
              "  130  interrupted (Ctrl-C, SIGTERM): the running op was killed; resume with --resume BATCH\n")
MERGE_EXIT_CODES = ("exit codes:\n"
                    "  0    merged; every op PASS or SKIP (the last stdout line is the merged batch directory)\n"
                    "  1    merged; some op FAIL or TIMEOUT, or MISSING (its shard not given: --allow-partial)\n"
                    "  2    refused (shards missing, overlapping, unfinished or planned differently) or usage error\n"
                    "  4    internal error\n")

_seconds = number_in(0, what="seconds")
dispatch = report_errors  # run a handler, its errors mapped to exit codes as ``tritongate.cli.main`` does


def add_batch_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub, "batch", cmd_batch, help="many ops, each its own `tritongate run`: timeouts, retries, resume, shards",
        description="Run every op of a suite (or --ops) as its own `tritongate run`, one op at a time per device, "
                    "in a worker process per device that is reused from op to op (it imports torch and triton "
                    "once; its own process group: a crash loses one op, and the next op gets a new worker; a "
                    "worker whose op did not exit 0 is replaced). Retries crashes and rc=1 (at "
                    "most --retries, stopping when the same failure repeats), kills an op at --op-timeout "
                    "(TIMEOUT, not retried), runs a failing op's dtypes one by one to keep those that work, and "
                    "marks ops that declare they are not supported SKIP. Writes OUT/batch-<suite>_<UTC>/ with "
                    "ops/<op>/ (each op's run directories and logs), ops_status.csv (rewritten as the batch runs), "
                    "summary.csv (a line per measured row) and run/ (every PASS op merged: an ordinary run "
                    "directory for `gate`, `pair` and --replay-from).",
        epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--suite", type=_text, metavar="NAME|PATH", help="a builtin suite name or a suite YAML")
    p.add_argument("--out", type=_text, metavar="DIR", help="parent directory of the new batch directory")
    p.add_argument("--resume", type=_text, metavar="BATCH_DIR",
                   help="continue this batch: PASS/SKIP ops are reused, the others rerun; its plan is kept "
                        "(options that would change it are refused), execution options may change")
    g = p.add_argument_group("what to run (the plan)", "passed to every op's run; an op listing none of the "
                             "--dtypes runs its own\n(note dtype_fallback)")
    g.add_argument("--backend", type=_text, metavar="NAME", help="passed to every op's run (default auto)")
    add_measurement_options(p, group=g, paired=False, color=False)
    add_sample_time(g)
    g.add_argument("--replay-root", type=_text, metavar="DIR",
                   help="replay recorded configs: per op, the op's record run in this batch directory (else its "
                        "merged run/), or this run directory itself")
    g.add_argument("--shard", type=argtype(lambda v: parse_shard(_text(v)), UsageError), metavar="I/N",
                   help="run only every N-th op of the plan, from the I-th (round robin); join with batch-merge")
    e = p.add_argument_group("how to run it")
    e.add_argument("--devices", type=argtype(lambda v: parse_devices(_text(v)), UsageError), metavar="0,1,...",
                   help="one op at a time on each (sets the backend's visibility variable, e.g. "
                        "CUDA_VISIBLE_DEVICES, per op); default: one op at a time, devices left as they are")
    e.add_argument("--op-timeout", type=_seconds, metavar="S",
                   help="seconds per op attempt before SIGTERM, then SIGKILL to its process group (the worker's) "
                        "(default 3600; 0: no limit)")
    e.add_argument("--kill-grace", type=_seconds, metavar="S", help="seconds between SIGTERM and SIGKILL (default 10)")
    e.add_argument("--retries", type=int, metavar="N", help="retries after a crash or rc=1 (default 2)")
    e.add_argument("--python", type=_text, metavar="PY", help="interpreter of the op processes (default: this one)")
    e.add_argument("--env", type=_text, action="append", metavar="K=V", help="set in every op process (repeatable)")
    w = e.add_mutually_exclusive_group()
    w.add_argument("--fresh-process", action="store_true",
                   help="run each op in a fresh process instead of the device's reused worker: Python's start "
                        "and the torch/triton imports once per op (on an H200 4.6-5.0 s an op instead of "
                        "0.14-0.23 s); both measure alike (bench/results/2026-12-05_h100_two_speeds.md)")
    # the default now; still accepted (hidden) for command lines written when it was not
    w.add_argument("--reuse-worker", action="store_true", help=argparse.SUPPRESS)
    w.add_argument("--worker-attempts", type=int, metavar="N",
                   help=f"replace a device's worker after N attempts (default {WORKER_ATTEMPTS}; 0: a fresh "
                        "process per op); a resume keeps the batch's setting unless one of these is given")

    m = add_command(
        sub, "batch-merge", cmd_batch_merge,
        help="join the shard batches of a deep scan (batch --shard I/N) into one batch",
        description="Check that the batch directories are the finished shards of one plan (suite, ops, dtypes, "
                    "options, shard count; each index once; no op twice), then write OUT/ with batch.json, "
                    "ops_status.csv, summary.csv and run/ (every PASS op of every shard).",
        epilog=MERGE_EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    m.add_argument("shards", type=_text, nargs="+", metavar="BATCH_DIR", help="the shard batch directories")
    m.add_argument("--out", type=_text, required=True, metavar="DIR", help="an empty directory for the merged batch")
    m.add_argument("--allow-partial", action="store_true",
                   help="merge the shards given even when some are missing (their ops are listed as MISSING)")


def _options(args: argparse.Namespace, base: RunOptions | None = None) -> RunOptions:
    base = base or RunOptions()
    given = {"backend": args.backend, "shape_file": args.shape_file, "rounds": args.rounds,
             "samples_per_round": args.samples_per_round, "l2": args.l2, "sample_ms": args.sample_ms,
             "isolate_tuner_cache": args.isolate_tuner_cache or None, "allow_busy_gpu": args.allow_busy_gpu or None}
    return replace(base, **{k: v for k, v in given.items() if v is not None})


def request_from_args(args: argparse.Namespace) -> BatchRequest:
    """The batch request the command line asks for (a resume starts from the batch's own)."""
    from tritongate.pair.build import parse_env_overlay

    if args.sample_ms is not None and args.replay_root:
        raise UsageError("--sample-ms with --replay-root: a replay measures each row with its record's launches per "
                         "sample; record the root with --sample-ms instead")
    if args.retries is not None and args.retries < 0:
        raise UsageError(f"--retries {args.retries}: expected a whole number >= 0")
    execution: dict[str, Any] = {
        "devices": args.devices, "retries": args.retries, "python": args.python, "kill_grace_s": args.kill_grace,
        "env": parse_env_overlay(args.env, option="--env") if args.env else None,
        "worker_attempts": 0 if args.fresh_process else WORKER_ATTEMPTS if args.reuse_worker else args.worker_attempts}
    timeout = args.op_timeout or None  # 0: no limit
    ops, dtypes = tuple(split_values(args.ops)), tuple(split_values(args.dtypes))
    if args.resume:
        if args.out:
            raise UsageError("--out with --resume: a resumed batch stays in its own directory; leave --out out")
        request = request_from_manifest(Path(args.resume), **execution)
        if args.op_timeout is not None:
            request = replace(request, op_timeout_s=timeout)
        plan = {k: v for k, v in (("suite", args.suite), ("ops", ops or None), ("dtypes", dtypes or None),
                                  ("replay_root", Path(args.replay_root) if args.replay_root else None),
                                  ("shard", args.shard)) if v is not None}
        # run_batch refuses a plan that differs from the batch's
        return replace(request, options=_options(args, request.options), **plan)
    if not args.suite or not args.out:
        raise UsageError("batch needs --suite and --out (or --resume BATCH_DIR)")
    kw = {k: v for k, v in execution.items() if v is not None}
    return BatchRequest(suite=args.suite, out=Path(args.out), ops=ops, dtypes=dtypes, options=_options(args),
                        replay_root=Path(args.replay_root) if args.replay_root else None,
                        shard=args.shard or (1, 1), op_timeout_s=timeout if args.op_timeout is not None else 3600.0,
                        **kw)


def cmd_batch(args: argparse.Namespace) -> int:
    return execute(request_from_args(args))


def execute(request: BatchRequest, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run the batch with progress on ``err`` and the summary on ``out``; SIGTERM stops it
    like Ctrl-C (the running op's process group is killed, the batch stays resumable)."""
    out, err = out or sys.stdout, err or sys.stderr
    with sigterm_interrupts("SIGTERM"):
        outcome = run_batch(request, progress_printer(err))
    print(_ops_line(outcome.results), file=out)
    print(f"ops_status: {outcome.path / 'ops_status.csv'}", file=out)
    print(f"summary:    {outcome.path / 'summary.csv'}", file=out)
    print(_run_line(outcome.run) if outcome.run is not None else "run:        none (no op passed)", file=out)
    print(outcome.path, file=out)
    if outcome.exit_code != ExitCode.OK or outcome.count(OpStatus.PASS):
        return outcome.exit_code
    if not outcome.results:  # as `run` measuring no row: never a pass
        index, count = request.shard
        raise MeasurementError(f"nothing was measured: shard {index}/{count} holds no op of the suite; the batch "
                               f"directory is {outcome.path}; use fewer shards than the suite has ops")
    which = "its only op was" if len(outcome.results) == 1 else f"every one of its {len(outcome.results)} ops was"
    raise MeasurementError(f"nothing was measured: {which} SKIP (the op says it cannot run here); "
                           f"{outcome.path / 'ops_status.csv'} gives each one's reason; run them where "
                           "they are supported (another --backend or device)")


def progress_printer(stream: TextIO) -> Callable[[BatchEvent], None]:
    """A line per finished op and failed attempt on ``stream``; the ops' text shown, never obeyed."""
    def show(event: BatchEvent) -> None:
        width = len(str(event.total))
        if event.kind == "start":
            print(f"batch {neutralize(event.message)}: {counted(event.total, 'op')}", file=stream, flush=True)
        elif event.kind == "note":
            print(f"note: {neutralize(event.message)}", file=stream, flush=True)
        elif event.kind == "attempt" and event.attempt and event.attempt.outcome is not OpStatus.PASS:
            a = event.attempt
            which = f" ({','.join(a.dtypes)})" if a.dtypes else ""
            print(f"  {neutralize(event.op)} attempt {a.number}{which}: {a.outcome.value} "
                  f"{neutralize(a.reason)[:200]}", file=stream, flush=True)
        elif event.kind in ("op_done", "reused") and event.result:
            r = event.result
            extra = "  (reused)" if event.kind == "reused" else f"  {r.wall_s:.1f} s"
            device = f"  device {neutralize(r.device)}" if r.device else ""
            notes = f"  {neutralize('; '.join(r.notes))[:300]}" if r.notes else ""
            print(f"[{event.done:>{width}}/{event.total}] {r.status.value:<11} {neutralize(r.op)}  "
                  f"{counted(r.rows, 'row')}{extra}{device}{notes}", file=stream, flush=True)
        elif event.kind == "merged":
            print(f"merged run: {neutralize(event.message)}", file=stream, flush=True)
    return show


def _ops_line(results: Sequence[Any]) -> str:
    counts = [f"{sum(r.status is s for r in results)} {s.value}" for s in OpStatus
              if any(r.status is s for r in results)]
    return f"{counted(len(results), 'op')}: {', '.join(counts) or 'nothing to run'}"


def _run_line(run: Any) -> str:
    return f"run:        {run.path} ({counted(run.rows, 'row')} of {counted(run.ops, 'op')})"


def cmd_batch_merge(args: argparse.Namespace) -> int:
    merged = merge_batches([Path(p) for p in args.shards], Path(args.out), allow_partial=args.allow_partial)
    print(f"merged {len(merged.shards)} of {counted(merged.count, 'shard')}"
          + (f" (missing: {', '.join(f'{i}/{merged.count}' for i in merged.missing)})" if merged.missing else ""))
    print(_ops_line(merged.results))
    if merged.run is not None:
        print(_run_line(merged.run))
    print(merged.path)
    return merged.exit_code


def main(argv: Sequence[str] | None = None) -> int:
    """``batch ...`` / ``batch-merge ...`` without the rest of the CLI."""
    return main_alone(add_batch_parser, list(sys.argv[1:] if argv is None else argv))
