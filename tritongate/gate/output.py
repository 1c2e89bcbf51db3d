"""Write the gate's outputs: verdict.json (versioned) and verdict.md, atomically.

verdict.md and the job summary are rendered from the verdict.json document, by the same
function the trusted comment job calls (``report.verdict_markdown.render_verdict``), so
the three can never say different things.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tritongate import __version__
from tritongate.atomicio import write_text_atomic
from tritongate.errors import UsageError
from tritongate.gate.comparability import overlaid_env
from tritongate.gate.ir_evidence import IREvidence, collect
from tritongate.gate.summary import per_op_records
from tritongate.gate.verdict import VERDICT_SCHEMA_VERSION, GateResult, RowVerdict, Verdict
from tritongate.report.untrusted import safe_url
from tritongate.report.verdict_markdown import COMMENT_LIMIT, render_verdict
from tritongate.report.verdict_terminal import headline_text
from tritongate.rundir import gc_paused
from tritongate.model.verdict import VerdictDoc

if TYPE_CHECKING:
    from tritongate.model.calibration import CalibrationSummary
    from tritongate.gate.baseline_state import BaselineState

VERDICT_JSON = "verdict.json"
VERDICT_MD = "verdict.md"


def _side(run: Any) -> dict[str, Any]:
    ident = run.identity  # validated; "software" is not a typed field, so its shape is checked here
    software = ident.get("software")
    triton = (software.get("triton") or {}) if isinstance(software, dict) else {}
    return {"path": str(run.path), "run": run.name, "mode": run.mode,
            "compiler_ref": ident.get("compiler_ref"), "commit": ident.get("commit"),
            "device": ident.get("device"), "backend": ident.get("backend"), "timer": ident.get("timer"),
            "replay_from": ident.get("replay_from"),
            "triton_version": triton.get("version") if isinstance(triton, dict) else None,
            "env_overlay": overlaid_env(ident), **_patches(triton)}


def _patches(triton: Any) -> dict[str, list[str]]:
    """``{"patches": [file names]}`` for an overlay build (``tritongate overlay``), else nothing:
    a verdict of two builds of one Triton version says which patches the other one carries."""
    raw = triton.get("overlay") if isinstance(triton, dict) else None
    try:
        record = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return {}
    patches = record.get("patches") if isinstance(record, dict) else None
    names = [Path(p["path"]).name for p in patches if isinstance(p, dict) and isinstance(p.get("path"), str)] \
        if isinstance(patches, list) else []
    return {"patches": names} if names else {}


def _sides(base: Any, cand: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both sides; each names its interpreter too where that is all that tells the two builds
    apart (``pair --cand-python`` of an overlay venv with the same Triton version)."""
    b, c = _side(base), _side(cand)
    same = ("compiler_ref", "commit", "triton_version", "env_overlay")
    pythons = [((run.identity.get("pair") or {}).get("build") or {}).get("python") for run in (base, cand)]
    if all(b[k] == c[k] for k in same) and all(pythons) and pythons[0] != pythons[1]:
        b["python"], c["python"] = pythons
    return b, c


def _interval(r: RowVerdict) -> list[float] | None:
    """The row's estimate ± its noise floor (the band its own noise could produce), as
    candidate / base - 1; None where the floor is unknown."""
    t = r.timing
    if t is None or not math.isfinite(t.noise_floor) or t.effect <= -1:
        return None
    half = math.log1p(t.noise_floor)
    return [math.expm1(t.log_ratio - half), math.expm1(t.log_ratio + half)]


def _row(r: RowVerdict, ir: IREvidence | None) -> dict[str, Any]:
    d = r.to_dict()
    if r.pairing is not None:
        d["max_rounds"] = r.pairing.max_rounds
    d["effect_interval"] = _interval(r)
    row_ir = ir.for_row(r.key) if ir is not None else None
    d["ir"] = None
    if row_ir is not None:
        d["ir"] = {**row_ir.to_dict(), "head": row_ir.head or None, "head_cut": row_ir.head_cut}
    return d


def verdict_document(result: GateResult, ir: IREvidence | None = None,
                     baseline: BaselineState | None = None,
                     calibration: CalibrationSummary | None = None,
                     artifact_url: str | None = None) -> dict[str, Any]:
    return _document(result, ir, baseline, calibration, artifact_url)[0]


def _document(result: GateResult, ir: IREvidence | None, baseline: BaselineState | None,
              calibration: CalibrationSummary | None, artifact_url: str | None) -> tuple[dict[str, Any], VerdictDoc]:
    """verdict.json's document, and the same validated (once: the renderers read that)."""
    rows = [_row(r, ir) for r in result.rows]
    interval = result.geomean_interval()
    cand_device, replayed = result.cand.identity.get("device"), result.cand.identity.get("replay_from")
    doc = {
        "schema_version": VERDICT_SCHEMA_VERSION, "tool_version": __version__,
        "created_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "passed": result.passed, "exit_code": result.exit_code, "headline": "",  # worded below from the validated document
        "state": result.state, "blind_rows": len(result.blind_rows), "blind": result.blind_text() or None,
        "failures": result.failures, **dict(zip(("base", "candidate"), _sides(result.base, result.cand))),
        "policy": result.policy.to_dict(), "identity_mismatches": [str(m) for m in result.mismatches],
        "notes": result.notes + ([ir.note] if ir is not None and ir.note else []),
        "counts": {v.value: len(result.by(v)) for v in Verdict},
        "geomean_speedup": result.geomean_speedup,
        "geomean_interval": list(interval) if interval else None,
        "per_op": per_op_records(result),
        "ir": ir.to_dict() if ir is not None else None,
        "baseline": ({**baseline.to_dict(), "line": baseline.line(replayed if isinstance(replayed, str) else None)}
                     if baseline is not None else None),
        "calibration": calibration.doc() if calibration is not None else None,
        "calibration_line": (calibration.line(cand_device if isinstance(cand_device, str) and cand_device else None)
                             if calibration is not None else None),
        "artifact_url": safe_url(artifact_url) if artifact_url else None,
        "rows": rows,
    }
    # one headline for the file, the terminal and the comment (report.verdict_view words it)
    validated = VerdictDoc.model_validate(doc)
    doc["headline"] = headline_text(validated)
    return doc, validated.model_copy(update={"headline": doc["headline"]})


def render_markdown(result: GateResult, *, artifact_url: str | None = None, limit: int = COMMENT_LIMIT,
                    ir: IREvidence | None = None, baseline: BaselineState | None = None,
                    calibration: CalibrationSummary | None = None) -> str:
    """verdict.md for a result in memory (tests, scripts), rendered from its verdict.json
    document as a written verdict is."""
    return render_verdict(verdict_document(result, ir, baseline, calibration, artifact_url), limit=limit)


def verdict_json(doc: dict[str, Any]) -> str:
    """verdict.json's text: indented as ``json.dumps(doc, indent=1)``, except that each item
    of a top-level list of objects (``rows``, ``per_op``) takes one line. Python's json
    encodes an indented document in pure Python and a one-line one in C; those lists are most
    of a large verdict, so a line per item (as results.json holds its rows) keeps the file
    readable at a fraction of the cost. Readers parse it; none depends on its whitespace."""
    parts = []
    for key, value in doc.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            items = ",\n  ".join(json.dumps(v, allow_nan=False) for v in value)
            text = f"[\n  {items}\n ]"
        else:  # JSON text holds no raw newline: each one starts a line to indent
            text = json.dumps(value, indent=1, allow_nan=False).replace("\n", "\n ")
        parts.append(f" {json.dumps(key)}: {text}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def _write_pair(out: Path, doc: dict[str, Any], markdown: str) -> None:
    """verdict.json and verdict.md, both or neither: each is written in full beside its final
    name first (a full disk fails there), then both are renamed, which needs no space."""
    staged = [(out / f".{VERDICT_MD}.new", out / VERDICT_MD), (out / f".{VERDICT_JSON}.new", out / VERDICT_JSON)]
    try:
        write_text_atomic(staged[0][0], markdown)
        write_text_atomic(staged[1][0], verdict_json(doc))
    except OSError as exc:
        for tmp, _final in staged:
            with contextlib.suppress(OSError):
                tmp.unlink()
        where = exc.filename or out
        raise UsageError(f"cannot write the verdict into {out} ({where}: {exc.strerror or exc}); neither "
                         f"{VERDICT_JSON} nor {VERDICT_MD} was written; free space or pass another --out") from None
    for tmp, final in staged:  # markdown first: a verdict.json is never there without its verdict.md
        os.replace(tmp, final)


@dataclass(frozen=True)
class WrittenVerdict:
    json_path: Path
    md_path: Path
    doc: VerdictDoc  # what verdict.json holds, validated


def write_verdict_files(result: GateResult, out: Path, *, artifact_url: str | None = None,
                        baseline: BaselineState | None = None,
                        calibration: CalibrationSummary | None = None,
                        ahead_of_time: Path | None = None,
                        template: Path | None = None) -> WrittenVerdict:
    """verdict.json, verdict.md and (when both runs kept TTGIR) ir-diff/ in ``out``, with the
    document written (for a summary without reading it back); ``baseline``: what the baseline
    lookup found, shown at the top; ``calibration``: the runner's latest ``tritongate
    calibrate`` summary, cited in the footer; ``ahead_of_time``: the ir-diff folder the runs
    were paired with, their IR evidence where they kept none; ``template``: verdict.md's layout,
    when not the shipped one. Callers go through ``gate.pipeline``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ir = collect(Path(result.base.path), Path(result.cand.path), out, ahead_of_time)
    with gc_paused():
        doc, validated = _document(result, ir, baseline, calibration, artifact_url)
        markdown = render_verdict(validated, template=template)
        _write_pair(out, doc, markdown)
    return WrittenVerdict(out / VERDICT_JSON, out / VERDICT_MD, validated)
