"""The gate's false-alarm rate and power on synthetic rows at measured H200 noise levels.

CPU only. For each noise level and planted shift, gate ``--rows`` synthetic rows and count
what the rule calls:

- unpaired (two stored runs, 5 rounds x 5 samples a side), with the default policy and, for
  comparison, with the minimum effect alone (no noise floor);
- paired (``tritongate pair``: rounds alternating, a drift shared by both sides, the real
  schedule adding pairs up to 20 to rows short of their target), at two drift levels;
- paired A/A rows that switch between two states 1.4 % apart, each worker on its own
  (rmsnorm 16x8192 on the H200), under the GPU's default schedule, with and without the
  confirmation of calls made on fewer than 20 pairs.

    python bench/gate_simulation.py --out DIR     # writes gate_simulation.{json,md}
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import math
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tritongate import __version__  # noqa: E402
from tritongate.gate.policy import GatePolicy  # noqa: E402
from tritongate.gate.simulate import H200_REL_IQRS, simulate, simulate_paired  # noqa: E402
from tritongate.gate.verdict import Verdict  # noqa: E402
from tritongate.pair.orchestrator import default_schedule  # noqa: E402

SHIFTS = (0.0, 0.01, 0.02, 0.05)
DRIFTS = (0.005, 0.02)
MODE_OFFSET = 0.014
MODE_SWITCHES = (0.1, 0.3, 0.5)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rows", type=int, default=2000)
    args = ap.parse_args()
    policies = {"unpaired, default (min effect 1% + noise floor, t at z=4)": GatePolicy(),
                "unpaired, min effect 1% alone (no noise floor)": GatePolicy(noise_z=0.0)}
    results = []
    for label, policy in policies.items():
        for rel in H200_REL_IQRS:
            for shift in SHIFTS:
                res = simulate(rows=args.rows, shift=shift, rel_iqrs=[rel], seed=int(rel * 1e5) + int(shift * 1e3),
                               policy=policy)
                results.append({"policy": label, "rel_iqr": rel, "shift": shift,
                                "regressed": len(res.by(Verdict.REGRESSED)),
                                "improved": len(res.by(Verdict.IMPROVED)), "rows": args.rows})
    paired = []
    for drift in DRIFTS:
        for rel in H200_REL_IQRS:
            for shift in SHIFTS:
                res = simulate_paired(rows=args.rows, shift=shift, rel_iqrs=[rel], drift_sd=drift,
                                      seed=int(rel * 1e5) + int(shift * 1e3) + int(drift * 1e4))
                paired.append({"drift_sd": drift, "rel_iqr": rel, "shift": shift, "rows": args.rows,
                               "regressed": len(res.by(Verdict.REGRESSED)), "improved": len(res.by(Verdict.IMPROVED)),
                               "mean_pairs": sum(r.rounds or 0 for r in res.rows) / args.rows})
    gpu = dataclasses.replace(default_schedule("cuda", 5), row_budget_s=math.inf, run_budget_s=math.inf)
    modes = []
    for switch in MODE_SWITCHES:
        for confirm in (0, gpu.confirm_rounds):
            res = simulate_paired(rows=args.rows, shift=0.0, rel_iqrs=[0.002], drift_sd=0.0005,
                                  seed=int(switch * 100), modes=(MODE_OFFSET, switch),
                                  schedule=dataclasses.replace(gpu, confirm_rounds=confirm))
            modes.append({"switch": switch, "confirm_rounds": confirm, "rows": args.rows,
                          "false": len(res.by(Verdict.REGRESSED)) + len(res.by(Verdict.IMPROVED)),
                          "mean_pairs": sum(r.rounds or 0 for r in res.rows) / args.rows})
    args.out.mkdir(parents=True, exist_ok=True)
    doc = {"date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
           "python": platform.python_version(), "tritongate": __version__, "machine": platform.machine(),
           "rows_per_cell": args.rows, "results": results, "paired": paired, "modes": modes}
    (args.out / "gate_simulation.json").write_text(json.dumps(doc, indent=1))
    md = ["# Gate rule on synthetic rows at H200 noise levels", "",
          f"{doc['date_utc']} · CPU only (no GPU involved) · Python {doc['python']} · tritongate "
          f"{doc['tritongate']} · {args.rows} rows per cell · 5 samples a round · "
          "cell = rows called REGRESSED (A/A column: REGRESSED + IMPROVED)", ""]
    for label in policies:
        md += [f"## {label}", "", "| row rel. IQR | A/A false | +1 % caught | +2 % caught | +5 % caught |",
               "|---|---|---|---|---|"]
        for rel in H200_REL_IQRS:
            cells = {r["shift"]: r for r in results if r["policy"] == label and r["rel_iqr"] == rel}
            aa = cells[0.0]["regressed"] + cells[0.0]["improved"]
            md.append(f"| {rel:.2%} | {aa} | " + " | ".join(
                f"{cells[s]['regressed'] / args.rows:.1%}" for s in SHIFTS[1:]) + " |")
        md.append("")
    for drift in DRIFTS:
        md += [f"## paired, shared drift {drift:.1%} per pair, pairs 5 to 20 by precision (default rule)", "",
               "| row rel. IQR | A/A false | +1 % caught | +2 % caught | +5 % caught | mean pairs (A/A) |",
               "|---|---|---|---|---|---|"]
        for rel in H200_REL_IQRS:
            cells = {r["shift"]: r for r in paired if r["drift_sd"] == drift and r["rel_iqr"] == rel}
            aa = cells[0.0]["regressed"] + cells[0.0]["improved"]
            md.append(f"| {rel:.2%} | {aa} | " + " | ".join(
                f"{cells[s]['regressed'] / args.rows:.1%}" for s in SHIFTS[1:]) + f" | {cells[0.0]['mean_pairs']:.1f} |")
        md.append("")
    md += [f"## paired A/A rows in two states {MODE_OFFSET:.1%} apart (each worker on its own), GPU schedule "
           f"(5 to {gpu.max_rounds} pairs)", "",
           "row rel. IQR 0.2 %, shared drift 0.05 % per pair; a state is left before a round with the probability given",
           "", "| switch probability | calls confirmed on | A/A false | mean pairs |", "|---|---|---|---|"]
    for m in modes:
        md.append(f"| {m['switch']:.0%} | {m['confirm_rounds'] or 'off'} | {m['false']} | {m['mean_pairs']:.1f} |")
    md.append("")
    (args.out / "gate_simulation.md").write_text("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
