"""Real FlagGems operators on the GPU: record, replay and pair-replay the `flaggems-pr` suite.

Checks what the replay must show: every tuned kernel replayed on its recorded config (no
AUTOTUNE_REPLAY_FALLBACK), **0 sweep benchmarks during replay** (single-process replay and
both sides of the paired A/A run), every row correct against torch, the tuners involved
(LibTuner and Triton's Autotuner, by key), and wall times. Also the size of `flaggems-deep`.

flag_gems is not a dependency: install it first (the GPU machine has no network:
`pip download flag_gems==5.0.2 sqlalchemy greenlet --no-deps -d DIR` elsewhere, then
`pip install --no-index DIR/*.whl`).

    python bench/flaggems_check.py --out DIR [--suite flaggems-pr]

Writes DIR/flaggems_check.json and DIR/flaggems_check.md and the pair's verdict.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from benchlib import fresh_work_dir, timed

PY = [sys.executable, "-m", "tritongate"]


def autotune_summary(run: Path) -> dict[str, Any]:
    rows = json.loads((run / "results.json").read_text())["rows"]
    sources: Counter[str] = Counter()
    tuners: Counter[str] = Counter()
    markers: Counter[str] = Counter()
    not_replayed, incorrect, errors = [], [], []
    sweeps = 0
    for r in rows:
        name = f"{r['op']}/{r['case']}/{r['dtype']}"
        if r["status"] != "ok":
            errors.append(f"{name}: {r.get('error', '')[:160]}")
        if r.get("correctness") and not r["correctness"].get("ok"):
            incorrect.append(f"{name}: {r['correctness'].get('detail', '')[:160]}")
        at = r.get("autotune") or {}
        sweeps += at.get("sweep_benchmarks", 0)
        for k in at.get("kernels", []):
            sources[k["source"]] += 1
            if k["source"] not in ("replayed", "tuned", "presweep"):
                not_replayed.append(f"{name}: {k['kernel']} {k['source']} {k.get('reason', '')}")
        for m in r.get("markers", []):
            markers[m.split()[1] if m.startswith("!!!") and len(m.split()) > 1 else m.split()[0]] += 1
    variants = [r.get("variants") or [] for r in rows if r["status"] == "ok"]
    # IDENTICAL_BINARY needs every launched kernel of a row with its binary's hash
    with_binaries = sum(bool(v) and all(x.get("binary_hash") for x in v) for v in variants)
    recs = run / "autotune_records"
    for f in recs.glob("*.json") if recs.is_dir() else []:
        if f.name != "meta.json":
            for e in json.loads(f.read_text()).get("entries", []):
                tuners[e.get("tuner", "?")] += 1
    return {"rows": len(rows), "ok_rows": sum(r["status"] == "ok" for r in rows), "errors": errors[:30],
            "incorrect": incorrect, "sweep_benchmarks": sweeps, "kernel_sources": dict(sources),
            "not_replayed": not_replayed[:30], "markers": dict(markers), "recorded_by_tuner": dict(tuners),
            "rows_with_binaries": with_binaries, "rows_without_variants": sum(not v for v in variants)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--suite", default="flaggems-pr")
    ap.add_argument("--timeout", type=float, default=240.0)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = fresh_work_dir("tg_flaggems")
    res: dict[str, Any] = {"date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                           "suite": args.suite}

    def save() -> None:
        (out / "flaggems_check.json").write_text(json.dumps(res, indent=1))

    common = ["--suite", args.suite, "--backend", "cuda", "--isolate-tuner-cache", "--color", "never"]
    code, wall, so = timed(PY + ["run", *common, "--out", str(work / "rec")], out / "record.log",
                           timeout=args.timeout)
    res["record"] = {"exit": code, "wall_s": round(wall, 1)}
    save()
    if code != 0:
        return 1
    rec = Path(so[-1])
    ident = json.loads((rec / "run_identity.json").read_text())
    sw = ident.get("software") or {}
    res["machine"] = {"device": ident.get("device"), "driver": (ident.get("gpu_state_before") or {}).get("driver"),
                      "torch": sw.get("torch"), "triton": (sw.get("triton") or {}).get("version"),
                      "flag_gems": (sw.get("flag_gems") or sw.get("packages", {}).get("flag_gems")
                                    if isinstance(sw, dict) else None)}
    res["record"].update(autotune_summary(rec))
    save()

    code, wall, so = timed(PY + ["run", *common, "--out", str(work / "rep"), "--replay-from", str(rec)],
                           out / "replay.log", timeout=args.timeout)
    res["replay"] = {"exit": code, "wall_s": round(wall, 1)}
    if code == 0:
        res["replay"].update(autotune_summary(Path(so[-1])))
    save()

    code, wall, so = timed(PY + ["pair", str(rec), *common, "--out", str(work / "pair")], out / "pair.log",
                           timeout=args.timeout * 2)
    res["pair"] = {"exit": code, "wall_s": round(wall, 1)}
    paths = {line.split(":", 1)[0]: line.split(":", 1)[1].strip() for line in so
             if line.split(":", 1)[0] in ("base", "candidate", "verdict")}
    if "verdict" in paths:
        v = json.loads(Path(paths["verdict"]).with_name("verdict.json").read_text())
        res["pair"].update(counts={k: n for k, n in v["counts"].items() if n}, headline=v["headline"],
                           base=autotune_summary(Path(paths["base"])),
                           candidate=autotune_summary(Path(paths["candidate"])))
        shutil.copy(paths["verdict"], out / "pair_verdict.md")
    save()

    probe = ("from tritongate.suites import load_suite; s = load_suite('flaggems-deep'); "
             "print(len(s.ops), sum(len(s.shapes.get(o.name, ())) * len(o.dtypes) for o in s.ops), len(s.dismissed))")
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    parts = p.stdout.split()
    res["deep"] = {"ops": int(parts[0]), "rows": int(parts[1]), "dismissed": int(parts[2])} if len(parts) == 3 \
        else {"error": p.stderr[-500:]}
    save()
    (out / "flaggems_check.md").write_text(render(res))
    return 0


def render(res: dict[str, Any]) -> str:
    m = res.get("machine") or {}
    r, rp, pr = res["record"], res.get("replay", {}), res.get("pair", {})
    lines = [f"# FlagGems on the GPU ({res['date_utc'][:10]})", "",
             f"{m.get('device')}, driver {m.get('driver')}, torch {m.get('torch')}, triton {m.get('triton')}; "
             f"suite `{res['suite']}`.", "",
             "| step | exit | wall | rows ok | incorrect | sweep benchmarks | kernel entries | fallback markers "
             "| rows with every binary hashed |",
             "|---|---|---:|---:|---:|---:|---|---|---:|"]
    for name, s in (("record", r), ("replay (`run --replay-from`)", rp),
                    ("pair A/A, base side", pr.get("base", {})), ("pair A/A, candidate side", pr.get("candidate", {}))):
        wall = s.get("wall_s", pr.get("wall_s"))
        lines.append(f"| {name} | {s.get('exit', pr.get('exit'))} | {wall} s | {s.get('ok_rows')}/{s.get('rows')} | "
                     f"{len(s.get('incorrect', []))} | {s.get('sweep_benchmarks')} | {s.get('kernel_sources')} | "
                     f"{s.get('markers')} | {s.get('rows_with_binaries')} |")
    lines += ["", f"Recorded winners by tuner: {r.get('recorded_by_tuner')}.",
              f"Pair verdict: {pr.get('headline')} {pr.get('counts')}.",
              f"`flaggems-deep`: {res.get('deep')}."]
    lines += [f"Incorrect: {line}" for line in r.get("incorrect", [])]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
