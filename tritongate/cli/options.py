"""The option groups several commands share, declared once (measurement, compiler builds
and pairing, inputs, gate), and the readers that turn their values into library objects."""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path
from typing import Any, Callable

from tritongate.argtypes import (FRACTION_HINT, effect_size, finite_number as _finite, name_list,
                                 nonempty_text as _text, whole_number)
from tritongate.cli.common import shard_arg, url_arg
from tritongate.errors import GateError, UsageError
from tritongate.harness.measure import MeasureConfig
from tritongate.model.calibration import CALIBRATION_ENV, load_summary
from tritongate.report.untrusted import safe_url

MAX_TEMPLATE_BYTES = 1 << 20  # a verdict template: a page of jinja2, not a data file


def add_rows_and_sampling(g: argparse._ArgumentGroup | argparse.ArgumentParser) -> None:
    """--shape-file, --ops, --dtypes and --rounds, --samples-per-round, --l2 of every command that measures,
    with the defaults it measures with."""
    from tritongate.backends import CPU_MEASURE

    gpu, cpu = MeasureConfig(), CPU_MEASURE
    g.add_argument("--shape-file", type=_text, metavar="YAML", help="shapes keyed by op name; overrides the suite's")
    g.add_argument("--ops", type=name_list, action="append", metavar="A,B", help="only these ops of the suite")
    g.add_argument("--dtypes", type=name_list, action="append", metavar="D,E", help="only these dtypes (e.g. float16)")
    g.add_argument("--rounds", type=whole_number, metavar="N",
                   help=f"rounds per row; in a paired run a round times both sides, in alternating order "
                        f"(default {gpu.rounds}; {cpu.rounds} on cpu)")
    g.add_argument("--samples-per-round", type=whole_number, metavar="N",
                   help=f"samples each side takes per round (default {gpu.samples_per_round}; "
                        f"{cpu.samples_per_round} on cpu); a paired run needs an odd number, at least 3 (it takes "
                        "each round's median)")
    g.add_argument("--l2", choices=["warm", "flush"],
                   help="warm (default: L2 kept warm, as CUDA graphs measure) or flush (L2 cleared before every "
                        "sample, like triton.testing.do_bench; k = 1)")


MAX_SAMPLE_MS = 100.0  # a sample of k graph launches: longer than this, a round takes seconds


def sample_ms(value: str) -> float:
    try:
        ms = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of milliseconds, got {value!r}") from None
    if not 0 < ms <= MAX_SAMPLE_MS:
        raise argparse.ArgumentTypeError(f"must be > 0 and at most {MAX_SAMPLE_MS:g} ms, got {value}")
    return ms


def add_sample_time(g: argparse._ArgumentGroup | argparse.ArgumentParser) -> None:
    """--sample-ms of the commands that record (and so choose each row's launches per sample)."""
    g.add_argument("--sample-ms", type=sample_ms, metavar="MS",
                   help=f"device time per sample the CUDA-graph timer aims at: k launches a sample, k set per row "
                        f"when it is recorded (default {MeasureConfig().target_sample_s * 1e3:g}). A kernel whose "
                        "launches jitter needs longer samples for a small change to show: a sample's spread falls "
                        "as 1/sqrt(k) (docs/trust-and-calibration.md). An op's sample_ms in the suite is the "
                        "least its rows get. A replay or pair measures with its record's k")


def add_measurement_options(p: argparse.ArgumentParser, *, group: argparse._ArgumentGroup | None = None,
                            paired: bool = True, color: bool = True) -> None:
    """What to measure and how, in a "measurement" group or ``group``. ``paired``: timed by two workers
    (batch passes the options to each op's ``tritongate run`` instead)."""
    g = group or p.add_argument_group("measurement")
    add_rows_and_sampling(g)
    g.add_argument("--isolate-tuner-cache", action="store_true",
                   help=f"private FlagGems LibTuner DB per {'worker' if paired else 'op run'} "
                        "(also TRITONGATE_ISOLATE_TUNER_CACHE=1)")
    g.add_argument("--allow-busy-gpu", action="store_true",
                   help="measure even when other processes use the GPU (rows get GPU_BUSY)")
    if color:
        g.add_argument("--color", choices=["auto", "always", "never"], default="auto",
                       help="colour and a live progress bar on a terminal (auto), or force it")


def add_inputs_option(g: argparse._ArgumentGroup) -> None:
    g.add_argument("--inputs", choices=["shared", "own"], default="shared",
                   help="shared (default): in each pair the side timed second reads the inputs the first side "
                        "built (CUDA IPC), so both see the same memory placement and it cancels in the pair; "
                        "own: each side builds its own (the interpreter, and ops whose builder lists no tensors, "
                        "always do)")


def add_pair_options(p: argparse.ArgumentParser, *, shard: bool = True) -> None:
    """What a paired run measures, the two builds it compares, how long it may pair, and the gate. No
    --shard for ``loop``: its record is not sharded, and nothing would merge its shards."""
    add_measurement_options(p)
    g = p.add_argument_group("compiler builds and pairing")
    add_inputs_option(g)
    g.add_argument("--base-python", type=_text, metavar="PY", help="the base build's interpreter (default: this one)")
    g.add_argument("--cand-python", type=_text, metavar="PY", help="the candidate build's interpreter (default: this one)")
    g.add_argument("--base-env", action="append", metavar="K=V", help="environment for the base worker only")
    g.add_argument("--cand-env", action="append", metavar="K=V",
                   help="environment for the candidate worker only (e.g. DISABLE_MMA_V3=1)")
    g.add_argument("--time-identical", action="store_true",
                   help="time rows whose kernels are byte-identical on both sides too (an A/A check)")
    if shard:
        g.add_argument("--shard", type=shard_arg, metavar="I/N",
                       help="measure only the I-th of N shards of the rows (every N-th row of the plan, from the "
                            "I-th); `tritongate merge` joins the shards' pair directories into one verdict")
    g.add_argument("--changed-from", type=_text, metavar="DIR",
                   help="an ir-diff folder of the two builds' ahead-of-time IR of the baseline record "
                        "(tritongate ir, then tritongate ir-diff): rows whose kernels all compiled identically "
                        "are IDENTICAL_BINARY without running; the others, and rows DIR does not list, are measured")
    g.add_argument("--row-timeout", type=_finite, default=600.0, metavar="S",
                   help="a worker that does not answer within S seconds is killed and restarted; its row is "
                        "REJECTED (default 600)")
    add_schedule_options(g)
    add_gate_options(p)


def add_schedule_options(g: argparse._ArgumentGroup) -> None:
    """How far rows short of their precision target may grow (pair, loop, calibrate)."""
    g.add_argument("--max-rounds", type=whole_number, metavar="N",
                   help="rounds a row may grow to while short of its precision target (default 80; 24 on cpu)")
    g.add_argument("--row-budget", type=_finite, metavar="S",
                   help="wall seconds one row's timing may take (default 30; 8 on cpu); a row the rule "
                        "would call on fewer rounds than a call needs, and its confirmation, may pass it "
                        "on the run budget")
    g.add_argument("--run-budget", type=_finite, metavar="S",
                   help="wall seconds the run may spend on extra rounds (default 600; 300 on cpu)")


def add_gate_options(p: argparse.ArgumentParser, *, calibration: bool = True) -> None:
    """``calibration``: the verdicts are read by people, so offer --calibration, --max-missing, --strict,
    --fail-on-blind and --artifact-url; ``calibrate`` reads its verdicts itself (false calls, not pass or fail)."""
    g = p.add_argument_group("gate")
    g.add_argument("--policy", type=_text, metavar="YAML", help="thresholds file (default: the suites' gate.yaml, ops/gate.yaml of the "
                   "checkout or the copy installed with the package)")
    g.add_argument("--baseline-state", type=_text, metavar="JSON",
                   help="what `tritongate baseline find --state-out` found: shown at the top of verdict.md "
                        "(a stale, mismatched or missing baseline with the command that refreshes it)")
    if calibration:
        g.add_argument("--calibration", type=_text, metavar="PATH",
                       help="the runner's latest `tritongate calibrate` output (calibration.json or its folder), "
                            "cited in verdict.md's footer; default $TRITONGATE_CALIBRATION")
    g.add_argument("--min-effect", type=effect_size, metavar="F",
                   help=f"least change of a row's time that counts, as {FRACTION_HINT} (default: the policy "
                        "file's, 0.01)".replace("%", "%%"))
    g.add_argument("--noise-z", type=_finite, metavar="Z",
                   help="noise floor confidence as normal SDs, applied through Student's t for the row's degrees "
                        "of freedom (default 4)")
    g.add_argument("--min-samples", type=int, metavar="N",
                   help="samples each side needs for a verdict (default 10)")
    g.add_argument("--process-sd", type=_finite, metavar="SD",
                   help="SD of the persistent offset between two worker processes of one build, as a fraction, "
                        "e.g. 0.003 for 0.3%%: the least between-worker-pair part of a paired row's standard error "
                        "(default 0.003)")
    if not calibration:
        p.set_defaults(max_missing=None, strict=False, fail_on_blind=False, artifact_url=None, verdict_template=None)
        return
    g.add_argument("--max-missing", type=int, metavar="N", help="missing rows tolerated (default 0)")
    g.add_argument("--strict", action="store_true", help="rejected and not-comparable rows fail too")
    g.add_argument("--fail-on-blind", action="store_true",
                   help="fail (exit 1) when some timed row could not resolve its precision target: the ⚠️ "
                        "headline becomes ❌ (default: shown, passing)")
    g.add_argument("--artifact-url", type=url_arg, metavar="URL",
                   help="link to the uploaded run dirs and IR diffs (or TRITONGATE_ARTIFACT_URL)")
    g.add_argument("--verdict-template", type=_text, metavar="J2",
                   help="a jinja2 file laying out verdict.md and the job summary instead of the shipped "
                        "one (or TRITONGATE_VERDICT_TEMPLATE; docs/reading-the-verdict.md says what it "
                        "receives); verdict.json and the PR comment stay as shipped")


def baseline_state_option(args: argparse.Namespace) -> Any:
    if not getattr(args, "baseline_state", None):
        return None
    from tritongate.gate.baseline_state import load_baseline_state

    return load_baseline_state(Path(args.baseline_state))


def _option_or_env(option: str | None, env: str, load: Callable[[Path], Any], errors: type[Exception],
                   *, name: str) -> Any:
    """``load`` of the option's path, else of $``env``'s (empty: None, not loaded). ``name``: the option."""
    value = option or os.environ.get(env, "").strip()
    if not value:
        return None
    try:
        return load(Path(value))
    except RecursionError:  # json.loads of a deeply nested document: a damaged file, not a bug
        where = name if option else env
        raise UsageError(f"{where} {value}: nested too deeply to be read (a damaged file?); pass the file "
                         "tritongate wrote") from None
    except errors as exc:
        if not option:  # say where the path came from: the user typed no option
            exc.args = (f"{env}={value}: {exc}",)
        raise


def calibration_option(args: argparse.Namespace) -> Any:
    """The runner's latest calibration summary: --calibration, else $TRITONGATE_CALIBRATION, else None."""
    return _option_or_env(getattr(args, "calibration", None), CALIBRATION_ENV, load_summary, GateError,
                          name="--calibration")


def changed_from_option(args: argparse.Namespace, baseline: Path, base: Any, cand: Any) -> Any:
    """--changed-from: the rows an ir-diff folder lists, or None; the folder must prove it
    was made from ``baseline`` by the two builds' compilers (``ir.provenance``)."""
    if not getattr(args, "changed_from", None):
        return None
    import os

    from tritongate.ir.changed import load_changed_rows
    from tritongate.ir.provenance import build_of

    def build(side: Any) -> Callable[[], dict[str, Any]]:  # the worker's environment: this one's plus the overlay
        return lambda: {**build_of(side.python, side.env), "codegen_env": {**os.environ, **side.env}}

    return load_changed_rows(Path(args.changed_from), record=baseline, base_build=build(base), cand_build=build(cand))


def gate_policy(args: argparse.Namespace) -> Any:
    from tritongate.gate.policy import load_policy

    return load_policy(Path(args.policy) if args.policy else None, min_effect=args.min_effect, noise_z=args.noise_z,
                       min_samples=args.min_samples, max_missing=args.max_missing, strict=args.strict or None,
                       fail_on_blind=getattr(args, "fail_on_blind", False) or None,
                       process_sd=getattr(args, "process_sd", None))


def verdict_template_option(args: argparse.Namespace) -> Path | None:
    """--verdict-template, else $TRITONGATE_VERDICT_TEMPLATE, else None (the shipped layout); compiled
    now, so a bad file stops the command before anything is measured."""
    from tritongate.report.verdict_markdown import load_template

    def checked(path: Path) -> Path:
        with contextlib.suppress(OSError):  # unreadable: load_template says so
            size = path.stat().st_size
            if path.is_file() and size > MAX_TEMPLATE_BYTES:  # verdict.md would be larger still
                raise UsageError(f"the verdict template {path} is {size:,} bytes, more than the "
                                 f"{MAX_TEMPLATE_BYTES:,} a template may have (a job summary holds 1 MiB); pass a "
                                 "jinja2 file or leave --verdict-template out")
        load_template(path)
        if path.is_file() and not path.read_bytes().strip():  # it would write an empty verdict.md
            raise UsageError(f"the verdict template {path} is empty; pass a jinja2 file that lays out the "
                             "verdict, or leave --verdict-template out")
        return path
    return _option_or_env(getattr(args, "verdict_template", None), "TRITONGATE_VERDICT_TEMPLATE", checked, UsageError,
                          name="--verdict-template")


def artifact_url_option(args: argparse.Namespace) -> str | None:
    """--artifact-url, else $TRITONGATE_ARTIFACT_URL (validated: it becomes a link)."""
    if args.artifact_url:
        return args.artifact_url
    env = os.environ.get("TRITONGATE_ARTIFACT_URL")
    if not env:
        return None
    try:
        return safe_url(env)
    except ValueError as exc:
        raise UsageError(f"TRITONGATE_ARTIFACT_URL: {exc}") from None
