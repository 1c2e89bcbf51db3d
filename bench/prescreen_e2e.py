#!/usr/bin/env python3
"""The pre-screen end to end on a CPU, with two real Triton releases as the two builds.

    python bench/prescreen_e2e.py --base-python PY_A --cand-python PY_B --suite smoke --out DIR \
        [--name cpu_prescreen_e2e]

1. record the suite on the interpreter (`run --backend cpu`, one round: the index is what
   matters) and publish it to a fresh store: the entry keeps ttgir/index.tsv;
2. `ci/prescreen.py` with the two builds: the changed-rows list;
3. `tritongate pair ENTRY --changed-from DIR/ir-diff` with the two builds on the interpreter:
   the rows it timed must be exactly the changed rows, the others IDENTICAL_BINARY unrun;
4. `ci/prescreen.py` with the base build twice: 0 rows changed, verdict/ written, no pair run.

Writes bench/results/<date>_<name>.{json,md}; exit 0 when every check holds.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TG = [sys.executable, "-m", "tritongate"]


def _run(cmd: list[str], log: Path) -> tuple[int, float]:
    t0 = time.monotonic()
    with open(log, "w", encoding="utf-8") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(ROOT)}).returncode
    return rc, round(time.monotonic() - t0, 1)


def _version(py: str) -> str:
    return subprocess.run([py, "-c", "import triton; print(triton.__version__)"], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")}).stdout.strip()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-python", required=True)
    ap.add_argument("--cand-python", required=True)
    ap.add_argument("--suite", default="smoke")
    ap.add_argument("--dtypes", default="float16,float32")
    ap.add_argument("--out", required=True)
    ap.add_argument("--name", default="cpu_prescreen_e2e")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    steps: dict[str, dict] = {}
    rc, wall = _run(TG + ["run", "--suite", args.suite, "--backend", "cpu", "--dtypes", args.dtypes, "--rounds", "1",
                          "--samples-per-round", "1", "--out", str(out / "runs")], out / "record.log")
    steps["record"] = {"exit": rc, "wall_s": wall}
    record = sorted((out / "runs").iterdir())[-1]
    rc, wall = _run(TG + ["baseline", "publish", str(record), "--store", str(out / "store"), "--runner-class", "cpu-e2e"],
                    out / "publish.log")
    entry = next((out / "store").rglob("manifest.json")).parent
    steps["publish"] = {"exit": rc, "wall_s": wall, "entry_ttgir": sorted(p.name for p in (entry / "ttgir").iterdir())}
    rc, wall = _run([sys.executable, str(ROOT / "ci" / "prescreen.py"), "--baseline", str(entry), "--base-python",
                     args.base_python, "--cand-python", args.cand_python, "--out", str(out / "pre")], out / "pre.log")
    pre = json.loads((out / "pre" / "prescreen.json").read_text())
    changed = sorted(map(tuple, pre["rows_changed"]))
    steps["prescreen"] = {"exit": rc, "wall_s": wall, "rows_total": pre["rows_total"], "rows_changed": changed}
    rc, wall = _run(TG + ["pair", str(entry), "--suite", args.suite, "--backend", "cpu", "--dtypes", args.dtypes,
                          "--base-python", args.base_python, "--cand-python", args.cand_python, "--changed-from",
                          str(out / "pre" / "ir-diff"), "--rounds", "2", "--samples-per-round", "1",
                          "--out", str(out / "pair")], out / "pair.log")
    verdict = json.loads(next((out / "pair").rglob("verdict.json")).read_text())
    timed = sorted((r["op"], r["case"], r["dtype"]) for r in verdict["rows"] if r["timed"])
    unrun = sorted((r["op"], r["case"], r["dtype"]) for r in verdict["rows"]
                   if r["verdict"] == "IDENTICAL_BINARY" and not r["timed"])
    steps["pair"] = {"exit": rc, "wall_s": wall, "timed": timed, "identical_unrun": len(unrun)}
    rc, wall = _run([sys.executable, str(ROOT / "ci" / "prescreen.py"), "--baseline", str(entry), "--base-python",
                     args.base_python, "--cand-python", args.base_python, "--out", str(out / "pre-aa")],
                    out / "pre-aa.log")
    aa = json.loads((out / "pre-aa" / "prescreen.json").read_text())
    headline = json.loads((out / "pre-aa" / "verdict" / "verdict.json").read_text())["headline"]
    steps["prescreen_identical"] = {"exit": rc, "wall_s": wall, "rows_changed": len(aa["rows_changed"]),
                                    "headline": headline}
    checks = {
        "entry keeps the index": "index.tsv" in steps["publish"]["entry_ttgir"],
        "pair timed exactly the changed rows": [tuple(t) for t in timed] == [tuple(c) for c in changed],
        "the other rows IDENTICAL_BINARY, not run": len(unrun) == pre["rows_total"] - len(changed),
        "identical builds: 0 rows changed": aa["rows_changed"] == [],
        "identical builds: headline": headline.endswith(f"0 of {aa['rows_total']} rows' kernels changed under "
                                                        "this PR; no GPU time used"),
        "every step exit 0": all(s["exit"] == 0 for s in steps.values()),
    }
    date = dt.date.today().isoformat()
    doc = {"date": date, "machine": f"cpu ({os.cpu_count()} cores)", "suite": args.suite,
           "builds": {"base": _version(args.base_python), "cand": _version(args.cand_python)},
           "steps": steps, "checks": checks}
    base = ROOT / "bench" / "results" / f"{date}_{args.name}"
    base.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    md = [f"# Pre-screen end to end on the CPU ({date}, suite {args.suite}, Triton {doc['builds']['base']} → "
          f"{doc['builds']['cand']})", "", "| step | exit | wall s | result |", "|---|---:|---:|---|",
          f"| record (interpreter) | {steps['record']['exit']} | {steps['record']['wall_s']} | |",
          f"| publish | {steps['publish']['exit']} | {steps['publish']['wall_s']} | entry ttgir/: "
          f"{', '.join(steps['publish']['entry_ttgir'])} |",
          f"| prescreen | {steps['prescreen']['exit']} | {steps['prescreen']['wall_s']} | {len(changed)} of "
          f"{pre['rows_total']} rows changed |",
          f"| pair --changed-from | {steps['pair']['exit']} | {steps['pair']['wall_s']} | timed {len(timed)}, "
          f"{len(unrun)} IDENTICAL_BINARY unrun |",
          f"| prescreen, identical builds | {rc} | {wall} | {headline} |", "", "Changed rows: "
          + ", ".join(" ".join(c) for c in changed), "", "| check | holds |", "|---|---|"]
    md += [f"| {k} | {'yes' if v else '**no**'} |" for k, v in checks.items()]
    base.with_suffix(".md").write_text("\n".join(md) + "\n", encoding="utf-8")
    print(base.with_suffix(".md"))
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
