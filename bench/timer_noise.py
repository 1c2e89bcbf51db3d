"""Timer noise and A/A false alarms of tritongate's own harness, on a real GPU.

Part 1 - timers: for each kernel and each timer (cuda-graph, cuda-events, host-wall),
measure the row 10 times in one process (5 rounds x 5 samples each, placement shifted
every round) and report the spread of the 10 medians: (max - min) / median.

Part 2 - A/A by two processes: two persistent worker processes measure the same row in
alternating rounds (A B, B A, ...), k chosen by A and reused by B, 10 repetitions per
kernel; the IQR-overlap rule (with a 1% minimum effect, and without one for contrast)
must call nothing different. Run once with the placement shift on (the default) and once
with it off, to show what the shift buys.

    python bench/timer_noise.py --out DIR        # writes timer_noise.json and .md
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tritongate.harness import MeasureConfig, RowMeasurer, TimerKind, compare, measure
from tritongate.stats import Change

# A/A placement modes: the default (shift + fresh segments every round) and what each
# part buys. "none" still builds fresh inputs and a fresh graph every round.
AA_MODES = {
    "shift+fresh": dict(shift_placement=True, fresh_segments=True),
    "shift": dict(shift_placement=True, fresh_segments=False),
    "none": dict(shift_placement=False, fresh_segments=False),
    "shift+fresh 10x5": dict(shift_placement=True, fresh_segments=True, rounds=10),
}
KERNELS = ["add_4096", "add_1048576", "softmax_4096x4096", "matmul_4096x4096x4096"]
TIMERS = [TimerKind.CUDA_GRAPH, TimerKind.CUDA_EVENTS, TimerKind.HOST_WALL]


def make_fn_factory(name: str):
    import torch

    from tritongate.ops.kernels import elementwise, matmul, reduction

    def gen():
        return torch.Generator(device="cuda").manual_seed(1234)

    if name.startswith("add_"):
        n = int(name.split("_")[1])

        def make():
            g = gen()
            x = torch.randn(n, device="cuda", generator=g)
            y = torch.randn(n, device="cuda", generator=g)
            out = torch.empty_like(x)
            return lambda: elementwise.add(x, y, out, autotuned=False)
    elif name.startswith("softmax_"):
        rows, cols = map(int, name.split("_")[1].split("x"))

        def make():
            x = torch.randn(rows, cols, device="cuda", generator=gen())
            out = torch.empty_like(x)
            return lambda: reduction.softmax(x, out)
    elif name.startswith("matmul_"):
        m, n, k = map(int, name.split("_")[1].split("x"))

        def make():
            g = gen()
            a = torch.randn(m, k, device="cuda", dtype=torch.float16, generator=g)
            b = torch.randn(k, n, device="cuda", dtype=torch.float16, generator=g)
            c = torch.empty(m, n, device="cuda", dtype=torch.float16)
            return lambda: matmul.matmul(a, b, c, autotuned=False)
    else:
        raise ValueError(name)
    return make


# -- worker process ------------------------------------------------------------------------
def worker() -> None:
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything else printed goes to stderr, never into the protocol
    from tritongate.harness.device import CudaDevice

    device = CudaDevice(0)
    side = None
    for line in sys.stdin:
        req = json.loads(line)
        if req["cmd"] == "setup":
            cfg = MeasureConfig(**AA_MODES[req["mode"]])
            side = RowMeasurer(make_fn_factory(req["kernel"]), device=device, config=cfg,
                               launches_per_sample=req.get("k"))
            side.warm_up()
            reply = {"k": side.launches_per_sample, "timer": side.timer.value}
        elif req["cmd"] == "round":
            reply = {"samples": side.measure_round()}
        elif req["cmd"] == "result":
            m = side.result()
            reply = {"timer": m.timer.value, "markers": list(m.markers), "k": m.launches_per_sample}
        elif req["cmd"] == "exit":
            break
        else:
            reply = {"error": f"unknown {req}"}
        proto.write(json.dumps(reply) + "\n")


class Worker:
    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, __file__, "--worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)

    def ask(self, **req):
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("worker died")
        return json.loads(line)

    def close(self) -> None:
        try:
            self.ask(cmd="exit")
        except Exception:  # noqa: BLE001 - the worker may already be gone: it is waited for below
            pass
        self.proc.wait(timeout=30)


# -- driver --------------------------------------------------------------------------------
def spread(medians):
    return (max(medians) - min(medians)) / statistics.median(medians)


def part_timers(repeats: int, log):
    from tritongate.harness.device import CudaDevice

    device = CudaDevice(0)
    out = {}
    for kernel in KERNELS:
        make = make_fn_factory(kernel)
        for timer in TIMERS:
            t0 = time.time()
            ms = [measure(make, device=device, timer=timer) for _ in range(repeats)]
            medians = [m.summary.median for m in ms]
            rec = {
                "medians_us": medians,
                "median_us": statistics.median(medians),
                "spread": spread(medians),
                "rel_iqr_median": statistics.median(m.summary.rel_iqr for m in ms),
                "k": [m.launches_per_sample for m in ms],
                "markers": sorted({mk for m in ms for mk in m.markers}),
                "timer_used": sorted({m.timer.value for m in ms}),
                "wall_s": time.time() - t0,
            }
            out[f"{kernel}/{timer.value}"] = rec
            log(f"{kernel:24s} {timer.value:12s} median {rec['median_us']:9.3f} us  "
                f"spread {rec['spread']:7.3%}  relIQR {rec['rel_iqr_median']:6.3%}  k={rec['k'][0]}")
    return out


def part_aa(repeats: int, default_rounds: int, log):
    a, b = Worker(), Worker()
    out = {}
    try:
        for mode, overrides in AA_MODES.items():
            rounds = overrides.get("rounds", default_rounds)
            for kernel in KERNELS:
                reps = []
                for rep in range(repeats):
                    k = a.ask(cmd="setup", kernel=kernel, mode=mode)["k"]
                    b.ask(cmd="setup", kernel=kernel, mode=mode, k=k)
                    sa, sb = [], []
                    for r in range(rounds):
                        order = [(a, sa), (b, sb)] if r % 2 == 0 else [(b, sb), (a, sa)]
                        for w, acc in order:
                            acc.extend(w.ask(cmd="round")["samples"])
                    ra, rb = a.ask(cmd="result"), b.ask(cmd="result")
                    c1 = compare(sa, sb, min_effect=0.01)
                    c0 = compare(sa, sb)
                    reps.append({"k": k, "ratio": c0.speedup, "verdict_min1": c1.change.value,
                                 "verdict_nomin": c0.change.value,
                                 "rel_iqr_a": c0.base.rel_iqr, "rel_iqr_b": c0.new.rel_iqr,
                                 "markers": ra["markers"] + rb["markers"]})
                false_min1 = sum(r["verdict_min1"] != Change.WITHIN_NOISE.value for r in reps)
                false_nomin = sum(r["verdict_nomin"] != Change.WITHIN_NOISE.value for r in reps)
                rec = {"reps": reps, "false_min1": false_min1, "false_nomin": false_nomin,
                       "median_ratio": statistics.median(r["ratio"] for r in reps)}
                key = f"{kernel}/{mode}"
                out[key] = rec
                log(f"A/A {key:34s} false(min 1%) {false_min1}/{repeats}  false(no min) "
                    f"{false_nomin}/{repeats}  median ratio {rec['median_ratio']:.4f}")
    finally:
        a.close()
        b.close()
    return out


def burn_in(seconds: float = 2.0) -> None:
    """Bring clocks up from idle (345 MHz on an idle H200) before the first number."""
    import torch

    a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    t0 = time.time()
    while time.time() - t0 < seconds:
        for _ in range(20):
            a @ a
        torch.cuda.synchronize()


def identity():
    import torch
    import triton

    from tritongate.harness.gpu_state import read_gpu_state

    try:
        state = read_gpu_state(0).to_dict()
    except Exception as exc:  # noqa: BLE001 - recorded, not fatal for a benchmark
        state = {"error": str(exc)}
    return {
        "date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "gpu": torch.cuda.get_device_name(0), "gpu_state": state,
        "torch": torch.__version__, "cuda": torch.version.cuda, "triton": triton.__version__,
        "python": platform.python_version(), "host": platform.node(),
    }


def to_markdown(doc) -> str:
    ident = doc["identity"]
    lines = [
        "# Timer noise and A/A false alarms (tritongate harness)", "",
        f"{ident['date_utc']} · {ident['gpu']} · driver {ident['gpu_state'].get('driver', '?')} · "
        f"torch {ident['torch']} (CUDA {ident['cuda']}) · triton {ident['triton']}", "",
        f"Each measurement: {doc['config']['rounds']} rounds × {doc['config']['samples_per_round']} samples, "
        "placement shifted every round; graph samples are one replay of k launches / k.", "",
        "## 1. Spread of 10 repeated medians, per timer (one process)", "",
        "| kernel | timer | median µs | spread of 10 medians | median rel. IQR | k |",
        "|---|---|---|---|---|---|",
    ]
    for key, r in doc["timers"].items():
        kernel, timer = key.split("/")
        lines.append(f"| {kernel} | {timer} | {r['median_us']:.3f} | {r['spread']:.2%} | "
                     f"{r['rel_iqr_median']:.2%} | {r['k'][0]} |")
    lines += ["", "## 2. A/A pairs by two worker processes, alternating rounds (10 repetitions)", "",
              "Placement modes: *shift+fresh* (default) = cached memory handed back to the driver and a "
              "random-size block (512 B–32 MiB) held before each round's fresh inputs; *shift* = the block only; "
              "*none* = fresh inputs and graph only; *10x5* = default with 10 rounds a side.", "",
              "| kernel | placement | false verdicts, min effect 1% | false verdicts, no minimum | median A/B ratio |",
              "|---|---|---|---|---|"]
    for key, r in doc["aa"].items():
        kernel, mode = key.split("/")
        lines.append(f"| {kernel} | {mode} | {r['false_min1']}/{len(r['reps'])} | "
                     f"{r['false_nomin']}/{len(r['reps'])} | {r['median_ratio']:.4f} |")
    lines += ["", f"Wall time: {doc['wall_s']:.0f} s.", ""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, help="directory for timer_noise.json/.md")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker()
    t0 = time.time()
    log = lambda s: print(s, flush=True)  # noqa: E731
    cfg = MeasureConfig()
    doc = {"identity": identity(), "config": {"rounds": cfg.rounds, "samples_per_round": cfg.samples_per_round,
                                              "target_sample_s": cfg.target_sample_s}}
    burn_in()
    doc["timers"] = part_timers(args.repeats, log)
    doc["aa"] = part_aa(args.repeats, cfg.rounds, log)
    doc["wall_s"] = time.time() - t0
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "timer_noise.json").write_text(json.dumps(doc, indent=1))
    (args.out / "timer_noise.md").write_text(to_markdown(doc))
    print(to_markdown(doc))


if __name__ == "__main__":
    main()
