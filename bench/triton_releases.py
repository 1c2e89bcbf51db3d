#!/usr/bin/env python3
"""Real compiler releases as the pre-screen's test: AOT (cuda:90, TTGIR and cubin) of one
record's launched variants under each Triton release, diffed pairwise between consecutive
releases with ``ci/prescreen.py``, on the CPU.

    python bench/triton_releases.py --record RECORD --python 3.5.1=PY --python 3.6.0=PY ... \
        --out DIR --name cpu_triton_releases

Each PY is an interpreter importing that release (a venv, or the project's venv with
PYTHONPATH pointing at ``pip install --target DIR triton==X --no-deps``). Writes
``bench/results/<date>_<name>.{json,md}``: per pair, how many variants' TTGIR and binaries
changed, rows changed, wall time, and one real diff excerpt.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

EXCERPT_LINES = 24


def _excerpt(out: Path, doc: dict) -> tuple[str, str]:
    changed = [k for k in doc["kernels"] if k["diff"]]
    if not changed:
        return "", ""
    k = min(changed, key=lambda k: (k["added"] + k["removed"], k["diff"]))  # the smallest real diff
    lines = (out / k["diff"]).read_text(encoding="utf-8").splitlines()
    return f"{k['case']} {k['kernel'].rsplit('.', 1)[-1]} {k['variant']}", "\n".join(lines[:EXCERPT_LINES])


def _binaries(d: Path) -> tuple[int, int]:
    """(variants whose cubin hash differs between the two AOT trees, variants compared)."""
    from tritongate.ir.index import read_index

    def hashes(side: str) -> dict:
        return {(v.case, v.kernel, v.name): v.binary_hash for v in read_index(d / side / "ttgir" / "index.tsv")
                if v.file}
    base, cand = hashes("ir-base"), hashes("ir-cand")
    common = set(base) & set(cand)
    return sum(1 for k in common if base[k] != cand[k] or not base[k]), len(common)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--record", required=True)
    ap.add_argument("--python", action="append", required=True, metavar="VERSION=PY")
    ap.add_argument("--out", required=True)
    ap.add_argument("--name", default="cpu_triton_releases")
    args = ap.parse_args()
    builds = [tuple(p.split("=", 1)) for p in args.python]
    out = Path(args.out)
    pairs = []
    for (va, pa), (vb, pb) in zip(builds, builds[1:]):
        d = out / f"{va}_to_{vb}"
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, str(ROOT / "ci" / "prescreen.py"), "--baseline", args.record,
                               "--base-python", pa, "--cand-python", pb, "--out", str(d)],
                              capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        wall = time.monotonic() - t0
        if proc.returncode != 0:
            pairs.append({"base": va, "cand": vb, "exit": proc.returncode, "stderr": proc.stderr[-2000:]})
            continue
        doc = json.loads((d / "prescreen.json").read_text())
        v = doc["variants"]
        where, text = _excerpt(d, doc)
        bin_changed, compared = _binaries(d)
        pairs.append({"base": va, "cand": vb, "exit": 0, "wall_s": round(wall, 1), "steps_s": doc["wall_s"],
                      "variants": sum(v.values()), "ttgir_changed": v.get("changed", 0),
                      "binary_changed_only": v.get("binary_changed", 0), "identical": v.get("identical", 0),
                      "one_side_only": v.get("base_only", 0) + v.get("cand_only", 0),
                      "binaries_changed": bin_changed, "binaries_compared": compared,
                      "compiled": doc["compiled"], "failed": doc["failed"],
                      "rows_total": doc["rows_total"], "rows_changed": len(doc["rows_changed"]),
                      "builds": doc["builds"], "excerpt_variant": where, "excerpt": text})
    date = dt.date.today().isoformat()
    result = {"date": date, "machine": f"cpu ({os.cpu_count()} cores, {platform.processor() or platform.machine()})",
              "python": sys.version.split()[0], "record": args.record, "target": "cuda:90", "pairs": pairs}
    base = ROOT / "bench" / "results" / f"{date}_{args.name}"
    base.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    md = [f"# Pre-screen across Triton releases ({date}, CPU, cuda:90)", "",
          f"Record: `{Path(args.record).name}`; each pair recompiled by `ci/prescreen.py` (both builds' AOT "
          "to cubin, each build with a cache of its own, then the diff) on this machine's CPUs. Index: a CPU "
          "capture (`TRITONGATE_CAPTURE_ONLY=1 tritongate run --backend cpu`, replaying the H200 record's configs: "
          "examples/ir-index/). Binaries compared with line info off, as GPU runs launch them. "
          "Wall s: the whole pre-screen of the pair, the two builds compiling at once.", "",
          "| base → cand | variants | TTGIR changed | cubin changed | cubin only (TTGIR same) | identical | "
          "rows changed | wall s |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for p in pairs:
        if p["exit"] != 0:
            md.append(f"| {p['base']} → {p['cand']} | exit {p['exit']} | | | | | | |")
            continue
        md.append(f"| {p['base']} → {p['cand']} | {p['variants']} | {p['ttgir_changed']} | "
                  f"{p['binaries_changed']} of {p['binaries_compared']} | {p['binary_changed_only']} | {p['identical']} | {p['rows_changed']} of {p['rows_total']} | "
                  f"{p['wall_s']} |")
    for p in pairs:
        if p.get("excerpt"):
            md += ["", f"## {p['base']} → {p['cand']}: {p['excerpt_variant']}", "", "```diff", p["excerpt"], "```"]
        elif p["exit"] != 0:
            md += ["", f"## {p['base']} → {p['cand']}: failed", "", "```", p["stderr"], "```"]
    base.with_suffix(".md").write_text("\n".join(md) + "\n", encoding="utf-8")
    print(base.with_suffix(".md"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
