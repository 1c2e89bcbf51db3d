"""Replay the H200 A/A series through the paired rule, before and after, in fixed 20-pair windows.

Input: ``bench/results/2026-11-30_h200_shared_inputs.json``: 16 series of 200-300 alternating
pairs of matmul 16x4096x4096, the same build on both sides, each series one worker pair (its
round medians per side). Every non-overlapping window of 20 pairs is judged as a row:

- **one worker pair**: the window's 20 pairs as they were measured (``rule.decide``, the
  between-worker-pair component taken as the policy's ``process_sd``: one worker pair cannot
  measure its own offset);
- **two worker pairs**: 10 pairs from one series and 10 from another of the same variant
  (different processes), the layout a paired run now has;
- **before**: the same one-worker-pair windows under the rule before worker pairs (the mean of
  the pair log ratios and its plain standard error).

Rows hold round medians as samples of rounds of one (so a round's median is the value).

    python bench/h200_replay.py [--out bench/results]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import sys
from itertools import combinations
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tritongate import __version__
from bench.sim.paired_rule import decide_before
from tritongate.gate.policy import GatePolicy
from tritongate.gate.rule import PairLayout, Why, decide

SOURCE = Path(__file__).resolve().parent / "results" / "2026-11-30_h200_shared_inputs.json"
WINDOW = 20


def series(doc: dict) -> list[dict]:
    out = []
    for i, run in enumerate(doc["runs"]):
        for name, v in run["variants"].items():
            rm = v["round_medians_us"]
            out.append({"run": i, "variant": name.split("-")[0], "name": f"run {i} {name}",
                        "base": np.array(rm["A"], float), "cand": np.array(rm["B"], float)})
    return out


def judge(base: np.ndarray, cand: np.ndarray, layout: PairLayout, policy: GatePolicy):
    return decide(base.tolist(), cand.tolist(), base_per_round=1, cand_per_round=1, min_effect=policy.min_effect,
                  noise_z=policy.noise_z, min_samples=policy.min_samples, paired=True, layout=layout,
                  process_sd=policy.process_sd, pair_inflation=policy.pair_inflation)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=SOURCE.parent)
    ap.add_argument("--name", default=f"{dt.date.today().isoformat()}_h200_replay")
    args = ap.parse_args()
    policy = GatePolicy()
    doc = json.loads(SOURCE.read_text())
    all_series = series(doc)
    bf = tuple(i % 2 == 0 for i in range(WINDOW))
    one = PairLayout(bf, (0,) * WINDOW)
    two = PairLayout(bf, (0,) * (WINDOW // 2) + (1,) * (WINDOW // 2))
    rows_one, rows_two, before = [], [], []
    for s in all_series:
        n = len(s["base"]) // WINDOW
        for w in range(n):
            b, c = s["base"][w * WINDOW:(w + 1) * WINDOW], s["cand"][w * WINDOW:(w + 1) * WINDOW]
            d = judge(b, c, one, policy)
            rows_one.append({"series": s["name"], "window": w, "effect": d.effect, "floor": d.noise_floor,
                             "detectable": d.detectable, "why": d.why.value})
            old = decide_before(b[None, :, None], c[None, :, None], min_effect=policy.min_effect,
                                noise_z=policy.noise_z, min_samples=policy.min_samples)
            before.append(bool(old.called[0]))
    half = WINDOW // 2
    for a, b in combinations(all_series, 2):
        if a["variant"] != b["variant"]:
            continue
        n = min(len(a["base"]), len(b["base"])) // half
        for w in range(n):
            sl = slice(w * half, (w + 1) * half)
            d = judge(np.r_[a["base"][sl], b["base"][sl]], np.r_[a["cand"][sl], b["cand"][sl]], two, policy)
            rows_two.append({"series": [a["name"], b["name"]], "window": w, "effect": d.effect,
                             "floor": d.noise_floor, "why": d.why.value})
    called_one = sum(r["why"] == Why.CALLED.value for r in rows_one)
    called_two = sum(r["why"] == Why.CALLED.value for r in rows_two)
    result = {"date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "source": SOURCE.name,
              "machine": platform.machine(), "python": platform.python_version(), "tritongate": __version__,
              "policy": policy.to_dict(), "window_pairs": WINDOW, "series": len(all_series),
              "one_worker_pair": {"windows": len(rows_one), "called": called_one,
                                  "max_abs_effect": max(abs(r["effect"]) for r in rows_one),
                                  "min_floor": min(r["floor"] for r in rows_one)},
              "two_worker_pairs": {"windows": len(rows_two), "called": called_two,
                                   "max_abs_effect": max(abs(r["effect"]) for r in rows_two)},
              "before": {"windows": len(before), "called": int(sum(before))},
              "windows_one": rows_one, "windows_two": rows_two}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(result, indent=1))
    md = [f"# H200 A/A series replayed through the paired rule ({WINDOW}-pair windows)", "",
          f"{result['date_utc']} · source `{SOURCE.name}` ({len(all_series)} series, matmul 16x4096x4096, "
          f"same build both sides) · tritongate {__version__} · policy min effect {policy.min_effect:.0%}, "
          f"z {policy.noise_z:g}, process_sd {policy.process_sd:.1%}", "",
          "| replay | windows | called | largest |effect| |", "|---|---|---|---|",
          f"| before (mean, plain SE, one worker pair) | {len(before)} | {sum(before)} | |",
          f"| after, one worker pair per window | {len(rows_one)} | {called_one} | "
          f"{result['one_worker_pair']['max_abs_effect']:.2%} |",
          f"| after, two worker pairs (10 + 10 pairs of two series) | {len(rows_two)} | {called_two} | "
          f"{result['two_worker_pairs']['max_abs_effect']:.2%} |", "",
          "Reasons (after, one worker pair): " + ", ".join(
              f"{w} {sum(r['why'] == w for r in rows_one)}" for w in sorted({r['why'] for r in rows_one})), ""]
    (args.out / f"{args.name}.md").write_text("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
