"""Does a longer sample narrow a jittery row? The same rows paired with k launches a sample.

A row whose samples jitter by more than the change it should show (attention_causal
4x16x2048x64: 0.9-1.3 % within a round at k = 3, every other row >= 10 us under 0.75 %) cannot
be called at 1 %, however many rounds it takes: the paired rule compares the two sides' IQRs.
If the jitter is launch to launch and independent, a sample of k launches spreads as 1/sqrt(k).
This takes one record of the chosen ops, copies it with each row's launches per sample set to
each k asked for (a pair measures with its record's k), and pairs each copy A/A and with the
candidate's kernels spinning for +1 % (`loaded_host.py`'s 1 % plan), on a quiet host:

    python bench/sample_length.py --work DIR [--ops attention_causal] [--dtypes D] [--k 0,13]
                                  [--pair-args '--min-effect 0.005 --max-rounds 160']

k = 0 keeps the record's own. `DIR/summary.json`: per k and step, each row's k, median
within-round relative IQR per side, the verdict, its effect and why. Every pair folder stays
(raw samples); steps already done are skipped, so a cut-off call resumes.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from loaded_host import plant_args, record_once, scaled_plans, tg  # the script's own folder


def within_round_spread(samples: list[float], per_round: int) -> float:
    """The median over rounds of a round's IQR over its median (a fraction)."""
    spreads = []
    for i in range(0, len(samples) - per_round + 1, per_round):
        q = statistics.quantiles(samples[i:i + per_round], n=4, method="inclusive")
        spreads.append((q[2] - q[0]) / statistics.median(samples[i:i + per_round]))
    return statistics.median(spreads) if spreads else float("nan")


def with_k(record: Path, out: Path, k: int) -> Path:
    """A copy of ``record`` whose rows measure ``k`` launches a sample (0: as recorded)."""
    if out.exists():
        return out
    shutil.copytree(record, out, symlinks=True)
    if k:
        doc = json.loads((out / "results.json").read_text())
        for row in doc["rows"]:
            if row.get("measurement"):
                row["measurement"]["launches_per_sample"] = k
        (out / "results.json").write_text(json.dumps(doc, indent=1))
    return out


def summarize(step_dir: Path) -> dict[str, dict]:
    (pair,) = step_dir.glob("pair-*")
    verdict = json.loads((pair / "verdict" / "verdict.json").read_text())
    calls = {f"{r['op']}/{r['case']}/{r['dtype']}": r for r in verdict["rows"]}
    out: dict[str, dict] = {}
    for side in ("base", "candidate"):
        for row in json.loads((pair / side / "results.json").read_text())["rows"]:
            key = f"{row['op']}/{row['case']}/{row['dtype']}"
            m = row.get("measurement") or {}
            entry = out.setdefault(key, {"k": m.get("launches_per_sample"), "samples_per_side": len(row["samples"])})
            entry[f"{side}_within_round_iqr"] = within_round_spread(row["samples"], m.get("samples_per_round", 5))
    for key, entry in out.items():
        call = calls.get(key, {})
        entry.update({f: call.get(f) for f in ("verdict", "effect", "why", "noise_floor", "detectable_effect",
                                                "rounds", "iqrs_overlap")})
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--ops", default="attention_causal")
    ap.add_argument("--dtypes", default="", help="only these dtypes (default: the suite's)")
    ap.add_argument("--k", default="0,13", help="launches per sample to pair at, comma-separated (0: as recorded)")
    ap.add_argument("--pair-args", default="--min-effect 0.005 --max-rounds 160")
    ap.add_argument("--share-1pct", type=float, default=0.6, help="as loaded_host.py's")
    a = ap.parse_args()
    work = a.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    log = work / "tritongate.log"
    rows = ["--ops", a.ops, *(["--dtypes", a.dtypes] if a.dtypes else [])]
    record = record_once(work, log, *rows)
    plans = scaled_plans(record, work, a.share_1pct)
    summary = json.loads((work / "summary.json").read_text()) if (work / "summary.json").exists() else {}
    for k in (int(x) for x in a.k.split(",")):
        rec_k = with_k(record, work / f"record-k{k}", k)
        for step in ("aa", "planted-0.01"):
            d = work / f"k{k}-{step}"
            if not (d / "done").exists():
                shutil.rmtree(d, ignore_errors=True)
                d.mkdir()
                extra = [] if step == "aa" else plant_args(plans, "0.01")
                t0 = time.time()
                tg("pair", str(rec_k), *rows, "--out", str(d), "--time-identical", *extra, *shlex.split(a.pair_args),
                   log=log)
                (d / "done").write_text(f"{time.time() - t0:.1f}\n")
            summary[f"k{k}-{step}"] = {"wall_s": float((d / "done").read_text()), "rows": summarize(d)}
            (work / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
            print(f"k{k}-{step}", json.dumps(summary[f"k{k}-{step}"]), flush=True)


if __name__ == "__main__":
    main()
