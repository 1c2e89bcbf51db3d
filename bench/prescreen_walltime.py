#!/usr/bin/env python3
"""Wall time of `ci/prescreen.py` on this machine for one baseline record and two builds.

    python bench/prescreen_walltime.py --record RECORD --base-python PY --cand-python PY \
        --name cpu_prescreen_walltime_pr [--note TEXT]

Each build compiles into a fresh cache (the pre-screen's own), so the time is a cold CI job's.
Writes bench/results/<date>_<name>.{json,md}.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--record", required=True)
    ap.add_argument("--base-python", required=True)
    ap.add_argument("--cand-python", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--note", action="append", default=[])
    args = ap.parse_args()
    out = Path(tempfile.mkdtemp(prefix="prescreen-walltime-"))
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, str(ROOT / "ci" / "prescreen.py"), "--baseline", args.record,
                           "--base-python", args.base_python, "--cand-python", args.cand_python, "--out", str(out)],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = round(time.monotonic() - t0, 1)
    doc = json.loads((out / "prescreen.json").read_text()) if proc.returncode == 0 else {}
    date = dt.date.today().isoformat()
    load = os.getloadavg()
    result = {"date": date, "machine": f"cpu ({os.cpu_count()} cores, shared; load {load[0]:.1f} at the end)",
              "record": args.record, "exit": proc.returncode, "wall_s": wall, "steps_s": doc.get("wall_s"),
              "rows_total": doc.get("rows_total"), "rows_changed": len(doc.get("rows_changed", [])),
              "variants": doc.get("variants"), "compiled": doc.get("compiled"),
              "builds": {k: v.get("triton_version") for k, v in (doc.get("builds") or {}).items()},
              "notes": args.note, "stderr": proc.stderr[-1500:] if proc.returncode else ""}
    base = ROOT / "bench" / "results" / f"{date}_{args.name}"
    base.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    steps = result["steps_s"] or {}
    md = [f"# Pre-screen wall time ({date}, {result['machine']})", "",
          f"Record `{Path(args.record).name}`, Triton {result['builds'].get('base')} → "
          f"{result['builds'].get('cand')}, cold caches: **{wall} s** (exit {proc.returncode}); base AOT "
          f"{steps.get('aot_base_s')} s, candidate AOT {steps.get('aot_cand_s')} s, diff {steps.get('diff_s')} s; "
          f"{result['compiled']} variants compiled; {result['rows_changed']} of {result['rows_total']} rows changed."]
    md += ["", *[f"- {n}" for n in args.note]] if args.note else []
    base.with_suffix(".md").write_text("\n".join(md) + "\n", encoding="utf-8")
    print(base.with_suffix(".md"))
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
