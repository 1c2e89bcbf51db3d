#!/usr/bin/env python3
"""The PR workflow replayed on a CPU, job by job and step by step as the pr-gate composite
action runs them: prescreen-base (mode overlay: the base half, then the PR's overlay and its
half), judge, gate (only when the gate job's `if:`
from pr-gate.yml lets it run) and result.

    python bench/pr_job_replay.py --out DIR [--suites smoke] [--patches noop-comment,...]

Each job gets its own workspace, RUNNER_TEMP and per-step GITHUB_OUTPUT / GITHUB_ENV /
GITHUB_PATH / GITHUB_STEP_SUMMARY files (as tests/workflows/replay.py gives them), and its
steps are `ci/gate_steps.sh <sub-command>` with the env the action sets. What is not the
action's own: the base build is the installed Triton (mode installed) and the PR build an
overlay of it with a patch of bench/patches (mode overlay, TG_PATCH); the store is a local
folder copied to baseline-store (store.sh fetch clones it); uploads and downloads are copies.
The record (the nightly's part) is the suite's IR index captured on the interpreter and
published, run directly. Writes bench/results/<date>_cpu_pr_job_replay.{json,md}; exit 0
only when every check holds.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.workflows.payloads import github_context  # noqa: E402 - after the checkout is on the path
from tests.workflows.replay import Evaluator, condition, load_yaml, parse_github_output  # noqa: E402

STEPS = ROOT / "ci" / "gate_steps.sh"
ACTION = ROOT / ".github" / "actions" / "pr-gate" / "action.yml"
WORKFLOW = ROOT / ".github" / "workflows" / "pr-gate.yml"
RUNNER_CLASS, REPO = "cpu-ci", "acme/triton"
PR_ENV = {"PR_NUMBER": "42", "HEAD_SHA": "1" * 40}
PASS_CHANGES = {"drop-coalesce", "drop-hopper-pipeline", "drop-thread-locality"}


def clean_env() -> dict[str, str]:
    """This shell's env without the runner's variables or tritongate's own (a job starts bare)."""
    drop = ("GITHUB_", "RUNNER_", "ACTIONS_", "TRITONGATE_", "TRITON_INTERPRET")
    return {k: v for k, v in os.environ.items() if not k.startswith(drop)}


class Job:
    """One job on a runner of its own: workspace, RUNNER_TEMP, the steps it ran."""

    def __init__(self, root: Path, name: str, store: Path) -> None:
        self.name, self.dir = name, root / name
        self.ws, self.temp = self.dir / "ws", self.dir / "temp"
        self.temp.mkdir(parents=True)
        shutil.copytree(store, self.ws / "baseline-store")  # what store.sh fetch leaves
        self.steps: list[dict[str, Any]] = []

    def caches(self) -> dict[str, str]:  # the action's per-job caches (removed at the job's end)
        pr = self.temp / "tritongate-pr"
        return {"TRITON_HOME": str(pr / "triton-home"), "TRITON_CACHE_DIR": str(pr / "triton-cache"),
                "PIP_CACHE_DIR": str(pr / "pip-cache"), "XDG_CACHE_HOME": str(pr / "xdg-cache"),
                "CCACHE_DIR": str(pr / "ccache")}

    def step(self, sub: str, **step_env: str) -> dict[str, Any]:
        """`bash ci/gate_steps.sh SUB` with the runner's file commands and the step's env:."""
        scratch = self.dir / "steps" / f"{len(self.steps) + 1:02d}-{sub}"
        scratch.mkdir(parents=True)
        files = {"GITHUB_OUTPUT": scratch / "output", "GITHUB_STEP_SUMMARY": scratch / "summary.md",
                 "GITHUB_ENV": scratch / "env", "GITHUB_PATH": scratch / "path"}
        files["GITHUB_OUTPUT"].touch()
        files["GITHUB_STEP_SUMMARY"].touch()
        env = {**clean_env(), "CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(self.ws),
               "RUNNER_TEMP": str(self.temp), "GITHUB_REPOSITORY": REPO, "GITHUB_RUN_ID": "1234",
               "GITHUB_SERVER_URL": "https://github.com", "NO_COLOR": "1",
               **{k: str(v) for k, v in files.items()}, **step_env}
        t0 = time.monotonic()
        proc = subprocess.run(["bash", str(STEPS), sub], cwd=self.ws, env=env, capture_output=True, text=True)
        wall = round(time.monotonic() - t0, 2)
        (scratch / "log").write_text(proc.stdout + proc.stderr, encoding="utf-8")
        rec = {"job": self.name, "step": sub, "via": "ci/gate_steps.sh", "command": f"bash ci/gate_steps.sh {sub}",
               "env": step_env, "exit": proc.returncode, "wall_s": wall,
               "outputs": parse_github_output(files["GITHUB_OUTPUT"]),
               "wrote_github_env": files["GITHUB_ENV"].exists() or files["GITHUB_PATH"].exists(),
               "log": str(scratch / "log"), "log_tail": (proc.stdout + proc.stderr)[-1500:]}
        self.steps.append(rec)
        return rec

    def build(self, mode: str, py: str, patch: Path | None = None) -> str:
        """The build step (build.sh build, contained): mode installed, or overlay of `py` with `patch`."""
        env = {"TG_MODE": mode, "TG_REPO": REPO, "TG_REF": "", "TG_PYTHON": py, "TG_CACHE_WRITE": "false",
               "TG_CACHE_ROOT": "~/.cache/tritongate-builds", **self.caches()}
        if patch is not None:
            env.update(TG_PATCH=str(patch), TG_OVERLAY_BASE=py)
        return self.step("build", **env)["outputs"].get("python", "")

    def lookup(self, stage: str, suite: str, lookup_py: str, base_py: str) -> str:
        rec = self.step("find-baseline", TG_STAGE=stage, TG_GPU="", TG_SUITE=suite, TG_BACKEND="cpu",
                        TG_RUNNER_CLASS=RUNNER_CLASS, TG_MAX_AGE_DAYS="7", TG_STORE="baseline-store",
                        TG_COMPILER_REPO=REPO, LOOKUP_PY=lookup_py, BASE_PY=base_py)
        return rec["outputs"].get("record", "") if rec["outputs"].get("state") == "ok" else ""

    def wall(self) -> float:
        return round(sum(s["wall_s"] for s in self.steps), 2)


def direct(cmd: list[str], env: dict[str, str], log: Path) -> dict[str, Any]:
    """A command run directly (not a gate_steps.sh step): the nightly's record, the judge's setup."""
    t0 = time.monotonic()
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    wall = round(time.monotonic() - t0, 2)
    log.write_text(proc.stdout + proc.stderr, encoding="utf-8")
    return {"via": "direct", "command": " ".join(cmd), "exit": proc.returncode, "wall_s": wall,
            "log_tail": (proc.stdout + proc.stderr)[-1500:]}


def record_store(suite: str, py: str, work: Path) -> tuple[Path, list[dict[str, Any]]]:
    """The nightly's part: the suite recorded on the CPU backend (the interpreter runs it; a
    capture-only run is never published) and published to a store, as the nightly job does."""
    out, store = work / "record", work / "store"
    rec = direct([py, str(ROOT / "ci" / "record_baseline.py"), "--suite", suite, "--backend", "cpu", "--out", str(out),
                  "--publish", str(store), "--runner-class", RUNNER_CLASS, "--compiler-repo", REPO],
                 {**clean_env(), "NO_COLOR": "1"}, work / "record.log")
    return store, [{"step": "record and publish (ci/record_baseline.py, backend cpu)", **rec}]


def judge_python(work: Path) -> tuple[str, dict[str, Any]]:
    """The judge's interpreter: a fresh venv of this Python's base install (no triton, no torch)
    with the action's own judge-deps step run in it."""
    venv = work / "judge-venv"
    base = Path(sys.base_prefix) / "bin" / "python3"
    step = next(s for s in load_yaml(ACTION)["runs"]["steps"] if s.get("id") == "judge-deps")
    t0 = time.monotonic()
    subprocess.run([str(base), "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                          env={**clean_env(), "JUDGE_PY": py}, capture_output=True, text=True)
    probe = subprocess.run([py, "-c", "import importlib.util as u; print(u.find_spec('triton'), u.find_spec('torch'))"],
                           capture_output=True, text=True)
    return py, {"step": "judge interpreter (venv + the action's judge-deps step)", "via": "direct",
                "command": f"{base} -m venv; {step['run'].strip()}", "exit": proc.returncode,
                "wall_s": round(time.monotonic() - t0, 2), "no_compiler": probe.stdout.strip() == "None None",
                "probe": probe.stdout.strip(), "log_tail": (proc.stdout + proc.stderr)[-1500:]}


def upload(paths: list[Path], dest: Path) -> None:
    """upload-artifact then download-artifact: the paths' contents, relative to their parent."""
    dest.mkdir(parents=True, exist_ok=True)
    for p in paths:
        if p.is_dir():
            shutil.copytree(p, dest / p.name, dirs_exist_ok=True)
        elif p.is_file():
            shutil.copy2(p, dest / p.name)


def gate_job_runs(judge_ok: bool, outputs: dict[str, str]) -> bool:
    """The gate job's `if:` from pr-gate.yml over the judge job's outputs (a same-repository PR, opted in)."""
    job = load_yaml(WORKFLOW)["jobs"]["gate"]
    ctx = {"github": github_context("pull_request", "pull_request.synchronize"), "vars": {},
           "inputs": {"full-run": False},
           "needs": {"judge": {"result": "success" if judge_ok else "failure", "outputs": outputs},
                     "opt-in": {"result": "success", "outputs": {"run": "true", "full": "false"}}}}
    return condition(job["if"], Evaluator(ctx))


def result_job(tmp: Path, judge: str, gate: str, outputs: dict[str, str]) -> dict[str, Any]:
    """The result job's script from pr-gate.yml: the check the PR sees."""
    step = load_yaml(WORKFLOW)["jobs"]["result"]["steps"][0]
    (tmp / "result.sh").write_text(step["run"], encoding="utf-8")
    env = {**clean_env(), "OPTED_IN": "true", "OPT_IN_REASON": "", "JUDGE": judge, "GATE": gate,
           "ROWS_CHANGED": outputs.get("rows-changed", ""), "ROWS_TOTAL": outputs.get("rows-total", ""),
           "JUDGE_VERDICT": outputs.get("verdict", ""), "GITHUB_STEP_SUMMARY": str(tmp / "result-summary.md")}
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(tmp / "result.sh")], env=env,
                          capture_output=True, text=True)
    summary = (tmp / "result-summary.md").read_text() if (tmp / "result-summary.md").exists() else ""
    return {"job": "result", "via": "pr-gate.yml result step", "exit": proc.returncode,
            "log_tail": (proc.stdout + proc.stderr + summary)[-800:]}


def replay(suite: str, patch: str, store: Path, py: str, judge_py: str, work: Path) -> dict[str, Any]:
    root, key = work / suite / patch, f"{RUNNER_CLASS}-{suite}"
    patch_file, art = ROOT / "bench" / "patches" / f"{patch}.patch", work / suite / patch / "artifacts"
    jobs: list[Job] = []
    # Mode overlay: one CPU job (pr-gate.yml runs no PR half), the base half: its build, lookup and
    # half, uploaded; then the PR build's overlay of that base and its half, uploaded.
    job = Job(root, "prescreen-base", store)
    jobs.append(job)
    base_py = job.build("installed", py)
    record = job.lookup("prescreen-base", suite, base_py, base_py)
    triton_env = {k: v for k, v in job.caches().items() if k.startswith("TRITON_")}
    for side in ("base", "cand"):
        side_py = base_py if side == "base" else job.build("overlay", base_py, patch_file)
        half = job.step("prescreen-side", TG_SIDE=side, **{f"{side.upper()}_PY": side_py}, RECORD=record,
                        TG_SUITE=suite, **triton_env)
        d = Path(half["outputs"].get("side-dir", "/nonexistent"))
        upload([d / f"side-{side}.json", d / f"ir-{side}", d / f"capture-{side}"], art / f"tritongate-half-{side}-{key}")
    judge = Job(root, "judge", store)  # no build: the judge's interpreter looks up and judges
    jobs.append(judge)
    record = judge.lookup("judge", suite, judge_py, "")
    for side in ("base", "cand"):
        upload(sorted((art / f"tritongate-half-{side}-{key}").iterdir()), judge.temp / "tritongate" / "prescreen")
    verdict = judge.step("judge", JUDGE_PY=judge_py, RECORD=record, TG_SUITE=suite)
    vo = verdict["outputs"]
    if vo.get("verdict-dir"):
        judge.step("note-pr", VERDICT_DIR=vo["verdict-dir"], TG_KEY=key, **PR_ENV)
    pre_path = judge.temp / "tritongate" / "prescreen" / "prescreen.json"
    pre = json.loads(pre_path.read_text()) if pre_path.is_file() else {}
    judge_ok = verdict["exit"] == 0 and vo.get("exit-code") == "0"
    outputs = {"rows-changed": vo.get("rows_changed") or "unknown", "rows-total": vo.get("rows_total", ""),
               "key": key, "verdict": "true" if vo.get("verdict-dir") else "false"}
    runs_gate = gate_job_runs(judge_ok, outputs)
    pair: dict[str, Any] = {}
    gate_status = "skipped"
    if runs_gate:  # the GPU job: builds again (an overlay is made again), lookup, paired check
        gate = Job(root, "gate", store)
        jobs.append(gate)
        changed_from = gate.temp / "tritongate-prescreen" / "ir-diff"
        if vo.get("ir-diff"):
            upload(sorted(Path(vo["ir-diff"]).iterdir()), changed_from)
        base_py = gate.build("installed", py)
        cand_py = gate.build("overlay", base_py, patch_file)
        record = gate.lookup("gate", suite, base_py, base_py)
        pair_step = gate.step("pair", BASE_PY=base_py, CAND_PY=cand_py, BASE_COMMIT="", CAND_COMMIT="", RECORD=record,
                              TG_SUITE=suite, TG_OPS="", TG_BACKEND="cpu", TG_COMPILER_REPO=REPO,
                              TG_CHANGED_FROM=str(changed_from) if vo.get("ir-diff") else "",
                              TRITONGATE_VERDICT_TEMPLATE="",
                              **{k: v for k, v in gate.caches().items() if k.startswith("TRITON_")})
        if pair_step["outputs"].get("verdict-dir"):
            gate.step("note-pr", VERDICT_DIR=pair_step["outputs"]["verdict-dir"], TG_KEY=key, **PR_ENV)
        gate_status = "success" if pair_step["exit"] == 0 and pair_step["outputs"].get("exit-code") == "0" else "failure"
        vpath = Path(pair_step["outputs"].get("verdict-dir", "/nonexistent")) / "verdict.json"
        if vpath.is_file():
            doc = json.loads(vpath.read_text())
            pair = {"headline": doc.get("headline"), "exit_code": doc.get("exit_code"),
                    "rows": [{k: r.get(k) for k in ("op", "case", "dtype", "verdict", "timed")} for r in doc["rows"]]}
    result = result_job(root, "success" if judge_ok else "failure", gate_status, outputs)
    steps = [s for j in jobs for s in j.steps]
    changed = sorted(map(tuple, pre.get("rows_changed", [])))
    total = pre.get("rows_total")
    timed = sorted((r["op"], r["case"], r["dtype"]) for r in pair.get("rows", []) if r["timed"])
    others_unrun = all(r["verdict"] == "IDENTICAL_BINARY" and not r["timed"]
                       for r in pair.get("rows", []) if (r["op"], r["case"], r["dtype"]) not in changed)
    reasons = (pre.get("timed_without_ir_change") or {}).get("reasons") or {}
    variants = pre.get("variants") or {}
    checks: dict[str, bool] = {
        "every gate_steps.sh step exits 0 (and its exit-code output, where it has one, is 0)":
            all(s["exit"] == 0 and s["outputs"].get("exit-code", "0") == "0" for s in steps),
        "no step wrote $GITHUB_ENV or $GITHUB_PATH": not any(s["wrote_github_env"] for s in steps),
        "the judge named rows_total and rows_changed": total is not None and vo.get("rows_changed") is not None,
        "the result job passes the PR": result["exit"] == 0,
        "one build per compiler: one CPU job; its PR overlay made after its own half": [
            (st["step"], st["env"].get("TG_SIDE") or st["env"].get("TG_MODE")) for st in jobs[0].steps] == [
            ("build", "installed"), ("find-baseline", None), ("prescreen-side", "base"), ("build", "overlay"),
            ("prescreen-side", "cand")] and [j.name for j in jobs if j.name.startswith("prescreen")] == ["prescreen-base"],
    }
    if not changed:
        vdir = Path(vo.get("verdict-dir", "/nonexistent"))
        head = json.loads((vdir / "verdict.json").read_text()).get("headline", "") if (vdir / "verdict.json").is_file() else ""
        checks["0 changed: the judge wrote the verdict (no GPU time used)"] = head.endswith("no GPU time used")
        checks["0 changed: the gate job's if: is false, no pair step ran"] = not runs_gate and not pair
        checks["0 changed: pr.json written beside the verdict"] = (vdir / "pr.json").is_file()
    else:
        checks["rows changed: the gate job runs, pair --changed-from the judge's ir-diff"] = runs_gate and bool(pair)
        checks["pair timed exactly the judge's changed rows"] = timed == changed
        checks["pair's other rows IDENTICAL_BINARY, not run"] = bool(pair) and others_unrun
    if patch == "noop-comment":
        checks["noop-comment: 0 rows changed"] = not changed
    if patch == "autotuner-args-dict":
        checks["autotuner-args-dict: every row timed, for the launch path"] = (
            len(changed) == total and any("launch path" in k for k in reasons))
    if patch in PASS_CHANGES:
        checks[f"{patch}: the rows changed are the rows whose IR changed"] = (
            variants.get("changed", 0) > 0 and not reasons and 0 < len(changed))
    return {"suite": suite, "patch": patch, "rows_total": total, "rows_changed": [list(c) for c in changed],
            "why": {"variants": variants, "launch_path_reasons": reasons}, "judge_stdout": verdict["log_tail"],
            "gate_job_ran": runs_gate, "pair": pair, "timed": [list(t) for t in timed],
            "jobs": {j.name: {"wall_s": j.wall(), "steps": j.steps} for j in jobs}, "result_job": result,
            "checks": checks}


def step_wall(r: dict[str, Any], job: str, sub: str, side: str | None = None) -> str:
    walls = [s["wall_s"] for s in r["jobs"].get(job, {}).get("steps", [])
             if s["step"] == sub and (side is None or s["env"].get("TG_SIDE") == side)]
    return f"{walls[0]:.1f}" if walls else "—"


def failure_line(step: dict[str, Any]) -> str:
    """The step's own error, from its log's tail: the last line naming one."""
    tail = [ln for ln in step.get("log_tail", "").splitlines() if ln.strip()]
    errors = [ln for ln in tail if "error" in ln.lower()]
    return (errors or tail or ["(no log)"])[-1].replace("`", "'")[:300]


def write_md(doc: dict[str, Any], path: Path) -> str:
    lines = [f"# The PR workflow replayed on a CPU, step by step ({doc['date']})", "",
             f"Machine: {doc['machine']['platform']}, {doc['machine']['cpus']} CPUs (os.cpu_count; shared). "
             f"Python {doc['versions']['python']}, Triton {doc['versions']['triton']}, torch {doc['versions']['torch']}. "
             f"Base build: the installed Triton; PR build: an overlay of it with one patch of `bench/patches/`. "
             f"Raw: [`{path.stem}.json`]({path.stem}.json).", "",
             "How each step ran: " + doc["how"], "",
             "| suite | patch | rows changed / total | why | gate job | rows pair timed | side base s | side cand s "
             "| judge s | pair s | jobs s (prescreen+judge+gate) | checks |",
             "|---|---|---|---|---|---|---:|---:|---:|---:|---|---|"]
    for r in doc["results"]:
        why = r["why"]
        reasons = "; ".join(f"{k} ({v})" for k, v in why["launch_path_reasons"].items())
        why_text = "; ".join(x for x in (f"AOT variants {why['variants']}", reasons) if x)
        timed = ", ".join(" ".join(t) for t in r["timed"]) if r["gate_job_ran"] else "— (not run)"
        jw = [r["jobs"][j]["wall_s"] for j in ("prescreen-base", "judge", "gate") if j in r["jobs"]]
        ok = sum(r["checks"].values())
        lines.append(f"| {r['suite']} | `{r['patch']}` | {len(r['rows_changed'])} / {r['rows_total']} | {why_text} | "
                     f"{'ran' if r['gate_job_ran'] else 'skipped (if: false)'} | {timed} | "
                     f"{step_wall(r, 'prescreen-base', 'prescreen-side', 'base')} | "
                     f"{step_wall(r, 'prescreen-base', 'prescreen-side', 'cand')} | "
                     f"{step_wall(r, 'judge', 'judge')} | {step_wall(r, 'gate', 'pair')} | "
                     f"{' + '.join(f'{w:.1f}' for w in jw)} = {sum(jw):.1f} | {ok}/{len(r['checks'])} |")
    pre = sorted(r["jobs"]["prescreen-base"]["wall_s"] for r in doc["results"] if "prescreen-base" in r["jobs"])
    if pre:
        lines += ["", f"The pre-screen job (one job: the base half, then the PR's overlay and its half): median "
                  f"{pre[len(pre) // 2]:.1f} s ({pre[0]:.1f} s to {pre[-1]:.1f} s) over {len(pre)} runs."]
    lines += ["", "Setup (once per suite, not part of a PR's jobs): " + "; ".join(
        f"{s['step']} {s['wall_s']:.1f} s (exit {s['exit']})" for s in doc["setup"]), ""]
    for r in doc["results"]:
        lines += [f"## {r['suite']} / `{r['patch']}`", "", "| check | holds |", "|---|---|"]
        lines += [f"| {k} | {'yes' if v else '**no**'} |" for k, v in r["checks"].items()]
        if r["pair"]:
            lines += ["", f"pair: {r['pair']['headline']}"]
        for job, j in r["jobs"].items():
            for st in j["steps"]:
                if st["exit"] != 0 or st["outputs"].get("exit-code", "0") != "0":
                    lines += ["", f"{job} / {st['step']} failed (exit {st['exit']}, exit-code "
                              f"{st['outputs'].get('exit-code')}): `{failure_line(st)}`"]
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="work folder (jobs, logs, artifacts)")
    ap.add_argument("--suites", default="smoke")
    ap.add_argument("--patches", default="noop-comment,autotuner-args-dict,fp-fusion-default-off,drop-coalesce,drop-hopper-pipeline")
    ap.add_argument("--results", default=str(ROOT / "bench" / "results"))
    args = ap.parse_args()
    work = Path(args.out).resolve()
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    import torch
    import triton

    py = sys.executable
    judge_py, judge_setup = judge_python(work)
    setup: list[dict[str, Any]] = [judge_setup]
    results = []
    for suite in args.suites.split(","):
        (work / suite).mkdir()
        store, steps = record_store(suite, py, work / suite)
        setup += [{**s, "step": f"{suite}: {s['step']}"} for s in steps]
        for patch in args.patches.split(","):
            r = replay(suite, patch, store, py, judge_py, work)
            r["checks"]["the judge's interpreter holds no triton and no torch"] = judge_setup["no_compiler"]
            results.append(r)
            print(f"{suite} {patch}: {len(r['rows_changed'])}/{r['rows_total']} changed, gate job "
                  f"{'ran' if r['gate_job_ran'] else 'skipped'}, checks {sum(r['checks'].values())}/{len(r['checks'])}",
                  flush=True)
    how = ("through `ci/gate_steps.sh`: one pre-screen job, as pr-gate.yml runs mode overlay: build (base: mode "
           "installed), find-baseline, prescreen-side base, then build (PR: mode overlay of that base, TG_PATCH) and "
           "prescreen-side cand; judge, note-pr, pair (`ci/replay_candidate.py` = `tritongate pair --strict`, backend cpu, "
           "its default rounds, `--changed-from` the judge's ir-diff); the gate job's `if:` evaluated from pr-gate.yml "
           "(tests/workflows/replay.py's evaluator), the result job's script from pr-gate.yml. Directly: the record "
           "(`ci/record_baseline.py --backend cpu --publish`), the judge's venv (the action's judge-deps script run "
           "in it), checkout/store fetch/upload/download (folder copies).")
    stamp = dt.datetime.now(dt.timezone.utc)
    doc = {"date": stamp.isoformat(timespec="seconds"), "how": how,
           "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "processor": platform.machine()},
           "versions": {"python": platform.python_version(), "triton": triton.__version__, "torch": torch.__version__},
           "setup": setup, "results": results,
           "all_checks_hold": all(all(r["checks"].values()) for r in results) and all(s["exit"] == 0 for s in setup)}
    base = Path(args.results) / f"{stamp:%Y-%m-%d}_cpu_pr_job_replay"
    base.parent.mkdir(parents=True, exist_ok=True)
    base.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(write_md(doc, base.with_suffix(".md")))
    return 0 if doc["all_checks_hold"] else 1


if __name__ == "__main__":
    sys.exit(main())
