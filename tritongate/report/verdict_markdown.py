"""The verdict as Markdown: the PR comment, verdict.md and the job summary, one renderer.

``render_verdict(doc)`` reads the validated verdict.json document (never a GateResult), so
the trusted comment job, which must not trust the GPU job's Markdown, draws exactly what
the GPU job's verdict.md shows. Layout, after the PR-bot comments reviewers read fastest:

1. one headline line (✅ pass, ⚠️ no regression found but some rows could not resolve their
   target, ❌ regression or another failure);
2. only what changed: regressed, improved, unconfirmed calls, rows not judged (rejected,
   not comparable, missing, new), IR changed with time unchanged; each row with its estimate,
   the estimate's interval, and both medians, labelled;
3. rows that could not resolve their target, with what stopped them;
4. "N unchanged" and the full table, collapsed;
5. where it ran (backend, GPU, timer, both builds), on one line; the IR line and pass blame
   (``blame_view``); notes, one paragraph each; a footer naming how to read it.

Every string from the document passes through ``report.untrusted`` (``markdown_cell``,
``code_block``, ``safe_url``). The text is assembled once: each table takes rows while the
comment's budget lasts (a fixed cap per section keeps a 10,000-row verdict short), and says
how many it left out.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from tritongate.report.blame_view import markdown_block
from tritongate.report.units import format_time
from tritongate.report.untrusted import code_block, markdown_cell, safe_url
from tritongate.report.verdict_view import (RowView, VerdictView, build_view, count_parts, geomean_text, headline_parts,
                                            interval_text, notes, pct, row_target, side_text, target_text,
                                            where_parts)
from tritongate.model.verdict import VerdictDoc

STICKY_MARKER = "<!-- tritongate-verdict -->"
COMMENT_LIMIT = 60_000  # GitHub refuses comment bodies over 65,536 characters
SECTION_ROWS = 20  # rows per changed section before "… N more"
FULL_TABLE_ROWS = 100  # rows of the collapsed full table
PER_OP_ROWS = 20  # ops of the collapsed per-op table (the most changed first)
INLINE_DIFFS = 12  # rows whose smallest IR diff is shown inline
READING_PAGE = "docs/reading-the-verdict.md"


def cell(value: Any) -> str:
    return markdown_cell(value)


def _row_cell(r: RowView) -> str:
    return " · ".join(cell(p) for p in r.parts)


def _time(us: float | None) -> str:
    return "–" if us is None else format_time(us)


def _ir_cell(r: RowView) -> str:
    ir = r.doc.ir
    if ir is None:
        return "–"
    kernels = f"{ir.kernels} kernel{'' if ir.kernels == 1 else 's'}"
    if not ir.changed:
        return f"unchanged ({kernels})"
    text = f"{ir.changed} of {kernels} changed"
    if ir.only_one_side:
        text += f", {ir.only_one_side} launched by one side only"
    return text + (f": <code>{cell(ir.diff)}</code>" if ir.diff else "")


@dataclass
class _Budget:
    left: int
    diffs: int = INLINE_DIFFS

    def take(self, text: str) -> bool:
        if len(text) + 1 > self.left:
            return False
        self.left -= len(text) + 1
        return True


@dataclass
class _Table:
    header: list[str]
    lines: list[str]
    cap: int
    noun: str = "row"
    total: int | None = None  # rows in all, where only the first ``cap`` were made into lines

    def render(self, budget: _Budget) -> list[str]:
        if not self.lines or not all(budget.take(h) for h in self.header):
            total = len(self.lines) if self.total is None else self.total
            return [f"_{total} {self.noun}s not shown (size limit); verdict.json has every {self.noun}._"] \
                if self.lines else []
        out = list(self.header)
        shown = 0
        for line in self.lines[: self.cap]:
            if not budget.take(line):
                break
            out.append(line)
            shown += 1
        left = (len(self.lines) if self.total is None else self.total) - shown
        if left:
            out += ["", f"_… {left} more {self.noun}{'' if left == 1 else 's'} not shown; "
                        f"verdict.json has every {self.noun}._"]
        return out


def _change_table(rows: list[RowView], with_ir: bool, budget: _Budget) -> _Table:
    head = "| row | change | interval | base median | candidate median | judged |" + (" IR |" if with_ir else "")
    rule = "|---|---|---|---|---|---|" + ("---|" if with_ir else "")
    lines = []
    for r in rows[:SECTION_ROWS]:
        d = r.doc
        line = (f"| {_row_cell(r)} | **{pct(d.effect)}** | {interval_text(r.interval)} | "
                f"{_time(d.base_median_us)} | {_time(d.cand_median_us)} | {r.judged} |"
                + (f" {_ir_cell(r)} |" if with_ir else ""))
        lines.append(line)
    return _Table([head, rule], lines, SECTION_ROWS, total=len(rows))


def _diff_block(r: RowView) -> list[str]:
    """The row's smallest IR diff, collapsed ([] when it has none)."""
    ir = r.doc.ir
    if ir is None or not ir.diff or not ir.head:
        return []
    body = ir.head + ("\n… (first lines only; the whole diff is in the artifact)" if ir.head_cut else "")
    return ["", f"<details><summary>IR diff of {_row_cell(r)}: smallest changed diff "
                f"(<code>{cell(ir.diff)}</code>)</summary>", "", code_block(body, "diff"), "", "</details>"]


def _inline_diffs(sections: list[tuple[str, int, list[str], list[RowView]]], budget: _Budget) -> None:
    """Each section's inline diffs, appended to its lines while the budget lasts: they come
    last, so a shorter comment loses them before any row."""
    for _, _, lines, rows in sections:
        for r in rows[:SECTION_ROWS]:
            block = _diff_block(r)
            text = "\n".join(block)
            if not block or budget.diffs <= 0 or len(text) > 4000 or not budget.take(text):
                continue
            budget.diffs -= 1
            lines += block


def _not_judged(rows: list[RowView]) -> _Table:
    lines = [f"| {_row_cell(r)} | {r.doc.verdict} | {cell('; '.join(r.doc.reasons) or '–')} |"
             for r in rows[:SECTION_ROWS]]
    return _Table(["| row | verdict | why |", "|---|---|---|"], lines, SECTION_ROWS, total=len(rows))


def _blind(view: VerdictView) -> _Table:
    lines = []
    rows = [*view.unconfirmed, *view.blind]
    for r in rows[:SECTION_ROWS]:
        d = r.doc
        resolved = "nothing" if d.detectable_effect is None else f"±{pct(d.detectable_effect, sign=False)}"
        what = ("no change found" if r not in view.unconfirmed else "call not confirmed"
                if r.unconfirmed_by() is not None else "call on too few pairs")
        lines.append(f"| {_row_cell(r)} | {what} | {resolved} | {target_text([t] if (t := row_target(d)) is not None else [])} | "
                     f"{cell(r.stopped_by())} |")
    return _Table(["| row | result | could resolve | target | stopped by |", "|---|---|---|---|---|"],
                  lines, SECTION_ROWS, total=len(rows))


def _full_table(view: VerdictView) -> _Table:
    lines = []
    for r in (RowView(d) for d in view.doc.rows[:FULL_TABLE_ROWS]):
        d = r.doc
        change = pct(d.effect) if d.timed and d.effect is not None else "–"
        resolved = ("–" if not d.timed else "nothing" if d.detectable_effect is None
                    else f"±{pct(d.detectable_effect, sign=False)}")
        lines.append(f"| {_row_cell(r)} | {d.verdict} | {change} | {resolved} | {_time(d.base_median_us)} | "
                     f"{_time(d.cand_median_us)} |")
    return _Table(["| row | verdict | change | could resolve | base median | candidate median |",
                   "|---|---|---|---|---|---|"], lines, FULL_TABLE_ROWS, total=len(view.doc.rows))


def _per_op(doc: VerdictDoc) -> _Table:
    ops = [p for p in (doc.model_extra or {}).get("per_op") or [] if isinstance(p, Mapping)]
    if len(ops) < 2:
        return _Table([], [], 0)

    def spread(p: Mapping[str, Any]) -> float:
        g = p.get("geomean")
        return abs(g - 1) if isinstance(g, (int, float)) else 0.0
    lines = []
    for p in sorted(ops, key=spread, reverse=True):
        try:
            lines.append(f"| {cell(p.get('op'))} | {int(p.get('rows', 0))} | {float(p['min']):.3f}× | "
                         f"{float(p['geomean']):.3f}× | {float(p['max']):.3f}× |")
        except (KeyError, TypeError, ValueError):
            continue
    return _Table(["| op | rows | min | geomean | max |", "|---|---|---|---|---|"], lines, PER_OP_ROWS, noun="op")


def _headline(view: VerdictView) -> str:
    emoji, pieces = headline_parts(view)
    text = "".join(" · ".join(cell(x) for x in p) if isinstance(p, tuple) else _spaced(p) for p in pieces)
    return f"## {emoji} {text}"


def _counts(view: VerdictView) -> str:
    gm = geomean_text(view.doc, bool(view.regressed or view.improved))
    return " · ".join(count_parts(view)) + (f" · {gm}" if gm else "")


def _where(view: VerdictView) -> str:
    d = view.doc
    base = " ".join(cell(p) for p in side_text(d.base))
    cand = " ".join(cell(p) for p in side_text(d.candidate))
    if d.base.mode == d.candidate.mode == "ahead-of-time":  # the pre-screen: nothing ran
        # (its device reads "no GPU: ahead-of-time compile for <target>", prescreen._as_built)
        target = cell(str(d.base.device or "?").rsplit(" ", 1)[-1])
        return f"Compiled for {target} ahead of time, no GPU, nothing timed · base: {base} · candidate: {cand}"
    ran = " · ".join(cell(p) for p in where_parts(d))
    return f"Ran on {ran or 'an unknown machine'} · base: {base} · candidate: {cand}"


CALIBRATE_CODE = "`tritongate calibrate`"  # the one code span of a calibration line: fixed text


def _spaced(text: str) -> str:
    """``cell(text)`` keeping one space at either end where ``text`` had one (``cell`` trims
    them; between two escaped pieces they matter)."""
    if not text.strip():
        return " " if text else ""
    return (" " if text[0].isspace() else "") + cell(text) + (" " if text[-1].isspace() else "")


def _calibration(line: str) -> str:
    return CALIBRATE_CODE.join(_spaced(part) for part in line.split(CALIBRATE_CODE))


def _ir_line(doc: VerdictDoc) -> str:
    """One line on the IR comparison: what changed, and where the diffs are."""
    ir = doc.ir
    if ir is None or not ir.folder:
        return ""
    total = sum(ir.variants.values())
    changed = total - ir.variants.get("identical", 0)
    parts = [f"{n} {k.replace('_', ' ')}" for k, n in ir.variants.items() if n and k != "identical"]
    return (f"TTGIR of {total} launched kernel variant{'' if total == 1 else 's'} compared: {changed} differ"
            + (f" ({cell(', '.join(parts))})" if parts else "")
            + f"; diffs in <code>{cell(ir.folder)}/</code> next to this verdict (index.tsv, summary.md)")


def _policy_line(doc: VerdictDoc) -> str:
    """The thresholds in force (a changed per-op minimum shows in the next comment); none where
    no row was timed (identical binaries, a pre-screen, nothing judged): no rule was applied."""
    p = doc.policy
    if p is None or not any(r.timed for r in doc.rows):
        return ""
    ops = ", ".join(f"{cell(op)} {target_text([v])}" for op, v in sorted(p.op_min_effect.items()))
    return (f"<sub>Rule: minimum effect {target_text([p.min_effect])}" + (f" ({ops})" if ops else "")
            + f"; a change must clear the row's noise floor (tail probability of {p.noise_z:g} normal SDs) "
            f"with at least {p.min_samples} samples a side.</sub>")


def _reading(docs_url: str | None) -> str:
    if docs_url:
        return f"<sub>How to read this: [{READING_PAGE}]({safe_url(docs_url)})</sub>"
    return f"<sub>How to read this: <code>{READING_PAGE}</code> in the tritongate repository</sub>"


def _estimate_line(rows: list[RowView]) -> str:
    """Says, next to the tables, what their change column is (not in small print)."""
    kinds = {bool(r.doc.paired) for r in rows if r.doc.timed}
    paired = ("candidate / base − 1 from the paired rounds (the 20 % trimmed mean of the per-pair log ratios), so it can differ "
              "from the ratio of the two medians beside it")
    unpaired = "candidate median / base median − 1"
    change = (f"paired rows: {paired}; unpaired rows: {unpaired}" if kinds == {True, False}
              else paired if True in kinds else unpaired)
    return f"_change: {change}; interval: the change ± the row's noise floor, on the log scale of the ratio (so not symmetric in %)._"


def render_verdict(doc: VerdictDoc | Mapping[str, Any], *, limit: int = COMMENT_LIMIT,
                   docs_url: str | None = None, warning: str | None = None,
                   template: Path | None = None) -> str:
    """The comment for a verdict.json document (a ``VerdictDoc`` or the parsed JSON, which is
    validated here), at most ``limit`` characters; ``warning`` (escaped) stands under the
    headline. The layout is the shipped template (``templates/verdict.md.j2``) unless
    ``template`` names another (rendered sandboxed, with the same names)."""
    if not isinstance(doc, VerdictDoc):
        from tritongate.errors import RunDirError
        from tritongate.validation import validate

        doc = validate(VerdictDoc, doc, source="verdict.json", error=RunDirError)
    view = build_view(doc)
    with_ir = view.show_ir
    ctx: dict[str, Any] = {
        "marker": STICKY_MARKER, "headline": _headline(view), "warning": cell(warning) if warning else "",
        "counts": _counts(view), "baseline": cell(doc.baseline.line) if doc.baseline and doc.baseline.line else "",
        "artifact_url": safe_url(doc.artifact_url) if doc.artifact_url else "",
        "where": _where(view), "ir_line": _ir_line(doc), "notes": [cell(n) for n in notes(doc)],
        "blame": markdown_block(doc.ir.blame if doc.ir is not None and doc.ir.folder else None),
        "calibration": _calibration(doc.calibration_line) if doc.calibration_line else "",
        "policy": _policy_line(doc), "reading": _reading(docs_url)}
    # what stands around the tables, as the shipped layout prints it: the tables get the rest
    fixed = [ctx["marker"], ctx["headline"], "", *([f"> [!WARNING]\n> {ctx['warning']}", ""] if warning else []),
             ctx["counts"], "", *([ctx["baseline"], ""] if ctx["baseline"] else []),
             *([_ARTIFACT.format(url=ctx["artifact_url"]), ""] if ctx["artifact_url"] else []),
             "", ctx["where"], "", *([ctx["ir_line"], ""] if ctx["ir_line"] else []), *ctx["blame"], "",
             *(line for n in ctx["notes"] for line in (f"**Note:** {n}", "")),
             *([f"<sub>{ctx['calibration']}</sub>", ""] if ctx["calibration"] else []),
             *([ctx["policy"], ""] if ctx["policy"] else []), ctx["reading"]]
    budget = _Budget(limit - len("\n".join(fixed)) - 1500)  # 1500: titles, "… N more" lines, <details> tags

    changed = [*view.regressed, *view.improved, *view.unconfirmed, *view.ir_only]
    sections: list[tuple[str, int, list[str], list[RowView]]] = []
    for title, rows, ir_rows in (
            ("🔴 Regressed", view.regressed, with_ir),
            ("🟢 Improved", view.improved, with_ir),
            ("🟡 Unconfirmed: a change seen and not confirmed", view.unconfirmed, with_ir),
            ("⚠️ Not judged", view.not_judged, None),
            ("🔎 IR changed, time unchanged", view.ir_only, True)):
        if rows:
            table = _not_judged(rows) if ir_rows is None else _change_table(rows, ir_rows, budget)
            sections.append((title, len(rows), table.render(budget), rows if ir_rows else []))
    estimate = _estimate_line(changed) if any(r.doc.timed for r in changed) else ""
    budget.left -= len(estimate) + 2
    blind = None
    if view.blind or view.unconfirmed:
        why = ("These rows ran under the Triton interpreter with the host timer, whose noise is far "
               "above a GPU's: a change smaller than the resolution shown could have gone unseen."
               if view.interpreter else "A change smaller than the resolution shown could have gone unseen.")
        budget.left -= len(why) + 2
        blind = {"title": f"⏳ Could not resolve {target_text(view.targets)}", "n": len(view.blind) + len(view.unconfirmed),
                 "lines": [why, "", *_blind(view).render(budget)]}
    per_op = _per_op(doc)
    details_rows = _full_table(view).render(budget)
    ops = per_op.render(budget) if per_op.lines else []
    _inline_diffs(sections, budget)
    ctx.update(
        sections=[{"title": title, "n": n, "lines": lines} for title, n, lines, _ in sections if lines],
        estimate=estimate, blind=blind, details_rows=details_rows, per_op=ops, doc=doc, view=view,
        details_summary=(f"{view.unchanged} unchanged" if view.unchanged else "no other rows")
        + (f" · all {len(doc.rows)} rows" if len(doc.rows) > 1 else " · the row in full"))
    text = _render(template, ctx)
    if len(text) > limit:  # only a tiny limit gets here: every table has already given up its rows
        text = text[: limit - 200].rsplit("\n", 1)[0]
        text += "\n\n</details>" * max(0, text.count("<details>") - text.count("</details>"))
        text += "\n\n_… cut at the size limit; see verdict.json._\n"
    return text


def _render(template: Path | None, ctx: dict[str, Any]) -> str:
    """The template filled in. A user's template that fails while rendering (a name it does not
    get, an attribute the sandbox refuses) loses nothing: the shipped one renders the verdict,
    with a warning naming the failure under the headline."""
    import jinja2

    try:
        return str(load_template(template).render(ctx))
    except jinja2.TemplateError as exc:
        if template is None:
            raise
        problem = f"the verdict template {template} failed ({type(exc).__name__}: {exc}); shown in the shipped layout"
        ctx = {**ctx, "warning": f"{ctx['warning']}; {cell(problem)}" if ctx["warning"] else cell(problem)}
        return str(load_template(None).render(ctx))


_ARTIFACT = "📦 [Run directories, verdict.json and TTGIR diffs]({url})"
TEMPLATE = Path(__file__).parent / "templates" / "verdict.md.j2"


def load_template(path: Path | None) -> Any:
    """The template ``render_verdict`` uses (``None``: the shipped one), read and compiled;
    an unreadable or malformed file is a ``UsageError`` naming it."""
    source = TEMPLATE if path is None else Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        from tritongate.errors import UsageError

        raise UsageError(f"the verdict template {source} cannot be read ({getattr(exc, 'strerror', None) or exc}); "
                         "pass a readable jinja2 file or leave --verdict-template out") from None
    return _compile(str(source), text, path is None)


@functools.cache
def _compile(source: str, text: str, shipped: bool) -> Any:
    """A template compiled once per text. The shipped one as is; a user's in a sandbox (a
    template can reach Python objects; the sandbox stops it from calling into them)."""
    import jinja2
    from jinja2.sandbox import SandboxedEnvironment

    options: dict[str, Any] = {"trim_blocks": True, "lstrip_blocks": True, "keep_trailing_newline": True,
                               "undefined": jinja2.StrictUndefined, "autoescape": False}
    env = jinja2.Environment(**options) if shipped else SandboxedEnvironment(**options)
    env.filters["cell"] = cell
    try:
        return env.from_string(text)
    except jinja2.TemplateSyntaxError as exc:
        from tritongate.errors import UsageError

        raise UsageError(f"the verdict template {source}: line {exc.lineno}: {exc.message}; fix it, or leave "
                         "--verdict-template out for the shipped one") from None
