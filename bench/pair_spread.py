"""Where a paired row's spread comes from, from pair directories already measured (no GPU).

For every timed row of every pair directory given (a calibration folder stands for its A/A
steps, ``aa-*/pair-*``): the spread of samples within a round, of each side's round medians,
and of the pairs' log ratios of round medians (what the noise floor and the IQR gap grow
with), and whether the pairs shared their inputs. If both sides' rounds moved independently
the pairs would spread about sqrt(2) x a side's round spread; the share of a side's round
variance the two sides have in common is what pairing removes.

    python bench/pair_spread.py --out DIR --label NAME CALDIR_OR_PAIR_DIR...
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchlib import write_results

from tritongate.rundir import load_run


def pair_dirs(paths: list[str]) -> list[Path]:
    found: list[Path] = []
    for p in map(Path, paths):
        if (p / "base").is_dir() and (p / "candidate").is_dir():
            found.append(p)
        else:
            found.extend(sorted(p.glob("aa-*/pair-*")))
    if not found:
        raise SystemExit(f"no pair directory (base/ and candidate/) in {', '.join(paths)}")
    return found


def _sd_pct(values: list[float]) -> float:
    return 100 * statistics.stdev(values) if len(values) > 1 else float("nan")


def row_spread(base: Any, cand: Any) -> dict[str, Any] | None:
    """The spreads of one row timed on both sides of a pair, in % (log scale)."""
    if not base.samples or not cand.samples or base.measurement is None:
        return None
    spr = base.measurement.samples_per_round
    rounds = [[[math.log(x) for x in r.samples[i:i + spr]] for i in range(0, len(r.samples), spr)]
              for r in (base, cand)]
    medians = [[statistics.median(rnd) for rnd in side] for side in rounds]
    ratios = [c - b for b, c in zip(*medians)]
    side_sd = [_sd_pct(m) for m in medians]
    pair_sd = _sd_pct(ratios)
    mean_var = statistics.fmean(s * s for s in side_sd)
    shared = 1 - pair_sd ** 2 / (2 * mean_var) if mean_var > 0 else float("nan")
    pairing = base.measurement.pairing
    return {"op": base.op, "case": base.case, "dtype": base.dtype, "median_us": statistics.median(base.samples),
            "pairs": len(ratios), "inputs": pairing.inputs if pairing else "unpaired",
            "within_round_sd_pct": statistics.fmean(_sd_pct(rnd) for side in rounds for rnd in side),
            "round_sd_pct": side_sd, "pair_sd_pct": pair_sd, "shared_share": shared,
            "mean_ratio_pct": 100 * statistics.fmean(ratios)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--label", required=True, help="names the result files: pair_spread_<label>")
    ap.add_argument("paths", nargs="+", metavar="CALDIR_OR_PAIR_DIR")
    args = ap.parse_args()
    rows: list[dict[str, Any]] = []
    measured_on = None
    dirs = pair_dirs(args.paths)
    for d in dirs:
        base, cand = load_run(d / "base"), load_run(d / "candidate")
        if measured_on is None:  # from the runs themselves: this machine may have no GPU
            ident = json.loads((d / "base" / "run_identity.json").read_text())
            sw = ident.get("software") or {}
            measured_on = {"device": ident.get("device"), "torch": sw.get("torch"),
                           "triton": (sw.get("triton") or {}).get("version"), "started_utc": ident.get("started_utc")}
        by_key = {(r.op, r.case, r.dtype): r for r in cand.rows}
        for b in base.rows:
            c = by_key.get((b.op, b.case, b.dtype))
            got = row_spread(b, c) if c is not None else None
            if got is not None:
                rows.append({"pair_dir": str(d), **got})
    typical = {}  # a row's runs together, rows by kernel time
    for r in rows:
        key = (r["op"], r["case"], r["dtype"])
        typical[key] = min(typical.get(key, math.inf), r["median_us"])
    rows.sort(key=lambda r: (typical[(r["op"], r["case"], r["dtype"])], r["op"], r["case"], r["dtype"], r["pair_dir"]))
    lines = [f"# Where the pairs' spread comes from: {args.label}", ""]
    if measured_on:
        lines += [f"{measured_on['device']}, torch {measured_on['torch']}, triton {measured_on['triton']}; "
                  f"measured {measured_on['started_utc']}.", ""]
    lines += [f"{len(rows)} rows of {len(dirs)} pair directories. Per row: samples' SD within a "
              "round, each side's SD of round medians, the SD of the pairs' log ratios, and the share of a "
              "side's round variance the two sides had in common (1 - pair var / (2 x side var)).", "",
              "| op | case | dtype | µs | inputs | pairs | within % | rounds % base / cand | pairs % | common |",
              "|---|---|---|---:|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['op']} | {r['case']} | {r['dtype']} | {r['median_us']:.2f} | {r['inputs']} | {r['pairs']} | "
                     f"{r['within_round_sd_pct']:.2f} | {r['round_sd_pct'][0]:.2f} / {r['round_sd_pct'][1]:.2f} | "
                     f"{r['pair_sd_pct']:.2f} | {r['shared_share']:+.2f} |")
    write_results(Path(args.out), f"pair_spread_{args.label}", {"label": args.label, "measured_on": measured_on,
                                                               "rows": rows}, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
