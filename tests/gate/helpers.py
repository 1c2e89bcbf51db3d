"""Synthetic runs for gate tests: controlled samples, identities and markers."""

from __future__ import annotations

import json
import random
from pathlib import Path

from tritongate.model.calibration import SCHEMA
from tritongate.rundir import RunWriter, load_run
from tritongate.schema import MeasurementInfo, Row, Variant

IDENTITY = {
    "device": "NVIDIA H200", "backend": "cuda", "timer": "cuda-graph",
    "gpu_state_before": {"driver": "580.159.04"},
    "codegen_env": {"TRITON_DISABLE_LINE_INFO": "1", "TRITON_DEFAULT_FP_FUSION": "1", "TRITON_INTERPRET": None},
    "measure_config": {"l2": "warm"}, "compiler_ref": "triton 3.6.0", "commit": "0123456789abcdef",
    "suite": {"name": "pr", "digest": "feedface"},
}


def samples(median: float, *, round_sd: float = 0.002, within_sd: float = 0.001, rounds: int = 5,
            per_round: int = 5, seed: int = 0) -> tuple[float, ...]:
    rng = random.Random(seed)
    out = []
    for _ in range(rounds):
        offset = rng.gauss(0, round_sd)
        out += [median * (1 + offset) * (1 + rng.gauss(0, within_sd)) for _ in range(per_round)]
    return tuple(out)


def row(op="softmax", case="4096x4096", dtype="float16", median=20.0, seed=0, k=25, markers=(),
        status="ok", error="", variants=(), timer="cuda-graph", per_round=5, **noise) -> Row:
    s = samples(median, seed=seed, per_round=per_round, **noise) if status == "ok" else ()
    return Row(op=op, case=case, dtype=dtype, timer=timer, samples=s, status=status, error=error,
               markers=tuple(markers), variants=tuple(variants),
               measurement=MeasurementInfo(launches_per_sample=k, samples_per_round=per_round,
                                           warmup_calls=50, l2="warm"))


def binary(h: str) -> Variant:
    return Variant(kernel="tritongate.ops.kernels.reduction.softmax_kernel", name="BLOCK=4096 w8 s3",
                   source_hash="src", binary_hash=h, launches=1)


def write_run(path: Path, rows, *, mode="record", identity=None, replay_from=None):
    ident = {**IDENTITY, **(identity or {})}
    if replay_from is not None:
        ident["replay_from"] = str(replay_from)
    w = RunWriter(path, ident, mode=mode)
    for r in rows:
        w.add(r)
    w.finish()
    return load_run(path)


def pair(tmp_path: Path, base_rows, cand_rows, *, cand_identity=None):
    base = write_run(tmp_path / "pr_20261129T120000Z", base_rows)
    cand = write_run(tmp_path / "pr_20261129T121500Z", cand_rows, mode="replay",
                     identity=cand_identity, replay_from=base.path)
    return base, cand



CALIBRATION = {"created_utc": "2026-11-30T03:12:00+00:00", "device": "NVIDIA H200", "aa_rows": 102,
               "aa_false": 0, "fraction": 0.02, "caught": 33, "planted_rows": 34, "unplanted": 0}


def calibration_summary(**fields):
    from tritongate.model.calibration import CalibrationSummary

    return CalibrationSummary(**{**CALIBRATION, **fields})


def calibration_file(folder: Path, **fields) -> Path:
    """A calibration.json as ``tritongate calibrate`` writes it (only what a verdict reads)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "calibration.json"
    path.write_text(json.dumps({"schema": SCHEMA, "kind": "tritongate-calibration",
                                "summary": {**CALIBRATION, **fields}}), encoding="utf-8")
    return path


def paired_run(base: Row, cand: Row, *, schedule=None, policy=None, per_pair_s: float = 0.1,
               pair_id: str = "pair-1", inputs: str = "own") -> tuple[Row, Row]:
    """Both sides of one row as ``tritongate pair`` records them: the real schedule
    (``run_schedule``: looks, fresh worker pairs, a confirmation of a call on fresh worker
    pairs) replayed on the rows' samples, which must hold enough rounds (``row(rounds=N)``);
    each pair takes ``per_pair_s`` on a scripted clock, so budgets stop rows as they would.
    The pairing (order, worker pairs, precision reached, what stopped the row, where the
    confirmation began) is what the orchestrator writes."""
    from dataclasses import replace

    from tritongate.gate.policy import GatePolicy
    from tritongate.gate.rule import PairLayout, Why, decide, precision
    from tritongate.pair.orchestrator import default_schedule
    from tritongate.pair.schedule import ledger_for, run_schedule
    from tritongate.schema import PairInfo

    schedule = schedule or default_schedule("cuda", 5)
    policy = policy or GatePolicy()
    target = policy.min_effect_for(base.op)
    spr = base.measurement.samples_per_round
    available = min(len(base.samples), len(cand.samples)) // spr
    went_first: list[bool] = []
    pairs: list[int] = []
    state = {"pair": 0, "now": 0.0}

    def measure(i: int) -> bool:
        if i >= available:
            raise ValueError(f"{base.op} {base.case}: the schedule wants pair {i + 1}, the rows hold {available}")
        went_first.append(i % 2 == 0)  # the orchestrator's order: the base first in even pairs
        pairs.append(state["pair"])
        state["now"] += per_pair_s
        return True

    def fresh(i: int) -> bool:
        state["pair"] += 1
        return True

    def args(start: int) -> dict:
        n = len(went_first)
        return dict(base=base.samples[start * spr:n * spr], cand=cand.samples[start * spr:n * spr],
                    layout=PairLayout(tuple(went_first[start:]), tuple(pairs[start:])))

    def detectable(start: int = 0) -> float:
        a = args(start)
        return precision(a["base"], a["cand"], base_per_round=spr, cand_per_round=spr, paired=True,
                         min_effect=target, noise_z=policy.noise_z, layout=a["layout"],
                         process_sd=policy.process_sd, pair_inflation=policy.pair_inflation).detectable

    def calls(start: int = 0) -> bool:
        a = args(start)
        return decide(a["base"], a["cand"], base_per_round=spr, cand_per_round=spr, min_effect=target,
                      noise_z=policy.noise_z, min_samples=policy.min_samples, paired=True, layout=a["layout"],
                      process_sd=policy.process_sd, pair_inflation=policy.pair_inflation).why is Why.CALLED

    ledger = ledger_for(schedule)
    clock = lambda: state["now"]  # noqa: E731
    result = run_schedule(measure_pair=measure, reached=lambda: detectable() <= target, schedule=schedule,
                          ledger=ledger, clock=clock, would_call=calls, new_worker_pair=fresh)
    stopped_by, confirm_from = result.stopped_by, 0
    if schedule.confirm_calls and result.pairs >= schedule.confirm_rounds and result.pairs and calls():
        confirm_from = start = result.pairs
        fresh(start)
        again = run_schedule(measure_pair=lambda i: measure(start + i),
                             reached=lambda: detectable(start) <= target, schedule=schedule, ledger=ledger,
                             clock=clock, would_call=lambda: calls(start), new_worker_pair=lambda i: fresh(start + i),
                             confirming=True)
        stopped_by = again.stopped_by
    n = len(went_first)
    reached = detectable()

    def side(r: Row, name: str) -> Row:
        info = PairInfo(pair_id=pair_id, side=name, went_first=tuple(w == (name == "base") for w in went_first),
                        target_effect=target, detectable_effect=reached, target_reached=reached <= target,
                        min_rounds=schedule.min_rounds, max_rounds=schedule.max_rounds,
                        confirm_rounds=schedule.confirm_rounds, inputs=inputs, worker_pairs=tuple(pairs),
                        stopped_by=stopped_by, confirm_from=confirm_from if confirm_from < n else 0)
        return replace(r, samples=r.samples[:n * spr], measurement=replace(r.measurement, pairing=info))

    return side(base, "base"), side(cand, "candidate")
