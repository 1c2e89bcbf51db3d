"""verdict.md: the gate's Markdown verdict (jinja2), escaped, sticky, and size-bounded.

Every string that comes from the code under test (op, case, kernel names, error text,
markers) passes through ``cell``: HTML-escaped and with Markdown's active characters
turned into entities, so a hostile name can neither inject HTML nor break a table, make
a link, or mention anyone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from tritongate.calibrate.model import CalibrationSummary
from tritongate.gate.baseline_state import BaselineState
from tritongate.gate.ir_evidence import IREvidence, RowIR
from tritongate.gate.policy import GatePolicy
from tritongate.gate.rule import TimingDecision, Why
from tritongate.gate.summary import per_op
from tritongate.gate.verdict import AHEAD_OF_TIME_REASON, GateResult, RowVerdict, Verdict, unconfirmed
from tritongate.report.units import format_time, format_time_range
from tritongate.report.untrusted import code_block, markdown_cell, safe_url
from tritongate.stats import Summary

STICKY_MARKER = "<!-- tritongate-verdict -->"
COMMENT_LIMIT = 60_000  # GitHub refuses comment bodies over 65,536 characters

def cell(value: Any) -> str:
    """Safe inside a Markdown table cell, on one line (see ``report.untrusted``)."""
    return markdown_cell(value)


_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(str(Path(__file__).parent / "templates")),
    autoescape=False,  # Markdown, not HTML: escaping is explicit via the `cell` filter
    trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined,
)
_ENV.filters["cell"] = cell
_ENV.filters["url"] = safe_url  # a link target is validated, not escaped


def _pct(value: float | None, fmt: str = ".1%") -> str:
    """A relative effect as a percentage; "n/a" where there is none or it is not finite."""
    return "n/a" if value is None or not math.isfinite(value) else format(value, fmt)


def _iqr_cell(s: Summary) -> str:
    return f"{format_time(s.median)} ({format_time_range(s.q1, s.q3)})"


def _judged(t: TimingDecision) -> str:
    """Paired (rounds alternating in one job) or unpaired (two stored runs)."""
    if t.paired:
        return f"paired, {t.pairs} round{'' if t.pairs == 1 else 's'}"
    return "unpaired"


def _why(r: RowVerdict, policy: GatePolicy) -> str:
    """Why a row is not a called change, in words (for UNCHANGED and IDENTICAL_BINARY rows)."""
    t = r.timing
    if r.verdict is Verdict.IDENTICAL_BINARY:
        if t is None:
            if AHEAD_OF_TIME_REASON in r.reasons:
                return "byte-identical kernels ahead of time (not run)"
            return "byte-identical kernels (not timed)"
        if t.why is Why.CALLED:  # the kernels are the same, so this difference is the measurement's
            return f"byte-identical kernels (timing alone differed by {t.effect:+.2%}: run-to-run noise)"
        return "byte-identical kernels"
    if t is None:
        return "; ".join(r.reasons)
    if t.why is Why.TOO_FEW_SAMPLES:
        return (f"too few samples (base {t.base.n}, candidate {t.cand.n}; "
                f"{policy.min_samples} needed per side)")
    if t.why is Why.IQRS_OVERLAP:
        return "IQRs overlap"
    if t.why is Why.BELOW_MIN_EFFECT:
        return f"below the minimum effect ({_pct(r.min_effect)})"
    if t.why is Why.BELOW_NOISE_FLOOR:
        floor = (f"±{t.noise_floor:.1%}" if math.isfinite(t.noise_floor)
                 else "not estimable: too few rounds")
        return f"below the noise floor ({floor})"
    return t.reason


def _timed_row(r: RowVerdict, policy: GatePolicy) -> dict[str, Any]:
    t = r.timing
    if t is None:  # an IDENTICAL_BINARY row that was not timed
        return {"op": r.op, "case": r.case, "dtype": r.dtype, "verdict": r.verdict.value,
                "base": "not timed", "cand": "not timed", "effect": "–", "speedup": "–",
                "detectable": "–", "judged": "–", "why": _why(r, policy)}
    detectable = _pct(t.detectable)
    return {"op": r.op, "case": r.case, "dtype": r.dtype, "verdict": r.verdict.value,
            "base": _iqr_cell(t.base), "cand": _iqr_cell(t.cand), "effect": f"{t.effect:+.2%}",
            "speedup": f"{t.speedup:.3f}×",
            "detectable": detectable if detectable == "n/a" else f"≥ {detectable}",
            "judged": _judged(t), "why": _why(r, policy)}


def _reason_row(r: RowVerdict, policy: GatePolicy) -> dict[str, Any]:
    return {"op": r.op, "case": r.case, "dtype": r.dtype, "reasons": "; ".join(r.reasons)}


def _short_row(r: RowVerdict) -> dict[str, Any]:
    p = r.pairing
    rounds = "–" if r.rounds is None else str(r.rounds)
    if p is not None and p.max_rounds:
        rounds += f" (cap {p.max_rounds})"
    if unconfirmed(r):
        rounds += f"; a call needs {p.confirm_rounds}"
    return {"op": r.op, "case": r.case, "dtype": r.dtype, "verdict": r.verdict.value,
            "target": _pct(p.target_effect if p else None),
            "reached": _pct(p.detectable_effect if p else None), "rounds": rounds}


SECTIONS = [
    (Verdict.REGRESSED, "🔴 Regressions", "timed"),
    (Verdict.IMPROVED, "🟢 Improvements", "timed"),
    (Verdict.REJECTED, "⚠️ Rejected rows (unverified)", "reasons"),
    (Verdict.NOT_COMPARABLE, "⚠️ Not comparable", "reasons"),
    (Verdict.MISSING, "Missing from the candidate", "reasons"),
    (Verdict.NEW, "New in the candidate", "reasons"),
]
DETAIL_VERDICTS = (Verdict.UNCHANGED, Verdict.IDENTICAL_BINARY)


@dataclass
class _Limits:
    section_rows: int | None = None
    detail_rows: int | None = None
    inline_diffs: int = 12  # rows whose smallest IR diff is shown inline, over all sections


def _ir_cell(ir: RowIR | None) -> str:
    if ir is None:
        return "–"
    if not ir.changed:
        return f"unchanged ({ir.kernels} kernel{'' if ir.kernels == 1 else 's'})"
    text = f"{ir.changed} of {ir.kernels} kernel{'' if ir.kernels == 1 else 's'} changed"
    if ir.only_one_side:
        text += f", {ir.only_one_side} launched by one side only"
    return text


def _ir_detail(r: RowVerdict, ir: RowIR | None, budget: list[int]) -> dict[str, Any] | None:
    """The row's smallest diff, inline, while the comment's budget of inline diffs lasts."""
    if ir is None or not ir.diff or budget[0] <= 0:
        return None
    budget[0] -= 1
    body = ir.head + ("\n… (first lines only; the whole diff is in the artifact)" if ir.head_cut else "")
    return {"summary": f"IR of {r.op} · {r.case} · {r.dtype}: smallest changed diff",
            "path": ir.diff, "block": code_block(body, "diff")}


def _side(run, ident) -> dict[str, Any]:
    return {"run": run.name, "compiler": ident.get("compiler_ref") or "–",
            "commit": (ident.get("commit") or "–")[:12], "mode": run.mode}


def _counts_line(result: GateResult) -> str:
    parts = [f"{len(result.rows)} rows"]
    for v in Verdict:
        n = len(result.by(v))
        if n:
            parts.append(f"{v.value.lower().replace('_', ' ')} {n}")
    return " · ".join(parts)


def _ir_rows(result: GateResult, ir: IREvidence | None, limits: _Limits, budget: list[int],
             rows: list[RowVerdict]) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        row_ir = ir.for_row(r.key) if ir is not None else None
        out.append({"cell": _ir_cell(row_ir), "path": row_ir.diff if row_ir else "",
                    "detail": _ir_detail(r, row_ir, budget)})
    return out


def _context(result: GateResult, limits: _Limits, artifact_url: str | None,
             ir: IREvidence | None = None, baseline: BaselineState | None = None,
             calibration: CalibrationSummary | None = None) -> dict[str, Any]:
    show_ir = ir is not None and bool(ir.rows)
    budget = [limits.inline_diffs]
    sections = []
    for verdict, title, kind in SECTIONS:
        rows = result.by(verdict)
        if verdict is Verdict.REGRESSED:
            rows = sorted(rows, key=lambda r: -r.timing.effect)
        elif verdict is Verdict.IMPROVED:
            rows = sorted(rows, key=lambda r: r.timing.effect)
        if not rows:
            continue
        shown = rows if limits.section_rows is None else rows[:limits.section_rows]
        sections.append({"title": title, "kind": kind, "total": len(rows), "cut": len(rows) - len(shown),
                         "rows": [(_timed_row if kind == "timed" else _reason_row)(r, result.policy)
                                  for r in shown],
                         "ir": _ir_rows(result, ir, limits, budget, shown) if show_ir and kind == "timed" else None})
    if show_ir:  # unchanged in time, changed in code: worth a look, never a failure
        quiet = [r for r in result.by(Verdict.UNCHANGED) if (x := ir.for_row(r.key)) is not None and x.changed]
        if quiet:
            shown = quiet if limits.section_rows is None else quiet[:limits.section_rows]
            sections.append({"title": "🔎 IR changed, time unchanged", "kind": "timed", "total": len(quiet),
                             "cut": len(quiet) - len(shown),
                             "rows": [_timed_row(r, result.policy) for r in shown],
                             "ir": _ir_rows(result, ir, limits, budget, shown)})
    short = result.short_of_target()
    short_section = None
    if short:
        shown = short if limits.section_rows is None else short[:limits.section_rows]
        short_section = {"total": len(short), "cut": len(short) - len(shown),
                         "rows": [_short_row(r) for r in shown]}
    rest = [r for r in result.rows if r.verdict in DETAIL_VERDICTS]
    details = None
    if rest:
        shown = rest if limits.detail_rows is None else rest[:limits.detail_rows]
        counts = ", ".join(f"{len([r for r in rest if r.verdict is v])} {v.value.lower().replace('_', ' ')}"
                           for v in DETAIL_VERDICTS if any(r.verdict is v for r in rest))
        details = {"title": f"All other rows ({counts})", "rows": [_timed_row(r, result.policy) for r in shown],
                   "cut": len(rest) - len(shown)}
    table = per_op(result)
    per_op_rows = [{"op": p.op, "rows": int(p.rows), "min": f"{p.min:.3f}×", "geomean": f"{p.geomean:.3f}×",
                    "max": f"{p.max:.3f}×"} for p in table.itertuples()]
    per_op_cut = 0
    if limits.section_rows is not None and len(per_op_rows) > limits.section_rows:
        per_op_cut = len(per_op_rows) - limits.section_rows
        per_op_rows = per_op_rows[:limits.section_rows]
    pol = result.policy
    overrides = ", ".join(f"{cell(op)} {v:.1%}" for op, v in sorted(pol.op_min_effect.items()))
    return {
        "sticky_marker": STICKY_MARKER, "headline": result.headline(),
        "base": _side(result.base, result.base.identity), "cand": _side(result.cand, result.cand.identity),
        "counts_line": _counts_line(result), "geomean_text": result.geomean_text(),
        "artifact_url": artifact_url, "sections": sections, "per_op": per_op_rows, "per_op_cut": per_op_cut,
        "details": details, "short_of_target": short_section,
        "notes": result.notes + ([ir.note] if ir is not None and ir.note else []),
        "ir_line": _ir_line(ir), "baseline_line": baseline.line(_replayed(result)) if baseline is not None else "",
        "calibration_line": _calibration_line(calibration, result),
        "noise_z": f"{pol.noise_z:g}", "min_samples": pol.min_samples,
        "policy_line": f"{pol.min_effect:.1%}" + (f"; {overrides}" if overrides else ""),
        "truncated": "",
    }


CALIBRATE_CODE = "`tritongate calibrate`"  # the one code span of a calibration line: fixed text


def _calibration_line(calibration: CalibrationSummary | None, result: GateResult) -> str:
    """The runner's latest calibration, one line for the footer ("" without one), checked
    against the candidate's device. Every other character (the file's device name and date,
    the run's device name) is escaped like a table cell, so a hostile name stays text."""
    if calibration is None:
        return ""
    ident = result.cand.identity if isinstance(result.cand.identity, dict) else {}
    device = ident.get("device")
    text = calibration.line(device if isinstance(device, str) and device else None)
    return CALIBRATE_CODE.join(_spaced(part) for part in text.split(CALIBRATE_CODE))


def _spaced(text: str) -> str:
    """``cell(text)`` keeping one space at either end where ``text`` had one (``cell``
    trims them; next to a code span they matter)."""
    if not text.strip():
        return " " if text else ""
    return (" " if text[0].isspace() else "") + cell(text) + (" " if text[-1].isspace() else "")


def _replayed(result: GateResult) -> str | None:
    value = result.cand.identity.get("replay_from") if isinstance(result.cand.identity, dict) else None
    return value if isinstance(value, str) and value else None


def _ir_line(ir: IREvidence | None) -> str:
    """One line on the IR comparison: what changed, and where the diffs are."""
    if ir is None or not ir.folder:
        return ""
    c = ir.counts
    total = sum(c.values())
    changed = total - c.get("identical", 0)
    parts = [f"{c[k]} {k.replace('_', ' ')}" for k in c if c[k] and k != "identical"]
    return (f"TTGIR of {total} launched kernel variant{'' if total == 1 else 's'} compared: "
            f"{changed} differ" + (f" ({', '.join(parts)})" if parts else "") +
            f"; diffs in {ir.folder}/ next to this verdict (index.tsv, summary.md)")


def render_markdown(result: GateResult, *, artifact_url: str | None = None,
                    limit: int = COMMENT_LIMIT, ir: IREvidence | None = None,
                    baseline: BaselineState | None = None,
                    calibration: CalibrationSummary | None = None) -> str:
    """The verdict as Markdown, under ``limit`` characters: first the inline IR diffs and the
    unchanged rows are cut, then every section is shortened, each cut said in the text."""
    limits = _Limits()
    template = _ENV.get_template("verdict.md.j2")
    text = template.render(**_context(result, limits, artifact_url, ir, baseline, calibration))
    if len(text) <= limit:
        return text
    total = len(result.rows)
    for detail_rows, section_rows in [(None, None), (0, None)] + [(0, n) for n in (200, 100, 50, 20, 10, 5, 1, 0)]:
        limits = _Limits(section_rows=section_rows, detail_rows=detail_rows, inline_diffs=0)
        ctx = _context(result, limits, artifact_url, ir, baseline, calibration)
        ctx["truncated"] = (f"This comment was shortened to stay under {limit:,} characters "
                            f"({total} rows in all); the artifact's verdict.json has every row.")
        text = template.render(**ctx)
        if len(text) <= limit:
            return text
    return _cut(text, limit)


def _cut(text: str, limit: int) -> str:
    """Last resort (every section already shortened): cut at a line end, close what is open,
    say so. A line is a table row or a paragraph, so no row or entity is split."""
    tail = "\n\n_… cut at the size limit; see verdict.json._\n"
    head = text[: limit - 400]
    head = head[: head.rfind("\n") + 1]
    open_details = head.count("<details>") - head.count("</details>")
    return head + "\n</details>\n" * max(open_details, 0) + tail
