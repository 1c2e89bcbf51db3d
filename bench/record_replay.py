"""Record the `pr` suite in two fresh processes, then replay the first record N times.

Shows on a real GPU: (1) how often live autotune picks a different winner in a second
process, (2) that every replay launches exactly the recorded config on every row with zero
sweep benchmark calls, (3) record vs replay wall time, and (4) how far two measurements of a
row apart: the two records where autotune chose the same configs, and each replay against
the first (same kernels; each a fresh process).

    python bench/record_replay.py --out DIR [--suite pr] [--replays N]   # record_replay.{json,md}
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path


def run(suite: str, out: Path, *extra: str) -> tuple[Path, float]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "tritongate", "run", "--suite", suite, "--out", str(out),
                           "--color", "never", *extra], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"tritongate run failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return Path(proc.stdout.strip().splitlines()[-1]), wall


def configs(run_dir: Path) -> dict[str, dict]:
    rows = json.loads((run_dir / "results.json").read_text())["rows"]
    return {f"{r['op']} {r['case']} {r['dtype']}": r for r in rows}


def chosen(row: dict) -> list:
    return sorted((k["kernel"], json.dumps(k["key"]), json.dumps(k["config"], sort_keys=True))
                  for k in row["autotune"]["kernels"])


def median_us(row: dict) -> float | None:
    s = row.get("summary") or {}  # results.json keeps µs
    return float(s["median"]) if s.get("median") else None


def timing_agreement(r1: dict[str, dict], r2: dict[str, dict], ps: list[dict[str, dict]]) -> list[dict]:
    """Per row: the records' medians (and whether autotune chose the same configs) and the replays'."""
    out = []
    for k, row in r1.items():
        a, b = median_us(row), median_us(r2[k])
        reps = [median_us(p[k]) for p in ps]
        if a is None or b is None or any(v is None for v in reps):
            continue
        out.append({"row": k, "record_1_us": a, "record_2_us": b, "same_configs": chosen(row) == chosen(r2[k]),
                    "replays_us": reps})
    return out


def agreement_lines(agreement: list[dict]) -> list[str]:
    def pct(x: float, y: float) -> float:
        return 100 * (y / x - 1)

    lines = ["## Two measurements of a row", "",
             "Median µs a launch. `rec 2 vs 1`: the second record against the first (`same` when autotune chose "
             "the same configs in both); `replays`: each replay of record 1 against the first replay (the same "
             "kernels, a fresh process each).", "",
             "| row | record 1 | record 2 | rec 2 vs 1 | configs | replay 1 | replays vs replay 1 |",
             "|---|---:|---:|---:|---|---:|---|"]
    for a in sorted(agreement, key=lambda a: a["record_1_us"]):
        reps = a["replays_us"]
        lines.append(f"| {a['row']} | {a['record_1_us']:.3f} | {a['record_2_us']:.3f} | "
                     f"{pct(a['record_1_us'], a['record_2_us']):+.2f} % | {'same' if a['same_configs'] else 'other'} | "
                     f"{reps[0]:.3f} | {' '.join(f'{pct(reps[0], v):+.2f} %' for v in reps[1:])} |")
    for label, rows in (("< 10 µs", [a for a in agreement if a["record_1_us"] < 10]),
                        (">= 10 µs", [a for a in agreement if a["record_1_us"] >= 10])):
        same = [a for a in rows if a["same_configs"]]
        rec_ok = sum(abs(pct(a["record_1_us"], a["record_2_us"])) <= 1 for a in same)
        rep = [pct(a["replays_us"][0], v) for a in rows for v in a["replays_us"][1:]]
        lines += ["", f"- Rows {label}: {len(rows)}. Records with the same configs within 1 %: {rec_ok} of "
                  f"{len(same)}; replays within 1 % of the first replay: {sum(abs(d) <= 1 for d in rep)} of {len(rep)}"
                  + (f" (largest {max(rep, key=abs):+.2f} %)" if rep else "") + "."]
    return lines + [""]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--suite", default="pr")
    ap.add_argument("--replays", type=int, default=2, help="replays of the first record (default 2)")
    args = ap.parse_args()
    if args.replays < 2:
        sys.exit("--replays: at least 2 (replays are compared with the first)")
    runs = args.out / "runs"
    rec1, w_rec1 = run(args.suite, runs)
    rec2, w_rec2 = run(args.suite, runs)
    replays = [run(args.suite, runs, "--replay-from", str(rec1)) for _ in range(args.replays)]
    r1, r2 = configs(rec1), configs(rec2)
    ps = [configs(d) for d, _ in replays]
    tuned = [k for k, row in r1.items() if row["autotune"]["kernels"]]
    flips = [k for k in tuned if chosen(r1[k]) != chosen(r2[k])]
    mismatch = [k for k in r1 if any(chosen(p[k]) != chosen(r1[k]) for p in ps)]
    sweeps_record = sum(r["autotune"]["sweep_benchmarks"] for r in r1.values())
    sweeps_replay = sum(r["autotune"]["sweep_benchmarks"] for d in ps for r in d.values())
    fallbacks = [m for d in ps for r in d.values() for m in r["markers"]]
    ident = json.loads((rec1 / "run_identity.json").read_text())
    uuids = sorted({(json.loads((d / "run_identity.json").read_text()).get("gpu_state_before") or {}).get("uuid")
                    for d in (rec1, rec2, *(d for d, _ in replays))} - {None})
    agreement = timing_agreement(r1, r2, ps)
    doc = {
        "date_utc": ident["started_utc"], "device": ident["device"], "gpu_uuids": uuids,
        "driver": (ident.get("gpu_state_before") or {}).get("driver"), "software": ident["software"],
        "suite": args.suite, "rows": len(r1), "rows_with_autotuned_kernels": len(tuned),
        "winner_flips_between_two_records": flips,
        "replay_config_mismatches": mismatch, "sweep_benchmarks_record": sweeps_record,
        "sweep_benchmarks_replay": sweeps_replay, "replay_fallback_markers": fallbacks,
        "wall_s": {"record_1": w_rec1, "record_2": w_rec2, **{f"replay_{i + 1}": w for i, (_, w) in enumerate(replays)}},
        "timing_agreement": agreement,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "record_replay.json").write_text(json.dumps(doc, indent=1))
    md = [
        "# Record vs replay of the `%s` suite" % args.suite, "",
        f"{doc['date_utc']} · {doc['device']} · driver {doc['driver']} · torch {doc['software']['torch']} "
        f"(CUDA {doc['software']['cuda']}) · triton {doc['software']['triton']['version']}", "",
        "| process | mode | wall time (s) | sweep benchmark calls |", "|---|---|---|---|",
        f"| 1 | record | {w_rec1:.1f} | {sweeps_record} |",
        f"| 2 | record | {w_rec2:.1f} | {sum(r['autotune']['sweep_benchmarks'] for r in r2.values())} |",
        *(f"| {i + 3} | replay of 1 | {w:.1f} | {sum(r['autotune']['sweep_benchmarks'] for r in p.values())} |"
          for i, ((_, w), p) in enumerate(zip(replays, ps))),
        "",
        f"- Rows: {len(r1)}, of which {len(tuned)} launch autotuned kernels.",
        f"- Live winners that differ between the two records: {len(flips)} rows"
        + (f" ({', '.join(flips)})" if flips else "") + ".",
        f"- Rows whose replayed configs differ from record 1 (either replay): {len(mismatch)}.",
        f"- Replay fallback markers: {len(fallbacks)}.",
        f"- GPU: {', '.join(uuids)}.", "",
        *agreement_lines(agreement),
    ]
    (args.out / "record_replay.md").write_text("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
