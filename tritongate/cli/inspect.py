"""``tritongate show``, ``ops``, ``ir`` and ``ir-diff``: print a run, pair or verdict folder, list the ops and
suites, recompile a run's kernels ahead of time and diff their TTGIR."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from tritongate.argtypes import nonempty_text as _text
from tritongate.cli.common import DEFAULT_BLAME, add_command, blaming_line, counted, exit_codes, want_color
from tritongate.cli.folders import Kind, kind_of, load_run_dir
from tritongate.errors import ExitCode, UsageError
from tritongate.report.untrusted import neutralize


def add_ops_parser(sub: argparse._SubParsersAction) -> None:
    ops = add_command(sub, "ops", cmd_ops, help="list the builtin ops and suites (and a suite's own ops)",
                      description="List every builtin op (shape arguments, dtypes, what it computes) and the "
                                  "builtin suites. With --suite: exactly what that suite runs, its ops (builtin "
                                  "or from its `modules:`) with the dtypes and number of shapes it runs them with.",
                      epilog=exit_codes(0, 2, 3, 4, zero="listed"))
    ops.add_argument("--suite", type=_text, metavar="NAME|PATH",
                     help="also list the ops this suite's modules add")


def add_show_parser(sub: argparse._SubParsersAction) -> None:
    show = add_command(
        sub, "show", cmd_show, help="validate a run, pair or verdict folder and print it (table, csv, json, md)",
        description="Load FOLDER, refusing a damaged, foreign or (without --allow-incomplete) unfinished one, "
                    "and print it: a run directory's rows; a verdict folder's verdict; a pair directory's two "
                    "runs and its verdict. --format csv, json or md print a document instead, and stdout holds "
                    "nothing but it: a run's rows, or the verdict (of a verdict folder or a pair directory); a "
                    "verdict's md is its verdict.json in the shipped layout, the stored verdict.md is not read.",
        epilog=exit_codes(0, 2, 4, zero="the folder is valid and was printed (a verdict whose pass/fail, counts, "
                                         "state or row words contradict its rows is printed, flagged, and exits 2)"))
    show.add_argument("run", type=_text, metavar="FOLDER",
                      help="a run directory (what `tritongate run` printed, or a pair's base/ or candidate/), a "
                           "pair directory (of `pair`, `loop` or `merge`) or a verdict folder (of `gate`)")
    show.add_argument("--allow-incomplete", action="store_true",
                      help="show a run whose writer did not finish (rows so far)")
    show.add_argument("--format", choices=["table", "csv", "json", "md"], default="table",
                      help="table (default: for people), csv (one line per row, raw µs; a run's samples too), "
                           "json (a run's rows with raw samples, or verdict.json, versioned), md (a run's GitHub "
                           "Markdown table, or verdict.md)")
    show.add_argument("--color", choices=["auto", "always", "never"], default="auto",
                      help="colour the table on a terminal (auto), or force it (table only)")


def cmd_show(args: argparse.Namespace) -> int:
    path = Path(args.run)
    kind = kind_of(path)
    if kind is Kind.VERDICT:
        return _show_verdict(path, args.format)
    if kind is Kind.PAIR:
        if args.format != "table":  # a pair's result is its verdict
            return _show_verdict(path / "verdict", args.format, pair=path)
        for side in ("base", "candidate"):
            _show_run(load_run_dir(path / side, allow_incomplete=args.allow_incomplete), args)
            print()
        return _show_verdict(path / "verdict", "table", pair=path)
    return _show_run(load_run_dir(path, allow_incomplete=args.allow_incomplete), args)


def _write_document(text: str, fmt: str) -> None:
    if fmt in ("csv", "md") and sys.stdout.isatty():  # names from the file must not drive the terminal
        text = "\n".join(neutralize(line) for line in text.splitlines()) + "\n"
    sys.stdout.write(text)


def _show_run(run: Any, args: argparse.Namespace) -> int:
    from tritongate.backends import is_capture_only_run
    from tritongate.report.table import render_rows

    if args.format != "table":  # data for other tools: nothing but the document on stdout
        from tritongate.report.export import render_run
        from tritongate.schema import RunStatus

        if run.status is not RunStatus.COMPLETE:  # --allow-incomplete: the document says so too
            print(neutralize(f"warning: {run.path} is incomplete ({run.status.value}, {len(run.rows)} rows so far); "
                             "the document holds only the rows written before it stopped"), file=sys.stderr)
        _write_document(render_run(run, args.format), args.format)
        return ExitCode.OK
    print(neutralize(f"{run.path}  status={run.status.value}  mode={run.mode}  rows={len(run.rows)}"))
    print(render_rows(run.rows, color=want_color(args.color, sys.stdout),
                      capture_only=is_capture_only_run(run.identity)), end="")
    return ExitCode.OK


def _show_verdict(folder: Path, fmt: str, *, pair: Path | None = None) -> int:
    """A verdict folder: a table of its rows, or verdict.json as csv / json, or verdict.md."""
    from tritongate.gate.verdict_file import load_verdict

    if pair is not None and not (folder / "verdict.json").is_file():
        raise UsageError(f"{pair} is a pair directory without a verdict (its run stopped before the gate); "
                         f"show its runs: {pair / 'base'} and {pair / 'candidate'}")
    verdict = load_verdict(folder)
    from tritongate.github.trusted import as_its_rows_say

    _, problem = as_its_rows_say(verdict.doc)
    if problem:  # printed as it stands (it is what the file says), flagged, and not a success
        print(neutralize(f"warning: {verdict.path} contradicts itself: {problem}"), file=sys.stderr)
    if fmt == "csv":
        from tritongate.report.export import verdict_csv

        _write_document(verdict_csv(verdict.doc.model_dump()), fmt)  # text cells never a spreadsheet formula
    elif fmt == "json":  # ASCII: a hostile name's controls stay \u escapes
        sys.stdout.write(json.dumps(verdict.doc.model_dump(mode="json"), indent=1, allow_nan=False) + "\n")
    elif fmt == "md":  # from the validated verdict.json, never the stored verdict.md (nothing checks it)
        from tritongate.github.trusted import render_comment_body
        from tritongate.report.verdict_markdown import COMMENT_LIMIT

        _write_document(render_comment_body(verdict.doc, limit=COMMENT_LIMIT), fmt)  # as the gate writes it
    else:
        from tritongate.report.verdict_terminal import headline_text, verdict_table

        # worded now, as the renderers word it: a file's stored headline may predate a wording
        headline = "⚠️ contradicts itself (see stderr)" if problem else headline_text(verdict.doc)
        print(neutralize(f"{folder}  {headline}"))
        print(verdict_table(verdict.rows), end="")
    return ExitCode.USAGE if problem else ExitCode.OK


def cmd_ops(args: argparse.Namespace) -> int:
    from tritongate.backends import prepare_environment, resolve_backend
    from tritongate.suites import builtin_suites, load_suite, ops_dir

    prepare_environment(resolve_backend("auto"))
    from tritongate.ops.builtin import REGISTRY

    def line(*columns: str) -> None:
        print("{:<18} {:<34} {:<26} {}".format(*(neutralize(v) for v in columns)))

    if not args.suite:
        for name in REGISTRY.names():
            spec = REGISTRY.get(name)
            line(name, spec.shape_doc, ", ".join(spec.dtypes), spec.description)
    else:  # exactly what the suite runs: its ops, the dtypes and shape count it runs them with
        from tritongate.ops.user import registry_for
        from tritongate.preflight import check_suite_ops

        suite = load_suite(args.suite)
        registry = registry_for(suite.modules, search_dir=suite.path.parent)
        check_suite_ops(suite, registry)  # as a run would refuse it: never a KeyError further down
        rows = sum(len(suite.shapes.get(op.name, ())) * len(op.dtypes) for op in suite.ops)
        print(f"suite {suite.name} ({suite.path}): {counted(len(suite.ops), 'op')}, {counted(rows, 'row')}"
              + (f"; {len(suite.dismissed)} inventory ops dismissed ({suite.dismiss})" if suite.dismissed else ""))
        for op in suite.ops:
            spec = registry.get(op.name)
            where = "" if op.name in REGISTRY.names() else f"  (from {getattr(spec.build, '__module__', '?')})"
            count = len(suite.shapes.get(op.name, ()))
            sample = f"  (samples of at least {op.sample_s * 1e3:g} ms)" if op.sample_s is not None else ""
            line(op.name, f"{counted(count, 'shape')}: {spec.shape_doc}", ", ".join(op.dtypes),
                 spec.description + where + sample)
    print(f"\nsuites in {ops_dir() / 'suites'}: {', '.join(builtin_suites())}")
    print(f"your own ops: a suite's `modules:` key (example: {ops_dir() / 'examples' / 'user_ops.yaml'}; "
          "see ops/README.md)")
    return ExitCode.OK


def add_ir_parser(sub: argparse._SubParsersAction) -> None:
    ir = add_command(
        sub, "ir", cmd_ir, help="recompile a run's launched kernel variants ahead of time (no GPU needed)",
        description="Read RUN/ttgir/index.tsv and compile every launched variant (same signature, constexprs, "
                    "specialization and options) for --target under this interpreter's Triton, as a GPU run "
                    "compiles (TRITON_DISABLE_LINE_INFO=1 unless set; the run's code-generation settings, recorded "
                    "in DIR/ttgir/aot.json). DIR/ttgir/ has a run's layout plus each variant's .llir, .ptx and "
                    ".sass: `tritongate ir-diff` compares it with the run, or with another compiler's.",
        epilog=exit_codes(0, 2, 4, 130, zero="done (variants that failed to compile are listed; "
                                                "none recompiled of some is exit 2)"))
    ir.add_argument("--from", dest="from_run", type=_text, required=True, metavar="RUN",
                    help="a run directory or baseline store entry with ttgir/index.tsv (a GPU or --backend cpu run)")
    ir.add_argument("--target", type=_text, default="cuda:90", metavar="BACKEND:ARCH",
                    help="cuda:90 (default: H100/H200), cuda:100, ...")
    ir.add_argument("--out", type=_text, required=True, metavar="DIR",
                    help="where DIR/ttgir/ goes (the recompiled variants, laid out as in a run; each variant's "
                         "LLVM IR, PTX and SASS beside its .ttgir, so ir-diff can say where code first differs)")
    ir.add_argument("--no-sass", action="store_true",
                    help="keep no .sass (each cubin disassembled by the wheel's cuobjdump, beside the compiles: "
                         "2.6 s of 7 s for 34 variants on 2 cores); ir-diff then cannot tell SASS from the binary")


def add_ir_diff_parser(sub: argparse._SubParsersAction) -> None:
    ird = add_command(
        sub, "ir-diff", cmd_ir_diff,
        help="normalized TTGIR diffs between two runs' (or AOT folders') launched variants",
        description="Pair the launched variants of BASE and CAND by (case, kernel, variant name), compare their TTGIR "
                    "with locations and source paths stripped and SSA names renumbered, and write "
                    "DIR/<case>/<kernel>/<variant>.diff, DIR/index.tsv (changed / identical / only on one side) and "
                    "DIR/summary.md. Two `tritongate ir` folders also keep LLVM IR, PTX and SASS: each variant's "
                    "first differing level (TTGIR, LLVM IR, PTX, SASS or binary only) goes to DIR/levels.tsv, and "
                    "where TTGIR is equal the lower levels' diffs to DIR/<case>/<kernel>/<variant>.<level>.diff.",
        epilog=exit_codes(0, 2, 4, zero="compared (changed kernels are a finding, not a failure)"))
    ird.add_argument("base", type=_text, metavar="BASE", help="a run directory, an `ir` output, or a ttgir/ folder")
    ird.add_argument("cand", type=_text, metavar="CAND", help="as BASE, for the candidate build")
    ird.add_argument("--out", type=_text, required=True, metavar="DIR",
                     help="where the .diff files, index.tsv and summary.md go (replacing an earlier ir-diff's there)")
    ird.add_argument("--blame", type=int, nargs="?", const=DEFAULT_BLAME, default=0, metavar="N",
                     help=f"for up to N (default {DEFAULT_BLAME}) changed variants, compile each under both builds with every "
                          "compiler pass dumped and name the first pass whose output differs (DIR/blame.json; "
                          "two `tritongate ir` folders: their aot.json names each build's interpreter; seconds "
                          "to a minute a kernel)")


def _progress_line(i: int, n: int, v: Any) -> str:
    """``[3/8] 64x64x64 matmul_kernel w4s3 (matmul/float16)``: the variant by its file name where
    it has one, and the rows that launched it (two ops may share a kernel and a case)."""
    name = v.name or Path(v.file).stem
    parts = [f"[{i + 1}/{n}]", v.case, v.kernel.rsplit(".", 1)[-1], *([name] if name else []),
             *([f"({', '.join(v.rows)})"] if v.rows else [])]
    return neutralize(" ".join(parts))


def cmd_ir(args: argparse.Namespace) -> int:
    from tritongate.ir.aot import Target, add_module_paths, recompile
    from tritongate.ir.index import INDEX, read_index
    from tritongate.ir.provenance import write_aot
    from tritongate.ir.store import TTGIR_DIR
    from tritongate.schema import RunStatus

    target = Target.parse(args.target)
    # a crashed run's IR is evidence too
    run = load_run_dir(Path(args.from_run), what="--from: a run directory", allow_incomplete=True)
    index = Path(args.from_run) / TTGIR_DIR / INDEX
    if not index.is_file() and run.mode == "replay":
        original = run.identity.get("replay_from") or "the record it replayed"
        raise UsageError(f"{args.from_run} is a replay run and keeps no {TTGIR_DIR}/{INDEX} of its own (it launched "
                         f"the record's configs); give the record it replayed instead ({original})")
    if not index.is_file():
        raise UsageError(f"{args.from_run} has no {TTGIR_DIR}/{INDEX}: its IR was not captured "
                         "(runs of tritongate before IR capture have none); record it again (a GPU run, or --backend cpu, "
                         "which indexes each launch's GPU specialization)")
    try:
        variants = read_index(index)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    add_module_paths(run.identity)
    if run.status is not RunStatus.COMPLETE:
        print(f"note: {args.from_run} is incomplete ({run.status.value}, {counted(len(run.rows), 'row')}): its IR covers only "
              "the rows it reached, and aot.json says so", file=sys.stderr)
    total = sum(1 for v in variants if not v.sweep_loser)
    outcome = recompile(variants, target, Path(args.out), codegen_env=run.identity.get("codegen_env") or {},
                        progress=lambda i, n, v: print(_progress_line(i, n, v), file=sys.stderr, flush=True),
                        sass=not args.no_sass)
    write_aot(Path(args.out) / TTGIR_DIR, Path(args.from_run), target=str(target), compiled=outcome.compiled,
              failed=outcome.failed, codegen_env=outcome.codegen_env, levels=outcome.levels,
              record_status=run.status.value)
    for failure in outcome.failed:
        print(f"not compiled: {neutralize(failure)}", file=sys.stderr)
    print(f"{outcome.compiled} of {total} launched variants recompiled for {target}; "
          f"{len(outcome.failed)} failed")
    if outcome.compiled:
        print("kept: " + ", ".join(f"{n} .{level}" for level, n in outcome.levels.items())
              + (f" (settings: {' '.join(f'{k}={v}' for k, v in sorted(outcome.codegen_env.items()))})"
                 if outcome.codegen_env else ""))
    print(Path(args.out) / TTGIR_DIR)
    if total and not outcome.compiled:  # nothing was made: never a success
        first = neutralize(outcome.failed[0]) if outcome.failed else "no variant was attempted"
        raise UsageError(f"none of the {total} launched variants of {args.from_run} recompiled for {target} "
                         f"(first failure: {first}); check that this interpreter's Triton can compile them")
    return ExitCode.OK


def _blame(diffs: list[Any], base_root: Path, cand_root: Path, out: Path, limit: int) -> None:
    """The first differing pass of each changed variant (at most ``limit``), into out/blame.json."""
    from tritongate.atomicio import write_json_atomic
    from tritongate.ir.diff import BLAME_DIR, BLAME_JSON
    from tritongate.ir.index import INDEX, read_index
    from tritongate.ir.passblame import blame_variant
    from tritongate.ir.provenance import read_aot

    try:
        aots = read_aot(base_root), read_aot(cand_root)
    except (UsageError, ValueError) as exc:
        raise UsageError(f"--blame needs two `tritongate ir` folders (their aot.json names each build's "
                         f"interpreter): {exc}") from None
    if aots[0].get("target") != aots[1].get("target"):
        raise UsageError(f"--blame: the folders were compiled for {aots[0].get('target')} and "
                         f"{aots[1].get('target')}; recompile both for one target")
    try:
        variants = {(v.case, v.kernel, v.name): v for v in read_index(base_root / INDEX)}
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    changed = [d for d in diffs if d.status in ("changed", "binary_changed")]
    for side, aot in zip(("base", "cand"), aots) if changed and limit > 0 else ():
        python = str(aot.get("python") or "")
        if not (python and (Path(python).is_file() or shutil.which(python))):
            raise UsageError(f"--blame: the {side} folder's interpreter {python or '(none)'} (named by its "
                             f"ttgir/aot.json) is not on this machine; run ir-diff --blame where that build is "
                             f"installed, or compile the {side} folder again with `tritongate ir` under a build "
                             f"you have")
    found: list[dict[str, Any]] = []
    blamed = changed[:limit]
    for i, d in enumerate(blamed):
        v = variants.get((d.case, d.kernel, d.name))
        if v is None:
            continue
        print(blaming_line(i, len(blamed), d.case, d.kernel, d.name), file=sys.stderr, flush=True)
        # each side compiled again with the settings its folder was compiled with (a knob it screened)
        blame = blame_variant(str(aots[0]["python"]), str(aots[1]["python"]), v, str(aots[0]["target"]),
                              out / BLAME_DIR / f"{i:03d}", base_env=aots[0].get("codegen_env") or {},
                              cand_env=aots[1].get("codegen_env") or {})
        found.append({"case": d.case, "kernel": d.kernel, "variant": d.name, **blame.to_dict()})
        print(f"  blame    {neutralize(d.case)}  {neutralize(d.kernel)}  {neutralize(d.name)}: "
              f"{neutralize(blame.summary())}", flush=True)
    if len(changed) > limit:
        print(f"  ({len(changed) - limit} more changed variants not blamed: --blame N for more)")
    write_json_atomic(out / BLAME_JSON, {"schema_version": 1, "target": aots[0]["target"], "variants": found})


def _print_levels(diffs: list[Any]) -> None:
    """Where the compared variants first differ, and each variant whose TTGIR is equal but whose code is not."""
    from tritongate.ir.levels import label

    compared = [d for d in diffs if d.levels]
    if not compared:
        return
    from tritongate.ir.levels import LEVELS

    rank = {level: i for i, level in enumerate(LEVELS)}
    ordered = sorted((d for d in compared if d.first_level),
                     key=lambda d: (rank.get(d.first_level, len(rank)), d.status == "identical"))
    firsts = Counter(label(d.first_level, d.status == "identical") for d in ordered)
    print("first differs at: " + ("; ".join(f"{n} {what}" for what, n in firsts.items()) or "nowhere")
          + f" ({counted(len(compared) - sum(firsts.values()), 'variant')} the same at every level)")
    below = sorted((d for d in compared if d.first_level and d.first_level != "ttgir"),
                   key=lambda d: (d.status == "identical", d.case, d.kernel, d.name))
    for d in below[:40]:
        sizes = " ".join(f"{level} +{a} -{r}" for level, _, a, r in d.level_diffs)
        print(f"  {label(d.first_level, d.status == 'identical')}:  {neutralize(d.case)}  {neutralize(d.kernel)}  "
              f"{neutralize(d.name)}" + (f"  {sizes}" if sizes else ""))
    if len(below) > 40:
        print(f"  ({len(below) - 40} more in levels.tsv)")


def _no_variants(base_root: Path, cand_root: Path, args: argparse.Namespace) -> str:
    """Why a diff holds nothing: no launches at all, or launches indexed without their IR
    (a cpu run indexes each launch's GPU specialization without compiling it)."""
    from tritongate.ir.index import INDEX, read_index

    indexed = {root: sum(1 for v in read_index(root / INDEX) if not v.file) for root in (base_root, cand_root)}
    if not any(indexed.values()):
        return "no launched variants on either side"
    return (f"no TTGIR on either side: the indexes list {indexed[base_root]} and {indexed[cand_root]} launched "
            "variants without their IR (a cpu run indexes launches, it compiles none); run `tritongate ir --from "
            f"{args.base} --out DIR` (and the same for {args.cand}, under the other build) and diff those folders")


def cmd_ir_diff(args: argparse.Namespace) -> int:
    from tritongate.ir.diff import diff_trees, ttgir_root
    from tritongate.ir.diff_dir import drop_blame, write_diff_dir
    from tritongate.ir.provenance import AOT_FILE, diff_provenance, write_diff_provenance

    for what, path in (("BASE", args.base), ("CAND", args.cand)):
        if not Path(path).is_dir():
            raise UsageError(f"{what} {path}: no such folder; pass a `tritongate ir` output folder or a run directory")
    base_root, cand_root = ttgir_root(Path(args.base)), ttgir_root(Path(args.cand))
    # two `tritongate ir` folders: the diff carries where they came from (pair --changed-from
    # refuses a diff without it); two run directories' captures have none
    with_aot = [(root / AOT_FILE).exists() for root in (base_root, cand_root)]
    if with_aot[0] != with_aot[1]:
        plain = args.cand if with_aot[0] else args.base
        raise UsageError(f"{plain} is a run's own capture and the other side is `tritongate ir` output; compare "
                         f"like with like: run `tritongate ir --from {plain} --out DIR` and diff DIR, or diff two "
                         "run directories")
    provenance = diff_provenance(base_root, cand_root) if any(with_aot) else None
    try:
        diffs = diff_trees(Path(args.base), Path(args.cand))
    except FileNotFoundError as exc:
        raise UsageError(f"{exc}; pass two run directories (or ttgir/ folders) with captured IR") from exc
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    out = write_diff_dir(diffs, Path(args.out))
    drop_blame(out)  # an earlier diff's blame there is not this one's
    if provenance is not None:
        write_diff_provenance(out, provenance)
    counts = Counter(d.status for d in diffs)
    if not diffs:
        print(_no_variants(base_root, cand_root, args))
    else:
        print(", ".join(f"{counts[s]} {s}" for s in sorted(counts)))
    for side, doc in ((s, (provenance or {}).get(s) or {}) for s in ("base", "cand")):
        if doc.get("record_status") not in (None, "complete"):
            print(f"note: the {side} side was compiled from an incomplete run ({doc['record_status']}): rows it "
                  "did not reach are in neither tree", file=sys.stderr)
    _print_levels(diffs)
    if args.blame:
        _blame(diffs, base_root, cand_root, out, args.blame)
    for d in sorted((d for d in diffs if d.status == "changed"), key=lambda d: -(d.added + d.removed))[:20]:
        print(f"  changed  {neutralize(d.case)}  {neutralize(d.kernel)}  {neutralize(d.name)}  "
              f"+{d.added} -{d.removed}")
    print(out)
    return ExitCode.OK
