"""Record the `pr` suite in two fresh processes, then replay the first record twice.

Shows on a real GPU: (1) how often live autotune picks a different winner in a second
process, (2) that both replays launch exactly the recorded config on every row with zero
sweep benchmark calls, and (3) record vs replay wall time.

    python bench/record_replay.py --out DIR [--suite pr]     # writes record_replay.{json,md}
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--suite", default="pr")
    args = ap.parse_args()
    runs = args.out / "runs"
    rec1, w_rec1 = run(args.suite, runs)
    rec2, w_rec2 = run(args.suite, runs)
    rep1, w_rep1 = run(args.suite, runs, "--replay-from", str(rec1))
    rep2, w_rep2 = run(args.suite, runs, "--replay-from", str(rec1))
    r1, r2, p1, p2 = (configs(d) for d in (rec1, rec2, rep1, rep2))
    tuned = [k for k, row in r1.items() if row["autotune"]["kernels"]]
    flips = [k for k in tuned if chosen(r1[k]) != chosen(r2[k])]
    mismatch = [k for k in r1 if chosen(p1[k]) != chosen(r1[k]) or chosen(p2[k]) != chosen(r1[k])]
    sweeps_record = sum(r["autotune"]["sweep_benchmarks"] for r in r1.values())
    sweeps_replay = sum(r["autotune"]["sweep_benchmarks"] for d in (p1, p2) for r in d.values())
    fallbacks = [m for d in (p1, p2) for r in d.values() for m in r["markers"]]
    ident = json.loads((rec1 / "run_identity.json").read_text())
    doc = {
        "date_utc": ident["started_utc"], "device": ident["device"],
        "driver": (ident.get("gpu_state_before") or {}).get("driver"), "software": ident["software"],
        "suite": args.suite, "rows": len(r1), "rows_with_autotuned_kernels": len(tuned),
        "winner_flips_between_two_records": flips,
        "replay_config_mismatches": mismatch, "sweep_benchmarks_record": sweeps_record,
        "sweep_benchmarks_replay": sweeps_replay, "replay_fallback_markers": fallbacks,
        "wall_s": {"record_1": w_rec1, "record_2": w_rec2, "replay_1": w_rep1, "replay_2": w_rep2},
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
        f"| 3 | replay of 1 | {w_rep1:.1f} | {sum(r['autotune']['sweep_benchmarks'] for r in p1.values())} |",
        f"| 4 | replay of 1 | {w_rep2:.1f} | {sum(r['autotune']['sweep_benchmarks'] for r in p2.values())} |",
        "",
        f"- Rows: {len(r1)}, of which {len(tuned)} launch autotuned kernels.",
        f"- Live winners that differ between the two records: {len(flips)} rows"
        + (f" ({', '.join(flips)})" if flips else "") + ".",
        f"- Rows whose replayed configs differ from record 1 (either replay): {len(mismatch)}.",
        f"- Replay fallback markers: {len(fallbacks)}.", "",
    ]
    (args.out / "record_replay.md").write_text("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
