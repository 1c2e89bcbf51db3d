#!/usr/bin/env python3
"""CI entry point: record a baseline (live autotune, configs saved) on main, and publish it.

    python ci/record_baseline.py --suite pr --out DIR [tritongate run options]
        [--publish STORE --runner-class RC [--compiler-repo R] [--compiler-commit SHA]]

Records with `tritongate run` (its output unchanged: the run directory is printed). With
--publish, then copies the record into the baseline store (see baselines/README.md) and
prints `baseline: <entry path>` as the last line. Exit codes: the run's, unchanged, when it
fails; else 0 published (or recorded), 2 usage error or publish refused, 4 internal error.
"""

import argparse
import io
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tritongate.cli import main
from tritongate.cli.common import refuse_repeats

PUBLISH_HELP = """
publishing (record_baseline.py only):
  --publish STORE          copy the finished record into this baseline store
  --runner-class RC        the store folder of this runner class (required with --publish), e.g. h200
  --compiler-repo R        the compiler repository it was built from (OWNER/NAME or a clone URL), kept in
                           the manifest: a PR job takes only its own repository's baselines
  --compiler-commit SHA    the compiler commit (default: the run identity's, from TRITONGATE_COMMIT/GITHUB_SHA)
"""


class _Tee(io.TextIOBase):
    """stdout as usual, keeping its tail: `tritongate run` prints the run directory last."""

    def __init__(self, stream: io.TextIOBase) -> None:
        self.stream, self.tail = stream, ""

    def write(self, text: str) -> int:
        self.stream.write(text)
        self.tail = (self.tail + text)[-65536:]
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()


def _split(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """Our publishing options out of argv; the rest goes to `tritongate run` as it is. Each may
    be given once, as every tritongate option (SystemExit 2 names one given twice)."""
    p = argparse.ArgumentParser(prog="record_baseline.py", add_help=False, allow_abbrev=False)
    for opt in ("--publish", "--runner-class", "--compiler-repo", "--compiler-commit"):
        p.add_argument(opt)
    refuse_repeats(p)
    return p.parse_known_args(argv)


def _usage(message: str) -> int:
    print(f"error: record_baseline.py: {message}", file=sys.stderr)
    return 2  # a usage error, like the CLI's


def _store_refused(store: Path) -> str | None:
    """Why the store cannot be published into (None: it can, or it is made), checked before the record:
    a file, a link to nowhere (or a loop), or a path under a file."""
    if store.is_symlink() and not store.exists():
        return "a symbolic link to nothing (or a link loop)"
    if store.exists():
        return None if store.is_dir() else "not a folder"
    for parent in store.parents:
        if parent.exists() or parent.is_symlink():
            return None if parent.is_dir() else f"{parent} is not a folder"
    return None


def run(argv: list[str]) -> int:
    if any(a == "--replay-from" or a.startswith("--replay-from=") for a in argv):
        return _usage("this records; use replay_candidate.py to replay a baseline (drop --replay-from)")
    if "-h" in argv or "--help" in argv:
        code = main(["run", "--help"], prog="record_baseline.py")
        print(PUBLISH_HELP)
        return code
    try:
        opts, rest = _split(argv)
    except SystemExit as exc:  # argparse said why on stderr
        return int(exc.code or 2)
    if opts.publish is None:
        if opts.runner_class or opts.compiler_repo or opts.compiler_commit:
            return _usage("--runner-class, --compiler-repo and --compiler-commit need --publish STORE")
        return main(["run", *rest])
    if not opts.publish.strip() or not (opts.runner_class or "").strip():
        return _usage("--publish needs a store folder and --runner-class RC (an unset variable?)")
    from tritongate.cli.baseline import main as baseline_main
    from tritongate.baselines.manifest import BaselineError, check_runner_class
    from tritongate.baselines.repo import parse_repo

    try:  # before the record, not after an hour of it
        check_runner_class(opts.runner_class)
        if opts.compiler_repo:
            parse_repo(opts.compiler_repo)
    except BaselineError as exc:
        return _usage(str(exc))
    subset = ("--ops", "--dtypes", "--only-rows")
    part = [f"{a} {rest[i + 1]}" if a in subset and i + 1 < len(rest) else a
            for i, a in enumerate(rest) if a.split("=", 1)[0] in subset]
    if part:  # publish refuses a part of a suite: say so before the record, not after it
        return _usage(f"--publish with {' '.join(part)}: a baseline is a record of the whole suite; drop them, "
                      "or write a suite YAML of just those ops and record that")
    planted = [name for name in ("TRITONGATE_PLANTED_DELAY", "TRITONGATE_PLANTED_WORK")
               if os.environ.get(name, "") not in ("", "1" if name.endswith("WORK") else "")]
    if planted:
        return _usage(f"--publish with {' and '.join(planted)} set: a planted run's kernels are slowed on purpose, "
                      "never a baseline; unset it")
    refused = _store_refused(Path(opts.publish))
    if refused:
        return _usage(f"--publish {opts.publish}: {refused}; pass the baseline store folder (it is made if missing)")
    tee = _Tee(sys.stdout)
    real, sys.stdout = sys.stdout, tee
    try:
        code = main(["run", *rest])
    finally:
        sys.stdout = real
    if code != 0:
        return code
    lines = [line for line in tee.tail.splitlines() if line.strip()]
    run_dir = lines[-1].strip() if lines else ""
    if not run_dir or not Path(run_dir).is_dir():
        print(f"internal error: record_baseline.py: `tritongate run` printed no run directory (last line {run_dir!r})",
              file=sys.stderr)
        return 4
    extra = [arg for opt, value in (("--compiler-repo", opts.compiler_repo), ("--compiler-commit", opts.compiler_commit))
             if value for arg in (opt, value)]
    return baseline_main(["publish", run_dir, "--store", opts.publish, "--runner-class", opts.runner_class, *extra])


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
