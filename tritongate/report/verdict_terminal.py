"""The verdict on the terminal: the lines ``gate``, ``pair`` and ``merge`` print, saying what
the comment says (``verdict_view`` works it out once for both), as plain text; and ``show``'s
table of a verdict's rows.

Every string from the document passes through ``report.untrusted.neutralize`` (control and
bidi characters shown as escapes). The lines are returned, never printed: the CLI prints.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from tritongate.model.verdict import Verdict, VerdictDoc
from tritongate.report.blame_view import terminal_block
from tritongate.report.units import counted, format_time
from tritongate.report.untrusted import neutralize
from tritongate.report.verdict_view import (RowView, VerdictView, build_view, count_parts, geomean_text, headline_parts,
                                            interval_text, notes, pct, row_target, side_text, target_text,
                                            where_parts)

MAX_LINES_PER_GROUP = 20  # the rest are in verdict.md and verdict.json


def _row(r: RowView) -> str:
    return " ".join(neutralize(p) for p in r.parts)


def _time(us: float | None) -> str:
    return "–" if us is None else format_time(us)


def _change(r: RowView) -> str:
    d = r.doc
    return (f"{pct(d.effect)} ({r.estimate_kind}; interval {interval_text(r.interval)}; {r.judged}); "
            f"base median {_time(d.base_median_us)}, candidate median {_time(d.cand_median_us)}")


def _group(label: str, rows: list[RowView], line: Callable[[RowView], str]) -> list[str]:
    out = [f"  {label:<17} {_row(r)}  {line(r)}" for r in rows[:MAX_LINES_PER_GROUP]]
    if len(rows) > MAX_LINES_PER_GROUP:
        out.append(f"  … {len(rows) - MAX_LINES_PER_GROUP} more {label.lower()} rows in verdict.md")
    return out


def _headline(view: VerdictView) -> str:
    emoji, pieces = headline_parts(view)
    def edged(text: str) -> str:  # neutralize trims: keep the spaces between pieces
        return (" " if text[:1].isspace() else "") + neutralize(text) + (" " if text[-1:].isspace() else "")
    return f"{emoji} " + "".join(" ".join(neutralize(x) for x in p) if isinstance(p, tuple) else edged(p)
                                 for p in pieces)


def headline_text(doc: VerdictDoc) -> str:
    """The comment's headline as plain text (verdict.json's ``headline``)."""
    return _headline(build_view(doc))


def summary_lines(doc: VerdictDoc | Mapping[str, Any]) -> list[str]:
    """The verdict in a few lines: headline, counts, what changed, what could not be resolved,
    where it ran, notes."""
    if not isinstance(doc, VerdictDoc):
        from tritongate.errors import RunDirError
        from tritongate.validation import validate

        doc = validate(VerdictDoc, doc, source="verdict.json", error=RunDirError)
    view = build_view(doc)
    lines = [_headline(view)]
    gm = geomean_text(doc, bool(view.regressed or view.improved))
    lines.append(" · ".join(count_parts(view)) + (f" · {gm}" if gm else ""))
    lines += _group(Verdict.REGRESSED, view.regressed, _change)
    lines += _group(Verdict.IMPROVED, view.improved, _change)
    lines += _group(Verdict.UNCONFIRMED, view.unconfirmed,
                    lambda r: _change(r) + (f"; why: {neutralize(why)}" if (why := r.unconfirmed_by()) else ""))
    lines += _group(
        "NOT JUDGED", view.not_judged,
        lambda r: f"{r.doc.verdict}: {neutralize('; '.join(r.doc.reasons) or '–')}")
    lines += _group("IR CHANGED", view.ir_only, lambda r: f"time unchanged ({_change(r)})")
    lines += _group(
        "NOT RESOLVED", view.blind,
        lambda r: (f"could resolve {'nothing' if r.doc.detectable_effect is None else '±' + pct(r.doc.detectable_effect, sign=False)}"
                   f", target {target_text([t] if (t := row_target(r.doc)) is not None else [])}; stopped by {neutralize(r.stopped_by())}"))
    lines += terminal_block(doc.ir.blame if doc.ir is not None and doc.ir.folder else None)
    lines.append("ran on " + " · ".join(neutralize(p) for p in where_parts(doc))
                 + f"; base: {' '.join(neutralize(p) for p in side_text(doc.base))}"
                 + f"; candidate: {' '.join(neutralize(p) for p in side_text(doc.candidate))}")
    lines += [f"note: {neutralize(n)}" for n in notes(doc)]
    return lines


def verdict_table(rows: Any) -> str:
    """One line per row: key, verdict, the paired change, the least change the row could call
    (its detectable effect) and why, for a terminal."""
    lines = [f"{'op':<18} {'case':<18} {'dtype':<9} {'verdict':<16} {'change':>8} {'resolves':>9}  why"]
    for r in rows:  # each name made safe first: padding a name must not be undone
        op, case, dtype, why = (neutralize(v) for v in (r.op, r.case, r.dtype, "; ".join(r.reasons)))
        change = f"{r.effect:+.2%}" if r.effect is not None else ""
        res = f"±{r.detectable_effect:.2%}" if r.detectable_effect is not None else ""
        lines.append(f"{op:<18} {case:<18} {dtype:<9} {r.verdict:<16} {change:>8} {res:>9}  {why}")
    lines.append(counted(len(rows), "row"))
    return "\n".join(lines) + "\n"
