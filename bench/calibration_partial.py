"""Summarise a calibration folder that stopped part-way (no GPU needed).

`tritongate calibrate` writes its report only when every step has run; a calibration stopped
by a time limit keeps its finished steps (each with ``step.json``) and ``aim.json``. This
reads those and writes what they show, labelled partial: the A/A runs' false calls and the
rows that reached their target, the aim in one process per planted size, and each finished
paired check's rows. Nothing here is a catch rate: no planted run is read.

    python bench/calibration_partial.py CALDIR --out bench/results --label 2026-12-02_h200_calibration_pool8_partial
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

CALLS = ("slower", "faster")


def _verdict(step: Path) -> dict[str, Any] | None:
    done = step / "step.json"
    if not done.is_file():
        return None
    pair = json.loads(done.read_text(encoding="utf-8"))["pair"]
    return json.loads((step / pair / "verdict" / "verdict.json").read_text(encoding="utf-8"))


def _pct(x: float) -> str:
    return f"{x * 100:+.2f}%"


def summarise(cal: Path) -> str:
    settings = json.loads((cal / "settings.json").read_text(encoding="utf-8"))
    lines = [f"Calibration folder `{cal.name}`: suite `{Path(settings['suite']).name}`, "
             f"planted {', '.join(f'{f:.0%}' for f in settings['fractions'])}, {settings['aa_runs']} A/A runs.", ""]
    lines += ["## A/A runs (every row timed)", "",
              "| run | rows timed | false calls | rows that reached their target | largest effect (either way) "
              "| worker pairs per row (rows) | wall |", "|---|---:|---:|---:|---:|---|---:|"]
    for i in range(1, settings["aa_runs"] + 1):
        step = cal / f"aa-{i}"
        doc = _verdict(step)
        if doc is None:
            lines.append(f"| aa-{i} | not finished | | | | | |")
            continue
        rows = [r for r in doc["rows"] if r.get("timed")]
        calls = sum(r["timing_change"] in CALLS for r in rows)
        reached = sum(bool(r.get("target_reached")) for r in rows)
        largest = max((abs(r["effect"]) for r in rows if r.get("effect") is not None), default=0.0)
        pools = Counter(r.get("worker_pairs") for r in rows)
        wall = json.loads((step / "step.json").read_text(encoding="utf-8"))["wall_s"]
        spread = ", ".join(f"{k}: {v}" for k, v in sorted(pools.items()))
        lines.append(f"| aa-{i} | {len(rows)} | {calls} | {reached} | {largest:.2%} | {spread} | {wall:.0f} s |")
    aim_path = cal / "aim.json"
    if aim_path.is_file():
        aim = json.loads(aim_path.read_text(encoding="utf-8"))
        lines += ["", f"## The aim in one process ({aim['wall_s']:.0f} s on the last resume; "
                  f"{'complete' if aim['complete'] else 'not complete'})", "",
                  "| size | sized in one process | unsure (needs a paired check) | not plantable |", "|---|---:|---:|---:|"]
        for f in settings["fractions"]:
            key = str(f)
            sized = sum(key in r["aimed"] for r in aim["rows"].values())
            unsure = sum(key in r.get("unsure", []) for r in aim["rows"].values())
            missed = sum(key in r["missed"] and key not in r.get("unsure", []) for r in aim["rows"].values())
            lines.append(f"| {f:.0%} | {sized} | {unsure} | {missed} |")
    for step in sorted(cal.glob("check-*")):
        doc = _verdict(step)
        if doc is None:
            lines += ["", f"## {step.name}: not finished"]
            continue
        lines += ["", f"## {step.name}: {len(doc['rows'])} rows paired with the spin planted", "",
                  "| row | base median | effect of the spin | noise floor | reached its target | worker pairs | pairs |",
                  "|---|---:|---:|---:|---|---:|---:|"]
        for r in doc["rows"]:
            lines.append(f"| {r['op']}/{r['case']}/{r['dtype']} | {r['base_median_us']:.1f} µs | {_pct(r['effect'])} "
                         f"| ±{r['noise_floor']:.2%} | {'yes' if r.get('target_reached') else 'no'} "
                         f"| {r.get('worker_pairs')} | {r.get('pairs')} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("caldir", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--header", default="", help="text put before the tables (date, GPU, versions, why partial)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{args.label}.md"
    path.write_text((args.header + "\n\n" if args.header else "") + summarise(args.caldir), encoding="utf-8")
    print(path)


if __name__ == "__main__":
    main()
