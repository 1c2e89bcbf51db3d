"""Where a row's noise in a paired A/A comes from, and what more pairs buy.

Records the suite's selected ops once, then runs A/A paired checks (``--time-identical``)
under each schedule given (``MAX_ROUNDS:ROW_BUDGET_S``), while sampling the GPU's SM clock,
power and throttle reasons every 100 ms. Per row: pairs taken, detectable effect, the A/A
effect, the spread of each side's per-round medians (placement and clock, between rounds) and
of the samples within a round (launch to launch), and the spread of the paired log ratios.

    python bench/pair_noise.py --suite pr --ops matmul --schedules 20:30,80:120 --out DIR
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import fresh_work_dir, software, software_line, timed

QUERY = "clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active"


class GpuSampler(threading.Thread):
    """nvidia-smi's SM clock, power, temperature and throttle bitmask every 100 ms."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.samples: list[tuple[float, float, float, str]] = []
        self._done = threading.Event()

    def run(self) -> None:
        try:
            proc = subprocess.Popen(["nvidia-smi", f"--query-gpu={QUERY}", "--format=csv,noheader,nounits",
                                     "-lms", "100"], stdout=subprocess.PIPE, text=True)
        except OSError:  # no GPU here: the rows still say what they can
            return
        assert proc.stdout is not None
        for line in proc.stdout:
            parts = [p.strip() for p in line.split(",")]
            try:
                self.samples.append((float(parts[0]), float(parts[1]), float(parts[2]), parts[3]))
            except (ValueError, IndexError):
                pass
            if self._done.is_set():
                break
        proc.terminate()

    def stop(self) -> dict[str, Any]:
        self._done.set()
        self.join(timeout=5)
        busy = [s for s in self.samples if s[1] > 150]  # watts: the GPU was working
        if not busy:
            return {"samples": len(self.samples)}
        clocks = [s[0] for s in busy]
        reasons: dict[str, int] = {}
        for s in busy:
            reasons[s[3]] = reasons.get(s[3], 0) + 1
        return {"samples": len(self.samples), "busy": len(busy), "sm_mhz_min": min(clocks),
                "sm_mhz_median": statistics.median(clocks), "sm_mhz_max": max(clocks),
                "power_w_max": max(s[1] for s in busy), "temp_c_max": max(s[2] for s in busy),
                "throttle_reasons": reasons}


def _round_medians(row: dict[str, Any]) -> list[float]:
    samples = row.get("samples") or []
    k = (row.get("measurement") or {}).get("samples_per_round") or 1
    return [statistics.median(samples[i:i + k]) for i in range(0, len(samples) - k + 1, k)]


def _cv(values: list[float]) -> float | None:
    return statistics.stdev(values) / statistics.fmean(values) if len(values) > 1 else None


def _within(row: dict[str, Any]) -> float | None:
    samples = row.get("samples") or []
    k = (row.get("measurement") or {}).get("samples_per_round") or 1
    cvs = [c for i in range(0, len(samples) - k + 1, k) if (c := _cv(samples[i:i + k])) is not None]
    return statistics.median(cvs) if cvs else None


def _rows(pair: dict[str, str]) -> list[dict[str, Any]]:
    verdict = json.loads(Path(pair["verdict"]).with_name("verdict.json").read_text())
    sides = {name: {(r["op"], r["case"], r["dtype"]): r
                    for r in json.loads((Path(pair[name]) / "results.json").read_text())["rows"]}
             for name in ("base", "candidate")}
    out = []
    for v in verdict["rows"]:
        key = (v["op"], v["case"], v["dtype"])
        b, c = sides["base"].get(key, {}), sides["candidate"].get(key, {})
        bm, cm = _round_medians(b), _round_medians(c)
        ratios = [math.log(y / x) for x, y in zip(bm, cm)]
        out.append({"row": "/".join(key), "base_us": v.get("base_median_us"), "rounds": v.get("rounds"),
                    "effect": v.get("effect"), "detectable": v.get("detectable_effect"),
                    "timing_change": v.get("timing_change"),
                    "base_round_cv": _cv(bm), "cand_round_cv": _cv(cm),
                    "base_within_cv": _within(b), "cand_within_cv": _within(c),
                    "paired_sd": statistics.stdev(ratios) if len(ratios) > 1 else None})
    return out


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", default="pr")
    ap.add_argument("--ops", default="matmul")
    ap.add_argument("--schedules", default="20:30,80:120", help="MAX_ROUNDS:ROW_BUDGET_S,...")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = fresh_work_dir("tritongate-pair-noise")
    tg = [sys.executable, "-m", "tritongate"]
    rc, wall, stdout = timed(tg + ["run", "--suite", args.suite, "--ops", args.ops, "--backend", args.backend, "--out",
                                   str(work / "runs"), "--color", "never"], out / "record.log")
    if rc != 0:
        print(f"record failed ({rc}); see {out / 'record.log'}")
        return 1
    record = stdout[-1]
    doc: dict[str, Any] = {"date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                           "software": software(), "suite": args.suite, "ops": args.ops, "record_s": round(wall, 1),
                           "steps": []}
    for sched in args.schedules.split(","):
        max_rounds, budget = sched.split(":")
        sampler = GpuSampler()
        sampler.start()
        time.sleep(0.3)
        rc, wall, stdout = timed(tg + ["pair", record, "--suite", args.suite, "--ops", args.ops, "--backend", args.backend,
                                       "--out", str(work / "pairs"), "--color", "never", "--time-identical",
                                       "--max-rounds", max_rounds, "--row-budget", budget,
                                       "--run-budget", "3600"], out / f"pair_{max_rounds}.log")
        gpu = sampler.stop()
        paths = {line.split(":", 1)[0]: line.split(":", 1)[1].strip() for line in stdout if ":" in line}
        step = {"max_rounds": int(max_rounds), "row_budget_s": float(budget), "exit_code": rc, "wall_s": round(wall, 1),
                "gpu": gpu, "rows": _rows(paths) if "verdict" in paths else []}
        doc["steps"].append(step)
        (out / "pair_noise.json").write_text(json.dumps(doc, indent=1))
    lines = [f"# Paired A/A noise, {args.suite} --ops {args.ops} ({doc['date_utc'][:10]})", "",
             software_line(doc["software"]) + ".", ""]
    for s in doc["steps"]:
        lines += [f"## max rounds {s['max_rounds']}, row budget {s['row_budget_s']:g} s: exit {s['exit_code']}, "
                  f"{s['wall_s']} s", "", f"GPU while pairing: {json.dumps(s['gpu'])}", "",
                  "| row | base µs | pairs | A/A effect % | detectable % | round CV base/cand % | "
                  "within-round CV base/cand % | paired SD % |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for r in s["rows"]:
            lines.append(f"| {r['row']} | {r['base_us'] or 0:.2f} | {r['rounds']} | {_pct(r['effect'])} | "
                         f"{_pct(r['detectable'])} | {_pct(r['base_round_cv'])} / {_pct(r['cand_round_cv'])} | "
                         f"{_pct(r['base_within_cv'])} / {_pct(r['cand_within_cv'])} | {_pct(r['paired_sd'])} |")
        lines.append("")
    (out / "pair_noise.md").write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
