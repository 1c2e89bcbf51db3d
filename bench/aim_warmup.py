"""Does the aim's short warm-up mis-measure power-bound rows?

For the given rows and spins (``op/case/dtype=spin_ns``), time each in the aim's own worker
(``tritongate.calibrate.aim_worker.AimWorker``) at 0 and at its spin, alternating, ``--pairs``
times, once with the aim's warm-up and once with the paired runs' (1 s): per row and warm-up,
the median time at 0, the spread of those timings, and the effect of the spin (each timing
against the 0s beside it). Compare with the effect the gate measured for the same spin in a
planted paired run.

    python bench/aim_warmup.py --record RUN --out DIR matmul/4096x4096x4096/bfloat16=728 ...
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import software, software_line, write_results

from tritongate.calibrate.aim_worker import AIM_WARMUP_S, AimWorker
from tritongate.pair.orchestrator import PairRequest


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--record", required=True, help="a record run of the suite")
    ap.add_argument("--suite", default="pr")
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--out", required=True)
    ap.add_argument("rows", nargs="+", metavar="OP/CASE/DTYPE=SPIN_NS")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = {r.split("=")[0]: int(r.split("=")[1]) for r in args.rows}
    doc = {"date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "software": software(),
           "rows": []}
    for warmup in (AIM_WARMUP_S, 1.0):
        req = PairRequest(baseline=Path(args.record), suite=args.suite, out=out / f"w{warmup}", backend="cuda")
        with AimWorker(req, out / f"w{warmup}", warmup_s=warmup) as w:
            for key, spin in rows.items():
                t0 = time.perf_counter()
                zeros, effects = [w.time_row(key, 0)], []
                for _ in range(args.pairs):
                    t = w.time_row(key, spin)
                    zeros.append(w.time_row(key, 0))
                    effects.append(t / ((zeros[-2] + zeros[-1]) / 2) - 1)
                zero = statistics.median(zeros)
                doc["rows"].append({"row": key, "spin_ns": spin, "warmup_s": warmup, "zero_us": zero,
                                    "zero_spread": (max(zeros) - min(zeros)) / zero,
                                    "effect": statistics.median(effects), "effects": effects,
                                    "wall_s": time.perf_counter() - t0})
                (out / "aim_warmup.json").write_text(json.dumps(doc, indent=1))
    lines = [f"# The aim's warm-up on power-bound rows ({doc['date_utc'][:10]})", "",
             software_line(doc["software"]) + ".", "",
             "| row | spin ns | warm-up s | time at 0 µs | spread of 0s % | effect % (median) | effects % | wall s |",
             "|---|---:|---:|---:|---:|---:|---|---:|"]
    for r in doc["rows"]:
        lines.append(f"| {r['row']} | {r['spin_ns']} | {r['warmup_s']} | {r['zero_us']:.1f} | "
                     f"{r['zero_spread'] * 100:.1f} | {r['effect'] * 100:+.2f} | "
                     f"{', '.join(f'{e * 100:+.1f}' for e in r['effects'])} | {r['wall_s']:.0f} |")
    write_results(out, "aim_warmup", doc, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
