"""How much one worker process's timings differ from another's, beyond their own noise.

Records the suite once, then measures it N times, each in a fresh process replaying the
record (same configs, same k). Per row: the spread of the N per-process medians (sd of their
logs) against what each process's own rounds predict (the mean within-process standard error
of the log median). A ratio well above 1 is a per-process bias: something fixed at process
start (placement, context) that alternating rounds inside one pair of processes cannot see.

    python bench/process_bias.py --out DIR [--suite pr] [--ops rmsnorm,matmul] [--processes 8]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tritongate.gate.rule import log_median_se


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--suite", default="pr")
    ap.add_argument("--ops", default="")
    ap.add_argument("--processes", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args()
    runs = args.out / "runs"
    sel = ["--ops", args.ops] if args.ops else []
    tg = [sys.executable, "-m", "tritongate", "run", "--suite", args.suite, "--out", str(runs), "--color", "never", *sel]
    record = subprocess.run(tg, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=True).stdout.split()[-1]
    medians: dict[tuple, list[float]] = {}
    ses: dict[tuple, list[float]] = {}
    for i in range(args.processes):
        path = subprocess.run(tg + ["--replay-from", record, "--rounds", str(args.rounds)], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, check=True).stdout.split()[-1]
        for row in json.loads((Path(path) / "results.json").read_text())["rows"]:
            key = (row["op"], row["case"], row["dtype"])
            medians.setdefault(key, []).append(statistics.median(row["samples"]))
            ses.setdefault(key, []).append(log_median_se(row["samples"], row["measurement"]["samples_per_round"]))
        print(f"process {i + 1}/{args.processes} done", flush=True)
    lines = [f"# Per-process bias, {args.suite} suite, {args.processes} processes x {args.rounds} rounds", "",
             "| op | case | dtype | median µs | between-process sd | within-process se | ratio | per-process medians (% from mean) |",
             "|---|---|---|---|---|---|---|---|"]
    doc = []
    for key, meds in medians.items():
        logs = [math.log(m) for m in meds]
        between = statistics.stdev(logs)
        within = statistics.mean(ses[key])
        mean = statistics.mean(logs)
        devs = " ".join(f"{100 * (lg - mean):+.2f}" for lg in logs)
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {statistics.median(meds):.2f} | {between:.2%} | "
                     f"{within:.2%} | {between / within:.1f} | {devs} |")
        doc.append({"op": key[0], "case": key[1], "dtype": key[2], "medians_us": meds,
                    "between_sd_log": between, "within_se_log": within})
    (args.out / "process_bias.md").write_text("\n".join(lines) + "\n")
    (args.out / "process_bias.json").write_text(json.dumps(doc, indent=1))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
