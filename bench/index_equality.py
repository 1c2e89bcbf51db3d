#!/usr/bin/env python3
"""Is a CPU run's IR index the GPU run's, row by row? The proof behind `ir --from CPU_RUN`.

    # on the GPU host: the record (its ttgir/ holds the launched variants and their cubins' hashes)
    tritongate run --suite pr --out runs                                   # -> GPU_RECORD
    # on any CPU: replay the GPU record's autotune configs under the interpreter, indexing
    # each launch without executing it
    TRITONGATE_CAPTURE_ONLY=1 tritongate run --suite pr --backend cpu --replay-from GPU_RECORD \
        --rounds 1 --samples-per-round 1 --out runs                        # -> CPU_REPLAY
    python bench/index_equality.py --gpu-run GPU_RECORD --cpu-run CPU_REPLAY --out DIR

Joins the two indexes' launched variants on (case, kernel, signature, constexprs,
specialization attributes, compile options) and, per verdict row, lists variants only one
side has; then compiles the CPU index ahead of time (``tritongate ir``, cuda:90, the GPU
run's code-generation settings) and compares each variant's cubin hash with the one the GPU
run captured. Writes DIR/index_equality.json and prints a summary; exit 0 when every row's
variants and binaries are equal, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tritongate.ir.index import read_index  # noqa: E402

OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion")


def _key(v) -> str:
    return json.dumps([v.case, v.kernel, dict(v.signature), dict(v.constexprs), dict(v.specialization),
                       {k: v.options.get(k) for k in OPTIONS}], sort_keys=True)


def _launched(index: Path) -> dict[str, object]:
    return {_key(v): v for v in read_index(index) if not v.sweep_loser}


def _write_results(name: str, doc: dict, line: str) -> None:
    import datetime as dt

    from tritongate.ir.index import read_index as _read

    gpu_ttgir = Path(doc["gpu_run"]) / "ttgir"
    files = [p for p in gpu_ttgir.rglob("*.ttgir") if p.is_file()]
    sizes = {"ttgir_files": len(files), "ttgir_bytes": sum(p.stat().st_size for p in files),
             "largest_ttgir_bytes": max((p.stat().st_size for p in files), default=0),
             "index_variants": len(_read(gpu_ttgir / "index.tsv"))}
    date = dt.date.today().isoformat()
    out = {"date": date, "machine": f"cpu ({os.cpu_count()} cores); GPU side: the record's own capture",
           **doc, "gpu_ttgir_sizes": sizes}
    base = ROOT / "bench" / "results" / f"{date}_{name}"
    base.with_suffix(".json").write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    differing = sorted(doc["rows_differing"])
    md = [f"# CPU index vs GPU capture, row by row ({date})", "",
          f"GPU record: `{Path(doc['gpu_run']).name}` (H200); CPU: a capture-only replay of it on the interpreter "
          "(`TRITONGATE_CAPTURE_ONLY=1 tritongate run --suite pr --backend cpu --replay-from GPU_RECORD --rounds 1 "
          "--samples-per-round 1`), its index compiled ahead of time for cuda:90 with the GPU run's codegen settings. "
          "Joined on (case, kernel, signature, constexprs, specialization attributes, options).",
          "", f"**{line}.**", "",
          f"Rows whose variants differ: {len(differing)}" + (f" ({', '.join(differing)})" if differing else "")
          + (": every one a bfloat16 row, which the CPU backend does not run (preflight), so the replay has none"
             if differing and all("/bfloat16 " in r for r in differing) else ""), "",
          f"GPU record's ttgir/: {sizes['ttgir_files']} TTGIR files, {sizes['ttgir_bytes']} bytes "
          f"(largest {sizes['largest_ttgir_bytes']}), {sizes['index_variants']} indexed variants."]
    base.with_suffix(".md").write_text("\n".join(md) + "\n", encoding="utf-8")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu-run", required=True)
    ap.add_argument("--cpu-run", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--name", help="also write bench/results/<date>_<name>.{json,md}")
    args = ap.parse_args()
    out = Path(args.out)
    gpu = _launched(Path(args.gpu_run) / "ttgir" / "index.tsv")
    cpu = _launched(Path(args.cpu_run) / "ttgir" / "index.tsv")
    rows: dict[str, dict[str, list[str]]] = defaultdict(lambda: {"gpu_only": [], "cpu_only": [], "equal": []})
    for k in sorted(set(gpu) | set(cpu)):
        v = gpu.get(k) or cpu.get(k)
        where = "equal" if k in gpu and k in cpu else ("gpu_only" if k in gpu else "cpu_only")
        for row in v.rows:
            rows[f"{row} {v.case}"][where].append(f"{v.kernel} {v.name or v.compile_hash[:12]}")
    # the CPU index compiled ahead of time, with the GPU run's codegen settings (line info off)
    aot = out / "aot-cpu"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("TRITON_INTERPRET", None)
    ident = json.loads((Path(args.gpu_run) / "run_identity.json").read_text())
    for name, value in (ident.get("codegen_env") or {}).items():
        if value is not None and name.startswith(("TRITON_DISABLE_LINE_INFO", "TRITON_DEFAULT_FP_FUSION",
                                                  "DISABLE_")):
            env[name] = value
    subprocess.run([sys.executable, "-m", "tritongate", "ir", "--from", args.cpu_run, "--target", "cuda:90",
                    "--out", str(aot)], check=True, env=env)
    compiled = _launched(aot / "ttgir" / "index.tsv")
    binaries = {"equal": 0, "differ": [], "not_compiled": []}
    for k, g in sorted(gpu.items()):
        c = compiled.get(k)
        if c is None:
            binaries["not_compiled"].append(f"{g.case} {g.kernel} {g.name}")
        elif c.binary_hash and c.binary_hash == g.binary_hash:
            binaries["equal"] += 1
        else:
            binaries["differ"].append(f"{g.case} {g.kernel} {g.name}: gpu {g.binary_hash} cpu-aot {c.binary_hash}")
    bad_rows = {r: d for r, d in rows.items() if d["gpu_only"] or d["cpu_only"]}
    doc = {"gpu_run": args.gpu_run, "cpu_run": args.cpu_run, "variants": {"gpu": len(gpu), "cpu": len(cpu)},
           "rows": len(rows), "rows_differing": bad_rows, "binaries": binaries}
    out.mkdir(parents=True, exist_ok=True)
    (out / "index_equality.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    line = (f"{len(rows) - len(bad_rows)} of {len(rows)} rows: same launched variants; binaries {binaries['equal']} "
            f"equal, {len(binaries['differ'])} differ, {len(binaries['not_compiled'])} not compiled")
    print(line)
    if args.name:
        _write_results(args.name, doc, line)
    return 0 if not bad_rows and not binaries["differ"] and not binaries["not_compiled"] else 1


if __name__ == "__main__":
    sys.exit(main())
