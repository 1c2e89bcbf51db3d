"""The paired PR check on a real GPU: A/A false verdicts, a planted code-generation change,
wall time with and without identical-binary skipping, and the precision rows reach.

Steps (each a `tritongate` command, run in order; every step re-uses the record of the
first, or records one):

  record  python -m tritongate run --suite S                      (the baseline)
  aa      python -m tritongate pair REC --suite S --time-identical (timing-only A/A), N times
  skip    python -m tritongate pair REC --suite S                  (A/A, identical rows not timed)
  mma     python -m tritongate pair REC --suite S --cand-env DISABLE_MMA_V3=1  (wgmma off)

    python bench/pair_check.py --out DIR [--suite pr] [--steps record,aa,aa,skip,mma]

Writes DIR/pair_check.json (every figure, per row) and DIR/pair_check.md (the summary), and
keeps each step's verdict.md as DIR/<step>_<i>_verdict.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from benchlib import software, timed

DOT_OPS = ("matmul", "attention", "attention_causal")


def _paths(stdout: list[str]) -> dict[str, str]:
    return {line.split(":", 1)[0]: line.split(":", 1)[1].strip() for line in stdout
            if line.split(":", 1)[0] in ("base", "candidate", "verdict")}


def _rows(verdict_json: Path, cand_dir: Path) -> list[dict[str, Any]]:
    doc = json.loads(verdict_json.read_text())
    cand = {(r["op"], r["case"], r["dtype"]): r for r in json.loads((cand_dir / "results.json").read_text())["rows"]}
    out = []
    for r in doc["rows"]:
        c = cand.get((r["op"], r["case"], r["dtype"]), {})
        pairing = (c.get("measurement") or {}).get("pairing") or {}
        out.append({"op": r["op"], "case": r["case"], "dtype": r["dtype"], "verdict": r["verdict"],
                    "timed": r.get("timed"), "timing_change": r.get("timing_change"), "why": r.get("why"),
                    "effect": r.get("effect"), "base_median_us": r.get("base_median_us"),
                    "detectable_effect": r.get("detectable_effect"), "noise_floor": r.get("noise_floor"),
                    "rounds": r.get("rounds"), "target_reached": pairing.get("target_reached"),
                    "reached_detectable": pairing.get("detectable_effect")})
    return out


def summarize_step(step: dict[str, Any]) -> str:
    rows = step["rows"]
    called = [r for r in rows if r["timing_change"] in ("slower", "faster")]
    verdicts: dict[str, int] = {}
    for r in rows:
        verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
    big = [r for r in rows if r["timed"] and (r["base_median_us"] or 0) >= 10]
    big_2 = [r for r in big if r["detectable_effect"] is not None and r["detectable_effect"] <= 0.02]
    timed = [r for r in rows if r["timed"]]
    return (f"| {step['name']} | {step['exit_code']} | {step['wall_s']:.1f} | {len(timed)} | "
            f"{', '.join(f'{k} {v}' for k, v in sorted(verdicts.items()))} | {len(called)} | "
            f"{len(big_2)} of {len(big)} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--suite", default="pr")
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--steps", default="record,aa,aa,aa,skip,mma")
    ap.add_argument("--record", help="an existing record run (skips the record step)")
    ap.add_argument("--ops", default="", help="only these ops of the suite (A,B)")
    args = ap.parse_args()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    work = out / "work"
    tg = [sys.executable, "-m", "tritongate"]
    sel = ["--ops", args.ops] if args.ops else []
    doc: dict[str, Any] = {"date": dt.date.today().isoformat(), "suite": args.suite, "software": software(),
                           "steps": []}
    record = args.record
    counts: dict[str, int] = {}
    for name in args.steps.split(","):
        counts[name] = counts.get(name, 0) + 1
        tag = f"{name}_{counts[name]}"
        if name == "record":
            rc, wall, stdout = timed(tg + ["run", "--suite", args.suite, "--backend", args.backend, "--out",
                                          str(work / "runs"), "--color", "never", *sel], out / f"{tag}.log")
            record = stdout[-1] if stdout else None
            doc["steps"].append({"name": tag, "exit_code": rc, "wall_s": wall, "record": record})
            print(f"{tag}: exit {rc}, {wall:.1f} s, {record}", flush=True)
            if rc != 0:
                break
            continue
        extra = {"aa": ["--time-identical"], "skip": [], "mma": ["--cand-env", "DISABLE_MMA_V3=1"]}[name]
        rc, wall, stdout = timed(tg + ["pair", str(record), "--suite", args.suite, "--backend", args.backend,
                                      "--out", str(work / "pairs"), "--color", "never", *sel, *extra],
                                out / f"{tag}.log")
        paths = _paths(stdout)
        step: dict[str, Any] = {"name": tag, "args": extra, "exit_code": rc, "wall_s": wall, "stdout_tail": stdout[-6:]}
        if "verdict" in paths:
            verdict_md = Path(paths["verdict"])
            shutil.copy(verdict_md, out / f"{tag}_verdict.md")
            step["rows"] = _rows(verdict_md.with_name("verdict.json"), Path(paths["candidate"]))
            ident = json.loads((Path(paths["candidate"]) / "run_identity.json").read_text())
            step["timed_s"] = ident.get("timed_s")
            step["restarts"] = ident.get("restarts")
        doc["steps"].append(step)
        print(f"{tag}: exit {rc}, {wall:.1f} s", flush=True)
        (out / "pair_check.json").write_text(json.dumps(doc, indent=1))
    lines = [f"# Paired check, {args.suite} suite ({doc['date']})", "",
             f"{doc['software']}", "",
             "| step | exit | wall s | rows timed | verdicts | timing called (slower/faster) | rows ≥ 10 µs reaching 2 % |",
             "|---|---|---|---|---|---|---|"]
    lines += [summarize_step(s) for s in doc["steps"] if "rows" in s]
    for s in doc["steps"]:
        if s["name"].startswith("mma") and "rows" in s:
            lines += ["", f"## {s['name']}: rows by op", "", "| op | case | dtype | verdict | effect |", "|---|---|---|---|---|"]
            lines += [f"| {r['op']} | {r['case']} | {r['dtype']} | {r['verdict']} | "
                      f"{'' if r['effect'] is None else format(r['effect'], '+.1%')} |" for r in s["rows"]]
        if s["name"].startswith("aa") and "rows" in s:
            lines += ["", f"## {s['name']}: precision per row", "",
                      "| op | case | dtype | base µs | rounds | detectable | target reached | timing |", "|---|---|---|---|---|---|---|---|"]
            lines += [f"| {r['op']} | {r['case']} | {r['dtype']} | {r['base_median_us'] or 0:.2f} | {r['rounds']} | "
                      f"{'n/a' if r['detectable_effect'] is None else format(r['detectable_effect'], '.2%')} | "
                      f"{r['target_reached']} | {r['timing_change']} |" for r in s["rows"]]
    (out / "pair_check.md").write_text("\n".join(lines) + "\n")
    (out / "pair_check.json").write_text(json.dumps(doc, indent=1))
    print((out / "pair_check.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
