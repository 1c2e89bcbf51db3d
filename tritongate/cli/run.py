"""``tritongate run``: measure a suite into a new run directory."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

from tritongate.argtypes import nonempty_text as _text
from tritongate.cli.common import (add_command, captured_row_text, counted, exit_codes, progress_printer, split_values,
                                  want_color)
from tritongate.cli.options import add_rows_and_sampling, add_sample_time
from tritongate.errors import ExitCode, MeasurementError, UsageError
from tritongate.schema import RowStatus


def add_parser(sub: argparse._SubParsersAction) -> None:
    run = add_command(
        sub, "run", cmd_run, help="measure a suite into a new run directory (record mode)",
        description="Measure every op x shape x dtype row of a suite and write DIR/<suite>_<UTC>/. "
                    "The run directory's path is the last line of stdout.",
        epilog=exit_codes(0, 2, 3, 4, 130, zero="the run completed and measured at least one row (rows that failed are "
                                        "marked in it; a run that measured none is exit 2)"))
    run.add_argument("--suite", type=_text, required=True, metavar="NAME|PATH",
                     help="a builtin suite name (ops/suites/NAME.yaml: smoke, pr, deep) or a suite YAML")
    run.add_argument("--backend", type=_text, default="auto", metavar="NAME",
                     help="auto (default: cuda if a CUDA device is visible, else cpu), cuda (CUDA-graph "
                          "timer), cpu (Triton interpreter, host timer), rocm, musa, ascend (device-event "
                          "timer); CI jobs that must measure a GPU name it (--backend cuda)")
    run.add_argument("--out", type=_text, required=True, metavar="DIR", help="parent directory of the run directory")
    add_rows_and_sampling(run)
    add_sample_time(run)
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


def cmd_run(args: argparse.Namespace) -> int:
    from tritongate.autotune.parallel_sweep import requested_gpus
    from tritongate.autotune.tuner_cache import isolation_requested
    from tritongate.backends import capture_only_requested, default_measure_config, resolve_backend
    from tritongate.report.table import render_rows
    from tritongate.runner import RunRequest, run_suite

    backend = resolve_backend(args.backend)
    config = default_measure_config(backend)
    if args.sample_ms is not None and args.replay_from:
        raise UsageError("--sample-ms with --replay-from: a replay measures each row with its record's launches "
                         "per sample; record with --sample-ms instead")
    if args.sample_ms is not None and (args.l2 == "flush" or backend.timer.value != "cuda-graph"):
        why = "--l2 flush takes one launch a sample" if args.l2 == "flush" else \
            f"backend {backend.name} times with the {backend.timer.value} timer"
        print(f"note: --sample-ms sets how many CUDA-graph launches make a sample; {why}, so it changes nothing "
              "here", file=sys.stderr)
    overrides = {k: v for k, v in (("rounds", args.rounds), ("samples_per_round", args.samples_per_round),
                                   ("l2", args.l2), ("target_sample_s", args.sample_ms and args.sample_ms / 1e3))
                 if v is not None}
    try:
        config = replace(config, **overrides)
    except ValueError as exc:
        raise UsageError(f"bad measurement option: {exc}") from exc
    request = RunRequest(
        suite=args.suite, backend=backend, out=Path(args.out),
        shape_file=Path(args.shape_file) if args.shape_file else None,
        only_ops=tuple(split_values(args.ops)), only_dtypes=tuple(split_values(args.dtypes)),
        config=config, allow_busy_gpu=args.allow_busy_gpu,
        replay_from=Path(args.replay_from) if args.replay_from else None,
        isolate_tuner_cache=isolation_requested(args.isolate_tuner_cache),
        only_rows=_only_rows(args.only_rows) if args.only_rows else None,
        sweep_gpus=requested_gpus(args.sweep_gpus),
    )
    capture = capture_only_requested(backend.name)  # an IR index capture: its rows time no kernel
    outcome = run_suite(request, progress_printer(want_color(args.color, sys.stderr),
                                                  **({"row_text": captured_row_text} if capture else {})))
    title = f"{outcome.path.name}  ({backend.name}, {request.mode}, {counted(len(outcome.rows), 'row')})"
    print(render_rows(outcome.rows, color=want_color(args.color, sys.stdout), title=title, capture_only=capture),
          end="")
    print(f"{counted(len(outcome.rows), 'row')} in {outcome.wall_s:.1f} s; "
          f"{len(outcome.flagged)} flagged (markers or errors; see run.log)")
    print(outcome.path)
    if outcome.rows and not any(r.status is RowStatus.OK and r.samples for r in outcome.rows):
        # a run that measured nothing is never a success: a baseline or a comparison made of it has no rows
        raise MeasurementError(f"no row of the run was measured ({len(outcome.rows)} rows, every one errored or "
                               f"timed out); the run directory is {outcome.path} (see its run.log)")
    return ExitCode.OK


def _only_rows(path: str) -> frozenset[tuple[str, str, str]]:
    """A JSON list of [op, case, dtype] (written by the parallel sweep and the batch runner)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
        raise UsageError(f"--only-rows {path}: unreadable ({type(exc).__name__}: {' '.join(str(exc).split())[:200]}); "
                         "expected a JSON list of [op, case, dtype]") from None
    if not isinstance(data, list) or not all(isinstance(r, list) and len(r) == 3 and all(isinstance(x, str) and x
                                                                                          for x in r) for r in data):
        raise UsageError(f"--only-rows {path}: expected a JSON list of [op, case, dtype] string triples")
    if not data:  # measuring none of the suite's rows is no run
        raise UsageError(f"--only-rows {path}: lists no rows; expected a JSON list of [op, case, dtype] string triples")
    return frozenset(tuple(r) for r in data)
