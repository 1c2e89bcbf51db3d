#!/usr/bin/env python3
"""The first compiler pass a real Triton source change alters, per changed kernel, CPU only.

The installed Triton is the base build; an overlay of it with one patch of ``bench/patches``
(``tritongate overlay``'s ``make_overlay``) the PR's. Both recompile the record's launched
variants ahead of time (``tritongate ir``, as the pre-screen runs it) and ``ir-diff`` names the
variants that changed; each changed one (and ``--check-identical`` unchanged ones, as a
control) is compiled again under both builds with every pass dumped
(``tritongate.ir.passdumps``) and blamed (``tritongate.ir.passblame.first_difference``).

The index pins each variant's options as recorded (``enable_fp_fusion: true``), so a patch
that changes an option's *default* changes nothing there; ``--default-options
PATCH=OPT[+OPT]`` blames it again with those options left to each build (one variant per
kernel function), as a launch that does not pass them would compile.

    python bench/pass_blame.py --out /tmp/pass-blame [--record examples/ir-index/pr-cpu-capture]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tritongate.ir.aot import CODEGEN_ENV  # noqa: E402 - after the checkout is on the path
from tritongate.ir.diff import IDENTICAL, diff_trees  # noqa: E402
from tritongate.ir.index import CompiledVariant, read_index  # noqa: E402
from tritongate.ir.passblame import first_difference  # noqa: E402
from tritongate.ir.passdumps import compile_with_dumps  # noqa: E402
from tritongate.overlay import make_overlay  # noqa: E402
from tritongate.prescreen import _aot_cmd  # noqa: E402 - the pre-screen's own recompile command

PATCHES = ("drop-coalesce", "drop-hopper-pipeline", "drop-thread-locality", "fp-fusion-default-off",
           "noop-comment", "autotuner-args-dict")


def aot(python: str, record: Path, out: Path, target: str) -> float:
    cmd, env = _aot_cmd(python, record, out, target)
    t0 = time.monotonic()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr[-2000:]}")
    shutil.rmtree(out.with_name(out.name + ".triton-cache"), ignore_errors=True)
    return round(time.monotonic() - t0, 2)


def side(d: Any) -> dict[str, Any]:
    return {k: d.meta.get(k) for k in ("wall_s", "compile_s", "parse_s", "bytes", "triton_dir")} | {
        "passes": len(d.passes)}


def blame(v: CompiledVariant, pythons: dict[str, str], work: Path, *, env: dict[str, str], identity: dict,
          drop: tuple[str, ...], base_cache: dict, keep: bool) -> dict[str, Any]:
    """Both sides compiled with dumps (the base once per variant and dropped options), then blamed."""
    key = (v.key, drop)
    if key not in base_cache:
        base_cache.clear()  # one variant at a time: dumps of big kernels are ~100 MB
        shutil.rmtree(work / "base", ignore_errors=True)
        base_cache[key] = compile_with_dumps(pythons["base"], v, "cuda:90", work / "base", env=env,
                                             identity=identity, drop_options=drop)
    base = base_cache[key]
    cand = compile_with_dumps(pythons["cand"], v, "cuda:90", work / "cand", env=env, identity=identity,
                              drop_options=drop)
    t0 = time.monotonic()
    result = first_difference(base, cand)
    blame_s = round(time.monotonic() - t0, 3)
    if not keep:
        shutil.rmtree(work / "cand", ignore_errors=True)
    return {"case": v.case, "kernel": v.kernel.rsplit(".", 1)[-1], "variant": v.name, "rows": list(v.rows),
            "dropped_options": list(drop), "blame": result.to_dict(), "base": side(base), "cand": side(cand),
            "blame_s": blame_s,
            "total_s": round(base.meta["wall_s"] + base.meta["parse_s"] + cand.meta["wall_s"]
                             + cand.meta["parse_s"] + blame_s, 2),
            "bytes": base.meta["bytes"] + cand.meta["bytes"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--record", type=Path, default=ROOT / "examples" / "ir-index" / "pr-cpu-capture")
    ap.add_argument("--patches", default=",".join(PATCHES))
    ap.add_argument("--default-options", default="fp-fusion-default-off=enable_fp_fusion")
    ap.add_argument("--check-identical", type=int, default=1, help="unchanged variants blamed per patch (control)")
    ap.add_argument("--out", type=Path, required=True, help="work folder (emptied)")
    ap.add_argument("--results", type=Path, default=ROOT / "bench" / "results")
    ap.add_argument("--label", default=f"{dt.date.today():%Y-%m-%d}_cpu_pass_blame")
    ap.add_argument("--keep", action="store_true", help="keep every dump folder")
    ap.add_argument("--limit", type=int, default=0, help="changed variants blamed per patch (0: all)")
    args = ap.parse_args()
    work = args.out
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    import triton

    identity = json.loads((args.record / "run_identity.json").read_text(encoding="utf-8"))
    env = {k: str(v) for k, v in (identity.get("codegen_env") or {}).items()
           if k in CODEGEN_ENV and v is not None and k not in os.environ}
    started = time.monotonic()
    aot_s = {"base": aot(sys.executable, args.record, work / "ir-base", "cuda:90")}
    base_index = {(v.case, v.kernel, v.name): v for v in read_index(work / "ir-base" / "ttgir" / "index.tsv")}
    defaults = dict(item.split("=", 1) for item in args.default_options.split(",") if "=" in item)
    results: list[dict[str, Any]] = []
    for patch in [p for p in args.patches.split(",") if p]:
        t0 = time.monotonic()
        build = make_overlay(sys.executable, [ROOT / "bench" / "patches" / f"{patch}.patch"], work / f"overlay-{patch}")
        overlay_s = round(time.monotonic() - t0, 2)
        pythons = {"base": sys.executable, "cand": str(build.python)}
        aot_s[patch] = aot(pythons["cand"], args.record, work / f"ir-{patch}", "cuda:90")
        diffs = diff_trees(work / "ir-base", work / f"ir-{patch}")
        statuses = Counter(d.status for d in diffs)
        changed = [d for d in diffs if d.status != IDENTICAL][:args.limit or None]
        control = [d for d in diffs if d.status == IDENTICAL][:args.check_identical]
        kernels: list[dict[str, Any]] = []
        base_cache: dict = {}
        for d in changed + control:
            v = base_index.get((d.case, d.kernel, d.name))
            if v is None:
                kernels.append({"case": d.case, "kernel": d.kernel, "variant": d.name, "status": d.status,
                                "error": "not in the base build's AOT index"})
                continue
            row = blame(v, pythons, work / f"dumps-{patch}", env=env, identity=identity, drop=(),
                        base_cache=base_cache, keep=args.keep)
            kernels.append(row | {"status": d.status, "control": d.status == IDENTICAL})
            print(f"{patch} {d.case} {row['kernel']} [{d.status}]: {row['blame']['summary']} "
                  f"({row['total_s']} s, {row['bytes'] / 2**20:.1f} MiB)", flush=True)
        if patch in defaults:
            drop = tuple(defaults[patch].split("+"))
            firsts = {}
            for v in base_index.values():
                firsts.setdefault(v.kernel, v)
            for v in firsts.values():
                row = blame(v, pythons, work / f"dumps-{patch}-defaults", env=env, identity=identity, drop=drop,
                            base_cache=base_cache, keep=args.keep)
                kernels.append(row | {"status": "options left to each build", "control": False})
                print(f"{patch} (without {'+'.join(drop)}) {v.case} {row['kernel']}: {row['blame']['summary']} "
                      f"({row['total_s']} s, {row['bytes'] / 2**20:.1f} MiB)", flush=True)
        if not args.keep:
            for folder in work.glob(f"dumps-{patch}*"):
                shutil.rmtree(folder, ignore_errors=True)
        results.append({"patch": patch, "overlay_s": overlay_s, "aot_s": aot_s[patch], "variants": dict(statuses),
                        "kernels": kernels})
    stamp = dt.datetime.now(dt.timezone.utc)
    doc = {"date": stamp.isoformat(timespec="seconds"), "record": str(args.record.resolve().relative_to(ROOT))
           if args.record.resolve().is_relative_to(ROOT) else str(args.record), "triton": triton.__version__,
           "python": platform.python_version(), "cpu": platform.processor() or platform.machine(),
           "cpus": os.cpu_count(), "load_avg": [round(x, 2) for x in os.getloadavg()], "target": "cuda:90",
           "aot_base_s": aot_s["base"], "wall_s": round(time.monotonic() - started, 1), "results": results}
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / f"{args.label}.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    md = markdown(doc, args.label)
    (args.results / f"{args.label}.md").write_text(md, encoding="utf-8")
    print(md)
    return 0


def _stats(values: list[float], unit: str, scale: float = 1.0) -> str:
    if not values:
        return "—"
    vals = [v / scale for v in values]
    return f"{statistics.median(vals):.1f} (max {max(vals):.1f}) {unit}"


def markdown(doc: dict[str, Any], label: str) -> str:
    lines = [f"# The first compiler pass each real patch changes, per changed kernel ({doc['date'][:10]})", "",
             f"CPU only ({doc['cpu']}, {doc['cpus']} cores, shared; load {doc['load_avg']} at the end); Triton "
             f"{doc['triton']} installed as the base build, an overlay with one patch of `bench/patches/` as the "
             f"PR's; record `{doc['record']}` recompiled for {doc['target']} by both (`tritongate ir`), `ir-diff` "
             f"naming the changed variants, each compiled again by both builds with every MLIR and LLVM pass dumped "
             f"and blamed (`tritongate.ir.passblame`). `bench/pass_blame.py`, {doc['wall_s']} s in all. "
             f"Raw: [`{label}.json`]({label}.json).", "",
             "| patch | AOT variants | blamed | first difference (kernels) | time per kernel, both builds | "
             "dumps per kernel, both builds |", "|---|---|---|---|---|---|"]
    for r in doc["results"]:
        rows = [k for k in r["kernels"] if "blame" in k]
        for group, members in (("", [k for k in rows if not k.get("dropped_options")]),
                               (" (options left to each build)", [k for k in rows if k.get("dropped_options")])):
            if group and not members:
                continue
            tally = Counter(k["blame"]["summary"] + (" *(control)*" if k.get("control") else "") for k in members)
            lines.append(f"| `{r['patch']}`{group} | {r['variants'] if not group else '—'} | {len(members)} | "
                         + "<br>".join(f"{s} ({n})" for s, n in tally.most_common()) + " | "
                         + _stats([k["total_s"] for k in members if not k.get("control")], "s") + " | "
                         + _stats([k["bytes"] for k in members if not k.get("control")], "MiB", 2**20) + " |")
    lines += ["", "Per kernel (time: both builds' compiles with dumps, their parsing and the blame; "
              "dumps: both folders' bytes):", "",
              "| patch | case | kernel | AOT status | first difference | passes base/cand | s | MiB |",
              "|---|---|---|---|---|---|---:|---:|"]
    for r in doc["results"]:
        for k in r["kernels"]:
            if "blame" not in k:
                lines.append(f"| `{r['patch']}` | {k['case']} | {k['kernel']} | {k['status']} | {k['error']} | | | |")
                continue
            lines.append(f"| `{r['patch']}` | {k['case']} | `{k['kernel']}` {'/'.join(k['rows'])} | {k['status']} | "
                         f"{k['blame']['summary']} | {k['base']['passes']}/{k['cand']['passes']} | {k['total_s']} | "
                         f"{k['bytes'] / 2**20:.1f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
