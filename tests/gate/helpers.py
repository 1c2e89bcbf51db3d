"""Synthetic runs for gate tests: controlled samples, identities and markers."""

from __future__ import annotations

import json
import random
from pathlib import Path

from tritongate.calibrate.model import SCHEMA
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
    from tritongate.calibrate.model import CalibrationSummary

    return CalibrationSummary(**{**CALIBRATION, **fields})


def calibration_file(folder: Path, **fields) -> Path:
    """A calibration.json as ``tritongate calibrate`` writes it (only what a verdict reads)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "calibration.json"
    path.write_text(json.dumps({"schema": SCHEMA, "kind": "tritongate-calibration",
                                "summary": {**CALIBRATION, **fields}}), encoding="utf-8")
    return path
