"""``tritongate baseline publish|find|list``: argparse → store calls → printed lines.

Wired into ``tritongate.cli`` with ``add_baseline_parser(sub)``; ``main`` runs the same
sub-commands standalone (``ci/find_baseline.py``). Handlers return exit codes; errors are
``GateError``s the caller maps (``main`` here maps them the way ``tritongate.cli.main`` does).

Exit codes: 0 done (for ``find``: the lookup ran, whatever it found; ``state=`` says what),
2 usage or input error (bad arguments, a refused publish, an unwritable output file),
4 internal error.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from tritongate.argtypes import nonempty_text, number_in
from tritongate.errors import ExitCode, GateError
from tritongate.github import outputs

if TYPE_CHECKING:
    from tritongate.baselines.lookup import Lookup

MAX_VALUE = 2000  # characters of one output value: a reason quoting odd inputs stays bounded

FOOTER = {
    "publish": "exit codes:\n  0    published (the last line is `baseline: <entry path>`)\n"
               "  2    refused or usage error (one line on stderr names the path and the fix)\n  4    internal error\n",
    "find": "exit codes:\n  0    the lookup ran; state= says what it found (ok, stale, mismatched, missing; no\n"
            "       baseline for this compiler repository is missing)\n"
            "  2    usage error (bad arguments, an output file that cannot be written)\n  4    internal error\n",
    "list": "exit codes:\n  0    listed\n  2    usage error\n  4    internal error\n",
}


def single_line(value: object) -> str:
    """A value for a ``key=value`` line (stdout, ``$GITHUB_OUTPUT``): no newline or other
    control character can start a new key, bounded length."""
    text = "" if value is None else str(value)
    text = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"


_text = nonempty_text  # an unset variable in a workflow must not silently change what runs
_days = number_in(0, what="a number of days")


def _store(args: argparse.Namespace) -> Path:
    from tritongate.baselines.store import default_store

    return Path(args.store) if args.store else default_store()


# -- publish -------------------------------------------------------------------------------

def cmd_publish(args: argparse.Namespace) -> int:
    from tritongate.baselines.publishing import publish

    entry = publish(_store(args), Path(args.run), runner_class=args.runner_class,
                    compiler_repo=args.compiler_repo, compiler_commit=args.compiler_commit)
    m = entry.manifest
    print(f"published {m.suite_name} for {m.runner_class} on {m.gpu_slug}: {m.rows} rows, "
          f"recorded {m.recorded_utc}")
    print(f"baseline: {entry.path}")
    return ExitCode.OK


# -- find ----------------------------------------------------------------------------------

def _expected_suite(args: argparse.Namespace) -> tuple[str, str | None]:
    """The suite's name and the digest to match (``auto``: as this checkout reads the suite)."""
    from tritongate.baselines.manifest import suite_folder

    choice = args.suite_digest
    if choice == "auto":
        from tritongate.baselines.manifest import BaselineError
        from tritongate.suites import load_suite

        try:
            suite = load_suite(args.suite)
        except GateError as exc:
            raise BaselineError(f"--suite-digest auto: {exc}; or pass --suite-digest HEX|none") from None
        return suite.name, suite.digest
    return suite_folder(args.suite), None if choice == "none" else choice


def output_lines(lookup: Lookup) -> list[tuple[str, str]]:
    """The ``key=value`` pairs of a lookup, each value one safe line."""
    record = str(lookup.record.resolve()) if lookup.record else ""
    age = f"{lookup.age_days:.3f}" if lookup.age_days is not None else ""
    pairs = [("state", lookup.state.value), ("record", record), ("reason", lookup.reason),
             ("refresh", lookup.refresh), ("age_days", age)]
    return [(k, single_line(v)) for k, v in pairs]


def cmd_find(args: argparse.Namespace) -> int:
    from tritongate.atomicio import write_json_atomic
    from tritongate.baselines.lookup import find

    store = _store(args)
    suite, digest = _expected_suite(args)
    lookup = find(store, args.runner_class, suite, args.gpu, max_age_days=args.max_age_days,
                  suite_digest=digest, backend=args.backend, store_text=args.store or str(store),
                  compiler_repo=args.compiler_repo)
    lines = output_lines(lookup)
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


# -- list ----------------------------------------------------------------------------------

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
            print(single_line(f"{m.recorded_utc}  {m.runner_class}/{m.suite_name}/{m.gpu_slug}  {m.rows} rows  "
                              f"{repo.display if repo else '-'}  {built}  {e.path}"))
        if not entries:
            print(f"no baselines in {_store(args)}", file=sys.stderr)
    for note in notes:
        print(f"note: {single_line(note)}", file=sys.stderr)
    return ExitCode.OK


# -- the parser ----------------------------------------------------------------------------

def _parser(sub: argparse._SubParsersAction, name: str, help: str, description: str) -> argparse.ArgumentParser:
    return sub.add_parser(name, help=help, description=description, epilog=FOOTER[name],
                          formatter_class=argparse.RawDescriptionHelpFormatter)


STORE_HELP = ("the store folder (default: $TRITONGATE_BASELINE_STORE, else the repo's baselines/; "
              "on GitHub a checkout of the data branch)")


def add_baseline_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``baseline publish|find|list`` on the CLI's sub-parsers."""
    top = sub.add_parser(
        "baseline", help="the baseline store: publish a record run, find the one a PR should replay, list",
        description="Nightly jobs publish their record runs into the store; PR jobs find the newest good "
                    "one for their runner class, suite and GPU and replay it. See baselines/README.md.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = top.add_subparsers(dest="baseline_command", metavar="ACTION")
    actions.required = True

    pub = _parser(actions, "publish", "copy a finished record run into the store as a new entry",
                  "Copy RUN_DIR (a finished record run: results.json, run_identity.json, shapes.yaml, "
                  "autotune_records/) into STORE/<runner class>/<suite>/<gpu>/<recorded UTC>-<commit>/ with "
                  "manifest.json and summary.tsv. Refuses replay runs, incomplete or invalid runs.")
    pub.add_argument("run", type=_text, metavar="RUN_DIR", help="a record run directory (tritongate run)")
    pub.add_argument("--runner-class", type=_text, required=True, metavar="RC",
                     help="the class of runner it was measured on (lower case, e.g. h200)")
    pub.add_argument("--store", type=_text, metavar="DIR", help=STORE_HELP)
    pub.add_argument("--compiler-repo", type=_text, metavar="REPO",
                     help="the compiler repository it was built from, OWNER/NAME or a clone URL (default: the one "
                          "the run identity's compiler_ref names); `find --compiler-repo` matches on it")
    pub.add_argument("--compiler-commit", type=_text, metavar="SHA",
                     help="the compiler commit (default: the run identity's commit)")
    pub.set_defaults(func=cmd_publish)

    fnd = _parser(actions, "find", "find the baseline a PR job should replay",
                  "Print state=, record=, reason=, refresh= and age_days= lines. state is ok (newest good "
                  "matching entry, no older than --max-age-days), stale (the same, older: still named in "
                  "record=), mismatched (entries for this repository, runner class and suite exist but none "
                  "matches the GPU, suite digest or backend expected) or missing (none readable, or only "
                  "entries of other compiler repositories: \"no baseline for REPO on runner class RC\"). "
                  "Damaged entries are skipped with a note on stderr.")
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
    fnd.set_defaults(func=cmd_find)

    lst = _parser(actions, "list", "list the store's entries, newest first", "List valid entries, newest first; "
                  "damaged ones are named on stderr.")
    lst.add_argument("--store", type=_text, metavar="DIR", help=STORE_HELP)
    lst.add_argument("--runner-class", type=_text, metavar="RC", help="only entries of this runner class")
    lst.add_argument("--suite", type=_text, metavar="NAME", help="only entries of this suite")
    lst.add_argument("--gpu", type=_text, metavar="NAME", help="only entries measured on this GPU model (named as for find)")
    lst.add_argument("--compiler-repo", type=_text, metavar="REPO", help="only entries built from this compiler repository")
    lst.add_argument("--json", action="store_true", help="the manifests as JSON")
    lst.set_defaults(func=cmd_list)


def main(argv: Sequence[str] | None = None) -> int:
    """``tritongate baseline ARGV`` without the rest of the CLI (for ``ci/``)."""
    parser = argparse.ArgumentParser(prog="tritongate")
    sub = parser.add_subparsers(dest="command")
    add_baseline_parser(sub)
    try:
        args = parser.parse_args(["baseline", *(sys.argv[1:] if argv is None else argv)])
    except SystemExit as exc:  # --help is 0, bad usage 2
        return int(exc.code or 0)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return int(func(args))
    except GateError as exc:
        print(f"error: {single_line(exc)}", file=sys.stderr)
        return int(exc.exit_code)
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {single_line(f'{where}{exc.strerror or exc}')}; fix the path and run again", file=sys.stderr)
        return int(ExitCode.USAGE)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)
    except Exception as exc:  # noqa: BLE001 - a bug: one line, never exit 1 (that means "gate failed")
        print(f"internal error (a bug in tritongate): {type(exc).__name__}: {single_line(exc)[:300]}",
              file=sys.stderr)
        return int(ExitCode.INTERNAL)
