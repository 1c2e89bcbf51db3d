"""Where a paired run's time went: the seconds each side's worker spent per command (prepare,
warm_up, round, finish) summed over the rows, from the ``ROW_SECONDS`` lines of each side's
``run.log``, and each op's ``OP_PRELOAD`` (the pool preparing the op's first row at once).

    python bench/pair_row_seconds.py LABEL=PAIR_DIR [LABEL=PAIR_DIR ...] [--json OUT.json]

``PAIR_DIR`` is a ``tritongate pair`` directory (with ``base/run.log`` and
``candidate/run.log``), or a folder holding ``base.run.log`` and ``candidate.run.log``. Two
sides asked at once overlap, so the sums of both sides can exceed the run's wall time.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

COMMANDS = ("prepare", "warm_up", "round", "finish")


def _log(pair_dir: Path, side: str) -> Path:
    for path in (pair_dir / side / "run.log", pair_dir / f"{side}.run.log"):
        if path.is_file():
            return path
    raise FileNotFoundError(f"no run.log of the {side} side in {pair_dir}")


def summarise(pair_dir: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for side in ("base", "candidate"):
        sums = dict.fromkeys(COMMANDS, 0.0)
        rows = 0
        pairs = 0
        preload: dict[str, float] = {}
        for line in _log(pair_dir, side).read_text(encoding="utf-8").splitlines():
            fields = dict(part.split("=", 1) for part in line.split()[1:] if "=" in part)
            if line.startswith("ROW_SECONDS"):
                rows += 1
                pairs += int(fields.get("worker_pairs", 1))
                for cmd in COMMANDS:
                    sums[cmd] += float(fields.get(cmd, 0.0))
            elif line.startswith("OP_PRELOAD"):
                preload[fields["op"]] = float(fields["seconds"])
        out[side] = {"rows": rows, "worker_pairs": pairs, "seconds": {k: round(v, 2) for k, v in sums.items()},
                     "preload_seconds": preload}
    return out


def _row_total(side: dict[str, Any]) -> float:
    return sum(side["seconds"].values())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", metavar="LABEL=PAIR_DIR")
    p.add_argument("--json", type=Path)
    ns = p.parse_args(argv)
    results = {}
    for spec in ns.runs:
        label, sep, path = spec.partition("=")
        if not sep:
            p.error(f"{spec!r}: expected LABEL=PAIR_DIR")
        results[label] = summarise(Path(path))
    print("| run | side | rows | worker pairs | prepare s | warm_up s | round s | finish s | preload s (all ops) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, sides in results.items():
        for side, got in sides.items():
            s = got["seconds"]
            print(f"| {label} | {side} | {got['rows']} | {got['worker_pairs']} | {s['prepare']:.1f} | {s['warm_up']:.1f} | "
                  f"{s['round']:.1f} | {s['finish']:.1f} | {sum(got['preload_seconds'].values()):.1f} |")
    if ns.json:
        ns.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
