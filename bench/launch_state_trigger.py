"""What moves a process from the fast CUDA-graph launch state to the slow one?

Paired workers stay in the fast state (~0.82 µs a node of an empty-kernel graph on an H100)
while every recording process runs in the slow one (~0.99) from its first row's first timed
round (bench/results/2026-12-06_h100e_unprimed_cand.md). Between the two lie the first row's
live autotune sweep (cold or cached compiles, ``triton.testing.do_bench`` with its 256 MiB
cache-clearing memsets and event pairs) and the harness's own warm-up and sample sizing.

Each scenario is a fresh process that settles its state as the harness does
(``CudaDevice``: throwaway graphs, then the 64-node reference graph), then performs one kind
of action several times and after each reads the state twice: with the reference graph made
at start, and with a graph made just now (a graph made before a switch can keep reading the
old level until another graph is made). ``record`` runs the real ``tritongate run`` on the
first rows of the ``pr`` suite with readings before and after each stage of each row
(compile, autotune sweep, each ``do_bench``, warm-up, sample sizing, capture, rounds).

    python bench/launch_state_trigger.py OUT_DIR [--reps 2] [--scenarios a,b,...]

Writes OUT_DIR/trigger_raw.jsonl (one line a reading) and OUT_DIR/trigger_env.json;
``nvidia-smi`` samples clocks, P-state and power every 100 ms beside the children
(OUT_DIR/smi.csv). Needs a CUDA GPU, torch, Triton and this checkout's tritongate.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

TIMELINES = ("tight_reads", "sibling_before", "sibling_after", "gaps", "pingpong_work", "pingpong_idle",
             "pingpong_work_graphs", "alone_graphs", "count_graphs")
SCENARIOS = (*TIMELINES, "reads_only", "compile_cold", "compile_cached", "eager_launch", "events_sync",
             "zero_256mib", "do_bench", "fork_exec", "record", "replay")
STATE_NODES = 64


class Reader:
    """Reads the launch state of this process and appends one JSON line a reading."""

    def __init__(self, scenario: str, rep: int, out: Path) -> None:
        self.scenario, self.rep, self.out = scenario, rep, out
        self.device: Any = None
        self.t0 = time.time()
        self.seq = 0

    def attach(self, device: Any) -> None:
        self.device = device

    def _fresh_us(self) -> float:
        graph = self.device._empty_graph(STATE_NODES)
        times = sorted(self.device.time_events(graph.replay) for _ in range(3))
        return times[1] / STATE_NODES * 1e6

    def read(self, step: str, *, fresh: bool = True, **extra: Any) -> None:
        if self.device is None:
            return
        ref = self.device.launch_state_us()
        line = {"scenario": self.scenario, "rep": self.rep, "seq": self.seq, "step": step,
                "t_s": round(time.time() - self.t0, 4), "wall": time.time(),
                "ref_us": round(ref, 4), "fresh_us": round(self._fresh_us(), 4) if fresh else None,
                **extra}
        self.seq += 1
        with open(self.out, "a") as fh:
            fh.write(json.dumps(line) + "\n")


def _triton_kernel() -> Callable[..., Any]:
    import triton
    import triton.language as tl

    @triton.jit
    def add_one(x_ptr, y_ptr, n, BLOCK: tl.constexpr, SALT: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) + SALT, mask=mask)

    return add_one


def child(scenario: str, rep: int, out: Path, record_rows: int) -> None:
    import torch
    from tritongate.harness.device import CudaDevice

    reader = Reader(scenario, rep, out)
    if scenario in ("record", "replay"):
        return record_child(reader, record_rows, out.parent, replay=scenario == "replay")
    if scenario in TIMELINES:
        return timeline_child(reader, scenario)
    device = CudaDevice(0)
    reader.attach(device)
    reader.read("settled", graph_state=device.graph_state())
    x = torch.randn(1 << 12, device="cuda")
    y = torch.empty_like(x)
    reader.read("inputs")
    kernel = _triton_kernel() if scenario in ("compile_cold", "compile_cached", "eager_launch", "do_bench") else None
    warm = None
    if scenario in ("eager_launch", "do_bench", "compile_cached"):  # one compile first, then the action
        kernel[(4,)](x, y, x.numel(), BLOCK=1024, SALT=0)
        torch.cuda.synchronize()
        reader.read("first_compile")
        warm = lambda: kernel[(4,)](x, y, x.numel(), BLOCK=1024, SALT=0)  # noqa: E731
    for i in range(6):
        if scenario == "reads_only":
            pass
        elif scenario in ("compile_cold", "compile_cached"):
            # cold: a new SALT each time is a new compile (ptxas in a subprocess);
            # cached: the cache directory already holds it (the driver ran this once before)
            kernel[(4,)](x, y, x.numel(), BLOCK=1024, SALT=i + 1)
            torch.cuda.synchronize()
        elif scenario == "eager_launch":
            for _ in range(10 ** min(i, 4)):
                warm()
            torch.cuda.synchronize()
        elif scenario == "events_sync":
            for _ in range(200):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                torch.add(x, 1, out=y)
                b.record()
                b.synchronize()
                a.elapsed_time(b)
        elif scenario == "zero_256mib":
            buf = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
            for _ in range(100):
                buf.zero_()
            torch.cuda.synchronize()
            del buf
        elif scenario == "do_bench":
            import triton.testing

            triton.testing.do_bench(warm)
        elif scenario == "fork_exec":
            subprocess.run(["true"], check=True)
        reader.read(f"{scenario}_{i}")
    time.sleep(0.5)
    reader.read("after_idle_0.5s")


SIBLING = ("import sys, time, torch\n"
           "x = torch.zeros(1, device='cuda'); torch.cuda.synchronize()\n"
           "print('ready', flush=True); time.sleep(float(sys.argv[1]))\n")
# A sibling that works on request: "work" runs one small kernel and waits for it, "idle" does
# nothing; it answers each line (the other side's worker of a paired run, reduced)
PARTNER = ("import sys, torch\n"
           "x = torch.zeros(4096, device='cuda'); torch.cuda.synchronize()\n"
           "print('ready', flush=True)\n"
           "for line in sys.stdin:\n"
           "    if line.strip() == 'work':\n"
           "        x.add_(1); torch.cuda.synchronize()\n"
           "    print('done', flush=True)\n")


def _sibling(seconds: float) -> subprocess.Popen:
    """Another process holding a CUDA context on the GPU, idle (as the other side's workers
    of a paired run are while this side times a round)."""
    proc = subprocess.Popen([sys.executable, "-c", SIBLING, str(seconds)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def timeline_child(reader: Reader, scenario: str) -> None:
    """Readings every ~2 ms from the moment the harness has settled: when does a process
    switch, and does another process's context on the GPU move it?"""
    from tritongate.harness.device import CudaDevice

    if scenario == "count_graphs":
        return count_child(reader)
    if scenario in ("gaps", "alone_graphs") or scenario.startswith("pingpong"):
        return gaps_child(reader, scenario)
    sibling = _sibling(30) if scenario == "sibling_before" else None
    device = CudaDevice(0)
    reader.attach(device)
    reader.read("settled", graph_state=device.graph_state(), sibling=sibling is not None)

    def reads(seconds: float, label: str) -> None:
        end = time.time() + seconds
        while time.time() < end:  # a graph made now only every 25th reading: graphs made are a suspect too
            reader.read(label, fresh=reader.seq % 25 == 0, sibling=sibling is not None)
            time.sleep(0.002)
    reads(1.5, "alone" if sibling is None else "sibling")
    if scenario == "sibling_after":
        sibling = _sibling(30)
        reads(1.5, "sibling")
    if sibling is not None:
        sibling.kill()
        sibling.wait()
        sibling = None
        reads(1.5, "sibling_gone")


GAPS_MS = (0, 2, 10, 50, 200, 1000, 3000)


def count_child(reader: Reader) -> None:
    """Unprimed, from the start's window: graphs made one at a time and kept, the reference
    graph read after each one's capture (instantiation) and again after its first replay."""
    os.environ["TRITONGATE_GRAPH_PRIME"] = "0"
    from tritongate.harness.device import CudaDevice

    device = CudaDevice(0)
    reader.attach(device)
    reader.read("settled", fresh=False, graph_state=device.graph_state())
    kept = []
    for i in range(12):
        kept.append(device._empty_graph(8))
        for _ in range(3):
            reader.read("made", fresh=False, graph=i + 3)  # two graphs made while settling
        kept[-1].replay()
        device.synchronize()
        for _ in range(3):
            reader.read("replayed", fresh=False, graph=i + 3)


def gaps_child(reader: Reader, scenario: str) -> None:
    """``gaps``: does the GPU idling between readings (this process alone) bring the fast state
    back? ``pingpong_*``: another process alternates with this one, running a small kernel
    between two readings (``work``) or only answering (``idle``), as paired workers alternate."""
    from tritongate.harness.device import CudaDevice

    device = CudaDevice(0)
    reader.attach(device)
    reader.read("settled", graph_state=device.graph_state())
    if scenario == "alone_graphs":  # a graph made at every reading, as every round captures one
        for _ in range(300):
            reader.read("alone", fresh=True)
        return
    if scenario == "gaps":
        time.sleep(1.0)  # past the start's fast window
        for gap in GAPS_MS:
            for _ in range(6):
                time.sleep(gap / 1e3)
                reader.read("gap", fresh=False, gap_ms=gap)
        return
    partner = subprocess.Popen([sys.executable, "-c", PARTNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True)
    assert partner.stdin is not None and partner.stdout is not None
    assert partner.stdout.readline().strip() == "ready"
    time.sleep(1.0)
    for _ in range(2):  # the partner's start opened the window; a graph made now closes it
        reader.read("close_window", fresh=True)
    command = "idle" if scenario == "pingpong_idle" else "work"
    graphs = scenario.endswith("_graphs")  # a graph made at every reading
    for phase, what in (("alone", None), ("alternating", command), ("alone_again", None)):
        for _ in range(300):
            if what is not None:
                partner.stdin.write(what + "\n")
                partner.stdin.flush()
                partner.stdout.readline()
            reader.read(phase, fresh=graphs, partner=what)
    partner.stdin.close()
    partner.wait()


def record_child(reader: Reader, rows: int, out: Path, *, replay: bool) -> None:
    """The real record path on the first ``rows`` rows of ``pr``, read around each stage;
    ``replay``: the same rows replaying the last record's configs (no sweep), as a paired
    worker does."""
    import triton.testing
    from tritongate.autotune import session as session_mod
    from tritongate.cli import main
    import tritongate.runner as runner_mod

    device_mod = importlib.import_module("tritongate.harness.device")
    measure_mod = importlib.import_module("tritongate.harness.measure")

    def around(owner: Any, name: str, label: str, *, before: bool = True) -> None:
        original = getattr(owner, name)

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            if before:
                reader.read(f"{label}:before")
            result = original(*args, **kwargs)
            reader.read(f"{label}:after")
            return result
        setattr(owner, name, wrapped)

    init = device_mod.CudaDevice.__init__

    def attach_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        reader.attach(self)
        reader.read("device_settled", graph_state=self.graph_state())
    device_mod.CudaDevice.__init__ = attach_init
    around(runner_mod, "prepare_row", "prepare_row")
    around(runner_mod.Runner, "_gpu_state", "nvidia_smi")
    around(session_mod.AutotuneSession, "_tune_live", "autotune_sweep")
    around(triton.testing, "do_bench", "do_bench")
    around(measure_mod.RowMeasurer, "warm_up", "warm_up")
    around(measure_mod.RowMeasurer, "_choose_k", "choose_k")
    around(measure_mod.RowMeasurer, "_capture", "capture")
    around(measure_mod.RowMeasurer, "measure_round", "round", before=False)
    prepare = runner_mod.Runner.prepare

    def first_rows(self: Any) -> Any:  # the first rows only: the switch happens in the first
        planned, *rest = prepare(self)
        return (planned[:rows], *rest)
    runner_mod.Runner.prepare = first_rows
    argv = ["run", "--suite", os.environ.get("TRIGGER_SUITE", "pr"), "--out", str(out / ("replays" if replay else "records")), "--allow-busy-gpu"]
    if replay:
        runs = sorted((out / "records").glob("*_*"))
        if not runs:
            raise SystemExit("replay needs a record first: run the record scenario before it")
        argv += ["--replay-from", str(runs[-1])]
    print(f"tritongate run exit {main(argv)}", flush=True)


def environment() -> dict[str, Any]:
    import torch
    import triton

    def smi(query: str) -> str:
        try:
            return subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader", "-i", "0"],
                                  capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError) as exc:
            return f"error: {exc}"
    return {"date": time.strftime("%Y-%m-%d"), "gpu": smi("name,uuid,driver_version"),
            "clocks": smi("clocks.sm,clocks.mem,clocks.max.sm,persistence_mode"),
            "torch": torch.__version__, "cuda": torch.version.cuda, "triton": triton.__version__,
            "python": sys.version.split()[0], "host_cpus": os.cpu_count()}


def driver(out: Path, reps: int, scenarios: tuple[str, ...], record_rows: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    raw = out / "trigger_raw.jsonl"
    (out / "trigger_env.json").write_text(json.dumps(environment(), indent=2))
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,clocks.mem,pstate,power.draw,"
                            "clocks_event_reasons.active", "--format=csv", "-lms", "100", "-i", "0"],
                           stdout=open(out / "smi.csv", "w"), stderr=subprocess.DEVNULL)
    cache = tempfile.mkdtemp(prefix="tg-trigger-cache-")
    try:
        for rep in range(reps):
            for scenario in scenarios:
                env = dict(os.environ)
                # compile_cold gets an empty cache each time; the others share one warmed by the first
                env["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="cold-") if scenario == "compile_cold" else cache
                if scenario == "compile_cached":  # fill the cache with the same kernels first
                    subprocess.run([sys.executable, __file__, str(out), "--child", "compile_cold", "--rep", "-1",
                                    "--raw", str(out / "warmup_raw.jsonl")], env=env, timeout=300, check=False)
                started = time.time()
                proc = subprocess.run([sys.executable, __file__, str(out), "--child", scenario, "--rep", str(rep),
                                       "--raw", str(raw), "--record-rows", str(record_rows)],
                                      env=env, timeout=400, capture_output=True, text=True)
                print(f"{scenario} rep {rep}: exit {proc.returncode} in {time.time() - started:.1f} s", flush=True)
                if proc.returncode:
                    print(proc.stderr[-2000:], flush=True)
    finally:
        smi.terminate()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--record-rows", type=int, default=3)
    ap.add_argument("--child")
    ap.add_argument("--rep", type=int, default=0)
    ap.add_argument("--raw", type=Path)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.rep, args.raw, args.record_rows)
    else:
        driver(args.out, args.reps, tuple(s for s in args.scenarios.split(",") if s), args.record_rows)


if __name__ == "__main__":
    main()
