"""The ahead-of-time pre-screen of real compiler patches, on a CPU, against the H200's verdicts.

Each patch of ``bench/patches`` (the Triton pass pipeline, the repository's layout) becomes an
overlay build of this interpreter's Triton (``tritongate.overlay``); ``ci/prescreen.py`` then
recompiles the H200 ``pr`` record's launched variants for cuda:90 under the base build and the
overlay (no GPU) and lists the rows whose binaries changed. Beside it, the rows whose launched
binaries changed when the same patches were paired on the H200 (``real_patches.json``): the
pre-screen is right when both lists are equal, and a patch that changes no binary needs no GPU.

    python bench/prescreen_patches.py --record bench/results/2026-12-01_h200_pr_record \\
        --gpu bench/results/2026-12-01_h200_real_patches.json --out bench/results

Writes OUT/<date>_cpu_prescreen_real_patches.{json,md}.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tritongate.overlay import make_overlay  # noqa: E402


def _key(row: list[str]) -> str:
    return "/".join(row)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--record", required=True, type=Path)
    ap.add_argument("--gpu", required=True, type=Path, help="real_patches.json of the H200 pairing")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--work", default=Path("/tmp/tg_prescreen_patches"), type=Path)
    args = ap.parse_args()
    gpu = json.loads(args.gpu.read_text())
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    import triton

    res: dict[str, Any] = {"date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                           "machine": platform.machine(), "cpus": os.cpu_count(), "triton": triton.__version__,
                           "load_average": os.getloadavg(), "record": str(args.record), "patches": []}
    for p in gpu["patches"]:
        patch = REPO / p["patch"]
        name = patch.stem
        build = make_overlay(sys.executable, [patch], args.work / f"ov_{name}")
        out = args.work / f"prescreen_{name}"
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, str(REPO / "ci" / "prescreen.py"), "--baseline", str(args.record),
                               "--base-python", sys.executable, "--cand-python", str(build.python),
                               "--out", str(out)], capture_output=True, text=True,
                              env={k: v for k, v in os.environ.items() if k != "GITHUB_OUTPUT"})
        wall = time.perf_counter() - t0
        entry: dict[str, Any] = {"patch": p["patch"], "exit": proc.returncode, "wall_s": round(wall, 1),
                                 "gpu_binaries_changed": sorted(p.get("binaries_changed", []))}
        if proc.returncode == 0:
            doc = json.loads((out / "prescreen.json").read_text())
            entry["rows_total"] = doc["rows_total"]
            entry["cpu_rows_changed"] = sorted(_key(r) for r in doc["rows_changed"])
            entry["equal"] = entry["cpu_rows_changed"] == entry["gpu_binaries_changed"]
            entry["gpu_job"] = bool(entry["cpu_rows_changed"])
        else:
            entry["error"] = (proc.stderr or proc.stdout)[-1500:]
        res["patches"].append(entry)
        print(json.dumps({k: v for k, v in entry.items() if not k.endswith("changed")}), flush=True)
    stem = f"{res['date_utc'][:10]}_cpu_prescreen_real_patches"
    (args.out / f"{stem}.json").write_text(json.dumps(res, indent=1) + "\n")
    lines = [f"# The pre-screen of real compiler patches, on a CPU ({res['date_utc'][:10]})", "",
             f"{res['machine']}, {res['cpus']} CPUs (load average {res['load_average'][0]:.1f}), triton {res['triton']}; "
             f"the H200 `pr` record `{args.record.name}`; rows whose launched binaries changed when the same "
             "patches were paired on the H200: `2026-12-01_h200_real_patches.json`.", "",
             "| patch | rows changed (CPU pre-screen) | rows whose binaries changed (H200 pair) | same rows | GPU job | pre-screen wall |",
             "|---|---:|---:|---|---|---:|"]
    for e in res["patches"]:
        if "error" in e:
            lines.append(f"| `{Path(e['patch']).name}` | error (exit {e['exit']}) | {len(e['gpu_binaries_changed'])} | | | {e['wall_s']} s |")
            continue
        lines.append(f"| `{Path(e['patch']).name}` | {len(e['cpu_rows_changed'])} of {e['rows_total']} "
                     f"| {len(e['gpu_binaries_changed'])} | {'yes' if e['equal'] else 'NO'} "
                     f"| {'needed' if e['gpu_job'] else 'none (0 GPU seconds)'} | {e['wall_s']} s |")
    (args.out / f"{stem}.md").write_text("\n".join(lines) + "\n")
    return 0 if all(e.get("equal") for e in res["patches"]) else 1


if __name__ == "__main__":
    sys.exit(main())
