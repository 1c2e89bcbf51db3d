"""The size of `flaggems-deep` and its wall time on one GPU, from a measured sample.

The whole scan (1,200+ rows) takes longer than one measurement call here, so one shard of
the ops (``batch --shard K/N``, round robin over the plan) is measured end to end as the
deep scan runs it: a record batch (every op in its own process, live autotune), then the
paired check of that record (base and candidate the same build, ``--time-identical``: every
row timed, the cost of a compiler change that touches every binary). The one-GPU figure for
the whole suite is that sample scaled by rows, and is labelled an estimate.

    python bench/flaggems_deep.py --out DIR [--shard 1/12]

flag_gems must be installed (see bench/flaggems_check.py). Writes DIR/flaggems_deep.{json,md}.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from benchlib import timed

PY = [sys.executable, "-m", "tritongate"]
SUITE = "flaggems-deep"


def suite_size() -> dict[str, int]:
    from tritongate.suites import load_suite

    suite = load_suite(SUITE)
    rows = sum(len(suite.shapes.get(o.name, ())) * len(o.dtypes) for o in suite.ops)
    return {"ops": len(suite.ops), "rows": rows, "dismissed": len(suite.dismissed)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--shard", default="1/12")
    ap.add_argument("--work", default="/tmp/tg_flaggems_deep")
    args = ap.parse_args()
    out, work = Path(args.out), Path(args.work)
    out.mkdir(parents=True, exist_ok=True)
    res: dict[str, Any] = {"date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                           "suite": SUITE, "shard": args.shard, "size": suite_size()}

    def save() -> None:
        (out / "flaggems_deep.json").write_text(json.dumps(res, indent=1))

    code, wall, so = timed(PY + ["batch", "--suite", SUITE, "--backend", "cuda", "--shard", args.shard,
                                 "--isolate-tuner-cache", "--op-timeout", "300", "--out", str(work / "rec")],
                           out / "record.log", timeout=560)
    res["record"] = {"exit": code, "wall_s": round(wall, 1)}
    save()
    if not so:
        return 1
    bdir = Path(so[-1])
    with open(bdir / "ops_status.csv", newline="") as f:
        ops = list(csv.DictReader(f))
    rows = json.loads((bdir / "run" / "results.json").read_text())["rows"]
    ident = json.loads((bdir / "run" / "run_identity.json").read_text())
    sw = ident.get("software") or {}
    res["machine"] = {"device": ident.get("device"), "driver": (ident.get("gpu_state_before") or {}).get("driver"),
                      "torch": sw.get("torch"), "triton": (sw.get("triton") or {}).get("version")}
    res["record"].update(ops=len(ops), statuses=dict(Counter(o["status"] for o in ops)), rows=len(rows),
                         rows_ok=sum(r["status"] == "ok" for r in rows),
                         incorrect=[f"{r['op']}/{r['case']}/{r['dtype']}" for r in rows
                                    if r.get("correctness") and not r["correctness"].get("ok")],
                         not_pass={o["op"]: o["status"] for o in ops if o["status"] not in ("PASS", "SKIP")})
    save()
    passed = [o["op"] for o in ops if o["status"] == "PASS"]
    code, wall, so = timed(PY + ["pair", str(bdir / "run"), "--suite", SUITE, "--backend", "cuda",
                                 "--ops", ",".join(passed), "--time-identical", "--isolate-tuner-cache",
                                 "--color", "never", "--out", str(work / "pair")], out / "pair.log", timeout=560)
    res["pair"] = {"exit": code, "wall_s": round(wall, 1)}
    verdict = next((line.split(":", 1)[1].strip() for line in so if line.startswith("verdict:")), None)
    if verdict:
        v = json.loads(Path(verdict).with_name("verdict.json").read_text())
        res["pair"].update(counts={k: n for k, n in v["counts"].items() if n}, headline=v["headline"])
    total_rows = res["size"]["rows"]
    sample = max(len(rows), 1)
    res["estimate_one_gpu_s"] = {k: round(res[k]["wall_s"] * total_rows / sample) for k in ("record", "pair")}
    save()
    (out / "flaggems_deep.md").write_text(render(res))
    return 0


def render(res: dict[str, Any]) -> str:
    m, size, rec, pair, est = res.get("machine", {}), res["size"], res["record"], res.get("pair", {}), \
        res.get("estimate_one_gpu_s", {})
    lines = [f"# `flaggems-deep` on one GPU ({res['date_utc'][:10]})", "",
             f"{m.get('device')}, driver {m.get('driver')}, torch {m.get('torch')}, triton {m.get('triton')}.", "",
             f"Size: {size['ops']} ops, {size['rows']} rows ({size['dismissed']} inventory op dismissed).", "",
             f"Measured sample: shard {res['shard']} of the ops ({rec.get('ops')} ops, {rec.get('rows')} rows).", "",
             "| step | exit | wall (sample) | per row | whole suite, one GPU (estimate) |", "|---|---|---:|---:|---:|"]
    for name, s in (("record (`batch`, live autotune)", rec), ("pair (`--time-identical`, every row timed)", pair)):
        key = "record" if name.startswith("record") else "pair"
        per = s.get("wall_s", 0) / max(rec.get("rows") or 1, 1)
        whole = est.get(key)
        lines.append(f"| {name} | {s.get('exit')} | {s.get('wall_s')} s | {per:.2f} s | "
                     f"{whole / 60:.0f} min |" if whole else f"| {name} | {s.get('exit')} | {s.get('wall_s')} s | | |")
    lines += ["", f"Record op statuses: {rec.get('statuses')}; not passing: {rec.get('not_pass') or 'none'}; "
                  f"rows incorrect against torch: {rec.get('incorrect') or 'none'}.",
              f"Pair: {pair.get('headline')} {pair.get('counts')}."]
    if est:
        lines.append(f"Whole suite on one GPU, record + pair: about {(est['record'] + est['pair']) / 60:.0f} min "
                     "(the sample scaled by rows); the deep-scan workflow splits the pair over its shards.")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
