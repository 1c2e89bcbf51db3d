"""Record-mode wall time with the autotune sweep serial vs spread over GPUs, and the
winners' conflicts across shards (needs a machine with 2+ GPUs).

    python bench/parallel_sweep.py --out DIR [--suites pr,deep] [--gpus 2]

For each suite: `tritongate run --suite S` (serial sweep), then `--sweep-gpus N`; the wall
time of each, the sweep benchmarks in each run's rows, the parallel sweep's own wall time and
conflicts, and how many recorded winners differ between the two records (live autotune picks
different winners in different processes anyway: the serial-vs-serial figure from
record_replay.py is the yardstick). Writes DIR/parallel_sweep.json and .md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def record(suite: str, out: Path, extra: list[str], timeout_s: float) -> dict[str, Any]:
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "tritongate", "run", "--suite", suite, "--backend", "cuda",
                               "--out", str(out), "--color", "never", *extra],
                              capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"exit": "timeout", "wall_s": round(time.perf_counter() - t0, 1)}
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        return {"exit": proc.returncode, "wall_s": round(wall, 1), "stderr": proc.stderr[-1500:]}
    run = Path(proc.stdout.strip().splitlines()[-1])
    rows = json.loads((run / "results.json").read_text())["rows"]
    ident = json.loads((run / "run_identity.json").read_text())
    winners = {}
    for f in (run / "autotune_records").glob("*.json"):
        if f.name == "meta.json":
            continue
        doc = json.loads(f.read_text())
        for rec in doc.get("entries", []):
            winners[f"{rec['kernel']} {json.dumps(rec['key'])}"] = json.dumps(rec["config"], sort_keys=True)
    return {"exit": 0, "wall_s": round(wall, 1), "rows": len(rows), "run": str(run),
            "sweep_benchmarks": sum((r.get("autotune") or {}).get("sweep_benchmarks", 0) for r in rows),
            "parallel_sweep": ident.get("parallel_sweep"), "winners": winners,
            "device": ident.get("device"), "driver": (ident.get("gpu_state_before") or {}).get("driver"),
            "triton": ((ident.get("software") or {}).get("triton") or {}).get("version"),
            "torch": (ident.get("software") or {}).get("torch")}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--suites", default="pr,deep")
    ap.add_argument("--gpus", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=240.0)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path("/tmp/tg_parallel_sweep")
    res: dict[str, Any] = {"date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                           "gpus": args.gpus, "suites": {}}
    for suite in args.suites.split(","):
        serial = record(suite, work / f"{suite}-serial", [], args.timeout)
        parallel = record(suite, work / f"{suite}-parallel", ["--sweep-gpus", str(args.gpus)], args.timeout)
        a, b = serial.pop("winners", {}), parallel.pop("winners", {})
        common = set(a) & set(b)
        res["suites"][suite] = {"serial": serial, "parallel": parallel,
                                "keys": len(common), "winners_differing": sum(1 for k in common if a[k] != b[k])}
        res.setdefault("machine", {k: serial.get(k) for k in ("device", "driver", "torch", "triton")})
        (out / "parallel_sweep.json").write_text(json.dumps(res, indent=1))
    lines = [f"# Parallel autotune sweep ({res['date_utc'][:10]})", "",
             f"{res.get('machine')}; {args.gpus} GPUs for the sweep, measurement on one.", "",
             "| suite | rows | serial wall | sweep benchmarks (serial run) | parallel wall | sweep part | "
             "sweep benchmarks (parallel run) | conflicts across shards | winners differing serial vs parallel |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for suite, r in res["suites"].items():
        s, p = r["serial"], r["parallel"]
        ps_ = p.get("parallel_sweep") or {}
        lines.append(f"| {suite} | {s.get('rows')} | {s['wall_s']} s | {s.get('sweep_benchmarks')} | {p['wall_s']} s | "
                     f"{ps_.get('wall_s')} s ({ps_.get('status')}) | {p.get('sweep_benchmarks')} | {ps_.get('conflicts')} | "
                     f"{r['winners_differing']} of {r['keys']} |")
    (out / "parallel_sweep.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
