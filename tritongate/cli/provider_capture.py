"""``python -m tritongate.cli.provider_capture``: a FlagGems suite's capture run directory,
for the pre-screen (``prescreen.respecialize`` runs it under each build) and by hand.

Writes ``OUT/<suite>_capture/`` with ``ttgir/index.tsv`` (the
captured rows' launched variants, as a CPU capture's) and ``capture.json`` (per row: captured,
or why not; what the stand-in device answered). Exit 0 when the directory was written, 2 when
the input was refused before it was.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Sequence

from tritongate.prescreen.provider_capture import RowKey, write_capture


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tritongate.cli.provider_capture",
                                     description="capture what a FlagGems suite's rows launch, without a GPU")
    parser.add_argument("--record", required=True, type=Path, help="the baseline record (a GPU run directory)")
    parser.add_argument("--suite", required=True, help="the suite it was recorded with")
    parser.add_argument("--target", required=True, help="the record's target, e.g. cuda:90")
    parser.add_argument("--only-rows", type=Path, help="JSON list of [op, case, dtype]")
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    from tritongate.errors import GateError
    from tritongate.prescreen.provider_capture import capture_rows

    rows: list[RowKey] | None = None
    if args.only_rows:
        rows = [(str(op), str(case), str(dtype)) for op, case, dtype in json.loads(args.only_rows.read_text("utf-8"))]
    t0 = time.monotonic()
    try:
        result = capture_rows(args.record, args.suite, rows, args.target)
    except GateError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    run_dir = write_capture(result, args.out, suite=args.suite, record=args.record, wall_s=time.monotonic() - t0)
    print(f"{len(result.captured)} rows captured, {len(result.not_capturable)} not capturable: {run_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
