"""Real compiler changes, paired: patches to Triton's pass pipeline against the unpatched build.

Each patch (Triton repository layout, e.g. ``third_party/nvidia/backend/compiler.py``) becomes
an overlay build (``tritongate.overlay``: the installed Triton with the patch applied to its
Python sources, the compiled libraries reused), and ``tritongate pair RECORD --suite S
--cand-python <overlay>`` pairs it against this interpreter's build. Per patch: the verdict
counts, the rows REGRESSED/IMPROVED with their paired effect, which rows' launched binaries
changed, and the wall time of the overlay and of the pair.

    python bench/real_patches.py --record RUN --suite pr --out DIR bench/patches/*.patch

Writes DIR/real_patches.json and DIR/real_patches.md, and each pair's verdict.md beside them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchlib import software, timed

from tritongate.overlay import make_overlay


def _verdict_dir(stdout: str) -> Path | None:
    for line in stdout.splitlines():
        if line.startswith("verdict:"):
            return Path(line.split(":", 1)[1].strip()).parent
    return None


def one_patch(patch: Path, record: Path, suite: str, work: Path, out: Path,
              extra: list[str]) -> dict[str, Any]:
    name = patch.stem
    t0 = time.perf_counter()
    build = make_overlay(sys.executable, [patch], work / f"overlay_{name}")
    overlay_s = time.perf_counter() - t0
    cmd = [sys.executable, "-m", "tritongate", "pair", str(record), "--suite", suite,
           "--out", str(work / f"pair_{name}"), "--cand-python", str(build.python), *extra]
    log = work / f"pair_{name}.log"
    code, wall, lines = timed(cmd, log)
    res: dict[str, Any] = {"patch": str(patch), "files": list(build.files), "overlay_s": round(overlay_s, 2),
                           "pair_exit": code, "pair_wall_s": round(wall, 1)}
    vdir = _verdict_dir("\n".join(lines))
    if vdir is None or not (vdir / "verdict.json").is_file():
        res["error"] = log.read_text(errors="replace")[-2000:] + "\n".join(lines)[-1000:]
        return res
    doc = json.loads((vdir / "verdict.json").read_text())
    shutil.copyfile(vdir / "verdict.md", out / f"real_patch_{name}_verdict.md")
    shutil.copyfile(vdir / "verdict.json", out / f"real_patch_{name}_verdict.json")
    res["counts"] = doc.get("counts")
    res["headline"] = doc.get("headline")
    rows = doc.get("rows", [])
    res["rows"] = len(rows)
    res["called"] = [{"row": f"{r['op']}/{r['case']}/{r['dtype']}", "verdict": r["verdict"],
                      "effect": r.get("effect"), "detectable_effect": r.get("detectable_effect")}
                     for r in rows if r["verdict"] in ("REGRESSED", "IMPROVED")]
    res["binaries_changed"] = [f"{r['op']}/{r['case']}/{r['dtype']}" for r in rows
                               if r["verdict"] != "IDENTICAL_BINARY"]
    res["timed_rows"] = [{"row": f"{r['op']}/{r['case']}/{r['dtype']}", "verdict": r["verdict"],
                          "effect": r.get("effect"), "detectable_effect": r.get("detectable_effect")}
                         for r in rows if r["verdict"] not in ("IDENTICAL_BINARY",)]
    return res


def markdown(res: dict[str, Any]) -> str:
    sw = res["software"]
    lines = [f"# Real compiler changes, paired ({res['date_utc'][:10]})", "",
             f"{sw.get('gpu')}, driver {sw.get('driver')}, torch {sw.get('torch')}, triton {sw.get('triton')}; "
             f"suite `{res['suite']}`, record `{res['record']}`.", "",
             "| patch | files | binaries changed (rows) | REGRESSED | IMPROVED | pair exit | pair wall |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for p in res["patches"]:
        c = p.get("counts") or {}
        lines.append(f"| `{Path(p['patch']).name}` | {', '.join(p['files'])} | {len(p.get('binaries_changed', []))} "
                     f"| {c.get('REGRESSED', 0)} | {c.get('IMPROVED', 0)} | {p['pair_exit']} | {p['pair_wall_s']} s |")
    for p in res["patches"]:
        lines += ["", f"## `{Path(p['patch']).name}`", "", f"Headline: {p.get('headline') or p.get('error', '')[:300]}", ""]
        if p.get("timed_rows"):
            lines += ["| row (binaries changed) | verdict | paired effect | detectable |", "|---|---|---:|---:|"]
            for r in p["timed_rows"]:
                eff = "" if r["effect"] is None else f"{r['effect']:+.2%}"
                det = "" if r["detectable_effect"] is None else f"±{r['detectable_effect']:.2%}"
                lines.append(f"| {r['row']} | {r['verdict']} | {eff} | {det} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("patches", nargs="+", type=Path)
    ap.add_argument("--record", required=True, type=Path)
    ap.add_argument("--suite", default="pr")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--work", default=Path("/tmp/tg_real_patches"), type=Path)
    ap.add_argument("--label", default=None, help="file name stem of the results (default real_patches)")
    ap.add_argument("pair_args", nargs=argparse.REMAINDER, help="after --: passed to tritongate pair")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    extra = [a for a in args.pair_args if a != "--"]
    res: dict[str, Any] = {"date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                           "suite": args.suite, "record": str(args.record), "software": software(),
                           "pair_args": extra, "patches": []}
    for patch in args.patches:
        res["patches"].append(one_patch(patch, args.record, args.suite, args.work, args.out, extra))
        print(json.dumps({k: v for k, v in res["patches"][-1].items() if k != "timed_rows"}), flush=True)
    stem = args.label or "real_patches"
    (args.out / f"{stem}.json").write_text(json.dumps(res, indent=1) + "\n")
    (args.out / f"{stem}.md").write_text(markdown(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
