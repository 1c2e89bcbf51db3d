"""How long a PR's compiler build takes when the PR changes only Triton's Python sources: the
overlay build (`tritongate overlay`, what the build step's `mode: overlay|auto` runs), per
patch of `bench/patches/`, repeated, each into a fresh folder. No GPU needed.

    python bench/overlay_build.py --out bench/results --label 2026-12-02_cpu_overlay_build [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import software

ROOT = Path(__file__).resolve().parents[1]


def build_once(patch: Path, folder: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "tritongate", "overlay", "--patch", str(patch), "--out", str(folder)],
                   check=True, capture_output=True, text=True, cwd=ROOT)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    patches = sorted((ROOT / "bench" / "patches").glob("*.patch"))
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for patch in patches:
            walls = []
            for i in range(args.repeat):
                folder = Path(tmp) / f"{patch.stem}-{i}"
                walls.append(build_once(patch, folder))
                size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and not f.is_symlink())
                shutil.rmtree(folder)
            results[patch.name] = {"walls_s": walls, "median_s": statistics.median(walls), "bytes_written": size}
    doc = {"date": time.strftime("%Y-%m-%d"), "software": software(), "cpus": os.cpu_count(),
           "load_avg": os.getloadavg(), "repeat": args.repeat, "patches": results}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.label}.json").write_text(json.dumps(doc, indent=1) + "\n")
    lines = [f"# Overlay compiler builds, {doc['date']}", "",
             f"`tritongate overlay --patch P --out DIR` on a CPU host ({doc['cpus']} cores, load average "
             f"{', '.join(f'{x:.1f}' for x in doc['load_avg'])} at the end), base build: Python "
             f"{doc['software']['python']}, triton {doc['software'].get('triton')}, torch {doc['software'].get('torch')}; "
             f"{args.repeat} builds per patch, each into a fresh folder.", "",
             "| patch | median wall | each | written (not linked) |", "|---|---:|---|---:|"]
    for name, r in results.items():
        lines.append(f"| {name} | {r['median_s']:.1f} s | {', '.join(f'{w:.1f}' for w in r['walls_s'])} s "
                     f"| {r['bytes_written'] / 2**20:.1f} MiB |")
    (args.out / f"{args.label}.md").write_text("\n".join(lines) + "\n")
    print(args.out / f"{args.label}.md")


if __name__ == "__main__":
    main()
