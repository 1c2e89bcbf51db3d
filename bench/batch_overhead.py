"""What a batch paid per op beyond its runs: process start, imports, CUDA context, the worker protocol.

Reads finished batch folders (``tritongate batch --out ...``; with or without
``--fresh-process``) and, per op, sets the op's wall time (``ops/<op>/result.json``) against the
wall times its runs report (``RUN_COMPLETE ... wall_s=`` in each run's ``run.log``). The
difference is what the op cost before and after its runs; the first op of a worker pays the
worker's start. No GPU needed: run it on folders a GPU host produced.

    python bench/batch_overhead.py --out DIR --label NAME --machine "NVIDIA H200, ..." \\
        LABEL=BATCH_DIR [LABEL=BATCH_DIR ...] [--note TEXT ...]

Writes DIR/NAME.{json,md}.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import write_results

RUN_WALL = re.compile(r"^RUN_COMPLETE .*\bwall_s=([0-9.]+)", re.MULTILINE)


def op_costs(batch: Path) -> list[dict[str, Any]]:
    """Per op, in the order the batch ran them: its wall, its runs' wall, and the difference."""
    ops = []
    for result in (batch / "ops").glob("*/result.json"):
        doc = json.loads(result.read_text(encoding="utf-8"))
        runs = [float(m) for log in result.parent.glob("*/run.log")
                for m in RUN_WALL.findall(log.read_text(encoding="utf-8", errors="replace"))]
        ops.append({"op": doc["op"], "status": doc["status"], "started_utc": doc["started_utc"],
                    "attempts": len(doc.get("attempts") or []), "wall_s": round(doc["wall_s"], 3),
                    "runs_wall_s": round(sum(runs), 3), "overhead_s": round(doc["wall_s"] - sum(runs), 3)})
    return sorted(ops, key=lambda o: o["started_utc"])


def summary(batch: Path) -> dict[str, Any]:
    manifest = json.loads((batch / "batch.json").read_text(encoding="utf-8"))
    ops = op_costs(batch)
    later = [o["overhead_s"] for o in ops[1:]]
    return {"batch": batch.name, "process": manifest.get("execution", {}).get("process", "fresh"), "ops": ops,
            "wall_s": round(sum(o["wall_s"] for o in ops), 2),
            "overhead_s": round(sum(o["overhead_s"] for o in ops), 2),
            "first_overhead_s": ops[0]["overhead_s"] if ops else None,
            "later_overhead_median_s": round(statistics.median(later), 3) if later else None,
            "later_overhead_range_s": [min(later), max(later)] if later else None}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("batches", nargs="+", metavar="LABEL=BATCH_DIR")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--label", required=True)
    ap.add_argument("--machine", required=True, help="the GPU, driver, torch and triton the batches ran with")
    ap.add_argument("--note", action="append", default=[])
    args = ap.parse_args()
    cases = {}
    for item in args.batches:
        label, _, path = item.partition("=")
        cases[label] = summary(Path(path))
    today = dt.date.today().isoformat()
    lines = [f"# What a batch pays per op beyond its runs ({args.label})", "", f"{today}. {args.machine}.", ""]
    lines += [f"- {n}" for n in args.note] + ([""] if args.note else [])
    lines += ["| batch | process | ops | ops' wall s | beyond the runs, s | first op | later ops: median (range) |",
              "|---|---|---:|---:|---:|---:|---|"]
    for label, c in cases.items():
        rng = c["later_overhead_range_s"]
        later = f"{c['later_overhead_median_s']:.2f} ({rng[0]:.2f}–{rng[1]:.2f})" if rng else "–"
        lines.append(f"| {label} | {c['process']} | {len(c['ops'])} | {c['wall_s']:.1f} | {c['overhead_s']:.1f} | "
                     f"{c['first_overhead_s']:.2f} | {later} |")
    for label, c in cases.items():
        lines += ["", f"## {label} (`{c['batch']}`)", "", "| op | status | attempts | wall s | runs' wall s | beyond, s |",
                  "|---|---|---:|---:|---:|---:|"]
        lines += [f"| {o['op']} | {o['status']} | {o['attempts']} | {o['wall_s']:.2f} | {o['runs_wall_s']:.2f} | "
                  f"{o['overhead_s']:.2f} |" for o in c["ops"]]
    write_results(args.out, args.label, {"date": today, "machine": args.machine, "notes": args.note, "batches": cases},
                  lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
