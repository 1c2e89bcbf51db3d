#!/usr/bin/env python3
"""CI entry point: the ahead-of-time pre-screen of a PR, CPU only (no GPU is touched).

    python ci/prescreen.py --baseline RECORD_DIR --base-python PY --cand-python PY --out DIR [--suite NAME|PATH]
                           [--blame [N]]
    python ci/prescreen.py --baseline RECORD_DIR --side base --base-python PY --out DIR   (and --side cand)
    python ci/prescreen.py --baseline RECORD_DIR --judge --out DIR

`tritongate prescreen` with the step's outputs: the same options and code
(tritongate/cli/prescreen.py), the same table of changed rows on stdout, the count line and
prescreen.json's path last.

Recompiles the baseline record's launched kernel variants for the record's own GPU target
under each build's interpreter (TTGIR down to cubin), recaptures what each build launches for
each row (its own binder and autotuner, on the interpreter, nothing executed), compares the
builds' launch-path files, and writes:

- DIR/prescreen.json   versioned: rows_total, rows_changed ([op, case, dtype] each), per-kernel
                       evidence, both builds' identities, the baseline's identity
- DIR/ir-diff/         the diff with its provenance: `tritongate pair --changed-from DIR/ir-diff`;
                       rows timed for a reason the IR does not show are its `launch_changed` entries
- DIR/verdict/         only when no row changed: verdict.json + verdict.md, every row
                       IDENTICAL_BINARY ("0 of M rows' kernels changed between the two builds; no GPU time used")

Split (a verdict no build's code can write): `--side base|cand` runs one build's half into DIR
(its recompile, capture and launch-path hashes, DIR/side-SIDE.json) and writes no output;
`--judge` compares the two halves found in DIR (downloaded from the side jobs) in a job that
holds neither build, and writes everything below.

With $GITHUB_OUTPUT set, appends `rows_changed=<N>` and `rows_total=<M>` to it; with
$GITHUB_STEP_SUMMARY set, verdict.md to the summary when no row changed, else the count line
and why the rows are timed. --blame N (off by
default: seconds to a minute a kernel) writes DIR/ir-diff/blame.json.
Exit codes: 0 success (whatever the count), 2 bad input (named on stderr), 4 internal error.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tritongate.cli.prescreen import add_arguments, print_result, screen
from tritongate.errors import GateError, UsageError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2 too; keep the message one line
        print(f"error: prescreen.py: {message}", file=sys.stderr)
        sys.exit(2)


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="ci/prescreen.py", description=__doc__.split("\n\n")[0])
    add_arguments(parser)  # `tritongate prescreen`'s options, --blame N included (off unless given)
    args = parser.parse_args(argv)
    from tritongate.github import outputs

    try:
        result = screen(args)  # prints the changed rows (and each blamed kernel)
        github = outputs.output_path()
        if result is None:  # --side: one build's half, for a judge job; it decides nothing
            return 0
        if github:
            try:
                outputs.append(github, {"rows_changed": len(result.rows_changed), "rows_total": result.rows_total})
            except OSError as exc:
                raise UsageError(f"GITHUB_OUTPUT={github} cannot be appended to ({exc.strerror or exc})") from None
    except GateError as exc:  # a usage error, a damaged baseline (RunDirError), a suite refused at preflight
        print(f"error: prescreen.py: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # --out a file or under one, a folder that cannot be written
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: prescreen.py: {where}{exc.strerror or exc}; fix the path (--out DIR, --baseline RECORD_DIR) "
              "and run again", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - exit 4 with the traceback, never a false "0 changed"
        traceback.print_exc()
        print(f"internal error: prescreen.py: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 4
    print_result(result)  # the count line, then prescreen.json's path last
    return 0

if __name__ == "__main__":
    sys.exit(main())
