"""The paired rule's false-call rate and power under each noise model, on the shipped GPU layout.

CPU only, numpy. For every model of ``bench.sim.noise_models``, whole paired runs are
drawn (``bench.sim.simulate.simulate_runs``): each row measured on the layout the
orchestrator gives it (``GPU_POOL_PAIRS`` measuring pool pairs, a row's segments rotating over
them, each row starting on the next; a call confirmed on as many others; ``--pool`` for another), what lives with a worker process shared
by every pair it measures in the run, rows drawn to the cap (80 pairs, 5 samples a round) and
their noise level cycling through pair SD 0.4 % (quiet), 1.2 % and 4 % (the H200 matmul on own
inputs). Each row is judged four ways on the same sample paths:

- **adaptive**: the shipped rule (``bench.sim.paired_rule.decide_paired`` = ``rule.decide``) and schedule
  (``pair.orchestrator.default_schedule('cuda', 5)``: looks at 5, 10, 20, 40, 80 pairs; a call on
  fewer than 20 pairs is UNCONFIRMED, never failing), each call measured again on the
  confirming pool pairs and standing only if that calls it the same way: what a verdict says;
- **adaptive, unconfirmed**: the same without the confirmation;
- **fixed 20**: the rule on the first 20 pairs of the same paths, calls confirmed the same way;
- **fixed 20, unconfirmed**.

A/A rows come in deep scans of 1,232 rows (a run's rows share its processes): per row the false
calls (REGRESSED or IMPROVED; UNCONFIRMED never fails), and per 34- and 76-row window and per
1,232-row scan the share with at least one, counted on the simulated runs; power (REGRESSED) at
+2 % and +5 % in runs of 36 rows. Intervals: 95 % Clopper-Pearson.

    nice -n 10 python bench/gate_simulation.py --out bench/results      # ~9 min on 2 shared cores

``--states``: the launch-state models instead (``noise_models.STATE_MODELS``: two levels 7-23 %
apart, symmetric, one-sided or switching), on runs of 34 rows (a PR check; every run's processes
start fresh) whose processes age by the pairs they really measure
(``simulate.simulate_runs_aged``), adaptive only (confirmed, and unconfirmed), A/A and power at
+1 %, +2 % and +5 %; and, as a check of the aging, the two-state models of 1.4 % both ways
(aged to the cap as the models above, and by measured pairs):

    nice -n 10 python bench/gate_simulation.py --states --jobs 2 --out bench/results \
        --name 2026-12-05_gate_simulation_states          # ~6 min of CPU: ~3 min on 2 free cores
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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tritongate import __version__
from bench.sim.noise_models import MODELS, STATE_MODELS, NoiseModel
from tritongate.gate.policy import GatePolicy
from bench.sim.simulate import simulate_runs, simulate_runs_aged
from tritongate.pair.request import GPU_POOL_PAIRS

NOISE = (0.004, 0.012, 0.04)
SCAN, POWER_RUN = 1232, 36  # rows of an A/A run (a deep scan), of a power run
WINDOWS = (34, 76)  # a PR check; the ops of the default suite
VARIANTS = ("adaptive", "schedule_only", "fixed", "fixed_only")
LABEL = {"adaptive": "adaptive", "schedule_only": "adaptive, unconfirmed", "fixed": "fixed 20",
         "fixed_only": "fixed 20, unconfirmed"}
# the H200's worker-level noise (bench/results/2026-11-30_h200_shared_inputs.json); beyond it:
# twice its offsets, and speed states further apart than the 1 % minimum effect
BEYOND_H200 = ("offsets 0.4 % per process", "two-state 1.4 %, dwell 10 rounds", "two-state 1.4 %, dwell 50 rounds")


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    from scipy.stats import beta

    lo = 0.0 if k == 0 else float(beta.ppf(0.025, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(0.975, k + 1, n - k))
    return lo, hi


def levels(rows: int) -> np.ndarray:
    """The noise level of each row of a run: every start pool pair meets every level."""
    return np.array([NOISE[(j // 3) % len(NOISE)] for j in range(rows)])


def run_model(model: NoiseModel, *, scans: int, power_runs: int, seed: int, policy: GatePolicy, pool: int,
              chunk_scans: int = 3, chunk_power: int = 60) -> dict:
    cells: dict = {}
    checks = {v: {str(w): [0, 0] for w in (*WINDOWS, SCAN)} for v in VARIANTS}  # windows with a call, windows
    for shift, rows, total, chunk in ((0.0, SCAN, scans, chunk_scans), (0.02, POWER_RUN, power_runs, chunk_power),
                                      (0.05, POWER_RUN, power_runs, chunk_power)):
        sd = levels(rows)
        done = 0
        while done < total:
            runs = min(chunk, total - done)
            out = simulate_runs(model, runs=runs, rows_per_run=rows, pair_sd=sd, shift=shift, policy=policy, pool=pool,
                                seed=seed + 7919 * done + int(shift * 1000))
            done += runs
            for v in VARIANTS:
                o = getattr(out, v)
                firm = o.decision.called & ~o.unconfirmed
                for level in NOISE:
                    m = np.tile(sd == level, runs)
                    t = cells.setdefault((v, level, shift), {"rows": 0, "false": 0, "regressed": 0, "unconfirmed": 0,
                                                             "blind": 0, "pairs": 0})
                    t["rows"] += int(m.sum())
                    t["false"] += int(firm[m].sum())
                    t["regressed"] += int((firm & (o.decision.effect_log > 0))[m].sum())
                    t["unconfirmed"] += int(o.unconfirmed[m].sum())
                    t["blind"] += int((~o.reached)[m].sum())
                    t["pairs"] += int(o.pairs[m].sum())
                if shift == 0:
                    per_run = firm.reshape(runs, rows)
                    for w in (*WINDOWS, SCAN):
                        k = rows // w
                        hit = per_run[:, :k * w].reshape(runs, k, w).any(-1)
                        checks[v][str(w)][0] += int(hit.sum())
                        checks[v][str(w)][1] += int(hit.size)
    return {"cells": cells, "checks": checks}


def summarise(name: str, res: dict) -> tuple[list[dict], list[dict]]:
    rows = []
    for (v, level, shift), t in sorted(res["cells"].items(), key=lambda x: (x[0][1], x[0][2], VARIANTS.index(x[0][0]))):
        k = t["false"] if shift == 0 else t["regressed"]
        lo, hi = clopper_pearson(k, t["rows"])
        rows.append({"model": name, "variant": v, "pair_sd": level, "shift": shift, "rows": t["rows"], "count": k,
                     "rate": k / t["rows"], "ci95": [lo, hi], "mean_pairs": t["pairs"] / t["rows"],
                     "blind": t["blind"] / t["rows"], "unconfirmed": t["unconfirmed"] / t["rows"]})
    checks = []
    for v, by in res["checks"].items():
        for w, (k, n) in by.items():
            lo, hi = clopper_pearson(k, n)
            checks.append({"model": name, "variant": v, "rows": int(w), "checks": n, "with_call": k,
                           "rate": k / n, "ci95": [lo, hi]})
    return rows, checks


def _pick(items: list[dict], **kw) -> list[dict]:
    return [s for s in items if all(s[k] == v for k, v in kw.items())]


def goals(summary: list[dict], checks: list[dict]) -> list[dict]:
    out = []
    worker = [m.name for m in MODELS if m.worker_level]
    h200 = [n for n in worker if n not in BEYOND_H200]

    def goal(text: str, met: bool, detail: str) -> None:
        out.append({"goal": text, "met": met, "detail": detail})

    for scope, names in (("every worker-level model", worker), ("the H200-level worker models", h200)):
        aa = [s for s in _pick(summary, variant="adaptive", shift=0.0) if s["model"] in names]
        worst = max(aa, key=lambda s: (s["ci95"][1], s["rate"]))
        goal(f"per-row A/A ≤ 1e-3 under {scope} (each noise level)", worst["ci95"][1] <= 1e-3,
             f"worst {worst['model']} at pair SD {worst['pair_sd']:.1%}: {worst['count']} in {worst['rows']:,} rows, "
             f"{worst['rate']:.1e} (95 % CI up to {worst['ci95'][1]:.1e})")
    everyone = [m.name for m in MODELS]
    for w, limit in ((34, 0.01), (76, None), (SCAN, 0.05)):
        for scope, names in (("every model", everyone), ("the iid, non-worker and H200-level models",
                                                          [n for n in everyone if n not in BEYOND_H200])):
            cs = [c for c in _pick(checks, variant="adaptive", rows=w) if c["model"] in names]
            worst = max(cs, key=lambda c: (c["ci95"][1], c["rate"]))
            text = f"per {w:,}-row check" + ("" if limit is None else f" ≤ {limit:.0%}") + f" under {scope}"
            detail = (f"worst {worst['model']}: {worst['with_call']} of {worst['checks']:,} simulated checks with a "
                      f"call, {worst['rate']:.2%} (95 % CI up to {worst['ci95'][1]:.2%})")
            if limit is None:
                out.append({"goal": text, "met": None, "detail": detail})
            else:
                goal(text, worst["ci95"][1] <= limit, detail)
    quiet = [s for s in _pick(summary, variant="adaptive", shift=0.02, pair_sd=NOISE[0])
             if s["model"] != "few pairs (budget: 6)"]
    for scope, names in (("iid, non-worker and H200-level models", [s["model"] for s in quiet
                                                                    if s["model"] in h200 or s["model"] not in worker]),
                         ("every model (few pairs: blind by design)", [s["model"] for s in quiet])):
        low = min((s for s in quiet if s["model"] in names), key=lambda s: s["rate"])
        below = [f"{s['model']} {s['rate']:.1%}" for s in quiet if s["model"] in names and s["rate"] < 0.95]
        goal(f"+2 % power on quiet rows (pair SD {NOISE[0]:.1%}) ≥ 95 %, {scope}", not below,
             f"lowest {low['model']}: {low['rate']:.1%} (CI {low['ci95'][0]:.1%}–{low['ci95'][1]:.1%})"
             + (f"; below 95 %: {', '.join(below)}" if below else ""))
    worse, more = [], []
    for a_name, f_name in (("adaptive", "fixed"), ("schedule_only", "fixed_only")):
        for s in _pick(summary, variant=a_name):
            f = _pick(summary, variant=f_name, model=s["model"], pair_sd=s["pair_sd"], shift=s["shift"])[0]
            tag = f"{s['model']} sd {s['pair_sd']:.1%} shift {s['shift']:+.0%} ({LABEL[a_name]} vs {LABEL[f_name]}: " \
                  f"{s['count']} vs {f['count']})"
            if (s["shift"] == 0 and s["ci95"][0] > f["ci95"][1]) or (s["shift"] > 0 and s["ci95"][1] < f["ci95"][0]):
                worse.append(tag)
            elif (s["shift"] == 0 and s["count"] > f["count"]) or (s["shift"] > 0 and s["count"] < f["count"]):
                more.append(tag)
    goal("no model where the adaptive schedule is worse than 20 fixed pairs on the same paths (beyond both 95 % "
         "intervals; confirmed vs confirmed and unconfirmed vs unconfirmed)", not worse,
         ("worse: " + "; ".join(worse) if worse else "none worse")
         + (f"; within the intervals but fewer in count: {'; '.join(more)}" if more else ""))
    return out


def markdown(doc: dict) -> str:
    v = doc["versions"]
    md = ["# Paired rule on the shipped GPU layout: false calls and power per noise model", "",
          f"{doc['date_utc']} · {doc['machine']} · CPU only · Python {v['python']} · numpy {v['numpy']} · scipy "
          f"{v['scipy']} · tritongate {v['tritongate']} (commit {v['commit']}) · per model {doc['aa_rows']:,} A/A rows "
          f"({doc['scans']} scans of {SCAN:,}) and {doc['power_rows']:,} rows per shift · {doc['wall_s']:.0f} s", "",
          f"Layout: {'the orchestrator' if doc['pool'] == doc['shipped_pool'] else 'NOT the shipped one'}'s "
          f"(`tritongate/pair/request.py`: {doc['pool']} measuring worker pairs kept for the run, "
          "a row's segments — 5 pairs, then 10 each — rotating over them, each row starting on the next; a call "
          f"measured again on {doc['pool']} confirming worker pairs). What lives with a worker process (an offset, a speed state, "
          "an AR(1) level) is shared by every pair it measures in the run: a row's segments on one pool pair and the "
          "rows after it; a run's step or drift hits one measuring process. Rows cycle through pair SD 0.4 %, 1.2 %, "
          "4 %. Budgets are not simulated (rows end on their precision, a call or the 80-pair cap) except in *few "
          "pairs*. The previous layout (up to 8 distinct worker pairs per row, rows independent) and the rule before "
          "worker pairs: `2026-12-01_gate_simulation.md`.", "",
          "A/A: REGRESSED or IMPROVED that stand (UNCONFIRMED never fails). Per-check: the share of simulated 34- and "
          "76-row windows and 1,232-row scans with at least one such call (windows of one scan share its processes). "
          "Power: REGRESSED. Intervals: 95 % Clopper-Pearson. blind: the row did not reach its 1 % target "
          "(the headline says ⚠️).", "", "## Goals", ""]
    for g in doc["goals"]:
        state = "—" if g["met"] is None else "**met**" if g["met"] else "**NOT met**"
        md.append(f"- {g['goal']}: {state}. {g['detail']}")
    md.append("")
    for model in doc["models"]:
        name = model["name"]
        md += [f"## {name}", ""] + ([model["note"], ""] if model["note"] else [])
        md += ["| variant | 34 rows | 76 rows | 1,232 rows |", "|---|---|---|---|"]
        for var in VARIANTS:
            cs = {c["rows"]: c for c in _pick(doc["checks"], model=name, variant=var)}
            md.append(f"| {LABEL[var]} | " + " | ".join(
                f"{cs[w]['with_call']}/{cs[w]['checks']:,} ({cs[w]['ci95'][1]:.2%})" for w in (*WINDOWS, SCAN)) + " |")
        md += ["", "| pair SD | variant | A/A per row (95 % CI) | +2 % (95 % CI) | +5 % | pairs (A/A) | blind (A/A) | "
               "unconfirmed (A/A) |", "|---|---|---|---|---|---|---|---|"]
        for sd in NOISE:
            for var in VARIANTS:
                cell = {s["shift"]: s for s in _pick(doc["summary"], model=name, pair_sd=sd, variant=var)}
                a, p2, p5 = cell[0.0], cell[0.02], cell[0.05]
                md.append(f"| {sd:.1%} | {LABEL[var]} | {a['count']}/{a['rows']:,}: {a['rate']:.1e} "
                          f"({a['ci95'][0]:.0e}–{a['ci95'][1]:.0e}) | {p2['rate']:.1%} ({p2['ci95'][0]:.1%}–"
                          f"{p2['ci95'][1]:.1%}) | {p5['rate']:.1%} | {a['mean_pairs']:.1f} | {a['blind']:.0%} | "
                          f"{a['unconfirmed']:.2%} |")
        md.append("")
    return "\n".join(md)


STATE_SHIFTS = (0.0, 0.01, 0.02, 0.05)
STATE_RUN = 34  # rows of a run in the state models (a PR check): its processes start fresh
AGING_CHECK = ("two-state 1.4 %, dwell 50 rounds", "two-state 1.4 %, dwell 10 rounds")
STATE_VARIANTS = ("adaptive", "schedule_only")


def run_states_model(model: NoiseModel, *, aging: str, runs_aa: int, runs_power: int, seed: int, policy: GatePolicy,
                     pool: int, chunk: int = 500) -> dict:
    """Counts per (variant, noise level, shift) of runs of ``STATE_RUN`` rows; ``aging``:
    'measured' (``simulate_runs_aged``) or 'cap' (``simulate_runs``, the models above)."""
    sd = levels(STATE_RUN)
    cells: dict = {}
    checks = {v: [0, 0] for v in STATE_VARIANTS}  # A/A runs with a call, runs
    # per row of a run (its position: fresh processes meet the first rows): rows, counted, unconfirmed, blind
    by_row = {(v, shift): np.zeros((4, STATE_RUN), int) for v in STATE_VARIANTS for shift in STATE_SHIFTS}
    seeds, ages = [], {"measured": 0, "cap": 0, "processes": 0}
    for shift in STATE_SHIFTS:
        total, done = (runs_aa if shift == 0 else runs_power), 0
        while done < total:
            runs = min(chunk, total - done)
            s = seed + 7919 * done + int(round(shift * 1000))
            seeds.append({"shift": shift, "runs": runs, "seed": s})
            kw = dict(runs=runs, rows_per_run=STATE_RUN, pair_sd=sd, shift=shift, seed=s, policy=policy, pool=pool)
            if aging == "measured":
                out = simulate_runs_aged(model, **kw)
                if shift == 0:  # the measuring processes' rounds in a run, measured and to the cap
                    ages["measured"] += int(out.ages[:, :pool].sum())
                    ages["cap"] += int(out.cap_ages[:, :pool].sum())
                    ages["processes"] += runs * pool * 2
            else:
                out = simulate_runs(model, **kw)
            done += runs
            for v in STATE_VARIANTS:
                o = getattr(out, v)
                firm = o.decision.called & ~o.unconfirmed
                up = firm & (o.decision.effect_log > 0)
                for level in NOISE:
                    m = np.tile(sd == level, runs)
                    t = cells.setdefault((v, level, shift), {"rows": 0, "called": 0, "regressed": 0, "improved": 0,
                                                             "unconfirmed": 0, "blind": 0, "pairs": 0,
                                                             "called_effect_sum": 0.0})
                    t["rows"] += int(m.sum())
                    t["called"] += int(firm[m].sum())
                    t["regressed"] += int(up[m].sum())
                    t["improved"] += int((firm & ~up)[m].sum())
                    t["unconfirmed"] += int(o.unconfirmed[m].sum())
                    t["blind"] += int((~o.reached)[m].sum())
                    t["pairs"] += int(o.pairs[m].sum())
                    t["called_effect_sum"] += float(np.expm1(o.decision.effect_log[firm & m]).sum())
                if shift == 0:
                    checks[v][0] += int(firm.reshape(runs, STATE_RUN).any(-1).sum())
                    checks[v][1] += runs
                br = by_row[(v, shift)]
                br[0] += runs
                br[1] += (firm if shift == 0 else up).reshape(runs, STATE_RUN).sum(0)
                br[2] += o.unconfirmed.reshape(runs, STATE_RUN).sum(0)
                br[3] += (~o.reached).reshape(runs, STATE_RUN).sum(0)
    return {"cells": cells, "checks": checks, "seeds": seeds, "ages": ages, "by_row": by_row}


def summarise_states(name: str, aging: str, res: dict) -> tuple[list[dict], list[dict]]:
    rows = []
    cells = res["cells"]
    for v in STATE_VARIANTS:
        for shift in STATE_SHIFTS:
            for level in (*NOISE, "all"):
                ts = [cells[(v, lv, shift)] for lv in NOISE] if level == "all" else [cells[(v, level, shift)]]
                t = {k: sum(x[k] for x in ts) for k in ts[0]}
                k = t["called"] if shift == 0 else t["regressed"]
                lo, hi = clopper_pearson(k, t["rows"])
                rows.append({"model": name, "aging": aging, "variant": v, "pair_sd": level, "position": "all",
                             "shift": shift, "rows": t["rows"], "count": k, "rate": k / t["rows"], "ci95": [lo, hi],
                             "called": t["called"], "regressed": t["regressed"], "improved": t["improved"],
                             "unconfirmed": t["unconfirmed"], "blind": t["blind"], "mean_pairs": t["pairs"] / t["rows"],
                             "mean_called_effect": t["called_effect_sum"] / t["called"] if t["called"] else None})
    checks = []
    for v, (k, n) in res["checks"].items():
        lo, hi = clopper_pearson(k, n)
        checks.append({"model": name, "aging": aging, "variant": v, "rows": STATE_RUN, "checks": n, "with_call": k,
                       "rate": k / n, "ci95": [lo, hi]})
    for (v, shift), br in res["by_row"].items():  # what a row's position in its run does
        for part, sl in (("rows 1-3", slice(0, 3)), ("rows 4-34", slice(3, STATE_RUN))):
            n, k = int(br[0][sl].sum()), int(br[1][sl].sum())
            lo, hi = clopper_pearson(k, n)
            rows.append({"model": name, "aging": aging, "variant": v, "pair_sd": "all", "position": part,
                         "shift": shift, "rows": n, "count": k, "rate": k / n, "ci95": [lo, hi],
                         "unconfirmed": int(br[2][sl].sum()), "blind": int(br[3][sl].sum())})
    return rows, checks


def _states_task(task: tuple) -> tuple:
    model, aging, kw = task
    t0 = time.monotonic()
    res = run_states_model(model, aging=aging, **kw)
    return model.name, aging, res, time.monotonic() - t0


def _pct(x: float) -> str:
    return f"{x:.1%}"


def states_markdown(doc: dict) -> str:
    v = doc["versions"]
    md = ["# Paired rule under launch states: false calls and power (runs of 34 rows, processes aged by measured pairs)",
          "", f"{doc['date_utc']} · {doc['machine']} · CPU only · Python {v['python']} · numpy {v['numpy']} · scipy "
          f"{v['scipy']} · tritongate {v['tritongate']} (commit {v['commit']}) · per model {doc['aa_rows']:,} A/A rows "
          f"({doc['runs_aa']:,} runs of {STATE_RUN}) and {doc['power_rows']:,} rows per shift · {doc['wall_s']:.0f} s",
          "", f"Command: `{doc['command']}`", "", "## Models", ""]
    md += [f"- **{m['name']}**: " + (m["note"] if m["kind"] != "two_state" else
                                      f"the model of `noise_models.MODELS` (amp {m['params']['amp']:.1%}, dwell "
                                      f"{m['params']['dwell']:g} rounds, states drawn at random), run both ways: aged "
                                      "to the cap as `simulate_runs` does, and by measured pairs") for m in doc["models"]]
    md += ["", "## A/A and power, all noise levels together", "",
          "A/A: REGRESSED or IMPROVED that stand (confirmed); per check: the share of 34-row runs with one. "
          "Power: REGRESSED that stand. Intervals: 95 % Clopper-Pearson. Per noise level: the JSON's `summary`.", "",
          "| model | A/A per row | mean effect called (A/A) | A/A per 34-row check | blind (A/A) | "
          "unconfirmed (A/A) | +1 % | +2 % | +5 % |",
          "|---|---|---|---|---|---|---|---|---|"]
    s = doc["summary"]
    for m in doc["models"]:
        for aging in m["agings"]:
            def cell(shift, sd="all", var="adaptive", name=m["name"], aging=aging):
                return _pick(s, model=name, aging=aging, variant=var, shift=shift, pair_sd=sd, position="all")[0]
            a = cell(0.0)
            c = _pick(doc["checks"], model=m["name"], aging=aging, variant="adaptive")[0]
            label = m["name"] + ("" if m["kind"] != "two_state" else f" (aged: {aging})")
            eff = "—" if a["mean_called_effect"] is None else f"{a['mean_called_effect']:+.1%}"
            md.append(f"| {label} | {a['count']}/{a['rows']:,} ({a['ci95'][0]:.1e}–{a['ci95'][1]:.1e}) | {eff} | "
                      f"{c['with_call']}/{c['checks']:,} ({_pct(c['ci95'][0])}–{_pct(c['ci95'][1])}) | "
                      f"{_pct(a['blind'] / a['rows'])} | {_pct(a['unconfirmed'] / a['rows'])} | "
                      + " | ".join(f"{_pct(p['rate'])} ({_pct(p['ci95'][0])}–{_pct(p['ci95'][1])})"
                                   for p in (cell(0.01), cell(0.02), cell(0.05))) + " |")
    md += ["", "## By a row's place in its run (adaptive, confirmed; all noise levels)", "",
           "Rows 1-3 of a run are the first its fresh processes measure (rows cycle through the noise levels "
           "three at a time: rows 1-3 are quiet, pair SD 0.4 %).", "",
           "| model | rows | A/A calls | blind (A/A) | +1 % | +2 % | +5 % |", "|---|---|---|---|---|---|---|"]
    for m in doc["models"]:
        for aging in m["agings"]:
            for part in ("rows 1-3", "rows 4-34"):
                cs = {x["shift"]: x for x in _pick(s, model=m["name"], aging=aging, variant="adaptive", position=part)}
                a = cs[0.0]
                label = m["name"] + ("" if m["kind"] != "two_state" else f" (aged: {aging})")
                md.append(f"| {label} | {part} | {a['count']}/{a['rows']:,} | {_pct(a['blind'] / a['rows'])} | "
                          + " | ".join(f"{_pct(cs[x]['rate'])} ({_pct(cs[x]['ci95'][0])}–{_pct(cs[x]['ci95'][1])})"
                                       for x in (0.01, 0.02, 0.05)) + " |")
    return "\n".join(md)


def main_states(args: argparse.Namespace) -> None:
    import scipy

    policy = GatePolicy()
    t0 = time.monotonic()
    by_name = {m.name: m for m in MODELS}
    tasks = [(m, "measured") for m in STATE_MODELS if not args.only or m.name in args.only]
    if not args.only:
        tasks += [(by_name[n], aging) for n in AGING_CHECK for aging in ("cap", "measured")]
    seeds = {}
    work = []
    for i, (m, aging) in enumerate(tasks):
        seed = 100_003 * (i + 1)
        seeds.setdefault(m.name, {})[aging] = seed
        work.append((m, aging, dict(runs_aa=args.runs_aa, runs_power=args.runs_power, seed=seed, policy=policy,
                                    pool=args.pool)))
    if args.jobs > 1:
        import multiprocessing as mp

        with mp.get_context("fork").Pool(args.jobs) as p:
            results = p.map(_states_task, work, chunksize=1)
    else:
        results = [_states_task(w) for w in work]
    summary, checks, models, ages = [], [], {}, []
    for (m, _, kw), (name, aging, res, wall) in zip(work, results):
        print(f"{name} (aged: {aging}): {wall:.0f} s", file=sys.stderr)
        sm, c = summarise_states(name, aging, res)
        summary += sm
        checks += c
        entry = models.setdefault(name, {**m.to_dict(), "agings": [], "seeds": {}})
        entry["agings"].append(aging)
        entry["seeds"][aging] = {"model_seed": kw["seed"], "chunks": res["seeds"]}
        if res["ages"]["processes"]:
            a = res["ages"]
            ages.append({"model": name, "rounds_per_measuring_process_measured": a["measured"] / a["processes"],
                         "rounds_per_measuring_process_if_every_row_ran_to_the_cap": a["cap"] / a["processes"]})
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=Path(__file__).resolve().parents[1]).stdout.strip()
    doc = {"schema": "gate_simulation_states/1",
           "date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
           "machine": f"{platform.node() or 'host'}: {platform.machine()} {platform.system()}, {os.cpu_count()} cores (shared)",
           "versions": {"python": platform.python_version(), "numpy": np.__version__, "scipy": scipy.__version__,
                        "tritongate": __version__, "commit": commit},
           "command": "python " + " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
           "runs_aa": args.runs_aa, "runs_power": args.runs_power, "rows_per_run": STATE_RUN,
           "aa_rows": args.runs_aa * STATE_RUN, "power_rows": args.runs_power * STATE_RUN,
           "shifts": list(STATE_SHIFTS), "noise_levels": list(NOISE), "policy": policy.to_dict(),
           "schedule": f"default_schedule('cuda', 5), layout: simulate.row_layout / confirm_layout "
                       f"(pool of {args.pool} + {args.pool})", "pool": args.pool, "shipped_pool": GPU_POOL_PAIRS,
           "models": list(models.values()), "process_ages": ages, "summary": summary, "checks": checks,
           "wall_s": time.monotonic() - t0}
    from tritongate.atomicio import write_text_atomic

    args.out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(args.out / f"{args.name}.json", json.dumps(doc, indent=1))
    write_text_atomic(args.out / f"{args.name}.md", states_markdown(doc) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--scans", type=int, default=81, help="A/A runs of 1,232 rows per model (81: 99,792 rows)")
    ap.add_argument("--power-runs", type=int, default=167, help="runs of 36 rows per model and shift")
    ap.add_argument("--only", action="append", default=[], help="model names (default: all)")
    ap.add_argument("--name", default=f"{dt.date.today().isoformat()}_gate_simulation")
    ap.add_argument("--pool", type=int, default=GPU_POOL_PAIRS,
                    help=f"measuring pool pairs (default: the shipped {GPU_POOL_PAIRS}; another: a comparison)")
    ap.add_argument("--states", action="store_true", help="the launch-state models (processes aged by measured pairs)")
    ap.add_argument("--runs-aa", type=int, default=2000, help="--states: A/A runs of 34 rows per model")
    ap.add_argument("--runs-power", type=int, default=400, help="--states: runs of 34 rows per model and shift")
    ap.add_argument("--jobs", type=int, default=1, help="--states: models simulated at once (processes)")
    args = ap.parse_args()
    if args.states:
        if args.name == f"{dt.date.today().isoformat()}_gate_simulation":
            args.name += "_states"
        main_states(args)
        return
    import scipy

    policy = GatePolicy()
    t0 = time.monotonic()
    models = [m for m in MODELS if not args.only or m.name in args.only]
    summary, checks = [], []
    for mi, model in enumerate(models):
        res = run_model(model, scans=args.scans, power_runs=args.power_runs, seed=100_003 * (mi + 1), policy=policy,
                        pool=args.pool)
        s, c = summarise(model.name, res)
        summary += s
        checks += c
        print(f"{model.name}: {time.monotonic() - t0:.0f} s", file=sys.stderr)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=Path(__file__).resolve().parents[1]).stdout.strip()
    doc = {"schema": "gate_simulation/2", "date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
           "machine": f"{platform.node() or 'host'}: {platform.machine()} {platform.system()}, {os.cpu_count()} cores (shared)",
           "versions": {"python": platform.python_version(), "numpy": np.__version__, "scipy": scipy.__version__,
                        "tritongate": __version__, "commit": commit},
           "scans": args.scans, "aa_rows": args.scans * SCAN, "power_rows": args.power_runs * POWER_RUN,
           "noise_levels": list(NOISE), "policy": policy.to_dict(),
           "schedule": f"default_schedule('cuda', 5), layout: simulate.row_layout / confirm_layout "
                       f"(pool of {args.pool} + {args.pool})", "pool": args.pool, "shipped_pool": GPU_POOL_PAIRS,
           "models": [m.to_dict() for m in models], "summary": summary, "checks": checks,
           "wall_s": time.monotonic() - t0}
    doc["goals"] = goals(summary, checks)
    from tritongate.atomicio import write_text_atomic

    args.out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(args.out / f"{args.name}.json", json.dumps(doc, indent=1))
    write_text_atomic(args.out / f"{args.name}.md", markdown(doc) + "\n")
    print("\n".join(f"{g['goal']}: {g['met']} - {g['detail']}" for g in doc["goals"]))


if __name__ == "__main__":
    main()
