"""Two Triton releases compared on a CPU, as a compiler engineer would: `tritongate prescreen
--blame`, then per changed kernel variant where its code first differs (TTGIR, LLVM IR, PTX,
SASS, binary only; ``ir-diff/levels.tsv``) and the first compiler pass whose output differs
(``ir-diff/blame.json``), with the pre-screen's wall time and the disk its pass dumps took.

    python bench/release_compare.py --baseline examples/ir-index/pr-cpu-capture \\
        --base-python .venv/bin/python --cand-python /venvs/triton-3.7.1/bin/python \\
        --out /tmp/rel --name 2026-12-05_cpu_triton_3.6.0_vs_3.7.1   # writes bench/results/NAME.{md,json}
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results"


def version(python: str) -> str:
    return subprocess.run([python, "-c", "import triton; print(triton.__version__)"], capture_output=True,
                          text=True, check=True).stdout.strip()


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def blamed(entry: dict) -> str:
    kind, name = entry.get("kind"), entry.get("pass_name") or ""
    if kind == "pass":
        return f"`{name}` ({entry.get('stage')})"
    if kind == "pipeline":
        added, removed = entry.get("added") or [], entry.get("removed") or []
        return (f"pipeline changed ({len(added)} added, {len(removed)} removed); then `{name}`"
                f" ({entry.get('stage')})" if name else f"pipeline changed ({len(added)} added, {len(removed)} removed)")
    if kind == "below":
        return f"below the pass dumps ({entry.get('level')})"
    return str(kind)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--base-python", required=True)
    ap.add_argument("--cand-python", required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--blame", type=int, default=100)
    ap.add_argument("--name", required=True)
    a = ap.parse_args()
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "tritongate", "prescreen", "--baseline", a.baseline,
                           "--base-python", a.base_python, "--cand-python", a.cand_python, "--out", str(a.out),
                           "--blame", str(a.blame)], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"prescreen exit {proc.returncode}:\n{proc.stderr[-3000:]}")
    doc = json.loads((a.out / "prescreen.json").read_text())
    with (a.out / "ir-diff" / "levels.tsv").open() as fh:
        levels = list(csv.DictReader(fh, delimiter="\t"))
    blame_doc = json.loads((a.out / "ir-diff" / "blame.json").read_text())
    by_variant = {(b["case"], b["kernel"], b["variant"]): b for b in blame_doc.get("variants", [])}
    rows = []
    for lv in levels:
        if not lv["first_level"]:
            continue
        b = by_variant.get((lv["case"], lv["kernel"], lv["name"]))
        rows.append({"case": lv["case"], "kernel": lv["kernel"].rsplit(".", 1)[-1], "variant": lv["name"],
                     "status": lv["status"], "first_level": lv["first_level"],
                     "blame": blamed(b) if b else "not blamed", "blame_first_level": (b or {}).get("first_level")})
    identical = sum(1 for lv in levels if not lv["first_level"])
    result = {"date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": platform.node(),
              "cores": os.cpu_count(), "base_triton": version(a.base_python), "cand_triton": version(a.cand_python),
              "baseline": a.baseline, "rows_total": doc["rows_total"], "rows_changed": len(doc["rows_changed"]),
              "variants": len(levels), "variants_identical": identical, "wall_s": round(wall, 1),
              "blame_dumps_bytes": du(a.out / "blame"), "changed": rows, "stdout": proc.stdout}
    RESULTS.joinpath(f"{a.name}.json").write_text(json.dumps(result, indent=1))
    lines = [f"# Triton {result['base_triton']} vs {result['cand_triton']} on a CPU: levels and pass blame",
             "", f"{result['date_utc']} · {result['cores']} cores · baseline `{a.baseline}`", "",
             f"    python bench/release_compare.py --baseline {a.baseline} --base-python BASE_PY "
             f"--cand-python CAND_PY --out OUT --name {a.name}", "",
             f"`tritongate prescreen --blame {a.blame}`: **{result['rows_changed']} of {result['rows_total']} rows** "
             f"can change; {len(levels)} launched variants, {identical} identical at every level; "
             f"{result['wall_s']} s wall (both builds' recompiles and captures, and the blame), pass dumps "
             f"{result['blame_dumps_bytes'] / 2**20:.1f} MiB.", "",
             "| case | kernel | variant | ir-diff status | first differs at | first differing pass (blame) |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {r['case']} | {r['kernel']} | {r['variant']} | {r['status']} | {r['first_level']} | {r['blame']} |"
              for r in rows]
    lines += ["", "The pre-screen's terminal output:", "", "```", proc.stdout.rstrip(), "```", ""]
    RESULTS.joinpath(f"{a.name}.md").write_text("\n".join(lines))
    print(RESULTS / f"{a.name}.md")


if __name__ == "__main__":
    main()
