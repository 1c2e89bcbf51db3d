"""Where a planted spin sits in a matmul, and what it adds (GPU only).

The calibration plants a slowdown as a spin every program runs after its own work
(``tritongate/ops/kernels/planted.py``). On large matmuls that spin is absorbed or added in
jumps: on an H100 spins of 210 ns to 4.4 µs added -0.05 % to +7.55 % to matmul
8192x1024x4096 bfloat16, so no spin planted 1 % there (``2026-12-06_h100l_pr_calibration.md``).
This probe times the builtin matmul's own code with the spin in three places, on the rows
that could not be planted:

  every-after   every program spins after its store (what the calibration ships)
  every-before  every program spins before its first load
  last-only     only the last program of the grid spins, after its store

For each placement and spin (ns at the rated clock), the median µs a launch over CUDA-graph
samples, placements and spins interleaved round by round so drift is shared, and the effect
against the same placement's spin 0 (compiled in, spinning 0 cycles). Writes OUT/probe.json
(every sample) and OUT/probe.md.

    python bench/plant_placement_probe.py --out DIR [--rounds 5] [--samples 6]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch
import triton
import triton.language as tl
from benchlib import graph_sample_us, launch_graph

from tritongate.ops.kernels.planted import peak_clock_ghz, planted_spin

ROWS = [(16, 4096, 4096), (4096, 4096, 4096), (8192, 1024, 4096)]
DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}
CONFIGS = [dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, num_stages=3, num_warps=8),
           dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_stages=4, num_warps=4)]
PLACEMENTS = {"every-after": 0, "every-before": 1, "last-only": 2}
SPINS_NS = [0, 50, 100, 200, 400, 800, 1600, 3200, 6400]


@triton.jit
def _matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
            plant_cycles, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
            GROUP_M: tl.constexpr, WHERE: tl.constexpr):
    # tritongate.ops.kernels.matmul.matmul_kernel_fixed, the spin placed by WHERE
    pid = tl.program_id(0)
    if WHERE == 1:
        planted_spin(plant_cycles)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_pid_n
    first_m = (pid // group) * GROUP_M
    group_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % group) % group_m)
    pid_n = (pid % group) // group_m
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(c_ptr.dtype.element_ty)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn, c, mask=mask)
    if WHERE == 0:
        planted_spin(plant_cycles)
    if WHERE == 2:
        if pid == tl.num_programs(0) - 1:
            planted_spin(plant_cycles)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--samples", type=int, default=6)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    ghz = peak_clock_ghz(torch.device("cuda"))
    found: list[dict] = []
    t0 = time.monotonic()
    for (M, N, K) in ROWS:
        for dname, dtype in DTYPES.items():
            a = torch.randn(M, K, device="cuda", dtype=dtype)
            b = torch.randn(K, N, device="cuda", dtype=dtype)
            c = torch.empty(M, N, device="cuda", dtype=dtype)
            for cfg in CONFIGS:
                meta = {k: v for k, v in cfg.items()}
                grid = (triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"]),)
                graphs = {}
                for where, code in PLACEMENTS.items():
                    for ns in SPINS_NS:
                        cycles = int(round(ns * ghz))

                        def fn(code=code, cycles=cycles):
                            _matmul[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                          c.stride(0), c.stride(1), cycles, WHERE=code, **meta)
                        fn()
                        torch.cuda.synchronize()
                        t = time.perf_counter()
                        fn()
                        torch.cuda.synchronize()
                        k = max(1, min(200, int(0.5e-3 / max(time.perf_counter() - t, 1e-6))))
                        graphs[(where, ns)] = (launch_graph(fn, k), k)
                samples: dict[tuple[str, int], list[float]] = {key: [] for key in graphs}
                for _ in range(args.rounds):
                    for key, (g, k) in graphs.items():
                        for _ in range(args.samples):
                            samples[key].append(graph_sample_us(g, k))
                for where in PLACEMENTS:
                    zero = statistics.median(samples[(where, 0)])
                    for ns in SPINS_NS:
                        med = statistics.median(samples[(where, ns)])
                        found.append(dict(shape=f"{M}x{N}x{K}", dtype=dname, block=f"{cfg['BLOCK_M']}x{cfg['BLOCK_N']}",
                                          grid=grid[0], where=where, spin_ns=ns, k=graphs[(where, ns)][1],
                                          median_us=med, effect=med / zero - 1, samples=samples[(where, ns)]))
                del graphs
            print(f"{M}x{N}x{K} {dname}: {time.monotonic() - t0:.0f} s", flush=True)
    props = torch.cuda.get_device_properties(0)
    doc = dict(gpu=props.name, uuid=str(getattr(props, "uuid", "")), rated_ghz=ghz, torch=torch.__version__,
               triton=triton.__version__, rounds=args.rounds, samples=args.samples, rows=found)
    (args.out / "probe.json").write_text(json.dumps(doc, indent=1))
    lines = ["| shape | dtype | block | where | " + " | ".join(f"{ns} ns" for ns in SPINS_NS[1:]) + " |",
             "|---|---|---|---|" + "---:|" * (len(SPINS_NS) - 1)]
    keyed: dict[tuple, dict[int, float]] = {}
    for r in found:
        keyed.setdefault((r["shape"], r["dtype"], r["block"], r["where"]), {})[r["spin_ns"]] = r["effect"]
    for (shape, dname, block, where), eff in keyed.items():
        lines.append(f"| {shape} | {dname} | {block} | {where} | "
                     + " | ".join(f"{eff[ns]:+.2%}" for ns in SPINS_NS[1:]) + " |")
    (args.out / "probe.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
