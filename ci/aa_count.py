#!/usr/bin/env python3
"""CI entry point: the A/A self-check's false alarms, from its verdict.json.

    python ci/aa_count.py VERDICT_JSON AA_EXIT [--summary FILE]

Both sides of an A/A run are the same build, so every row whose timing the rule called
slower or faster is a false alarm (its verdict is IDENTICAL_BINARY whatever the timing
said: the timing call is what is counted). Appends a short section to --summary (the job
summary) and exits 1 when the count is not 0, else 0; 2 when the verdict cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def count(verdict: dict) -> tuple[int, int, int, int, int]:
    rows = verdict["rows"]
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        raise ValueError("'rows' is not a list of row objects; pass the A/A run's verdict.json")
    calls = [row.get("timing_change") for row in rows]
    slower, faster = calls.count("slower"), calls.count("faster")
    timed = sum(1 for row in rows if row.get("timed"))
    return slower + faster, slower, faster, len(rows), timed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="aa_count.py")
    p.add_argument("verdict", type=Path)
    p.add_argument("aa_exit")
    p.add_argument("--summary", type=Path)
    args = p.parse_args(argv)
    try:
        called, slower, faster, rows, timed = count(json.loads(args.verdict.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
        print(f"error: aa_count.py: {args.verdict}: {exc}", file=sys.stderr)
        return 2
    lines = ["### A/A self-check (the gate's false alarms tonight)", "",
             f"**{called}** of {rows} rows called slower or faster ({slower} slower, {faster} faster; "
             f"{timed} timed); gate exit {args.aa_exit}. Both sides ran the same build: every call is a false alarm.",
             ""]
    if args.summary:
        try:
            with args.summary.open("a", encoding="utf-8") as f:
                f.write("\n".join(lines) + "\n")
        except OSError as exc:  # a folder, a link loop, a path under a file
            print(f"error: aa_count.py: --summary {args.summary}: cannot be appended to ({exc.strerror or exc}); "
                  "pass a file (the job summary, $GITHUB_STEP_SUMMARY)", file=sys.stderr)
            return 2
    print(f"A/A false alarms: {called} of {rows} rows")
    return 1 if called else 0


if __name__ == "__main__":
    sys.exit(main())
