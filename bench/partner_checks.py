"""What the GPU-turn partner does to records, replays and batch workers, read from run folders.

Given run directories (a record, a replay, a batch's ``ops/<op>/<run>``, a pair's ``base``) under
labels, prints per row the median, the variant chosen and the launch level each round ran at
(``measurement.launch_state_us``), and compares labels two by two:

    python bench/partner_checks.py rec_a=DIR rec_b=DIR pair=PAIR/base \\
        --compare rec_a:rec_b --compare rec_a:pair --below-us 10

A batch folder (``batch-<suite>_<UTC>``) is read op by op from its ``ops/*/`` runs. Only rows
whose two sides ran the same variants are compared (``same config``); the others are counted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

Key = tuple[str, str, str]


def _run_dirs(path: Path) -> list[Path]:
    """A run directory, or every op run of a batch folder."""
    if (path / "results.json").is_file():
        return [path]
    runs = sorted(p.parent for p in path.glob("ops/*/*/results.json"))
    if not runs:
        raise SystemExit(f"{path}: neither a run directory nor a batch folder with ops/*/<run>/results.json")
    return runs


def load_rows(path: Path) -> dict[Key, dict[str, Any]]:
    rows: dict[Key, dict[str, Any]] = {}
    for run in _run_dirs(path):
        doc = json.loads((run / "results.json").read_text())
        ident_path = run / "run_identity.json"
        ident = json.loads(ident_path.read_text()) if ident_path.is_file() else {}
        for r in doc["rows"]:
            if r.get("status") != "ok" or not r.get("samples"):
                continue
            levels = (r.get("measurement") or {}).get("launch_state_us") or []
            rows[(r["op"], r["case"], r["dtype"])] = {
                "median": statistics.median(r["samples"]),
                "variants": tuple(v.get("binary_hash") for v in r.get("variants") or []),
                "levels": [x for x in levels if x is not None],
                "wall_s": ident.get("wall_s"),
                "gpu_turns": ident.get("gpu_turns"),
            }
    return rows


def level_line(label: str, rows: dict[Key, dict[str, Any]]) -> str:
    levels = [x for r in rows.values() for x in r["levels"]]
    if not levels:
        return f"| {label} | 0 | – | – |"
    slow = sum(1 for x in levels if x > 0.9)
    return f"| {label} | {len(levels)} | {min(levels):.3f}–{max(levels):.3f} | {slow} |"


def compare(a: str, b: str, ra: dict[Key, dict[str, Any]], rb: dict[Key, dict[str, Any]],
            below_us: float) -> list[str]:
    out = [f"### {b} against {a}", "",
           f"| row | {a} µs | {b} µs | {b} vs {a} | same config |", "|---|---|---|---|---|"]
    same_small: list[float] = []
    other_small = 0
    for key in sorted(set(ra) & set(rb)):
        x, y = ra[key], rb[key]
        diff = y["median"] / x["median"] - 1
        same = x["variants"] == y["variants"]
        out.append(f"| {' '.join(key)} | {x['median']:.3f} | {y['median']:.3f} | {diff:+.2%} | "
                   f"{'yes' if same else 'no'} |")
        if x["median"] < below_us:
            if same:
                same_small.append(abs(diff))
            else:
                other_small += 1
    out.append("")
    if same_small:
        out.append(f"Rows < {below_us:g} µs with the same config: {len(same_small)}, largest |difference| "
                   f"{max(same_small):.2%}, {sum(d <= 0.01 for d in same_small)} within 1 %; "
                   f"{other_small} with another config.")
    out.append("")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="LABEL=DIR")
    ap.add_argument("--compare", action="append", default=[], help="A:B (labels)")
    ap.add_argument("--below-us", type=float, default=10.0)
    args = ap.parse_args(argv)
    loaded: dict[str, dict[Key, dict[str, Any]]] = {}
    for item in args.runs:
        label, _, path = item.partition("=")
        loaded[label] = load_rows(Path(path))
    lines = ["## Launch level of every timed round (µs a node; > 0.9 is the slow level)", "",
             "| run | rounds | range | slow rounds |", "|---|---|---|---|"]
    lines += [level_line(label, rows) for label, rows in loaded.items()]
    lines.append("")
    for pair in args.compare:
        a, _, b = pair.partition(":")
        lines += compare(a, b, loaded[a], loaded[b], args.below_us)
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
