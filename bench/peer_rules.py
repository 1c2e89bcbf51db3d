"""Peer tools' comparison rules on the raw samples of the loaded-host pair runs.

Reads `2026-12-05_h100_loaded_host.tgz` (in memory; nothing is extracted) and applies, to the same base/candidate
samples of every row of every step, the rule each peer tool uses to call a benchmark slower or faster, ported from
the tools' own source (each side's samples taken as that tool's values, one value per sample):

  pyperf     psf/pyperf `pyperf/_compare.py` is_significant_benchs + CompareResult._set_significant (min_speed
             unset, the default) -> `pyperf/_utils.py` is_significant (tdist95conf_level table, tscore,
             pooled_sample_variance: Student two-sample t, 95 %); direction from compute_normalized_mean
             (candidate mean / base mean).
  asv-1.1    airspeed-velocity/asv `asv/commands/compare.py` Compare.print_table + _is_result_better (result =
  asv-1.01   median of the samples: asv_runner `asv_runner/statistics.py` compute_stats / quantile; "-" improved
             tested first, then "+" worsened) -> `asv/_stats.py` is_different (p_threshold 0.002) and
             mann_whitney_u (conservative tie breaking; 'auto' = normal approximation above 20 samples);
             --factor 1.1 (the default) and 1.01.
  nvbench    NVIDIA/nvbench `python/scripts/nvbench_compare.py` compare_benches: frac_diff of nv/cold/time/gpu/mean,
             SAME if |frac_diff| <= min(ref, cmp) nv/cold/time/gpu/stdev/relative, else FAST/SLOW; the noise as
             `nvbench/detail/statistics.cuh` standard_deviation (Bessel) / compute_standard_deviation_noise
             (stdev / mean, needs >= 5 samples).
  bencher-t  bencherdev/bencher `lib/bencher_boundary/src/boundary.rs` MetricsBoundary::new_normal (ModelTest::TTest)
             + `limits/mod.rs` MetricsLimits::new_normal (StudentsT(mean, sd*sqrt(1+1/n), n-1); upper limit =
             inverse_cdf(0.99)) + `mean.rs` (sample sd) + MetricsLimits::outlier (datum > limit). Baseline data =
             the base samples; datum = the candidate median (one value per run, as a Bencher report carries).
             Upper boundary only, so it can only call "slower".
  median-1%  candidate median / base median - 1 > +1 % slower, < -1 % faster.

The gate's own call comes from verdict.json: `timing_change` on A/A steps (IDENTICAL_BINARY), `verdict` on planted
steps (REGRESSED = caught; UNCONFIRMED, UNCHANGED = not).

    .venv/bin/python bench/peer_rules.py [--tgz PATH] [--out PREFIX] [--rejudge]

--rejudge: the gate's calls come from this checkout's `tritongate gate` run on each step's stored base and
candidate (the same samples), not from the verdict.json the run wrote: the gate as it is now on old data.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

import numpy as np
from scipy import stats  # type: ignore[import-untyped]

HERE = Path(__file__).parent
TGZ = HERE / "results" / "2026-12-05_h100_loaded_host.tgz"
OUT = HERE / "results" / "2026-12-05_h100_loaded_host_peers"
SMALL_US = 10.0
LANDED_TOLERANCE = 0.25  # a "2 %" plant counts where it measured 1.5-2.5 %
GROUPS: dict[str, tuple[str, ...]] = {
    "A/A loaded": ("aa-1", "aa-2", "aa-3"),
    "A/A quiet": ("quiet-aa-1", "quiet-aa-2", "quiet-aa-3"),
    "A/A quiet, candidate unprimed": ("unprimed-cand",),
}
PLANTED = ("planted-0.02", "quiet-planted-0.02", "planted-0.05", "quiet-planted-0.05")
Call = str  # "slower" | "faster" | "same"

# --- pyperf (pyperf/_utils.py) ------------------------------------------------------------------------------------
_T95 = [0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def tdist95conf_level(df: float) -> float:
    df = int(round(df))
    for lo, crit in ((200, 1.960), (100, 1.984), (80, 1.990), (60, 2.000), (50, 2.009), (40, 2.021)):
        if df >= lo:
            return crit
    return _T95[-1] if df >= len(_T95) else _T95[df]


def pyperf_call(base: list[float], cand: list[float]) -> Call:
    if len(base) != len(cand):  # tscore raises; is_significant_benchs then returns True
        significant = True
    else:
        dof = len(base) + len(cand) - 2
        m1, m2 = statistics.mean(base), statistics.mean(cand)
        pooled = (math.fsum((x - m1) ** 2 for x in base) + math.fsum((x - m2) ** 2 for x in cand)) / float(dof)
        t_score = (m1 - m2) / math.sqrt(pooled / len(base) * 2)
        significant = abs(t_score) >= tdist95conf_level(dof)
    norm_mean = statistics.mean(cand) / statistics.mean(base)
    if not significant or norm_mean == 1.0:
        return "same"
    return "slower" if norm_mean > 1.0 else "faster"


# --- asv (asv/_stats.py, asv/commands/compare.py, asv_runner/statistics.py) ---------------------------------------
def mann_whitney_u_p(x: np.ndarray, y: np.ndarray) -> float:
    m, n = len(x), len(y)
    assert max(m, n) > 20, "asv's 'auto' would use the exact test here; not ported"
    ys = np.sort(y)
    lt = np.searchsorted(ys, x, side="left")
    u = int(lt.sum())  # pairs with x > y
    ties = int((np.searchsorted(ys, x, side="right") - lt).sum())
    if u <= m * n // 2 and u + ties >= m * n // 2:  # conservative tie breaking
        ties = m * n // 2 - u
    ux1 = min(u, m * n - u)
    ux2 = min(u + ties, m * n - (u + ties))
    ux = ux1 if ux1 >= ux2 else ux2
    z = (ux - m * n / 2) / math.sqrt(m * n * (m + n + 1) / 12)
    return 2 * 0.5 * math.erfc(-z / math.sqrt(2))


def asv_is_different(a: np.ndarray, b: np.ndarray, p_threshold: float = 0.002) -> bool:
    p_min = 1 / math.comb(len(a) + len(b), min(len(a), len(b)))
    assert p_min < p_threshold, "CI fallback not ported (never reached: >= 50 samples a side)"
    return mann_whitney_u_p(a, b) < p_threshold


def asv_call(base: np.ndarray, cand: np.ndarray, factor: float) -> Call:
    t1, t2 = float(np.median(base)), float(np.median(cand))  # asv's result value
    if t2 < t1 / factor and asv_is_different(cand, base):
        return "faster"
    if t1 < t2 / factor and asv_is_different(base, cand):
        return "slower"
    return "same"


# --- nvbench (python/scripts/nvbench_compare.py) ------------------------------------------------------------------
def nv_noise(s: np.ndarray) -> float:
    return float(np.std(s, ddof=1) / np.mean(s)) if len(s) >= 5 else math.inf


def nvbench_call(base: np.ndarray, cand: np.ndarray) -> Call:
    ref_time, cmp_time = float(np.mean(base)), float(np.mean(cand))
    diff = cmp_time - ref_time
    frac_diff = diff / ref_time
    noises = [v for v in (nv_noise(base), nv_noise(cand)) if v and math.isfinite(v)]
    if not noises or abs(frac_diff) <= min(noises):  # no noise: "????" (unknown), not a call
        return "same"
    return "faster" if diff < 0 else "slower"


# --- Bencher t-test threshold (lib/bencher_boundary) ----------------------------------------------------------------
def bencher_call(base: np.ndarray, cand: np.ndarray, upper: float = 0.99) -> Call:
    n = len(base)
    mean = float(base.sum() / n)
    sd = math.sqrt(float(((base - mean) ** 2).sum()) / (n - 1)) if n >= 2 else 0.0
    if sd == 0.0:
        return "same"  # no sd: Bencher sets no boundary
    limit = float(stats.t.ppf(upper, df=n - 1, loc=mean, scale=sd * math.sqrt(1 + 1 / n)))
    return "slower" if float(np.median(cand)) > limit else "same"


def median_cut_call(base: np.ndarray, cand: np.ndarray, cut: float = 0.01) -> Call:
    r = float(np.median(cand)) / float(np.median(base)) - 1
    return "slower" if r > cut else "faster" if r < -cut else "same"


RULES: dict[str, Callable[[np.ndarray, np.ndarray], Call]] = {
    "pyperf": lambda b, c: pyperf_call(b.tolist(), c.tolist()),
    "asv-1.1": lambda b, c: asv_call(b, c, 1.1),
    "asv-1.01": lambda b, c: asv_call(b, c, 1.01),
    "nvbench": nvbench_call,
    "bencher-t": bencher_call,
    "median-1%": median_cut_call,
}
ALL_RULES = ("gate", *RULES)


def load_steps(tgz: Path) -> dict[str, dict[str, Any]]:
    """step -> {'base': results, 'candidate': results, 'verdict': verdict} (lh/<step>/pair-*/<side>/<file>)."""
    out: dict[str, dict[str, Any]] = defaultdict(dict)
    with tarfile.open(tgz) as tf:
        for m in tf.getmembers():
            parts = m.name.split("/")
            if m.isfile() and len(parts) == 5 and parts[2].startswith("pair-") \
                    and parts[4] in ("results.json", "verdict.json"):  # a pair step's, not a run beside them
                out[parts[1]][parts[3]] = json.load(tf.extractfile(m))  # type: ignore[arg-type]
    return dict(out)


def gpu_of(tgz: Path) -> str:
    """The GPU (model and UUID) the runs in ``tgz`` measured on, as their run identities say."""
    seen: set[str] = set()
    with tarfile.open(tgz) as tf:
        for m in tf.getmembers():
            if m.isfile() and m.name.endswith("/run_identity.json"):
                ident = json.load(tf.extractfile(m))  # type: ignore[arg-type]
                gpu = ident.get("gpu_state_before") or {}
                seen.add(f"{gpu.get('name', ident.get('device'))} {gpu.get('uuid', '')}".strip())
    return ", ".join(sorted(seen)) or "GPU not recorded"


def rejudge(tgz: Path, docs: dict[str, dict[str, Any]], gate_args: list[str] | None = None) -> None:
    """Replace each step's verdict with this checkout's gate on the step's stored runs
    (``gate_args``: options given to it, e.g. another --min-effect)."""
    with tempfile.TemporaryDirectory() as tmp, tarfile.open(tgz) as tf:
        tf.extractall(tmp, filter="data")
        for step in docs:
            (pair,) = Path(tmp, "lh", step).glob("pair-*")
            out = Path(tmp, "rejudged", step)
            proc = subprocess.run([sys.executable, "-m", "tritongate", "gate", str(pair / "base"),
                                   str(pair / "candidate"), "--out", str(out), *(gate_args or [])],
                                  capture_output=True, text=True)
            if proc.returncode not in (0, 1):
                raise SystemExit(f"gate on {step} failed ({proc.returncode}): {proc.stderr[-2000:]}")
            docs[step]["verdict"] = json.loads((out / "verdict.json").read_text())


def row_key(r: dict[str, Any]) -> str:
    return f"{r['op']}/{r['case']}/{r['dtype']}"


def judge_step(doc: dict[str, Any]) -> dict[str, Any]:
    cand = {row_key(r): r for r in doc["candidate"]["rows"]}
    verdict = {row_key(r): r for r in doc["verdict"]["rows"]}
    rows: dict[str, Any] = {}
    calls: dict[str, dict[str, Call]] = {rule: {} for rule in ALL_RULES}
    per_pair: dict[int, list[float]] = defaultdict(list)
    deviation: dict[int, list[float]] = defaultdict(list)
    for br in doc["base"]["rows"]:
        key = row_key(br)
        cr, vr = cand[key], verdict[key]
        b, c = np.asarray(br["samples"], float), np.asarray(cr["samples"], float)
        assert len(b) == len(c) and br["status"] == cr["status"] == "ok"
        if vr["verdict"] != "IDENTICAL_BINARY":  # planted: REGRESSED = caught
            calls["gate"][key] = "slower" if vr["verdict"] == "REGRESSED" else "same"
        else:
            calls["gate"][key] = vr["timing_change"].replace("within noise", "same")
        for rule, fn in RULES.items():
            calls[rule][key] = fn(b, c)
        rows[key] = {"base_median_us": br["summary"]["median"], "samples_per_side": len(b),
                     "gate_verdict": vr["verdict"], "gate_timing_change": vr["timing_change"],
                     "gate_effect": vr["effect"], "gate_why": vr["why"],
                     "max_over_median": max(float(np.max(x) / np.median(x)) for x in (b, c)),
                     "samples_over_2x_median": sum(int((x > 2 * np.median(x)).sum()) for x in (b, c))}
        wp = np.repeat(br["measurement"]["pairing"]["worker_pairs"], br["measurement"]["samples_per_round"])
        effects = {int(w): float(np.median(c[wp == w]) / np.median(b[wp == w]) - 1) for w in np.unique(wp)}
        own = float(np.median(list(effects.values())))
        for w, e in effects.items():
            per_pair[int(w)].append(e)
            # against the same row's other pairs: the pairs >= 8 exist only on rows whose call was
            # confirmed, which read larger, so a median over each pair's rows mixes row sets
            deviation[int(w)].append(e - own)
    return {"rows": rows, "calls": calls,
            "median_gate_effect": float(np.median([r["gate_effect"] for r in rows.values()])),
            "worker_pair_effect": {w: float(np.median(v)) for w, v in sorted(per_pair.items())},
            "worker_pair_deviation": {w: float(np.median(v)) for w, v in sorted(deviation.items())}}


def tally(results: dict[str, Any], steps: tuple[str, ...], rule: str, keys: set[str] | None = None) -> dict[str, int]:
    t = dict.fromkeys(("rows", "small", "large", "slower", "faster", "slower_small", "slower_large",
                       "called_small", "called_large"), 0)
    for step in steps:
        for key, row in results[step]["rows"].items():
            if keys is not None and key not in keys:
                continue
            size = "small" if row["base_median_us"] < SMALL_US else "large"
            call = results[step]["calls"][rule][key]
            t["rows"] += 1
            t[size] += 1
            if call != "same":
                t[call] += 1
                t[f"called_{size}"] += 1
                t[f"slower_{size}"] += call == "slower"
    return t


def twin(step: str) -> str:
    """The same plan on the other host: an independent measurement of each row's plant."""
    return step.removeprefix("quiet-") if step.startswith("quiet-") else f"quiet-{step}"


def landed(results: dict[str, Any], step: str) -> set[str]:
    """Rows whose plant landed at the aimed size (±25 %) as the twin step measured it: chosen on
    the other step's samples, so the choice does not favour rows that happened to read large here."""
    aim = float(step.rsplit("-", 1)[1])
    return {k for k, r in results[twin(step)]["rows"].items()
            if (1 - LANDED_TOLERANCE) * aim <= r["gate_effect"] <= (1 + LANDED_TOLERANCE) * aim}


def shown(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(HERE.resolve().parent))
    except ValueError:
        return str(p)


def pct(k: int, n: int) -> str:
    return f"{k} ({100 * k / n:.0f} %)" if n else "-"


def report(results: dict[str, Any], groups: dict[str, tuple[str, ...]], tgz: Path, out: Path,
           rejudged: bool = False, planted: tuple[str, ...] = PLANTED, gate_args: str = "") -> list[str]:
    gate_args = f" --gate-args '{gate_args}'" if gate_args else ""
    lines = [f"# Peer tools' rules on the loaded-host pair runs ({gpu_of(tgz)}, suite `pr`)", "",
             f"Command: `.venv/bin/python bench/peer_rules.py --tgz {shown(tgz)} --out {shown(out)}"
             f"{' --rejudge' if rejudged else ''}{gate_args}"
             f"{'' if planted == PLANTED else ' --planted ' + ','.join(planted)}` "
             "(this file is written by that script).", "",
             *(["The gate's calls are this checkout's `tritongate gate` re-run on the stored runs (`--rejudge`), not "
                "the verdicts the runs wrote.", ""] if rejudged else []),
             "Rules as ported in `bench/peer_rules.py` (its docstring cites each tool's file and function). Every rule "
             "sees the same raw samples per row (one value per sample, 5 samples per paired round); the gate's call is "
             "read from the step's verdict.json. Rows split < 10 µs / >= 10 µs by base median.", ""]
    for group, steps in groups.items():
        t0 = tally(results, steps, "gate")
        lines += [f"## {group}: false calls ({', '.join(steps)}; {t0['rows']} rows, {t0['small']} < 10 µs, "
                  f"{t0['large']} >= 10 µs)", "",
                  "| rule | false calls | slower | faster | on < 10 µs rows | on >= 10 µs rows |", "|---|---|---|---|---|---|"]
        for rule in ALL_RULES:
            t = tally(results, steps, rule)
            lines.append(f"| {rule} | {pct(t['slower'] + t['faster'], t['rows'])} | {t['slower']} | {t['faster']} | "
                         f"{pct(t['called_small'], t['small'])} | {pct(t['called_large'], t['large'])} |")
        rs = [r for st in steps for r in results[st]["rows"].values()]
        lines += ["", f"Samples > 2x their row-side median: {sum(r['samples_over_2x_median'] for r in rs)}; largest "
                  f"sample / row-side median: {max(r['max_over_median'] for r in rs):.1f}x.", ""]
    if "A/A quiet, candidate unprimed" in groups:
        lines += ["`unprimed-cand` (quiet host, the candidate worker skipped the graph priming) is scored as A/A in its "
                  "own table and kept out of the quiet A/A group: its candidate process can change launch state "
                  "part-way, so it is not a clean A/A.", ""]
    for step in planted:
        res = results[step]
        t0 = tally(results, (step,), "gate")
        host = "quiet" if step.startswith("quiet") else "loaded"
        wpe = ", ".join(f"{w}: {100 * v:+.1f} %" for w, v in res["worker_pair_effect"].items())
        wpd = ", ".join(f"{w}: {100 * v:+.2f}" for w, v in res["worker_pair_deviation"].items())
        lines += [f"## Planted {host}, aimed {step.rsplit('-', 1)[1]}: catches (`{step}`; {t0['rows']} rows, "
                  f"{t0['small']} < 10 µs, {t0['large']} >= 10 µs)", "",
                  f"Measured plant size (median over rows of the gate's effect estimate): "
                  f"**{100 * res['median_gate_effect']:+.2f} %**. Per worker pair (median over the rows it measured "
                  f"of candidate/base median - 1 on that pair's rounds; pairs >= 8 measured only the rows whose call "
                  f"was confirmed): {wpe}. Against the same rows' other pairs (median over rows of the pair's effect "
                  f"less the row's median over its pairs): {wpd}.", "",
                  "| rule | caught < 10 µs | caught >= 10 µs | caught all | 'faster' calls |", "|---|---|---|---|---|"]
        for rule in ALL_RULES:
            t = tally(results, (step,), rule)
            lines.append(f"| {rule} | {pct(t['slower_small'], t['small'])} | {pct(t['slower_large'], t['large'])} | "
                         f"{pct(t['slower'], t['rows'])} | {t['faster']} |")
        keys = landed(results, step)
        tl = tally(results, (step,), "gate", keys)
        lines += ["", f"Rows whose plant landed within ±25 % of the aim as `{twin(step)}` measured it: {tl['rows']} "
                  f"({tl['small']} < 10 µs, {tl['large']} >= 10 µs). Catches on those rows:", "",
                  "| rule | caught < 10 µs | caught >= 10 µs | caught all |", "|---|---|---|---|"]
        for rule in ALL_RULES:
            t = tally(results, (step,), rule, keys)
            lines.append(f"| {rule} | {pct(t['slower_small'], t['small'])} | {pct(t['slower_large'], t['large'])} | "
                         f"{pct(t['slower'], t['rows'])} |")
        misses: dict[str, int] = defaultdict(int)
        for r in res["rows"].values():
            if r["gate_verdict"] != "REGRESSED":
                misses[f"{r['gate_verdict']}/{r['gate_why']}"] += 1
        lines += ["", "Gate misses by verdict/why: " + ", ".join(f"{k} {v}" for k, v in sorted(misses.items())) + ".",
                  ""]
    ns = [r["samples_per_side"] for s in results.values() for r in s["rows"].values()]
    return lines + [
        "## Caveats", "",
        "- **Is the plant even?** A plant is the same spin in every candidate process only if each process converts "
        "it to SM cycles alike. Per planted step, each worker pair's effect against the same rows' other pairs "
        "(median over rows, in points) ranges: " + "; ".join(
            f"`{st}` {100 * min(results[st]['worker_pair_deviation'].values()):+.2f} to "
            f"{100 * max(results[st]['worker_pair_deviation'].values()):+.2f} against a median plant of "
            f"{100 * results[st]['median_gate_effect']:+.2f} %" for st in planted) +
        ". Pair ids >= 8 are the confirming pairs a call is measured again on (only rows with a call have them, "
        "which is why the per-pair medians above are not compared across pairs directly). Deviations near half the "
        "plant or more mean catches here measure an uneven plant, not the gate at the aimed size. A/A counts are "
        "unaffected.",
        f"- Sample counts are the gate's: each row ran {min(ns)}-{max(ns)} samples a side, chosen by the gate's "
        "adaptive schedule (more rounds where it was unsure, plus confirmation rounds on other worker pairs after a "
        "call). Peers get those same samples, taken as independent values, although they come in paired rounds.",
        "- Bencher: baseline = the base samples as the historical data (n = samples), datum = the candidate median; "
        "upper boundary 0.99 only, so it never calls 'faster'.",
        "- asv: result = median; Mann-Whitney normal approximation (> 20 samples a side); a call needs both the factor "
        "and p < 0.002. pyperf: `--min-speed` unset. nvbench: `--threshold-diff` only filters the display, so it is "
        "not applied.",
        "- Mean-based rules (pyperf, nvbench) take in the loaded host's rare long samples (counted under each A/A "
        "table); median-based ones (asv, median-1%, Bencher's datum) do not; nvbench compares the mean shift with the "
        "smaller of the two sides' relative stdev.",
        "- The gate on A/A steps: `timing_change` (the verdict itself is IDENTICAL_BINARY); on planted steps: "
        "REGRESSED = caught, UNCONFIRMED / UNCHANGED = not caught.", ""]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tgz", type=Path, default=TGZ)
    ap.add_argument("--out", type=Path, default=OUT, help="output prefix (.json and .md)")
    ap.add_argument("--rejudge", action="store_true", help="the gate's calls from this checkout's gate, re-run")
    ap.add_argument("--gate-args", default="", help="with --rejudge: options for the gate, e.g. '--min-effect 0.005'")
    ap.add_argument("--planted", help=f"the planted steps, comma-separated (default {','.join(PLANTED)}); each "
                    "step's twin on the other host must be among them")
    args = ap.parse_args()
    planted = tuple(args.planted.split(",")) if args.planted else PLANTED
    docs = load_steps(args.tgz)
    if args.gate_args and not args.rejudge:
        raise SystemExit("--gate-args needs --rejudge")
    if args.rejudge:
        rejudge(args.tgz, docs, args.gate_args.split())
    complete = {s for s, d in docs.items() if len(d) == 3}
    # the A/A steps a run holds (a planted-only re-run has none; a short one fewer than three)
    groups = {g: here for g, steps in GROUPS.items() if (here := tuple(s for s in steps if s in complete))}
    missing = [s for s in planted if s not in complete]
    if missing:
        raise SystemExit(f"steps missing from {args.tgz}: {missing}")
    wanted = [s for steps in groups.values() for s in steps] + list(planted)
    results = {step: judge_step(docs[step]) for step in wanted}
    summary = {group: {rule: tally(results, steps, rule) for rule in ALL_RULES}
               for group, steps in {**groups, **{s: (s,) for s in planted}}.items()}
    summary |= {f"{s} (landed)": {rule: tally(results, (s,), rule, landed(results, s)) for rule in ALL_RULES}
                for s in planted}
    doc = {"tgz": shown(args.tgz), "rejudged": args.rejudge, "gate_args": args.gate_args, "rules": list(ALL_RULES), "small_us": SMALL_US, "summary": summary,
           "steps": results}
    Path(f"{args.out}.json").write_text(json.dumps(doc, indent=1))
    lines = report(results, groups, args.tgz, args.out, args.rejudge, planted, args.gate_args)
    Path(f"{args.out}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
