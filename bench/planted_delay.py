"""How the planted spin (tritongate/ops/kernels/planted.py) lengthens a kernel.

For add kernels of 4K, 1M and 16M elements (4 to 16,384 programs: one wave to several), time
CUDA-graph replays with the spin compiled out, compiled in and zero, and with per-program
spins from 10 ns to 10 µs; report the time added per launch and the gain (added / spun): 1 for
a kernel of one wave, about its waves for a longer one, less where other resident programs
hide the spin. The calibration measures each row's gain before it plants.

    python bench/planted_delay.py --out DIR
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import graph_us_per_launch, software, write_results

from tritongate.ops.kernels.elementwise import add_kernel
from tritongate.ops.kernels.planted import peak_clock_ghz

REQUESTS_NS = (0, 10, 25, 50, 100, 250, 1000, 10000)
LAUNCHES, REPS = 200, 21  # per launch: the median of 21 CUDA-graph replays of 200 launches


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    kernel = add_kernel.fn  # the builtin add kernel, one fixed config
    ghz = peak_clock_ghz(torch.device("cuda", torch.cuda.current_device()))
    res = {"date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
           "device": torch.cuda.get_device_name(), "driver": software()["driver"], "torch": torch.__version__,
           "triton": triton.__version__, "sm_clock_ghz": round(ghz, 4), "rows": []}
    for n in (4096, 1024 * 1024, 16 * 1024 * 1024):
        x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        o = torch.empty_like(x)
        grid = (triton.cdiv(n, 1024),)

        def launch(plant: bool, ns: int) -> None:
            kernel[grid](x, y, o, n, round(ns * ghz), BLOCK=1024, PLANT=plant, num_warps=4)
        off = graph_us_per_launch(lambda: launch(False, 0), LAUNCHES, REPS)
        tail = None
        for ns in REQUESTS_NS:
            on = graph_us_per_launch(lambda: launch(True, ns), LAUNCHES, REPS)
            tail = on if ns == 0 else tail
            res["rows"].append({"n": n, "programs": grid[0], "off_us": round(off, 4), "request_ns": ns,
                                "zero_us": round(tail, 4), "on_us": round(on, 4),
                                "added_ns": round((on - tail) * 1000, 1),
                                "gain": round((on - tail) * 1000 / ns, 3) if ns else None})
    lines = [f"# The planted delay's accuracy ({res['date_utc'][:10]})", "",
             f"{res['device']}, driver {res['driver']}, torch {res['torch']}, triton {res['triton']}; SM clock {res['sm_clock_ghz']} GHz "
             "(measured). Per launch, median of 21 CUDA-graph replays of 200 launches.", "",
             "| kernel | programs | compiled out (µs) | spin 0 (µs) | spin per program (ns) | added per launch (ns) | gain |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in res["rows"]:
        if r["request_ns"]:
            lines.append(f"| add {r['n']} | {r['programs']} | {r['off_us']} | {r['zero_us']} | {r['request_ns']} | "
                         f"{r['added_ns']} | {r['gain']} |")
    write_results(out, "planted_delay", res, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
