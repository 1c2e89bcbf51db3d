"""The paired check on a host that is not quiet, and with one side's launch state forced.

Steps (each a `tritongate pair` of one build against itself, every row timed), run in order
and resumable (a step whose folder holds `done` is not run again):

  unprimed-cand   quiet host; the candidate worker skips the graph priming
                  (TRITONGATE_GRAPH_PRIME=0), so only its process flips to the slow launch
                  state part-way: which rows the verdict names, what it calls them
  unpartnered-cand  loaded host (as aa-*); the candidate worker runs without its GPU-turn partner
                  (TRITONGATE_GPU_TURNS=0), so only its process may sit at the slow launch level:
                  what the launch-state check names and what the rule calls
  aa-1..aa-3      A/A with the host loaded the way a CI host is beside a GPU job: one C compile
                  loop per CPU core (gcc -O2 of a generated 4,000-function file, again and again)
  planted-0.02/5  the same load; the candidate's builtin kernels spin (TRITONGATE_PLANTED_DELAY)
                  for the spin the committed H200 calibration aimed at 2 % / 5 %, scaled by this
                  GPU's record medians over that calibration's (the spin adds fixed time per
                  program; both GPUs have 132 SMs)
  planted-0.01    a share of the 2 % spin (--share-1pct, default one half: a spin adds fixed time,
                  so half the spin would be half the effect; on the H200 half measured +0.81 %)
  quiet-*         a step above on the quiet host (the plant's size as measured without load)

Every step keeps its pair folder (raw samples); `load.tsv` samples /proc/loadavg and the
compile count every 5 s. `bench/peer_rules.py` reads the folders afterwards.

    python bench/loaded_host.py --work DIR [--record RUN] [--steps a,b,...]
                                [--pair-args '--min-effect 0.005 ...'] [--share-1pct 0.5]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

H200_CAL = Path(__file__).parent / "results" / "2026-12-03_h200_calibration_pool8.tgz"
CAL_ROOT = "cal/calibrate-pr_20261202T195548Z"
STEPS = ("unprimed-cand", "aa-1", "aa-2", "planted-0.02", "aa-3", "planted-0.05")


def tg(*args: str, log: Path) -> str:
    with log.open("a") as fh:
        proc = subprocess.run([sys.executable, "-m", "tritongate", *args, "--color", "never"],
                              stdout=subprocess.PIPE, stderr=fh, text=True)
    fh_out = proc.stdout.strip().splitlines()
    if proc.returncode not in (0, 1):  # 1: the verdict failed (a planted step should)
        raise SystemExit(f"tritongate {args[0]} exit {proc.returncode}; see {log}")
    return fh_out[-1] if fh_out else ""


def medians(results: dict) -> dict[str, float]:
    return {f"{r['op']}/{r['case']}/{r['dtype']}": r["summary"]["median"]
            for r in results["rows"] if r.get("summary")}


def scaled_plans(record: Path, work: Path, share_1pct: float = 0.5) -> dict[str, Path]:
    """The H200 calibration's aimed spins, scaled per row to this GPU's kernel time."""
    here = medians(json.loads((record / "results.json").read_text()))
    with tarfile.open(H200_CAL) as tf:
        def member(name: str) -> dict:
            f = tf.extractfile(f"{CAL_ROOT}/{name}")
            assert f is not None
            return json.load(f)
        aa1 = [m.name for m in tf.getmembers() if m.name.startswith(f"{CAL_ROOT}/aa-1/")
               and m.name.endswith("base/results.json")][0]
        there = medians(member(aa1[len(CAL_ROOT) + 1:]))
        plans = {k: member(f"plans/planted-{k}.json") for k in ("0.02", "0.05")}
        zero = member("plans/zero.json")
    out: dict[str, Path] = {}
    for k, plan in plans.items():
        delays = {key: max(1, round(ns * here[key] / there[key]))
                  for key, ns in plan["delays_ns"].items() if key in here and key in there}
        plan = {**plan, "delays_ns": {**{key: 0 for key in zero["delays_ns"]}, **delays}}
        out[k] = work / f"plan-{k}.json"
        out[k].write_text(json.dumps(plan, indent=1, sort_keys=True))
        if k == "0.02":
            half = {**plan, "fraction": 0.01,
                    "delays_ns": {key: int(ns * share_1pct + 0.5) for key, ns in plan["delays_ns"].items()}}
            out["0.01"] = work / "plan-0.01.json"
            out["0.01"].write_text(json.dumps(half, indent=1, sort_keys=True))
    out["zero"] = work / "plan-zero.json"
    out["zero"].write_text(json.dumps(zero, indent=1, sort_keys=True))
    return out


def record_once(work: Path, log: Path, *run_args: str, given: Path | None = None) -> Path:
    """The work folder's record: ``given``, else the `tritongate run --suite pr` made on the first
    call (``record.path`` keeps it, so a cut-off call resumes with it)."""
    rec_file = work / "record.path"
    if given:
        rec_file.write_text(str(given.resolve()))
    if not rec_file.exists():
        t0 = time.time()
        rec_file.write_text(tg("run", "--suite", "pr", *run_args, "--out", str(work / "record"), log=log))
        print(f"record {time.time() - t0:.0f} s", flush=True)
    return Path(rec_file.read_text().strip())


def plant_args(plans: dict[str, Path], size: str) -> list[str]:
    """A pair's options for the candidate's kernels to spin by the ``size`` plan (the base's by none)."""
    return ["--base-env", f"TRITONGATE_PLANTED_DELAY={plans['zero']}",
            "--cand-env", f"TRITONGATE_PLANTED_DELAY={plans[size]}"]


class Load:
    """One compile loop per core, as a compiler build beside the GPU job keeps them busy."""

    def __init__(self, work: Path) -> None:
        self.dir = work / "load"
        self.dir.mkdir(exist_ok=True)
        src = self.dir / "unit.c"
        src.write_text("".join(f"double f{i}(double x){{for(int k=0;k<{i % 7 + 3};k++)x=x*1.0001+{i}.5;"
                               f"return x;}}\n" for i in range(4000)))
        self.procs: list[subprocess.Popen] = []
        self.stop = threading.Event()
        self.tsv = (work / "load.tsv").open("a")

    def start(self, step: str) -> None:
        n = os.cpu_count() or 1
        loop = f"while :; do gcc -O2 -c {self.dir}/unit.c -o /dev/null; echo x >> {self.dir}/count.$$; done"
        self.procs = [subprocess.Popen(["bash", "-c", loop], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                       start_new_session=True) for _ in range(n)]
        self.stop.clear()
        threading.Thread(target=self._sample, args=(step,), daemon=True).start()

    def _sample(self, step: str) -> None:
        while not self.stop.wait(5.0):
            count = sum(p.stat().st_size // 2 for p in self.dir.glob("count.*"))
            self.tsv.write(f"{time.time():.1f}\t{step}\t{Path('/proc/loadavg').read_text().split()[0]}\t{count}\n")
            self.tsv.flush()

    def end(self) -> None:
        self.stop.set()
        for p in self.procs:
            try:
                os.killpg(p.pid, 9)
            except ProcessLookupError:
                pass
        self.procs = []


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--record", type=Path)
    ap.add_argument("--steps", default=",".join(STEPS))
    ap.add_argument("--pair-args", default="", help="options every pair step gets, e.g. '--min-effect 0.005'")
    ap.add_argument("--share-1pct", type=float, default=0.5, help="the 1 %% plan's share of the 2 %% spin")
    a = ap.parse_args()
    work = a.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    log = work / "tritongate.log"
    record = record_once(work, log, given=a.record)
    plans = scaled_plans(record, work, a.share_1pct)
    load = Load(work)
    walls = json.loads((work / "walls.json").read_text()) if (work / "walls.json").exists() else {}
    for step in a.steps.split(","):
        d = work / step
        if (d / "done").exists():
            continue
        d.mkdir(exist_ok=True)
        extra: list[str] = []
        if step == "unprimed-cand":
            extra = ["--cand-env", "TRITONGATE_GRAPH_PRIME=0"]
        elif step == "unpartnered-cand":
            extra = ["--cand-env", "TRITONGATE_GPU_TURNS=0"]
        elif "planted-" in step:
            extra = plant_args(plans, step.rsplit("-", 1)[1])
        loaded = not step.startswith(("unprimed-", "quiet-"))
        if loaded:
            load.start(step)
        t0 = time.time()
        try:
            tg("pair", str(record), "--out", str(d), "--time-identical", *extra, *shlex.split(a.pair_args), log=log)
        finally:
            load.end()
        # exit 1 is also what Python gives for a crash before the pair starts: done means a verdict
        if not list(d.glob("pair-*/verdict/verdict.json")):
            raise SystemExit(f"{step}: tritongate pair wrote no verdict; see {log}")
        walls[step] = {"wall_s": round(time.time() - t0, 1), "loaded": loaded, "cores": os.cpu_count(),
                       "pair_args": a.pair_args, "share_1pct": a.share_1pct}
        (work / "walls.json").write_text(json.dumps(walls, indent=1))
        (d / "done").write_text("")
        print(f"{step} {walls[step]['wall_s']} s", flush=True)


if __name__ == "__main__":
    main()
