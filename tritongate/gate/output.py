"""Write the gate's outputs: verdict.json (versioned) and verdict.md, atomically."""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tritongate import __version__
from tritongate.atomicio import write_json_atomic, write_text_atomic
from tritongate.calibrate.model import CalibrationSummary
from tritongate.errors import UsageError
from tritongate.gate.baseline_state import BaselineState
from tritongate.gate.ir_evidence import IREvidence, collect
from tritongate.gate.summary import per_op
from tritongate.gate.verdict import VERDICT_SCHEMA_VERSION, GateResult, Verdict
from tritongate.report.markdown import render_markdown

VERDICT_JSON = "verdict.json"
VERDICT_MD = "verdict.md"


def _side(run) -> dict[str, Any]:
    ident = run.identity
    return {"path": str(run.path), "run": run.name, "mode": run.mode,
            "compiler_ref": ident.get("compiler_ref"), "commit": ident.get("commit"),
            "device": ident.get("device"), "backend": ident.get("backend"), "timer": ident.get("timer"),
            "replay_from": ident.get("replay_from")}


def verdict_document(result: GateResult, ir: IREvidence | None = None,
                     baseline: BaselineState | None = None,
                     calibration: CalibrationSummary | None = None) -> dict[str, Any]:
    rows = []
    for r in result.rows:
        d = r.to_dict()
        row_ir = ir.for_row(r.key) if ir is not None else None
        d["ir"] = row_ir.to_dict() if row_ir is not None else None
        rows.append(d)
    return {
        "schema_version": VERDICT_SCHEMA_VERSION, "tool_version": __version__,
        "created_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "passed": result.passed, "exit_code": result.exit_code, "headline": result.headline(),
        "state": result.state, "blind_rows": len(result.blind_rows), "blind": result.blind_text() or None,
        "failures": result.failures, "base": _side(result.base), "candidate": _side(result.cand),
        "policy": result.policy.to_dict(), "identity_mismatches": [str(m) for m in result.mismatches],
        "notes": result.notes, "counts": {v.value: len(result.by(v)) for v in Verdict},
        "geomean_speedup": result.geomean_speedup,
        "per_op": per_op(result).to_dict(orient="records"),
        "ir": ir.to_dict() if ir is not None else None,
        "baseline": baseline.to_dict() if baseline is not None else None,
        "calibration": asdict(calibration) if calibration is not None else None,
        "rows": rows,
    }


def write_verdict(result: GateResult, out: Path, *, artifact_url: str | None = None,
                  baseline: BaselineState | None = None,
                  calibration: CalibrationSummary | None = None) -> tuple[Path, Path]:
    """verdict.json, verdict.md and (when both runs kept TTGIR) ir-diff/ in ``out``;
    ``baseline``: what the baseline lookup found, shown at the top; ``calibration``: the
    runner's latest ``tritongate calibrate`` summary, cited in the footer."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ir = collect(Path(result.base.path), Path(result.cand.path), out)
    markdown = render_markdown(result, artifact_url=artifact_url, ir=ir, baseline=baseline,
                               calibration=calibration)
    write_json_atomic(out / VERDICT_JSON, verdict_document(result, ir, baseline, calibration))
    write_text_atomic(out / VERDICT_MD, markdown)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        try:
            with open(summary, "a", encoding="utf-8") as f:
                f.write(markdown + "\n")
        except OSError as exc:
            raise UsageError(f"GITHUB_STEP_SUMMARY={summary} cannot be appended to ({exc.strerror or exc}); "
                             f"the verdict itself is in {out}; unset the variable or point it at a file") from exc
    return out / VERDICT_JSON, out / VERDICT_MD
