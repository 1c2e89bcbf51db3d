"""``tritongate ir`` and ``ir-diff``: recompile a run's kernels ahead of time, diff TTGIR."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from tritongate.argtypes import nonempty_text
from tritongate.cli.common import HelpFormatter, exit_codes, terminal_safe
from tritongate.errors import ExitCode, UsageError

_text = nonempty_text


def add_ir_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``ir``."""
    ir = sub.add_parser(
        "ir", help="recompile a run's launched kernel variants ahead of time (no GPU needed)",
        description="Read RUN/ttgir/index.tsv and compile every launched variant (same signature, constexprs, "
                    "specialization and options) for --target under this interpreter's Triton. DIR/ttgir/ has a "
                    "run's layout: `tritongate ir-diff` compares it with the run, or with another compiler's.",
        epilog=exit_codes(0, 2, 4, 130, zero="done (variants that failed to compile are listed; "
                                                "none recompiled of some is exit 2)"),
        formatter_class=HelpFormatter)
    ir.add_argument("--from", dest="from_run", type=_text, required=True, metavar="RUN",
                    help="a run directory or baseline store entry with ttgir/index.tsv (a GPU or --backend cpu run)")
    ir.add_argument("--target", type=_text, default="cuda:90", metavar="BACKEND:ARCH",
                    help="cuda:90 (default: H100/H200), cuda:100, ...")
    ir.add_argument("--out", type=_text, required=True, metavar="DIR",
                    help="where DIR/ttgir/ goes (the recompiled variants, laid out as in a run)")
    ir.set_defaults(func=cmd_ir)


def add_ir_diff_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``ir-diff``."""
    ird = sub.add_parser(
        "ir-diff", help="normalized TTGIR diffs between two runs' (or AOT folders') launched variants",
        description="Pair the launched variants of BASE and CAND by (case, kernel, variant name), compare their TTGIR "
                    "with locations and source paths stripped, and write DIR/<case>/<kernel>/<variant>.diff, "
                    "DIR/index.tsv (changed / identical / only on one side) and DIR/summary.md.",
        epilog=exit_codes(0, 2, 4, zero="compared (changed kernels are a finding, not a failure)"),
        formatter_class=HelpFormatter)
    ird.add_argument("base", type=_text, metavar="BASE", help="a run directory, an `ir` output, or a ttgir/ folder")
    ird.add_argument("cand", type=_text, metavar="CAND", help="as BASE, for the candidate build")
    ird.add_argument("--out", type=_text, required=True, metavar="DIR",
                     help="where the .diff files, index.tsv and summary.md go (replacing an earlier ir-diff's there)")
    ird.set_defaults(func=cmd_ir_diff)


def cmd_ir(args: argparse.Namespace) -> int:
    from tritongate.ir.aot import Target, add_module_paths, recompile
    from tritongate.ir.index import INDEX, read_index
    from tritongate.ir.store import TTGIR_DIR
    from tritongate.cli.folders import load_run_dir

    target = Target.parse(args.target)
    # a crashed run's IR is evidence too
    run = load_run_dir(Path(args.from_run), what="--from: a run directory", allow_incomplete=True)
    index = Path(args.from_run) / TTGIR_DIR / INDEX
    if not index.is_file():
        raise UsageError(f"{args.from_run} has no {TTGIR_DIR}/{INDEX}: its IR was not captured "
                         "(runs of tritongate before IR capture have none); record it again (a GPU run, or --backend cpu, "
                         "which indexes each launch's GPU specialization)")
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
    from tritongate.ir.provenance import write_aot

    write_aot(Path(args.out) / TTGIR_DIR, Path(args.from_run), target=str(target), compiled=outcome.compiled,
              failed=outcome.failed)
    for failure in outcome.failed:
        print(f"not compiled: {terminal_safe(failure)}", file=sys.stderr)
    print(f"{outcome.compiled} of {total} launched variants recompiled for {target}; "
          f"{len(outcome.failed)} failed")
    print(Path(args.out) / TTGIR_DIR)
    if total and not outcome.compiled:  # nothing was made: never a success
        first = terminal_safe(outcome.failed[0]) if outcome.failed else "no variant was attempted"
        raise UsageError(f"none of the {total} launched variants of {args.from_run} recompiled for {target} "
                         f"(first failure: {first}); check that this interpreter's Triton can compile them")
    return ExitCode.OK


def cmd_ir_diff(args: argparse.Namespace) -> int:
    from collections import Counter

    from tritongate.ir.diff import diff_trees, ttgir_root, write_diff_dir
    from tritongate.ir.provenance import AOT_FILE, diff_provenance, write_diff_provenance

    base_root, cand_root = ttgir_root(Path(args.base)), ttgir_root(Path(args.cand))
    # two `tritongate ir` folders: the diff carries where they came from (pair --changed-from
    # refuses a diff without it); two run directories' captures have none
    provenance = diff_provenance(base_root, cand_root) \
        if (base_root / AOT_FILE).exists() or (cand_root / AOT_FILE).exists() else None
    try:
        diffs = diff_trees(Path(args.base), Path(args.cand))
    except FileNotFoundError as exc:
        raise UsageError(f"{exc}; pass two run directories (or ttgir/ folders) with captured IR") from exc
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    out = write_diff_dir(diffs, Path(args.out))
    if provenance is not None:
        write_diff_provenance(out, provenance)
    counts = Counter(d.status for d in diffs)
    print(", ".join(f"{counts[s]} {s}" for s in sorted(counts)) or "no launched variants on either side")
    for d in sorted((d for d in diffs if d.status == "changed"), key=lambda d: -(d.added + d.removed))[:20]:
        print(f"  changed  {terminal_safe(d.case)}  {terminal_safe(d.kernel)}  {terminal_safe(d.name)}  "
              f"+{d.added} -{d.removed}")
    print(out)
    return ExitCode.OK
