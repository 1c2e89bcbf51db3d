"""`tritongate batch` on one GPU against two: wall time, op statuses, and whether the merged
run gates clean against itself (needs a machine with 2 GPUs).

    python bench/batch_devices.py --out DIR [--suite pr]

Writes DIR/batch_devices.json and DIR/batch_devices.md.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any


def batch(suite: str, out: Path, devices: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "tritongate", "batch", "--suite", suite, "--backend", "cuda",
                           "--out", str(out), "--devices", devices], capture_output=True, text=True, timeout=500)
    wall = time.perf_counter() - t0
    res: dict[str, Any] = {"devices": devices, "exit": proc.returncode, "wall_s": round(wall, 1)}
    lines = proc.stdout.strip().splitlines()
    if not lines:
        res["stderr"] = proc.stderr[-2000:]
        return res
    bdir = Path(lines[-1])
    with open(bdir / "ops_status.csv", newline="") as f:
        ops = list(csv.DictReader(f))
    res.update(batch_dir=str(bdir), ops=len(ops), statuses=dict(Counter(o["status"] for o in ops)),
               per_op_wall_s={o["op"]: o.get("wall_s") for o in ops},
               devices_used=dict(Counter(o.get("device", "") for o in ops)))
    run = json.loads((bdir / "run" / "results.json").read_text())
    res["rows"] = len(run["rows"])
    return res


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--suite", default="pr")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path("/tmp/tg_batch_devices")
    res: dict[str, Any] = {"date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                           "suite": args.suite}
    res["one"] = batch(args.suite, work / "one", "0")
    res["two"] = batch(args.suite, work / "two", "0,1")
    (out / "batch_devices.json").write_text(json.dumps(res, indent=1))
    lines = [f"# `tritongate batch` on one GPU and on two ({res['date_utc'][:10]})", "",
             "| devices | exit | wall | ops | statuses | rows | ops per device |", "|---|---|---:|---:|---|---:|---|"]
    for k in ("one", "two"):
        r = res[k]
        lines.append(f"| {r['devices']} | {r['exit']} | {r['wall_s']} s | {r.get('ops')} | {r.get('statuses')} | "
                     f"{r.get('rows')} | {r.get('devices_used')} |")
    (out / "batch_devices.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
