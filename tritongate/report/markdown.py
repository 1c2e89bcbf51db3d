"""verdict.md for a ``GateResult`` in memory: its verdict.json document, rendered by the one
renderer (``report.verdict_markdown.render_verdict``). For callers that hold a result and
not a written verdict (tests, scripts); ``gate.pipeline.write_result`` writes both files."""

from __future__ import annotations

from tritongate.calibrate.model import CalibrationSummary
from tritongate.gate.baseline_state import BaselineState
from tritongate.gate.ir_evidence import IREvidence
from tritongate.gate.verdict import GateResult
from tritongate.report.verdict_markdown import COMMENT_LIMIT, STICKY_MARKER, cell, render_verdict

__all__ = ["COMMENT_LIMIT", "STICKY_MARKER", "cell", "render_markdown"]


def render_markdown(result: GateResult, *, artifact_url: str | None = None,
                    limit: int = COMMENT_LIMIT, ir: IREvidence | None = None,
                    baseline: BaselineState | None = None,
                    calibration: CalibrationSummary | None = None) -> str:
    from tritongate.gate.output import verdict_document

    return render_verdict(verdict_document(result, ir, baseline, calibration, artifact_url), limit=limit)
