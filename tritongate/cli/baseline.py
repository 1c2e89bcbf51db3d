"""``tritongate baseline publish|find|list`` and ``history``: the baseline store, its entries and their
nightly series; ``main`` runs ``baseline`` without the rest of the CLI (``ci/find_baseline.py``)."""

from __future__ import annotations

import argparse
import re
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Callable, Sequence

from tritongate.argtypes import fraction, nonempty_text as _text, number_in, whole_number
from tritongate.atomicio import write_json_atomic
from tritongate.cli.common import add_command, main_alone
from tritongate.errors import ExitCode, GateError, UsageError
from tritongate.github import outputs
from tritongate.report.untrusted import neutralize
from tritongate.report.units import counted

MAX_VALUE = 2000  # characters of one output value: a reason quoting odd inputs stays bounded

FOOTER = {
    "publish": "exit codes:\n  0    published (the last line is `baseline: <entry path>`)\n"
               "  2    refused or usage error (one line on stderr names the path and the fix)\n  4    internal error\n",
    "find": "exit codes:\n  0    the lookup ran; state= says what it found (ok, stale, mismatched, missing; no\n"
            "       baseline for this compiler repository is missing)\n"
            "  2    usage error (bad arguments, an output file that cannot be written)\n  4    internal error\n",
    "list": "exit codes:\n  0    listed\n  2    usage error\n  4    internal error\n",
    "history": ("exit codes:\n"
                "  0    written (change points are findings, not a failure); the last line is history.md\n"
                "  2    usage or input error (unknown store, no entries for the runner class and suite)\n"
                "  4    internal error\n"),
    "dashboard": ("exit codes:\n  0    written; the last line is OUT/index.html\n"
                  "  2    usage or input error (unknown store, no entries, an --out that is neither new nor an "
                  "earlier site)\n  4    internal error\n"),
}


def single_line(value: object) -> str:
    """A value for a ``key=value`` line (stdout, ``$GITHUB_OUTPUT``): no newline or other
    control character can start a new key, bounded length."""
    text = "" if value is None else str(value)
    text = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"


_days = number_in(0, what="a number of days")
_p_value = number_in(0, 1, open_low=True, open_high=True)


def _store(args: argparse.Namespace) -> Path:
    """The store folder. One that is missing is an empty store (find: state=missing); a path that
    names something else is refused, not read as an empty store: a file, a link to nothing or a loop."""
    from tritongate.baselines.store import default_store

    store = Path(args.store) if args.store else default_store()
    what = "--store" if args.store else "the default store"
    if store.is_symlink() and not store.exists():
        raise UsageError(f"{what} {store}: a symbolic link to nothing (or a link loop); pass the baseline store "
                         "folder")
    if store.exists() and not store.is_dir():
        raise UsageError(f"{what} {store} is not a directory; pass the baseline store folder (on GitHub a checkout "
                         "of the data branch)")
    return store


def cmd_publish(args: argparse.Namespace) -> int:
    from tritongate.baselines.publishing import publish

    entry = publish(_store(args), Path(args.run), runner_class=args.runner_class,
                    compiler_repo=args.compiler_repo, compiler_commit=args.compiler_commit)
    m = entry.manifest
    print(f"published {m.suite_name} for {m.runner_class} on {m.gpu_slug}: {counted(m.rows, 'row')}, "
          f"recorded {m.recorded_utc}")
    print(f"baseline: {entry.path}")
    return ExitCode.OK


def _expected_suite(args: argparse.Namespace) -> tuple[str, str | None]:
    """The suite's name and the digest to match (``auto``: as this checkout reads the suite)."""
    from tritongate.baselines.manifest import BaselineError, suite_folder
    from tritongate.suites import load_suite

    choice = args.suite_digest
    if choice == "auto":
        try:
            suite = load_suite(args.suite)
        except GateError as exc:
            raise BaselineError(f"--suite-digest auto: {exc}; or pass --suite-digest HEX|none") from None
        return suite.name, suite.digest
    if choice != "none" and not re.fullmatch(r"[0-9a-f]{1,64}", choice):  # else no entry ever matches, silently
        raise BaselineError(f"--suite-digest {choice[:80]!r}: expected auto, none or the suite's digest in lower-case "
                            "hex (a run records it: run_identity.json suite.digest)")
    return suite_folder(args.suite), None if choice == "none" else choice


def cmd_find(args: argparse.Namespace) -> int:
    from tritongate.baselines.lookup import find

    store = _store(args)
    suite, digest = _expected_suite(args)
    lookup = find(store, args.runner_class, suite, args.gpu, max_age_days=args.max_age_days,
                  suite_digest=digest, backend=args.backend, store_text=args.store or str(store),
                  compiler_repo=args.compiler_repo)
    record = str(lookup.record.resolve()) if lookup.record else ""
    age = f"{lookup.age_days:.3f}" if lookup.age_days is not None else ""
    pairs = (("state", lookup.state.value), ("record", record), ("reason", lookup.reason),
             ("refresh", lookup.refresh), ("age_days", age))
    lines = [(k, single_line(v)) for k, v in pairs]
    if args.github_output:  # appended, like every step's $GITHUB_OUTPUT
        outputs.append(args.github_output, lines)
    if args.state_out:
        out = Path(args.state_out)
        out.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(out, {**lookup.to_dict(), "store": str(store),
                                "checked_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")})
    print(outputs.render(lines), end="")
    for note in lookup.notes:
        print(f"note: {single_line(note)}", file=sys.stderr)
    return ExitCode.OK


def cmd_list(args: argparse.Namespace) -> int:
    from tritongate.baselines.store import list_entries

    entries, notes = list_entries(_store(args), runner_class=args.runner_class, suite=args.suite, gpu=args.gpu,
                                  compiler_repo=args.compiler_repo)
    if args.json:
        print(json.dumps([e.to_dict() for e in entries], indent=1))
    else:
        for e in entries:
            m = e.manifest
            built = m.compiler_commit or m.compiler_ref or m.triton_version
            repo = e.repo()
            print(single_line(f"{m.recorded_utc}  {m.runner_class}/{m.suite_name}/{m.gpu_slug}  {counted(m.rows, 'row')}  "
                              f"{repo.display if repo else '-'}  {built}  {e.path}"))
        if not entries:  # a path that is not there is named: a typo reads as an empty store otherwise
            where = _store(args)
            print(f"no baselines in {where}" + ("" if Path(where).exists() else " (no such folder: nothing published "
                                                "there yet, or a wrong --store / TRITONGATE_BASELINE_STORE)"),
                  file=sys.stderr)
    for note in notes:
        print(f"note: {single_line(note)}", file=sys.stderr)
    return ExitCode.OK


def _parser(sub: argparse._SubParsersAction, name: str, help: str, description: str,
            func: Callable[[argparse.Namespace], int]) -> argparse.ArgumentParser:
    return add_command(sub, name, func, help=help, description=description, epilog=FOOTER[name],
                       formatter_class=argparse.RawDescriptionHelpFormatter)


STORE_HELP = ("the store folder (default: $TRITONGATE_BASELINE_STORE, else the repo's baselines/; "
              "on GitHub a checkout of the data branch)")


def add_baseline_parser(sub: argparse._SubParsersAction) -> None:
    top = sub.add_parser(
        "baseline", help="the baseline store: publish a record run, find the one a PR should replay, list",
        description="Nightly jobs publish their record runs into the store; PR jobs find the newest good "
                    "one for their runner class, suite and GPU and replay it. See baselines/README.md.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = top.add_subparsers(dest="baseline_command", metavar="ACTION", required=True)

    pub = _parser(actions, "publish", "copy a finished record run into the store as a new entry",
                  "Copy RUN_DIR (a finished record run: results.json, run_identity.json, shapes.yaml, "
                  "autotune_records/) into STORE/<runner class>/<suite>/<gpu>/<recorded UTC>-<commit>/ with "
                  "manifest.json and summary.tsv. Refuses replay runs, incomplete or invalid runs.", cmd_publish)
    pub.add_argument("run", type=_text, metavar="RUN_DIR", help="a record run directory (tritongate run)")
    pub.add_argument("--runner-class", type=_text, required=True, metavar="RC",
                     help="the class of runner it was measured on (lower case, e.g. h200)")
    pub.add_argument("--store", type=_text, metavar="DIR", help=STORE_HELP)
    pub.add_argument("--compiler-repo", type=_text, metavar="REPO",
                     help="the compiler repository it was built from, OWNER/NAME or a clone URL (default: the one "
                          "the run identity's compiler_ref names); `find --compiler-repo` matches on it")
    pub.add_argument("--compiler-commit", type=_text, metavar="SHA",
                     help="the compiler commit (default: the run identity's commit)")

    fnd = _parser(actions, "find", "find the baseline a PR job should replay",
                  "Print state=, record=, reason=, refresh= and age_days= lines. state is ok (newest good "
                  "matching entry, no older than --max-age-days), stale (the same, older: still named in "
                  "record=), mismatched (entries for this repository, runner class and suite exist but none "
                  "matches the GPU, suite digest or backend expected) or missing (none readable, or only "
                  "entries of other compiler repositories: \"no baseline for REPO on runner class RC\"). "
                  "Damaged entries are skipped with a note on stderr.", cmd_find)
    fnd.add_argument("--suite", type=_text, required=True, metavar="NAME|PATH",
                     help="the suite the job replays: a builtin suite name or a suite YAML")
    fnd.add_argument("--runner-class", type=_text, required=True, metavar="RC",
                     help="the class of runner the job runs on, as published (e.g. h200)")
    fnd.add_argument("--gpu", type=_text, required=True, metavar="NAME",
                     help="the GPU model, as nvidia-smi or torch names it (\"NVIDIA H200\"); cpu (or host) on the cpu backend")
    fnd.add_argument("--store", type=_text, metavar="DIR", help=STORE_HELP)
    fnd.add_argument("--max-age-days", type=_days, default=7.0, metavar="N", help="older is stale (default 7)")
    fnd.add_argument("--backend", type=_text, metavar="NAME", help="also require this backend (cuda, cpu, ...)")
    fnd.add_argument("--compiler-repo", type=_text, metavar="REPO",
                     help="only entries built from this compiler repository (OWNER/NAME or a clone URL; case, "
                          "https/ssh and .git do not matter); without it, any repository's (ci/find_baseline.py "
                          "always passes one)")
    fnd.add_argument("--suite-digest", type=_text, default="auto", metavar="auto|none|HEX",
                     help="auto (default): the digest of the suite as this checkout reads it; none: do not "
                          "compare; or the digest itself")
    fnd.add_argument("--github-output", type=_text, metavar="FILE", help="also append the lines here ($GITHUB_OUTPUT)")
    fnd.add_argument("--state-out", type=_text, metavar="FILE", help="write the lookup as JSON (for the verdict)")

    lst = _parser(actions, "list", "list the store's entries, newest first", "List valid entries, newest first; "
                  "damaged ones are named on stderr.", cmd_list)
    lst.add_argument("--store", type=_text, metavar="DIR", help=STORE_HELP)
    lst.add_argument("--runner-class", type=_text, metavar="RC", help="only entries of this runner class")
    lst.add_argument("--suite", type=_text, metavar="NAME", help="only entries of this suite")
    lst.add_argument("--gpu", type=_text, metavar="NAME", help="only entries measured on this GPU model (named as for find)")
    lst.add_argument("--compiler-repo", type=_text, metavar="REPO", help="only entries built from this compiler repository ('none': those that record none)")
    lst.add_argument("--json", action="store_true", help="the manifests as JSON")


def main(argv: Sequence[str] | None = None) -> int:
    """``tritongate baseline ARGV`` without the rest of the CLI (for ``ci/``)."""
    return main_alone(add_baseline_parser, ["baseline", *(sys.argv[1:] if argv is None else argv)], single_line,
                      hint="fix the path and run again")


def run_history(args: argparse.Namespace) -> int:
    """Read the store, analyse, write history.json, history.md, the plots (and the summary)."""
    from tritongate.baselines.manifest import suite_folder
    from tritongate.history.changepoints import Detection
    from tritongate.history.report import build_report, new_change_points_markdown, write_report
    from tritongate.history.series import load_history

    rule = Detection(min_effect=args.min_effect, p_value=args.p_value)
    history = load_history(Path(args.store), args.runner_class, suite_folder(args.suite), args.gpu,
                           compiler_repo=args.compiler_repo)
    report = build_report(history, rule, new_last=args.new_last)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from tritongate.history.plot import plot_history, remove_stale_plots

    written = {} if args.no_plots else plot_history(report, out / "plots")
    plots = {op: path.relative_to(out).as_posix() for op, path in written.items()}
    _, md_path = write_report(report, out, plots)
    remove_stale_plots(out / "plots", written.values())
    if args.summary_out:  # appended, as to $GITHUB_STEP_SUMMARY: what the step wrote before stays
        summary = Path(args.summary_out)
        if summary.is_dir():
            raise UsageError(f"--summary-out {summary} is a directory; pass a file (e.g. $GITHUB_STEP_SUMMARY)")
        summary.parent.mkdir(parents=True, exist_ok=True)
        with open(summary, "a", encoding="utf-8") as f:
            f.write(new_change_points_markdown(report))
    for note in report.notes:
        print(f"note: {neutralize(note)}", file=sys.stderr)
    print(neutralize(report.headline()))
    print(md_path)
    return ExitCode.OK


def _add_change_point_options(p: argparse.ArgumentParser) -> None:
    """history's and dashboard's change-point rule, declared once: one option, one meaning."""
    # not --min-effect: that is the gate's least change of one paired row; this one compares
    # unpaired nightly medians, a noisier quantity, so it has its own name and default
    p.add_argument("--min-change", dest="min_effect", type=fraction, default=0.02, metavar="F",
                   help="least relative change of the segment medians a change point needs, as a fraction: 0.01 "
                        "is 1 %% (default 0.02)")
    p.add_argument("--p-value", type=_p_value, default=0.01, metavar="P",
                   help="Mann-Whitney U significance a change point needs (default 0.01)")
    p.add_argument("--new-last", type=whole_number, default=1, metavar="N",
                   help="a change point is new when its first point after is among the last N entries (default 1)")


def add_history_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = _parser(
        sub, "history", "nightly history of the baseline store: per-row series, change points, plots",
        "Read every entry the nightlies published for one runner class and suite (damaged ones "
        "are skipped with a note), follow each row's median over the nights, and find change "
        "points: PELT on log medians scaled by their noise, each confirmed by a minimum effect "
        "and a Mann-Whitney U test between the neighbouring segments. Writes OUT/history.json, "
        "OUT/history.md and OUT/plots/<op>.png (a PNG there of no op in this history is removed).", run_history)
    p.add_argument("--store", type=_text, required=True, metavar="DIR",
                   help="the baseline store folder (on GitHub a checkout of the data branch)")
    p.add_argument("--runner-class", type=_text, required=True, metavar="RC", help="e.g. h200")
    p.add_argument("--suite", type=_text, required=True, metavar="NAME|PATH",
                   help="the suite: a builtin name (pr) or its YAML file (named by its stem)")
    p.add_argument("--gpu", type=_text, metavar="NAME|SLUG",
                   help="only entries recorded on this GPU (needed when the runner class spans several)")
    p.add_argument("--compiler-repo", type=_text, metavar="OWNER/NAME|URL",
                   help="only entries of this compiler repository's builds (needed when the store holds several; "
                        "'none': the entries that record no repository)")
    p.add_argument("--out", type=_text, required=True, metavar="DIR", help="where the reports and plots go")
    _add_change_point_options(p)
    p.add_argument("--no-plots", action="store_true", help="write no PNGs (and remove those an earlier run left in OUT/plots)")
    p.add_argument("--summary-out", type=_text, metavar="FILE",
                   help="also write the new-change-points section alone here (e.g. $GITHUB_STEP_SUMMARY)")
    return p


def run_dashboard(args: argparse.Namespace) -> int:
    """Build the static site of the store's nightly history; OUT/index.html is the last line."""
    from tritongate.baselines.manifest import suite_folder
    from tritongate.dashboard.site import build_site
    from tritongate.history.changepoints import Detection

    if Path(args.out).is_symlink():  # refused by the site too, but after resolving it (a loop: a crash)
        raise UsageError(f"--out {args.out} is a symbolic link; pass a new folder or an earlier site")
    summary = build_site(Path(args.store), Path(args.out), window_nights=args.window_nights,
                         runner_class=args.runner_class, suite=suite_folder(args.suite) if args.suite else None,
                         gpu=args.gpu, compiler_repo=args.compiler_repo,
                         rule=Detection(min_effect=args.min_effect, p_value=args.p_value), new_last=args.new_last,
                         store_url=args.store_url)
    for note in summary.notes:
        print(f"note: {neutralize(note)}", file=sys.stderr)
    print(neutralize(summary.headline()))
    print(Path(args.out) / "index.html")
    return ExitCode.OK


def add_dashboard_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = _parser(
        sub, "dashboard", "the nightly history as a static site: every row's series, change points, drift",
        "Read the store as `history` does (every runner class, suite, GPU and compiler repository it holds, "
        "or the ones named) and write OUT/index.html (every row: latest value, drift over the window, change "
        "points newest first, filterable) and a page per op with one zoomable chart per row (hover: night, "
        "commit, median, IQR; change points, gaps and missing nightlies marked). Plain files: no server, "
        "usable offline from file://; an earlier site in OUT is replaced whole.", run_dashboard)
    p.add_argument("--store", type=_text, required=True, metavar="DIR",
                   help="the baseline store folder (on GitHub a checkout of the data branch)")
    p.add_argument("--out", type=_text, required=True, metavar="DIR",
                   help="a new folder, or an earlier site to replace")
    p.add_argument("--runner-class", type=_text, metavar="RC", help="only this runner class")
    p.add_argument("--suite", type=_text, metavar="NAME|PATH", help="only this suite")
    p.add_argument("--gpu", type=_text, metavar="NAME|SLUG", help="only entries recorded on this GPU")
    p.add_argument("--compiler-repo", type=_text, metavar="OWNER/NAME|URL",
                   help="only entries of this compiler repository's builds ('none': those that record none)")
    p.add_argument("--window-nights", type=float, default=90.0, metavar="D",
                   help="days before each group's last entry that drift covers and the charts open on (default 90)")
    _add_change_point_options(p)
    p.add_argument("--store-url", type=_text, metavar="URL",
                   help="where pages link the store's entries (default: a relative path to --store)")
    return p
