"""Does a process's history change what it measures? In one process: time a plain torch CUDA
graph (500 launches of a 4,096-element add; median µs a launch, after a 200k- and a 2M-cycle
blocker) and how long the host takes to submit it, then run ``tritongate run`` of each op
given, in this process, as ``tritongate batch --reuse-worker`` does, and after each the op's
row medians and the plain graph again. ``BLOCKER=N`` in the list sets the harness's blocker
cycles for the runs after it.

    python bench/process_state_probe.py WORK_DIR RECORD_RUN add,rmsnorm,BLOCKER=2000000,rmsnorm

Needs a CUDA GPU; RECORD_RUN is a smoke record (its configs are replayed).
"""
import gc
import glob
import json
import os
import runpy
import sys
import threading
import torch

W, REC = sys.argv[1], sys.argv[2]

def graph_time(n=500, reps=21, blocker=200000):
    x = torch.randn(4096, device="cuda")
    y = torch.empty_like(x)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            torch.add(x, 1, out=y)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n):
            torch.add(x, 1, out=y)
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
    return round(sorted(ts)[reps // 2], 4)

def state():
    import triton
    k = triton.knobs.runtime
    return {"stream": str(torch.cuda.current_stream()), "threads": [t.name for t in threading.enumerate()],
            "enter_hook": repr(k.launch_enter_hook), "exit_hook": repr(getattr(k, "launch_exit_hook", None)),
            "alloc": torch.cuda.memory_allocated(), "gc": gc.isenabled(),
            "env": {k2: v for k2, v in os.environ.items() if k2.startswith(("TRITON", "CUDA_", "PYTORCH"))}}

def both():
    return {"plain_200k": graph_time(), "plain_2M": graph_time(blocker=2000000), "plain_host_us": host_submit()}

def host_submit(n=500):
    import time
    x = torch.randn(4096, device="cuda")
    y = torch.empty_like(x)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n):
            torch.add(x, 1, out=y)
    g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(21):
        torch.cuda._sleep(20000000)  # ~10 ms: the host call returns while the GPU is still busy
        t0 = time.perf_counter()
        g.replay()
        ts.append((time.perf_counter() - t0) * 1e6)
        torch.cuda.synchronize()
    return round(sorted(ts)[10], 1)

print("start", both(), json.dumps(state()), flush=True)
for i, op in enumerate(sys.argv[3].split(",")):
    if op.startswith("BLOCKER="):
        from tritongate.harness.device import CudaDevice
        CudaDevice.BLOCKER_CYCLES = int(op.split("=")[1])
        print("set", op, flush=True)
        continue
    out = f"{W}/diag{i}_{op}"
    sys.argv = ["tritongate", "run", "--suite", "smoke", "--ops", op, "--out", out, "--replay-from", REC, "--backend", "cuda"]
    saved = sys.stdout
    sys.stdout = open(f"{out}.log", "w")
    try:
        runpy.run_module("tritongate", run_name="__main__", alter_sys=True)
    except SystemExit as e:
        rc = e.code
    sys.stdout.close()
    sys.stdout = saved
    res = json.load(open(glob.glob(f"{out}/*/results.json")[0]))
    meds = {f"{r['op']}/{r['case']}/{r['dtype']}": round(r["summary"]["median"], 4) for r in res["rows"] if r.get("summary")}
    print("after", op, "rc", rc, meds, both(), json.dumps(state()), flush=True)
