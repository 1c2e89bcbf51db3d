"""Why do kernels under ~4 µs run at two speeds? A probe of the candidate mechanisms.

Each scenario is a fresh process that takes "probe rounds" back to back and records, per
round: NVML clocks, power, temperature, P-state and clock-event reasons; the per-launch
time of a 500-node CUDA graph of a 4,096-element add, on buffers allocated fresh for the
round (as the harness does: cache emptied, a random block held, new inputs, new capture)
and on buffers kept for the whole process, after blockers of 10 µs to 5 ms; the per-launch
time of graphs of an empty spin kernel and of a 20,000-cycle spin (their difference gives
the SM clock the graph ran at, from the GPU's own cycle counter); and how long the host
takes to submit the graph. Scenarios perturb one thing part-way (a Triton JIT compile, an
8 GiB allocation, a 1 s busy kernel, a 3 s idle, an nvidia-smi call, a second CUDA
context, eager module loading, the harness's own rounds in between) to see which one, if
any, moves a process from one level to the other.

    python bench/two_speeds_probe.py OUT_DIR [--reps 2] [--rounds 120] [--budget-s 420]
    python bench/two_speeds_probe.py OUT_DIR --graphs [--reps 3]   # the graph-count variants

Needs a CUDA GPU, torch and nvidia-ml-py. Writes OUT_DIR/two_speeds_raw.jsonl (one line
a round) and OUT_DIR/two_speeds_env.json.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

SCENARIOS = ("steady", "gapped", "harness", "triton_at_20", "malloc_at_20", "busy_at_20",
             "idle_at_20", "smi_at_20", "eager_loading", "sibling_context")
BLOCKERS = (20_000, 200_000, 2_000_000, 10_000_000)  # cycles: ~10 µs, 100 µs, 1 ms, 5 ms
NODES = 500
SPIN = 20_000


def nvml_snapshot(pynvml, h) -> dict:
    def safe(fn, *a):
        try:
            return fn(h, *a)
        except pynvml.NVMLError:
            return None
    reasons = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
        pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
    return {"sm_mhz": safe(pynvml.nvmlDeviceGetClockInfo, pynvml.NVML_CLOCK_SM),
            "mem_mhz": safe(pynvml.nvmlDeviceGetClockInfo, pynvml.NVML_CLOCK_MEM),
            "power_mw": safe(pynvml.nvmlDeviceGetPowerUsage),
            "temp_c": safe(pynvml.nvmlDeviceGetTemperature, pynvml.NVML_TEMPERATURE_GPU),
            "pstate": safe(pynvml.nvmlDeviceGetPerformanceState),
            "reasons": safe(reasons)}


class Probe:
    def __init__(self, torch) -> None:
        self.torch = torch
        self.x = torch.randn(4096, device="cuda")
        self.y = torch.empty_like(self.x)
        self.fixed = self._capture(lambda: torch.add(self.x, 1, out=self.y), NODES)
        self.spin0 = self._capture(lambda: torch.cuda._sleep(0), NODES)
        self.spin = self._capture(lambda: torch.cuda._sleep(SPIN), 50)
        self.rng = random.Random(1)
        self.extra: dict = {}

    def _capture(self, fn, n):
        torch = self.torch
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            fn()
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(n):
                fn()
        g.replay()
        torch.cuda.synchronize()
        return g

    def per_launch(self, g, n, blocker=200_000, reps=5) -> float:
        torch = self.torch
        ts = []
        for _ in range(reps):
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(blocker)
            a.record()
            g.replay()
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b) * 1e3 / n)
        return sorted(ts)[reps // 2]

    def host_submit_us(self) -> float:
        torch = self.torch
        ts = []
        for _ in range(3):
            torch.cuda._sleep(20_000_000)  # ~10 ms: the GPU is busy while the host submits
            t0 = time.perf_counter()
            self.fixed.replay()
            ts.append((time.perf_counter() - t0) * 1e6)
            torch.cuda.synchronize()
        return sorted(ts)[1]

    def round(self) -> dict:
        torch = self.torch
        torch.cuda.empty_cache()
        block = torch.empty(self.rng.randint(512, 32 << 20), dtype=torch.uint8, device="cuda")
        x = torch.randn(4096, device="cuda")
        y = torch.empty_like(x)
        fresh = self._capture(lambda: torch.add(x, 1, out=y), NODES)
        out = {"fresh_ptr": x.data_ptr(),
               "fresh_us": {str(b): self.per_launch(fresh, NODES, b, 5 if b == 200_000 else 3)
                            for b in BLOCKERS},
               "fixed_us": self.per_launch(self.fixed, NODES),
               "spin0_us": self.per_launch(self.spin0, NODES, reps=3),
               "spin_us": self.per_launch(self.spin, 50, reps=3)}
        out["graph_sm_mhz"] = SPIN / (out["spin_us"] - out["spin0_us"])
        out["host_submit_us"] = self.host_submit_us()
        for name, (g, n) in self.extra.items():
            out[name] = self.per_launch(g, n)
        del fresh, block
        return out


def triton_add_graph(probe: Probe):
    import triton
    import triton.language as tl

    @triton.jit
    def add_one(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)

    x, y = probe.x, probe.y
    return probe._capture(lambda: add_one[(4,)](x, y, 4096, BLOCK=1024), NODES)


def perturb(name: str, torch, probe: Probe) -> None:
    if name == "triton_at_20":
        probe.extra["triton_fixed_us"] = (triton_add_graph(probe), NODES)
    elif name == "malloc_at_20":
        big = torch.empty(8 << 30, dtype=torch.uint8, device="cuda")
        big.zero_()
        del big
        torch.cuda.empty_cache()
    elif name == "busy_at_20":
        torch.cuda._sleep(2_000_000_000)  # ~1 s of one spinning thread
        torch.cuda.synchronize()
    elif name == "idle_at_20":
        time.sleep(3)
    elif name == "smi_at_20":
        subprocess.run(["nvidia-smi"], capture_output=True, check=False)


def harness_round(state: dict, torch) -> list[float]:
    """One round of the harness's own RowMeasurer on a torch add (made fresh per round)."""
    if "m" not in state:
        from tritongate.harness.device import CudaDevice
        from tritongate.harness.measure import RowMeasurer

        def make_fn():
            x = torch.randn(4096, device="cuda")
            y = torch.empty_like(x)
            return lambda: torch.add(x, 1, out=y)
        state["m"] = RowMeasurer(make_fn, device=CudaDevice(0))
        state["m"].warm_up()
        state["k"] = state["m"].launches_per_sample
    return state["m"].measure_round()


def child(scenario: str, rounds: int, rep: int) -> None:
    t_start = time.monotonic()
    import pynvml
    import torch

    torch.cuda.init()
    x0 = torch.zeros(1, device="cuda")
    del x0
    t0 = time.monotonic()
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    probe = Probe(torch)
    hstate: dict = {}
    for r in range(rounds):
        if r == 20:
            perturb(scenario, torch, probe)
        if scenario == "gapped":
            time.sleep(0.03)
        line = {"scenario": scenario, "rep": rep, "round": r, "pid": os.getpid(),
                "t_s": round(time.monotonic() - t0, 4), "import_s": round(t0 - t_start, 3),
                "nvml_before": nvml_snapshot(pynvml, h)}
        if scenario == "harness":
            line["harness_us"] = harness_round(hstate, torch)
            line["harness_k"] = hstate["k"]
        line.update(probe.round())
        line["nvml_after"] = nvml_snapshot(pynvml, h)
        print(json.dumps(line), flush=True)


GRAPH_VARIANTS = ("one_then_more", "small_first", "fresh_each", "spin_first", "ladder_100",
                  "ladder_10", "one_big", "primed", "primed_serial")


def graph_child(variant: str) -> None:
    """Is the level a matter of how many graphs a process holds? The first graph measured
    alone, then beside others, then alone again; one line a step."""
    import torch

    torch.zeros(1, device="cuda")
    probe = Probe.__new__(Probe)
    probe.torch = torch
    t0 = time.monotonic()

    def add_graph(n=NODES):
        x = torch.randn(4096, device="cuda")
        y = torch.empty_like(x)
        return probe._capture(lambda: torch.add(x, 1, out=y), n), (x, y)

    def step(name, g, n, times=5):
        for _ in range(times):
            print(json.dumps({"variant": variant, "pid": os.getpid(), "step": name,
                              "t_s": round(time.monotonic() - t0, 4),
                              "us": probe.per_launch(g, n, reps=5)}), flush=True)

    if variant == "fresh_each":  # the harness's way: one graph alive at a time, new every round
        for r in range(30):
            g, keep = add_graph()
            step(f"round{r:02d}", g, NODES, times=1)
            del g, keep
        return
    if variant.startswith("ladder_"):  # the first graph measured after each new graph of n nodes
        n = int(variant.split("_")[1])
        a, keep_a = add_graph(100)
        step("A_alone", a, 100, 3)
        more = []
        for i in range(40):
            more.append(add_graph(n))
            step(f"after_{i + 1:02d}_more", a, 100, 1)
        return
    if variant == "one_big":  # one graph of 3,000 nodes, the first of the process
        a, keep_a = add_graph(3000)
        step("big_alone", a, 3000, 5)
        return
    if variant in ("primed", "primed_serial"):  # 8 graphs of 500 empty nodes made and dropped first
        if variant == "primed":  # all 8 alive at once
            primer = [probe._capture(lambda: torch.cuda._sleep(0), NODES) for _ in range(8)]
            del primer
        else:  # each dropped before the next is made
            for _ in range(8):
                probe._capture(lambda: torch.cuda._sleep(0), NODES)
        for r in range(10):
            g, keep = add_graph()
            step(f"round{r:02d}", g, NODES, times=1)
            del g, keep
        return
    if variant == "spin_first":
        s0 = probe._capture(lambda: torch.cuda._sleep(0), NODES)
        step("spin0_alone", s0, NODES, 10)
        a, keep_a = add_graph()
        step("A_beside_spin0", a, NODES)
        step("spin0_beside_A", s0, NODES)
        return
    n_a = 100 if variant == "small_first" else NODES
    a, keep_a = add_graph(n_a)
    step("A_alone", a, n_a, 10)
    b, keep_b = add_graph()
    step("A_beside_B", a, n_a)
    step("B", b, NODES)
    del b, keep_b
    step("A_after_del_B", a, n_a)
    more = [add_graph() for _ in range(8)]
    step("A_beside_8", a, n_a)
    del more
    step("A_after_del_8", a, n_a)
    time.sleep(2)
    step("A_after_2s_idle", a, n_a)


def environment() -> dict:
    import pynvml
    import torch
    import triton

    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    def s(v):
        return v.decode() if isinstance(v, bytes) else v
    info = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "gpu": s(pynvml.nvmlDeviceGetName(h)), "uuid": s(pynvml.nvmlDeviceGetUUID(h)),
            "driver": s(pynvml.nvmlSystemGetDriverVersion()), "torch": torch.__version__,
            "cuda": torch.version.cuda, "triton": triton.__version__,
            "python": sys.version.split()[0], "nproc": os.cpu_count()}
    for name, fn in (("max_sm_mhz", lambda: pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM)),
                     ("app_sm_mhz", lambda: pynvml.nvmlDeviceGetApplicationsClock(h, pynvml.NVML_CLOCK_SM)),
                     ("persistence", lambda: pynvml.nvmlDeviceGetPersistenceMode(h)),
                     ("power_limit_mw", lambda: pynvml.nvmlDeviceGetPowerManagementLimit(h)),
                     ("compute_mode", lambda: pynvml.nvmlDeviceGetComputeMode(h)),
                     ("other_processes", lambda: len(pynvml.nvmlDeviceGetComputeRunningProcesses(h)))):
        try:
            info[name] = fn()
        except pynvml.NVMLError as exc:
            info[name] = f"unavailable: {exc}"
    return info


def driver(out: Path, reps: int, rounds: int, budget_s: float) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "two_speeds_env.json").write_text(json.dumps(environment(), indent=1))
    deadline = time.monotonic() + budget_s
    with open(out / "two_speeds_raw.jsonl", "w") as raw:
        for rep in range(reps):
            for scenario in SCENARIOS:
                if time.monotonic() > deadline:
                    print(f"budget spent before {scenario} rep {rep}", flush=True)
                    return
                env = dict(os.environ)
                sibling = None
                if scenario == "eager_loading":
                    env["CUDA_MODULE_LOADING"] = "EAGER"
                if scenario == "sibling_context":
                    sibling = subprocess.Popen([sys.executable, "-c", "import torch,time;"
                                                "torch.zeros(1,device='cuda');time.sleep(600)"])
                    time.sleep(5)
                t = time.monotonic()
                proc = subprocess.run([sys.executable, __file__, "--child", scenario,
                                       "--rounds", str(rounds), "--rep", str(rep)],
                                      env=env, capture_output=True, text=True, timeout=180)
                if sibling is not None:
                    sibling.kill()
                raw.write(proc.stdout)
                raw.flush()
                lines = proc.stdout.splitlines()
                last = json.loads(lines[-1]) if lines else {}
                print(f"{scenario} rep {rep}: rc={proc.returncode} {len(lines)} rounds "
                      f"{time.monotonic() - t:.1f} s; first fresh "
                      f"{json.loads(lines[0])['fresh_us']['200000'] if lines else '-'} last "
                      f"{last.get('fresh_us', {}).get('200000', '-')}", flush=True)
                if proc.returncode:
                    print(proc.stderr[-2000:], flush=True)


def graphs_driver(out: Path, reps: int, only: tuple[str, ...] = GRAPH_VARIANTS) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "two_speeds_graphs.jsonl", "w") as raw:
        for rep in range(reps):
            for variant in only:
                proc = subprocess.run([sys.executable, __file__, "--child", variant],
                                      capture_output=True, text=True, timeout=120)
                raw.write(proc.stdout)
                steps: dict = {}
                for line in proc.stdout.splitlines():
                    d = json.loads(line)
                    steps.setdefault(d["step"], []).append(d["us"])
                print(variant, rep, proc.returncode, {k: round(sorted(v)[len(v) // 2], 3)
                                                      for k, v in steps.items()}, flush=True)
                if proc.returncode:
                    print(proc.stderr[-2000:], flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", nargs="?", type=Path)
    p.add_argument("--child")
    p.add_argument("--graphs", action="store_true", help="the graph-count variants instead")
    p.add_argument("--only", default=",".join(GRAPH_VARIANTS), help="these graph variants")
    p.add_argument("--rounds", type=int, default=120)
    p.add_argument("--rep", type=int, default=0)
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--budget-s", type=float, default=420)
    a = p.parse_args()
    if a.child and a.child in GRAPH_VARIANTS:
        graph_child(a.child)
    elif a.child:
        child(a.child, a.rounds, a.rep)
    elif a.graphs:
        graphs_driver(a.out, a.reps, tuple(a.only.split(",")))
    else:
        driver(a.out, a.reps, a.rounds, a.budget_s)


if __name__ == "__main__":
    main()
