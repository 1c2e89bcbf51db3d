"""Does a paired round stop seeing memory placement when both workers read the same inputs?

Two worker processes (A and B, the same build) time the builtin matmul (its fixed config) in
alternating rounds, as a paired run does. Every round A hands its memory back to the driver,
holds a block of random size and builds fresh inputs (the harness's placement shift). In the
``own`` variant B does the same with its own memory; in ``shared-A`` B reads A's inputs, opened
through CUDA IPC (torch.multiprocessing), so both sides of a pair read the same physical pages;
``shared-B`` is the same with the roles swapped (does the side that opens the memory run slower?);
``self``: A times twice on its one set of inputs, as its own pair (what is left of a round's
time when nothing differs but the moment: the floor any pairing can reach).
Per variant: the spread of the pairs' log ratios (what the paired rule's floor and IQR gap
grow with) and each side's spread of round medians. The variants alternate round by round.

    python bench/shared_inputs.py --out DIR [--shape 16,4096,4096] [--dtype float16] [--rounds 100]
        [--config '{"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_stages": 4, "num_warps": 4}']

``--config`` times the config a record chose (its ``autotune.kernels[].config``) instead of the
builtin fixed one; placement matters per config, so time the one the gate replays.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchlib import graph_us_per_launch, software, software_line, write_results

VARIANTS = ("own", "shared-A", "shared-B", "self")


def worker(name: str, commands, answers, to_peer, from_peer, shape: tuple[int, int, int], dtype_name: str,
           config: dict, launches: int, samples: int, seed: int) -> None:
    """Answers one command at a time: alloc, recv (the peer's inputs), time, release, stop."""
    import random

    import torch

    from tritongate.ops.kernels import matmul as mm_k

    torch.cuda.init()
    dtype = getattr(torch, dtype_name)
    m, n, k = shape
    rng = random.Random(seed)
    held: dict[str, object] = {}
    while True:
        cmd, arg = commands.get()
        if cmd == "stop":
            answers.put(("ok", None))
            return
        if cmd == "alloc":  # the harness's placement shift: memory back, a random block, fresh inputs
            held.clear()
            torch.cuda.empty_cache()
            block = torch.empty(rng.randint(512, 32 << 20), dtype=torch.uint8, device="cuda")
            gen = torch.Generator(device="cuda").manual_seed(int(arg["round"]))
            a = (torch.randn((m, k), generator=gen, device="cuda") / k ** 0.25).to(dtype)
            b = (torch.randn((k, n), generator=gen, device="cuda") / k ** 0.25).to(dtype)
            held.update(block=block, a=a, b=b)
            if arg.get("share"):
                to_peer.put((a, b))
            answers.put(("ok", None))
        elif cmd == "recv":  # the peer's inputs, the same physical memory
            held.clear()
            a, b = from_peer.get()
            held.update(a=a, b=b)
            answers.put(("ok", None))
        elif cmd == "time":  # a fresh graph of k launches, `samples` replays: median µs per launch
            a, b = held["a"], held["b"]
            c = torch.empty((m, n), dtype=dtype, device="cuda")

            grid = mm_k._grid(m, n)(config)

            def fn() -> None:
                mm_k.matmul_kernel_fixed[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0),
                                               b.stride(1), c.stride(0), c.stride(1), **config,
                                               **mm_k.plant_kwargs(None))

            answers.put(("ok", graph_us_per_launch(fn, launches, samples)))
            del c
        elif cmd == "release":
            held.clear()
            torch.cuda.synchronize()
            answers.put(("ok", None))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--shape", default="16,4096,4096")
    ap.add_argument("--dtype", default="float16")
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--launches", type=int, default=50)
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--config", default=None, help="kernel config as JSON (default: the builtin fixed config)")
    args = ap.parse_args()
    from tritongate.ops.kernels import matmul as mm_k

    config = json.loads(args.config) if args.config else dict(mm_k.FIXED_CONFIG)
    config_name = "fixed config" if not args.config else "config " + " ".join(f"{k}={v}" for k, v in config.items())
    import torch.multiprocessing as mp

    shape = tuple(int(d) for d in args.shape.split(","))
    ctx = mp.get_context("spawn")
    a_to_b, b_to_a = ctx.Queue(), ctx.Queue()
    sides = {}
    for i, name in enumerate(("A", "B")):
        commands, answers = ctx.Queue(), ctx.Queue()
        proc = ctx.Process(target=worker, args=(name, commands, answers, a_to_b if name == "A" else b_to_a,
                                                b_to_a if name == "A" else a_to_b, shape, args.dtype,
                                                config, args.launches, args.samples, 1000 + i), daemon=True)
        proc.start()
        sides[name] = (commands, answers, proc)

    def ask(name: str, cmd: str, arg: dict | None = None):
        commands, answers, _ = sides[name]
        commands.put((cmd, arg or {}))
        _status, value = answers.get(timeout=600)
        return value

    t0 = time.perf_counter()
    medians: dict[str, dict[str, list[float]]] = {v: {"A": [], "B": []} for v in VARIANTS}
    for r in range(args.rounds):
        for variant in (VARIANTS if r % 2 == 0 else VARIANTS[::-1]):
            if variant == "self":
                ask("A", "alloc", {"round": r})
                for name in ("A", "B"):
                    medians[variant][name].append(ask("A", "time"))
                ask("A", "release")
                continue
            if variant == "own":
                ask("A", "alloc", {"round": r})
                ask("B", "alloc", {"round": r})
            else:
                owner, opener = ("A", "B") if variant == "shared-A" else ("B", "A")
                ask(owner, "alloc", {"round": r, "share": True})
                ask(opener, "recv")
            for name in (("A", "B") if r % 2 == 0 else ("B", "A")):
                medians[variant][name].append(ask(name, "time"))
            for name in (("A", "B") if variant == "shared-B" else ("B", "A")):  # the opener lets go first
                ask(name, "release")
    for name in sides:
        ask(name, "stop")
    wall = time.perf_counter() - t0

    def sd_pct(values: list[float]) -> float:
        return 100 * statistics.stdev(values)

    doc = {"date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "software": software(),
           "shape": list(shape), "dtype": args.dtype, "rounds": args.rounds, "launches": args.launches,
           "samples": args.samples, "config": config, "wall_s": wall, "variants": {}}
    lines = [f"# Paired rounds on the same inputs ({doc['date_utc'][:10]})", "", software_line(doc["software"]) + ".",
             "", f"matmul {args.shape} {args.dtype} ({config_name}), {args.rounds} rounds per variant, "
             f"{args.launches} launches per sample, {args.samples} samples per round; {wall:.0f} s.", "",
             "| variant | median µs A / B | round SD % A / B | paired log ratio SD % | mean log ratio % |",
             "|---|---|---|---|---|"]
    for variant in VARIANTS:
        a, b = medians[variant]["A"], medians[variant]["B"]
        ratios = [math.log(y) - math.log(x) for x, y in zip(a, b)]
        got = {"median_us": [statistics.median(a), statistics.median(b)],
               "round_sd_pct": [sd_pct([math.log(x) for x in a]), sd_pct([math.log(x) for x in b])],
               "paired_sd_pct": sd_pct(ratios), "mean_ratio_pct": 100 * statistics.fmean(ratios),
               "round_medians_us": {"A": a, "B": b}}
        doc["variants"][variant] = got
        lines.append(f"| {variant} | {got['median_us'][0]:.3f} / {got['median_us'][1]:.3f} | "
                     f"{got['round_sd_pct'][0]:.2f} / {got['round_sd_pct'][1]:.2f} | {got['paired_sd_pct']:.2f} | "
                     f"{got['mean_ratio_pct']:+.2f} |")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_results(out, "shared_inputs", doc, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
