"""How long ``tritongate.dashboard.build_site`` takes over a year of nightlies, how large the site
is, and how fast its pages load in headless Chromium.

The store is ``bench/scale.py``'s ``history`` store (``prepare_history``: N nights of R rows,
8 rows an op, a 5 % step on every 10th row from night 2/3 on), prepared once into ``--work``
and reused while its ``prepared.json`` says the same size. Each measurement runs in a fresh
process reaped with wait4 (``seconds``: the work itself; ``process_s``: the whole process with
its imports; ``cpu_s``: its user + system CPU; ``peak_mib``: its peak resident set): the build
(``build_site``, one process: it uses one core), and for comparison what ``tritongate history``
spends on the same store (``load_history`` and ``build_report``, which the build calls). The
pages are loaded by
``chromium --headless --dump-dom`` from ``file://`` (the browser test's flags); ``wall_s`` is
the whole browser process, ``startup_s`` the same for an empty page (the browser's own start),
``render_ms`` what the page's script measured from its start to its last row or chart.

    python bench/dashboard_scale.py [--nights 365] [--rows 1232] [--work /tmp/tritongate-dashboard-scale]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--virtual-time-budget=5000"]
GOALS = {"build_s": 30.0, "index_load_s": 2.0, "site_mb": 25.0}


def prepare(work: Path, nights: int, rows: int) -> float:
    """The store in ``work/store`` (reused when ``prepared.json`` matches); seconds spent."""
    marker = work / "prepared.json"
    want = {"nights": nights, "rows": rows}
    if marker.is_file() and json.loads(marker.read_text()) == want:
        return 0.0
    subprocess.run(["rm", "-rf", str(work)], check=True)
    work.mkdir(parents=True)
    from bench.scale import prepare_history

    t0 = time.perf_counter()
    prepare_history(nights, work, rows)
    subprocess.run(["rm", "-rf", str(work / "runs")], check=True)  # the record runs: only the store is read
    marker.write_text(json.dumps(want))
    return time.perf_counter() - t0


def child(case: str, store: Path, out: Path) -> None:
    t0 = time.perf_counter()
    if case == "history":
        from tritongate.history.report import build_report
        from tritongate.history.series import load_history

        t1 = time.perf_counter()
        report = build_report(load_history(store, "h200", "deep"))
        print(json.dumps({"seconds": time.perf_counter() - t1, "import_s": t1 - t0, "rows": len(report.analyses),
                          "change_points": len(report.change_points)}))
        return
    from tritongate.dashboard import build_site

    t1 = time.perf_counter()
    summary = build_site(store, out)
    print(json.dumps({"seconds": time.perf_counter() - t1, "import_s": t1 - t0, "rows": summary.rows,
                      "pages": summary.pages, "entries": summary.entries, "change_points": summary.change_points,
                      "files": summary.files, "bytes": summary.bytes}))


def measure(case: str, store: Path, out: Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, __file__, "_child", case, str(store), str(out)],
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdout is not None
    text = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise RuntimeError(f"{case} exited {code}")
    return {"case": case, **json.loads(text.strip().splitlines()[-1]), "process_s": wall,
            "cpu_s": usage.ru_utime + usage.ru_stime, "peak_mib": usage.ru_maxrss / 1024.0,
            "load_average_after": os.getloadavg()}


def best(case: str, store: Path, out: Path, repeat: int) -> dict[str, Any]:
    """The fastest of ``repeat`` runs (on a shared machine the slower ones measure the
    neighbours), with every run's seconds."""
    runs = [measure(case, store, out) for _ in range(repeat)]
    best = min(runs, key=lambda r: r["seconds"])
    return {**best, "runs_s": [r["seconds"] for r in runs], "runs_cpu_s": [r["cpu_s"] for r in runs]}


def site_size(out: Path) -> dict[str, Any]:
    files = [p for p in out.rglob("*") if p.is_file()]
    pages = sorted(p.stat().st_size for p in (out / "ops").glob("*.html"))
    return {"files": len(files), "bytes": sum(p.stat().st_size for p in files),
            "index_bytes": (out / "index.html").stat().st_size, "op_pages": len(pages),
            "op_page_median_bytes": statistics.median(pages), "op_page_max_bytes": pages[-1]}


def load(url: str, profile: Path, runs: int) -> dict[str, Any]:
    walls, renders = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        done = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", url],
                              capture_output=True, text=True, timeout=120)
        walls.append(time.perf_counter() - t0)
        dom = done.stdout
        if 'data-ready="1"' not in dom or not re.search(r'<ul id="errors"[^>]*></ul>', dom):
            raise RuntimeError(f"{url} did not render cleanly")
        got = re.search(r'data-render-ms="(\d+)"', dom)
        renders.append(int(got.group(1)) if got else None)
    return {"wall_s": walls, "wall_median_s": statistics.median(walls), "render_ms": renders}


def machine() -> dict[str, Any]:
    model = ""
    try:
        model = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                      if ln.startswith("model name")), "")
    except OSError:
        pass
    chromium = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True).stdout.strip()
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    return {"cpu": model or platform.machine(), "cores": len(os.sched_getaffinity(0)), "python": platform.python_version(),
            "chromium": chromium, "commit": commit, "load_average": os.getloadavg()}


def markdown(doc: dict[str, Any]) -> str:
    m, size = doc["machine"], doc["site"]
    lines = [f"# Dashboard scale: {doc['nights']} nights x {doc['rows']} rows", "",
             f"{doc['date']}, {m['cpu']}, {m['cores']} cores (shared), Python {m['python']}, {m['chromium']}, "
             f"commit {m['commit'][:12]} (working tree with uncommitted changes). `python bench/dashboard_scale.py`.",
             "", "Store: `bench/scale.py`'s history store (8 rows an op, a 5 % step on every 10th row from night "
             f"2/3 on), {doc['store_mib']:.0f} MiB.", "",
             "Each in a fresh process, one core; the fastest of the runs is shown (all runs: wall and CPU s).", "",
             "| measured | seconds | process s | CPU s | peak MiB | all runs: s (CPU s) | goal |",
             "|---|---|---|---|---|---|---|"]
    for b in doc["builds"]:
        runs = ", ".join(f"{w:.1f} ({c:.1f})" for w, c in zip(b["runs_s"], b["runs_cpu_s"]))
        what = "`build_site`" if b["case"] == "build" else "`load_history` + `build_report` (history's part)"
        lines.append(f"| {what} | {b['seconds']:.1f} | {b['process_s']:.1f} | {b['cpu_s']:.1f} | "
                     f"{b['peak_mib']:.0f} | {runs} | {'<= 30 s' if b is doc['builds'][0] else ''} |")
    la = m["load_average"]
    lines += ["", f"Load average (1/5/15 min) of the shared machine when the builds ended: {la[0]:.1f}/{la[1]:.1f}/"
              f"{la[2]:.1f}: other sessions' jobs share the two cores, so wall time varies run to run; CPU s does "
              "less so."]
    lines += ["", f"Site: {size['files']} files, {size['bytes'] / 2**20:.1f} MiB (goal <= 25 MB); index.html "
              f"{size['index_bytes'] / 2**10:.0f} KiB; {size['op_pages']} op pages, median "
              f"{size['op_page_median_bytes'] / 2**10:.0f} KiB, largest {size['op_page_max_bytes'] / 2**10:.0f} KiB.", "",
              "| page (headless Chromium, file://) | process wall s (runs) | median | render ms (script) |",
              "|---|---|---|---|"]
    for name, got in doc["loads"].items():
        lines.append(f"| {name} | {', '.join(f'{w:.2f}' for w in got['wall_s'])} | {got['wall_median_s']:.2f} | "
                     f"{', '.join(str(r) for r in got['render_ms'])} |")
    lines += ["", f"Index load (median wall less the browser's start on an empty page): "
              f"{doc['index_load_s']:.2f} s (goal <= 2 s).", "",
              "Goals met: " + ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in doc["goals_met"].items()) + "."]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if argv and argv[0] == "_child":
        child(argv[1], Path(argv[2]), Path(argv[3]))
        return 0
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nights", type=int, default=365)
    p.add_argument("--rows", type=int, default=1232)
    p.add_argument("--work", default=str(Path(os.environ.get("TMPDIR", "/tmp")) / "tritongate-dashboard-scale"))
    p.add_argument("--out", default=str(ROOT / "bench" / "results"))
    p.add_argument("--name", default=f"{dt.date.today().isoformat()}_cpu_dashboard_scale")
    p.add_argument("--runs", type=int, default=3, help="page loads of each page")
    p.add_argument("--repeat", type=int, default=3, help="runs of each measurement (the fastest is reported, all are kept)")
    ns = p.parse_args(argv)
    work = Path(ns.work)
    prep = prepare(work, ns.nights, ns.rows)
    store, site = work / "store", work / "site"
    builds = [best("build", store, site, ns.repeat), best("history", store, site, ns.repeat)]
    size = site_size(site)
    empty = work / "empty.html"
    empty.write_text("<!doctype html><title>empty</title><body data-ready=\"1\"><ul id=\"errors\"></ul></body>")
    profile = work / "profile"
    op_page = sorted((site / "ops").glob("*.html"))[0]
    loads = {"empty page (browser start)": load(empty.as_uri(), profile, ns.runs),
             "index.html": load((site / "index.html").as_uri(), profile, ns.runs),
             f"ops/{op_page.name}": load(op_page.as_uri(), profile, ns.runs)}
    index_load = loads["index.html"]["wall_median_s"] - loads["empty page (browser start)"]["wall_median_s"]
    store_bytes = sum(p.stat().st_size for p in store.rglob("*") if p.is_file())
    doc = {"date": dt.date.today().isoformat(), "nights": ns.nights, "rows": ns.rows, "prepare_s": prep,
           "store_mib": store_bytes / 2**20, "machine": machine(), "builds": builds, "site": size, "loads": loads,
           "index_load_s": index_load,
           "goals": GOALS, "goals_met": {"build <= 30 s": builds[0]["seconds"] <= GOALS["build_s"],
                                         "index load <= 2 s": index_load <= GOALS["index_load_s"],
                                         "site <= 25 MB": size["bytes"] <= GOALS["site_mb"] * 1e6}}
    out = Path(ns.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{ns.name}.json").write_text(json.dumps(doc, indent=1) + "\n")
    (out / f"{ns.name}.md").write_text(markdown(doc))
    print(out / f"{ns.name}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
