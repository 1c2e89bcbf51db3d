"""The PR job of `.github/workflows/pr-gate.yml`, end to end on a GPU runner, timed.

Its `run:` steps are executed as the runner would (the step runner of
`tests/workflows/test_pr_gate_steps.py`: the scripts taken from the YAML, `env:` expressions
evaluated, `$GITHUB_OUTPUT` fed forward; remote actions skipped), with two compiler
environments made here:

  base  the machine's interpreter, torch and triton, behind a launcher script of its own
  cand  the same, plus a `sitecustomize` that turns Hopper wgmma off inside the compiler
        (`os.putenv("DISABLE_MMA_V3", "1")`: seen by the C++ code generator only, not by
        Python's `os.environ`, so the run identity records no overlay: as a compiler PR whose
        code changed)

Scenarios (the nightly's publish first, as `nightly-baseline.yml` runs it):

  publish   python ci/record_baseline.py --suite S --backend cuda --publish STORE
  aa        the job with base and candidate = the base venv: baseline found, every row
            IDENTICAL_BINARY, pass
  change    the job with the candidate venv: the wgmma rows REGRESSED, with their IR diffs
  fallback  the job with an empty store: the base build records the baseline in the job

    python bench/pr_job.py --out DIR [--suite pr]

Writes DIR/pr_job.json and DIR/pr_job.md, and DIR/<scenario>_verdict.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchlib import fresh_work_dir  # noqa: E402
from tests.workflows.test_pr_gate_steps import (  # noqa: E402
    ACTION_DIR, BUILD_ACTION, JobRun, call_inputs, clean_env, gate_job, pr_event)

SHA_MERGE = "2" * 40
WGMMA_OFF = 'import os\nos.putenv("DISABLE_MMA_V3", "1")  # the "PR compiler": no wgmma\n'


def make_build(path: Path, sitecustomize: str | None = None) -> str:
    """A compiler build as the workflow sees one: an interpreter path. A launcher over this
    interpreter (a venv would not see an interpreter that is itself a venv's), with its own
    ``sitecustomize`` first on the path when given."""
    path.mkdir(parents=True)
    prefix = ""
    if sitecustomize:
        (path / "site").mkdir()
        (path / "site" / "sitecustomize.py").write_text(sitecustomize)
        prefix = f'PYTHONPATH="{path / "site"}${{PYTHONPATH:+:$PYTHONPATH}}" '
    launcher = path / "python"
    launcher.write_text(f'#!/bin/sh\n{prefix}exec "{sys.executable}" "$@"\n')
    launcher.chmod(0o755)
    return str(launcher)


def run_job(tmp: Path, *, store: Path | None, base_py: str, cand_py: str, suite: str) -> dict[str, Any]:
    doc, job = gate_job()
    workspace, runner_temp = tmp / "ws", tmp / "runner" / "temp"
    workspace.mkdir(parents=True)
    runner_temp.mkdir(parents=True)
    (workspace / "tritongate").symlink_to(REPO, target_is_directory=True)
    inputs = call_inputs(doc, **{"tritongate-repo": "acme/tritongate", "tritongate-ref": "4" * 40,
                                 "runner-labels": '["self-hosted", "linux", "h200"]', "runner-class": "h200",
                                 "suite": suite, "backend": "cuda", "compiler-mode": "installed", "python": base_py})
    contexts = {"inputs": inputs, "vars": {}, "runner": {"temp": str(runner_temp), "os": "Linux"},
                "github": {"event_name": "pull_request", "repository": "acme/triton", "sha": SHA_MERGE,
                           "ref": "refs/pull/42/merge", "run_id": "1234", "server_url": "https://github.com",
                           "event": pr_event()}}

    def uses(run: JobRun, step: dict, with_values: dict):
        ref = step["uses"]
        if ref == BUILD_ACTION:
            if step.get("id") == "cand":
                with_values = {**with_values, "python": cand_py}
            return run.run_composite(ACTION_DIR, with_values, run.current_env)
        if ref.startswith("actions/checkout@") and with_values.get("path") == "baseline-store":
            if store is None:
                return "failure", {}
            shutil.copytree(store, run.workspace / "baseline-store")
        return None

    env = clean_env(tmp, workspace, runner_temp)
    env["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")
    run = JobRun(workspace, runner_temp, contexts, env, uses)
    t0 = time.perf_counter()
    status = run.run_job(job)
    wall = time.perf_counter() - t0
    steps = run.contexts["steps"]
    out: dict[str, Any] = {"status": status, "wall_s": round(wall, 1),
                           "steps": [{"name": r.name, "kind": r.kind, "outcome": r.outcome} for r in run.records],
                           "baseline_state": steps.get("baseline", {}).get("outputs", {}).get("state"),
                           "fallback_recorded": steps.get("record", {}).get("outcome") == "success",
                           "gate_exit": steps.get("pair", {}).get("outputs", {}).get("exit-code")}
    verdict_dir = steps.get("pair", {}).get("outputs", {}).get("verdict-dir")
    if verdict_dir:
        v = json.loads(Path(verdict_dir, "verdict.json").read_text())
        out.update(counts={k: n for k, n in v["counts"].items() if n}, headline=v["headline"],
                   ir=v.get("ir"), baseline=v.get("baseline"),
                   ir_changed_rows=sum(1 for r in v["rows"] if r.get("ir") and r["ir"]["changed"]))
        out["verdict_md"] = Path(verdict_dir, "verdict.md").read_text()
    out["log_tail"] = run.log()[-3000:] if status != "success" or not verdict_dir else ""
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--suite", default="pr")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = fresh_work_dir("tg_pr_job")
    base_py = make_build(work / "base-build")
    cand_py = make_build(work / "cand-build", WGMMA_OFF)
    res: dict[str, Any] = {"date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                           "suite": args.suite, "scenarios": {}}
    t0 = time.perf_counter()
    pub = subprocess.run([base_py, str(REPO / "ci" / "record_baseline.py"), "--suite", args.suite, "--backend", "cuda",
                          "--out", str(work / "nightly"), "--publish", str(work / "store"), "--runner-class", "h200"],
                         capture_output=True, text=True)
    res["publish"] = {"exit": pub.returncode, "wall_s": round(time.perf_counter() - t0, 1),
                      "last_line": pub.stdout.strip().splitlines()[-1:] if pub.stdout.strip() else pub.stderr[-500:]}
    if pub.returncode != 0:
        res["publish"]["stderr"] = pub.stderr[-3000:]
        (out / "pr_job.json").write_text(json.dumps(res, indent=1))
        return 1
    record = Path(pub.stdout.strip().splitlines()[-1].split("baseline: ", 1)[1])  # the store entry
    if record is not None and (record / "run_identity.json").is_file():
        ident = json.loads((record / "run_identity.json").read_text())
        sw = ident.get("software") or {}
        res["machine"] = {"device": ident.get("device"),
                          "driver": (ident.get("gpu_state_before") or {}).get("driver"),
                          "torch": sw.get("torch"), "cuda": sw.get("cuda"),
                          "triton": (sw.get("triton") or {}).get("version")}
    for name, store, cand in (("aa", work / "store", base_py), ("change", work / "store", cand_py),
                              ("fallback", None, cand_py)):
        r = run_job(work / name, store=store, base_py=base_py, cand_py=cand, suite=args.suite)
        md = r.pop("verdict_md", "")
        if md:
            (out / f"{name}_verdict.md").write_text(md)
        res["scenarios"][name] = r
        (out / "pr_job.json").write_text(json.dumps(res, indent=1))
    (out / "pr_job.md").write_text(render(res))
    return 0


def render(res: dict[str, Any]) -> str:
    m = res.get("machine") or {}
    lines = [f"# The PR job end to end on the GPU ({res['date_utc'][:10]})", "",
             f"{m.get('device')}, driver {m.get('driver')}, torch {m.get('torch')} (CUDA {m.get('cuda')}), "
             f"triton {m.get('triton')}; suite `{res['suite']}`; the `run:` steps of `pr-gate.yml`'s gate job.", "",
             f"Nightly publish (`ci/record_baseline.py --publish`): exit {res['publish']['exit']}, "
             f"{res['publish']['wall_s']} s.", "",
             "| scenario | job | wall | baseline | fallback record | gate exit | verdicts | rows with IR changes |",
             "|---|---|---:|---|---|---|---|---:|"]
    for name, r in res["scenarios"].items():
        lines.append(f"| {name} | {r['status']} | {r['wall_s']} s | {r['baseline_state']} | "
                     f"{'yes' if r['fallback_recorded'] else 'no'} | {r['gate_exit']} | {r.get('counts')} | "
                     f"{r.get('ir_changed_rows')} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
