#!/usr/bin/env python3
"""The pre-screen on real Triton source changes, CPU only: the installed Triton is the base
build, an overlay of it with one patch of ``bench/patches`` the PR's; the record is the
suite's IR index captured on the interpreter (``TRITONGATE_CAPTURE_ONLY=1``).

    python bench/prescreen_changes.py --suite smoke --patches fp-fusion-default-off,noop-comment --out DIR

For each patch: the rows timed, why, the variants' AOT statuses and the wall time per step
(``prescreen.json``'s own ``wall_s``, and the whole command). Writes
bench/results/<date>_cpu_prescreen_changes_<suite>.{json,md}.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tritongate.overlay import make_overlay  # noqa: E402 - after the checkout is on the path


def record(suite: str, out: Path) -> tuple[Path, float]:
    env = {**os.environ, "TRITON_INTERPRET": "1", "TRITONGATE_CAPTURE_ONLY": "1"}
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "tritongate", "run", "--suite", suite, "--backend", "cpu", "--rounds", "1",
                    "--samples-per-round", "1", "--out", str(out), "--color", "never"], env=env, cwd=ROOT,
                   capture_output=True, check=False)
    (run,) = [p for p in out.iterdir() if (p / "ttgir" / "index.tsv").is_file()]
    return run, round(time.monotonic() - t0, 1)


def screen(record_dir: Path, patch: str, work: Path) -> dict:
    build = make_overlay(sys.executable, [ROOT / "bench" / "patches" / f"{patch}.patch"], work / f"overlay-{patch}")
    out = work / f"prescreen-{patch}"
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, str(ROOT / "ci" / "prescreen.py"), "--baseline", str(record_dir),
                           "--base-python", sys.executable, "--cand-python", str(build.python), "--out", str(out)],
                          capture_output=True, text=True, cwd=ROOT)
    wall = round(time.monotonic() - t0, 1)
    doc = json.loads((out / "prescreen.json").read_text()) if (out / "prescreen.json").is_file() else {}
    return {"patch": patch, "exit": proc.returncode, "wall_s": wall, "rows_total": doc.get("rows_total"),
            "rows_changed": len(doc.get("rows_changed", [])), "variants": doc.get("variants"),
            "timed_without_ir_change": doc.get("timed_without_ir_change"), "steps_s": doc.get("wall_s"),
            "zero_verdict": (out / "verdict" / "verdict.json").is_file()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", default="smoke")
    ap.add_argument("--patches", default="fp-fusion-default-off,autotuner-args-dict,drop-hopper-pipeline,noop-comment")
    ap.add_argument("--out", required=True)
    ap.add_argument("--results", default=str(ROOT / "bench" / "results"))
    args = ap.parse_args()
    work = Path(args.out)
    work.mkdir(parents=True, exist_ok=True)
    import triton

    record_dir, record_s = record(args.suite, work / "record")
    results = [screen(record_dir, p, work) for p in args.patches.split(",")]
    stamp = dt.datetime.now(dt.timezone.utc)
    doc = {"date": stamp.isoformat(timespec="seconds"), "suite": args.suite, "triton": triton.__version__,
           "python": platform.python_version(), "cpu": platform.processor() or platform.machine(),
           "cores": os.cpu_count(), "record_s": record_s, "results": results}
    name = f"{stamp:%Y-%m-%d}_cpu_prescreen_changes_{args.suite}"
    Path(args.results, f"{name}.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    lines = [f"# The pre-screen on real Triton source changes, suite `{args.suite}` ({stamp:%Y-%m-%d})", "",
             f"CPU only ({doc['cpu']}, {doc['cores']} cores, shared); Triton {doc['triton']} installed as the base "
             f"build, an overlay with one patch of `bench/patches/` as the PR's; the record captured on the "
             f"interpreter in {record_s} s. Raw: [`{name}.json`]({name}.json).", "",
             "| patch | rows timed / total | why (rows) | AOT variants | zero verdict | wall (AOT base/cand, "
             "capture base/cand, s from the start) |", "|---|---|---|---|---|---|"]
    for r in results:
        why = r["timed_without_ir_change"] or {}
        reasons = "; ".join(f"{k} ({v})" for k, v in (why.get("reasons") or {}).items()) or "—"
        s = r["steps_s"] or {}
        lines.append(f"| `{r['patch']}` | {r['rows_changed']} / {r['rows_total']} | {reasons} | "
                     f"{r['variants']} | {'yes' if r['zero_verdict'] else 'no'} | {r['wall_s']} s "
                     f"({s.get('aot_base_s')}/{s.get('aot_cand_s')}, {s.get('capture_base_s')}/"
                     f"{s.get('capture_cand_s')}) |")
    Path(args.results, f"{name}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0 if all(r["exit"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
