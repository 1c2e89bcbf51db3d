"""IR capture and IR evidence on a real GPU, checked rather than eyeballed.

Steps (each a `tritongate` command; every figure comes from the files they write):

  record   python -m tritongate run --suite S                       (live autotune)
           check: each row's captured TTGIR variants are exactly the binaries the row launched
  replay   python -m tritongate run --suite S --replay-from REC
           check: the replay's IR holds only the replayed winners (no sweep losers, the
           record's launched variants, identical TTGIR)
  pair     python -m tritongate pair REC --suite S --cand-env DISABLE_MMA_V3=1
           check: the verdict's IR evidence names exactly the rows whose kernels use wgmma
           (``ttng.warp_group_dot`` in the record's TTGIR), each linked from verdict.md
  aot      python -m tritongate ir --from REC (twice, the second with DISABLE_MMA_V3=1), ir-diff
  changed  python -m tritongate pair REC --suite S --cand-env DISABLE_MMA_V3=1 --changed-from D
           check: the unchanged rows are not run, the dot rows get the same verdicts; wall time

    python bench/ir_check.py --out DIR [--suite pr]

Writes DIR/ir_check.json (every check and figure) and DIR/ir_check.md, and keeps the paired
verdict.md and the IR summaries beside them.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import html
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchlib import fresh_work_dir, timed

PY = [sys.executable, "-m", "tritongate"]
WGMMA = "ttng.warp_group_dot"


def _index(run_or_ttgir: Path) -> list[dict[str, str]]:
    root = run_or_ttgir / "ttgir" if (run_or_ttgir / "ttgir").is_dir() else run_or_ttgir
    with open(root / "index.tsv", encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def _rows(run: Path) -> list[dict[str, Any]]:
    return json.loads((run / "results.json").read_text())["rows"]


def _launched_by_row(run: Path) -> dict[tuple[str, str, str], list[dict[str, str]]]:
    out: dict[tuple[str, str, str], list[dict[str, str]]] = {}
    for v in _index(run):
        if not v["file"]:
            continue
        for row in filter(None, v["rows"].split(",")):
            op, _, dtype = row.rpartition("/")
            out.setdefault((op, v["case"], dtype), []).append(v)
    return out


def check_capture(run: Path) -> dict[str, Any]:
    """Per row: the binaries the row says it launched == the binaries of its captured TTGIR."""
    launched = _launched_by_row(run)
    index = _index(run)
    mismatches, rows = [], 0
    for r in _rows(run):
        if r["status"] != "ok":
            continue
        rows += 1
        key = (r["op"], r["case"], r["dtype"])
        want = sorted(v["binary_hash"] for v in r.get("variants") or [])
        got = sorted(v["binary_hash"] for v in launched.get(key, []))
        files_ok = all((run / "ttgir" / v["file"]).is_file() for v in launched.get(key, []))
        if want != got or not files_ok:
            mismatches.append({"row": "/".join(key), "row_binaries": want, "captured": got, "files_ok": files_ok})
    return {"rows": rows, "rows_matching": rows - len(mismatches), "mismatches": mismatches,
            "launched_variants": sum(1 for v in index if v["file"]),
            "compiled_variants": len(index), "sweep_losers": sum(1 for v in index if v["sweep_loser"] == "1")}


def check_replay(rec: Path, rep: Path, diff_dir: Path, log: Path) -> dict[str, Any]:
    rec_l, rep_l = _launched_by_row(rec), _launched_by_row(rep)
    idx = _index(rep)
    differ = [("/".join(k), sorted(v["compile_hash"] for v in rec_l.get(k, [])),
               sorted(v["compile_hash"] for v in rep_l.get(k, []))) for k in set(rec_l) | set(rep_l)]
    differ = [d for d in differ if d[1] != d[2]]
    code, _, out = timed(PY + ["ir-diff", str(rec), str(rep), "--out", str(diff_dir)], log)
    statuses: dict[str, int] = {}
    for v in _index(diff_dir):
        statuses[v["status"]] = statuses.get(v["status"], 0) + 1
    return {"compiled_variants": len(idx), "sweep_losers": sum(1 for v in idx if v["sweep_loser"] == "1"),
            "compiled_but_not_launched": sum(1 for v in idx if not v["file"]),
            "rows_whose_launched_variants_differ_from_the_record": differ,
            "ir_diff_record_vs_replay": statuses, "ir_diff_exit": code, "ir_diff_head": out[:1]}


def wgmma_rows(rec: Path) -> set[str]:
    out = set()
    for key, variants in _launched_by_row(rec).items():
        if any(WGMMA in (rec / "ttgir" / v["file"]).read_text() for v in variants):
            out.add("/".join(key))
    return out


def _paths(stdout: list[str]) -> dict[str, str]:
    return {line.split(":", 1)[0]: line.split(":", 1)[1].strip() for line in stdout
            if line.split(":", 1)[0] in ("base", "candidate", "verdict")}


def check_pair(verdict_md: Path, expected: set[str]) -> dict[str, Any]:
    doc = json.loads(verdict_md.with_name("verdict.json").read_text())
    md = html.unescape(verdict_md.read_text())  # paths are shown entity-escaped where needed
    changed = {f"{r['op']}/{r['case']}/{r['dtype']}": r for r in doc["rows"] if r.get("ir") and r["ir"]["changed"]}
    linked = {k for k, r in changed.items() if r["ir"]["diff"] and r["ir"]["diff"] in md}
    return {"rows": len(doc["rows"]), "counts": doc["counts"], "ir": doc.get("ir"),
            "rows_with_ir_changes": sorted(changed), "expected_wgmma_rows": sorted(expected),
            "exactly_the_dot_rows": set(changed) == expected,
            "changed_rows_linked_from_verdict_md": len(linked),
            "verdicts_of_changed_rows": {k: r["verdict"] for k, r in sorted(changed.items())},
            "inline_diffs": md.count("smallest changed diff")}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--suite", default="pr")
    args = ap.parse_args()
    out = Path(args.out)
    work = fresh_work_dir("tg_ir_check")
    res: dict[str, Any] = {"date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                           "suite": args.suite, "steps": {}}

    def save() -> None:
        (out / "ir_check.json").write_text(json.dumps(res, indent=1, default=sorted))

    code, wall, so = timed(PY + ["run", "--suite", args.suite, "--backend", "cuda", "--out", str(work / "rec"),
                                "--color", "never"], out / "record.log")
    rec = Path(so[-1])
    ident = json.loads((rec / "run_identity.json").read_text())
    sw = ident.get("software") or {}
    res["machine"] = {"device": ident.get("device"), "driver": (ident.get("gpu_state_before") or {}).get("driver"),
                      "torch": sw.get("torch"), "cuda": sw.get("cuda"), "triton": (sw.get("triton") or {}).get("version")}
    res["steps"]["record"] = {"exit": code, "wall_s": round(wall, 1), "capture": check_capture(rec)}
    shutil.copy(rec / "ttgir" / "index.tsv", out / "record_ttgir_index.tsv")
    shutil.copy(rec / "ttgir" / "naming.md", out / "record_ttgir_naming.md")
    save()

    code, wall, so = timed(PY + ["run", "--suite", args.suite, "--backend", "cuda", "--out", str(work / "rep"),
                                "--replay-from", str(rec), "--color", "never"], out / "replay.log")
    rep = Path(so[-1])
    res["steps"]["replay"] = {"exit": code, "wall_s": round(wall, 1), "capture": check_capture(rep),
                              **check_replay(rec, rep, work / "d_rec_rep", out / "replay_irdiff.log")}
    save()

    expected = wgmma_rows(rec)
    code, wall, so = timed(PY + ["pair", str(rec), "--suite", args.suite, "--backend", "cuda", "--out",
                                str(work / "pair"), "--cand-env", "DISABLE_MMA_V3=1", "--color", "never"],
                          out / "pair.log")
    paths = _paths(so)
    vmd = Path(paths["verdict"])
    res["steps"]["pair"] = {"exit": code, "wall_s": round(wall, 1), **check_pair(vmd, expected)}
    shutil.copy(vmd, out / "pair_mma_verdict.md")
    shutil.copy(vmd.with_name("verdict.json"), out / "pair_mma_verdict.json")
    shutil.copy(vmd.parent / "ir-diff" / "summary.md", out / "pair_mma_ir_diff_summary.md")
    save()

    t0 = time.perf_counter()
    c1, w1, _ = timed(PY + ["ir", "--from", str(rec), "--target", "cuda:90", "--out", str(work / "aot_base")],
                     out / "aot_base.log")
    c2, w2, _ = timed(PY + ["ir", "--from", str(rec), "--target", "cuda:90", "--out", str(work / "aot_cand")],
                     out / "aot_cand.log", env={"DISABLE_MMA_V3": "1"})
    c3, _, dso = timed(PY + ["ir-diff", str(work / "aot_base"), str(work / "aot_cand"), "--out", str(work / "d")],
                      out / "aot_diff.log")
    aot_wall = time.perf_counter() - t0
    shutil.copy(work / "d" / "summary.md", out / "aot_ir_diff_summary.md")
    code, wall, so = timed(PY + ["pair", str(rec), "--suite", args.suite, "--backend", "cuda", "--out",
                                str(work / "pair2"), "--cand-env", "DISABLE_MMA_V3=1", "--changed-from",
                                str(work / "d"), "--color", "never"], out / "pair_changed_from.log")
    vmd2 = Path(_paths(so)["verdict"])
    doc2 = json.loads(vmd2.with_name("verdict.json").read_text())
    not_run = [f"{r['op']}/{r['case']}/{r['dtype']}" for r in doc2["rows"]
               if any("ahead of time" in x for x in r["reasons"])]
    v1 = res["steps"]["pair"]["verdicts_of_changed_rows"]
    v2 = {f"{r['op']}/{r['case']}/{r['dtype']}": r["verdict"] for r in doc2["rows"]}
    res["steps"]["changed_from"] = {
        "aot_exit": [c1, c2, c3], "aot_wall_s": round(aot_wall, 1), "aot_recompile_wall_s": [round(w1, 1), round(w2, 1)],
        "aot_diff_head": dso[:1], "exit": code, "wall_s": round(wall, 1), "rows": len(doc2["rows"]),
        "rows_not_run": len(not_run), "rows_run": len(doc2["rows"]) - len(not_run),
        "dot_rows_not_run": sorted(set(not_run) & expected),
        "dot_row_verdicts_same_as_full_pair": {k: (v1.get(k), v2.get(k)) for k in sorted(expected)},
        "counts": doc2["counts"]}
    shutil.copy(vmd2, out / "pair_changed_from_verdict.md")
    save()
    (out / "ir_check.md").write_text(render(res))
    # the device returns a few files: everything else travels in one archive
    keep = {"ir_check.json", "ir_check.md"}
    extras = sorted(p.name for p in out.iterdir() if p.name not in keep)
    subprocess.run(["tar", "czf", "extras.tar.gz", *extras], cwd=out, check=True)
    for name in extras:
        (out / name).unlink()
    return 0


def render(res: dict[str, Any]) -> str:
    m, s = res["machine"], res["steps"]
    rec, rep, pair, cf = s["record"], s["replay"], s["pair"], s["changed_from"]
    lines = [f"# IR capture and IR evidence on the GPU ({res['date_utc'][:10]})", "",
             f"{m['device']}, driver {m['driver']}, torch {m['torch']} (CUDA {m['cuda']}), triton {m['triton']}; "
             f"suite `{res['suite']}`.", "",
             "| check | result |", "|---|---|",
             f"| record: rows whose captured TTGIR binaries are exactly the binaries they launched | "
             f"{rec['capture']['rows_matching']} of {rec['capture']['rows']} |",
             f"| record: variants launched / compiled / sweep losers (indexed, no IR) | "
             f"{rec['capture']['launched_variants']} / {rec['capture']['compiled_variants']} / "
             f"{rec['capture']['sweep_losers']} |",
             f"| replay: rows matching their launches | {rep['capture']['rows_matching']} of {rep['capture']['rows']} |",
             f"| replay: compiled variants / sweep losers / compiled but not launched | {rep['compiled_variants']} / "
             f"{rep['sweep_losers']} / {rep['compiled_but_not_launched']} |",
             f"| replay: rows whose launched variants differ from the record's | "
             f"{len(rep['rows_whose_launched_variants_differ_from_the_record'])} |",
             f"| replay: ir-diff record vs replay | {rep['ir_diff_record_vs_replay']} |",
             f"| pair `DISABLE_MMA_V3=1`: rows with IR changes | {len(pair['rows_with_ir_changes'])} (expected: the "
             f"{len(pair['expected_wgmma_rows'])} rows whose record TTGIR uses wgmma); exactly those: "
             f"**{pair['exactly_the_dot_rows']}** |",
             f"| pair: changed rows linked from verdict.md / inline diffs | "
             f"{pair['changed_rows_linked_from_verdict_md']} / {pair['inline_diffs']} |",
             f"| pair: verdict counts | {pair['counts']} |",
             f"| pair: wall | {pair['wall_s']} s |",
             f"| ahead of time: two recompiles + diff | {cf['aot_wall_s']} s; {cf['aot_diff_head']} |",
             f"| `pair --changed-from`: rows not run / run | {cf['rows_not_run']} / {cf['rows_run']} "
             f"(dot rows not run: {len(cf['dot_rows_not_run'])}) |",
             f"| `pair --changed-from`: wall | {cf['wall_s']} s (full pair: {pair['wall_s']} s) |",
             "", "Dot rows, verdict in the full pair vs with `--changed-from`:", ""]
    lines += [f"- {k}: {a} / {b}" for k, (a, b) in cf["dot_row_verdicts_same_as_full_pair"].items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
