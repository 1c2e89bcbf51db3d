"""How much of a row's time is fixed per process, and what moves it between rounds?

For the given rows, ``--processes`` fresh worker processes per variant each time every row for
``--rounds`` rounds (the paired runs' executor and measurement, replaying ``--record``), one
process after another, the variants interleaved. Per row and variant: the spread of round
medians within a process, the spread of the process means, the share of the variance that is
between processes (a share near 1 means a process keeps its level: pairing rounds inside one
pair of processes cannot see it, and the noise floor of a paired row is then too low), and the
round medians themselves.

Variants: ``default`` (the paired runs' settings), ``reload`` (every round also loads the row's
kernels afresh, so their code lands at a new address), ``flush`` (L2 cleared before every
sample) and ``spread`` (each sample of a round on a placement of its own: the round's median is
then over as many placements as samples).

    python bench/process_modes.py --record RUN --out DIR rmsnorm/16x8192/bfloat16 ...
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import software, software_line, write_results

VARIANTS = ("default", "reload", "flush", "spread")


def _reload_code() -> None:
    """Drop every loaded Triton kernel's module handle: the next launch loads it again."""
    import gc

    from triton.compiler.compiler import CompiledKernel

    for obj in gc.get_objects():
        if isinstance(obj, CompiledKernel) and obj.module is not None:
            obj.module = obj.function = obj._run = None


def child(record: str, suite: str, rows: list[str], rounds: int, variant: str, backend: str) -> dict:
    """One process: every row, ``rounds`` rounds; the round medians per row."""
    import importlib

    measure = importlib.import_module("tritongate.harness.measure")
    from tritongate.pair.executor import TritonExecutor

    overrides = {"l2": "flush"} if variant == "flush" else {}
    ex = TritonExecutor({"backend": backend, "replay_from": record, "config_overrides": overrides,
                         "suite": suite})
    if variant == "reload":
        original = measure.RowMeasurer.measure_round

        def measure_round(self):  # type: ignore[no-untyped-def]
            _reload_code()
            return original(self)

        measure.RowMeasurer.measure_round = measure_round  # type: ignore[method-assign]
    if variant == "spread":
        import dataclasses

        one_round = measure.RowMeasurer.measure_round

        def spread_round(self):  # type: ignore[no-untyped-def]
            cfg = self._config
            self._config = dataclasses.replace(cfg, samples_per_round=1)
            try:
                return [s for _ in range(cfg.samples_per_round) for s in one_round(self)]
            finally:
                self._config = cfg

        measure.RowMeasurer.measure_round = spread_round  # type: ignore[method-assign]
    keys = [k.split("/") for k in rows]  # plan only the rows asked for (a CPU backend runs no bfloat16)
    plan = {f"{r['op']}/{r['case']}/{r['dtype']}": r for r in ex.plan(
        suite, only_ops=sorted({k[0] for k in keys}), only_dtypes=sorted({k[2] for k in keys}))["rows"]}
    out = {}
    for key in rows:
        r = plan[key]
        ex.prepare(r["op"], r["shape"], r["dtype"])
        ex.warm_up()
        t0 = time.perf_counter()
        meds = [statistics.median(ex.round()["samples"]) for _ in range(rounds)]
        out[key] = {"round_medians_us": meds, "wall_s": time.perf_counter() - t0}
        ex.finish()
    ex.close()
    return out


def summarize(per_process: list[list[float]]) -> dict:
    """Log round medians: within-process SD, SD of process means, the between share."""
    logs = [[math.log(m) for m in p] for p in per_process]
    means = [statistics.fmean(p) for p in logs]
    within = statistics.fmean(statistics.variance(p) for p in logs)
    between = max(0.0, statistics.variance(means) - within / statistics.fmean(len(p) for p in logs))
    return {"within_sd_pct": 100 * math.sqrt(within), "between_sd_pct": 100 * math.sqrt(between),
            "between_share": between / (between + within) if between + within else 0.0,
            "process_means_us": [math.exp(m) for m in means]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--record", required=True)
    ap.add_argument("--suite", default="pr")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--processes", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--out", required=True)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("rows", nargs="+", metavar="OP/CASE/DTYPE")
    args = ap.parse_args()
    if args.processes < 2:
        ap.error("--processes: at least 2 (the spread between processes needs two)")
    if args.child:
        print(json.dumps(child(args.record, args.suite, args.rows, args.rounds, args.child, args.backend)))
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    variants = [v for v in args.variants.split(",") if v]
    doc: dict = {"date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "software": software(),
                 "rounds": args.rounds, "processes": args.processes, "runs": []}
    for i in range(args.processes):
        for variant in variants:
            t0 = time.perf_counter()
            got = subprocess.run([sys.executable, __file__, "--record", args.record, "--suite", args.suite, "--backend", args.backend,
                                  "--rounds", str(args.rounds), "--out", args.out, "--child", variant, *args.rows],
                                 capture_output=True, text=True)
            if got.returncode:
                sys.exit(f"{variant} process {i + 1} failed:\n{got.stderr[-3000:]}")
            doc["runs"].append({"variant": variant, "process": i, "wall_s": time.perf_counter() - t0,
                                "rows": json.loads(got.stdout.strip().splitlines()[-1])})
            print(f"process {i + 1}/{args.processes} {variant}: {time.perf_counter() - t0:.1f} s", flush=True)
            (out / "process_modes.json").write_text(json.dumps(doc, indent=1))
    walls = {}  # per row and variant: seconds per round
    for r in doc["runs"]:
        for key, got in r["rows"].items():
            walls.setdefault((key, r["variant"]), []).append(got["wall_s"] / args.rounds)
    lines = [f"# Per-process levels of a row's time ({doc['date_utc'][:10]})", "", software_line(doc["software"]) + ".",
             "", f"{args.processes} processes per variant, one after another, {args.rounds} rounds each.", "",
             "| row | variant | within-process SD % | between-process SD % | between share | ms per round | process means µs |",
             "|---|---|---:|---:|---:|---:|---|"]
    doc["summary"] = []
    for key in args.rows:
        for variant in variants:
            per = [r["rows"][key]["round_medians_us"] for r in doc["runs"] if r["variant"] == variant]
            s = summarize(per)
            s["round_ms"] = 1000 * statistics.fmean(walls[key, variant])
            doc["summary"].append({"row": key, "variant": variant, **s})
            lines.append(f"| {key} | {variant} | {s['within_sd_pct']:.2f} | {s['between_sd_pct']:.2f} | "
                         f"{s['between_share']:.2f} | {s['round_ms']:.1f} | {', '.join(f'{m:.3f}' for m in s['process_means_us'])} |")
    write_results(out, "process_modes", doc, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
