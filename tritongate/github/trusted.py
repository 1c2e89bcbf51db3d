"""The sticky comment rendered by the trusted comment job itself, from ``verdict.json``.

The verdict folder comes from a job that ran the PR's code, so its ``verdict.md`` may say
anything (a fake pass line, mentions, images, links). It is never posted. The comment is
built here from ``verdict.json`` instead, after the package's own model has validated it
(``VerdictDoc``, strict types), and every string of it passes through the one escaping
choke point, ``tritongate.report.untrusted.markdown_cell``. The pass/fail line is taken
from ``passed`` and from the rows: a document that claims ``passed: true`` while listing
REGRESSED or REJECTED rows, or rows that fail the policy, is shown failing, with a line
saying so.

``render_comment_body(doc)`` is the single entry point: a consistent document is shown by
the shared verdict renderer, a contradictory one by a plain table with the contradiction named.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Optional

from tritongate.errors import RunDirError
from tritongate.report.verdict_markdown import STICKY_MARKER
from tritongate.report.untrusted import markdown_cell
from tritongate.validation import validate
from tritongate.validation.verdictfile import VerdictDoc, VerdictRowDoc

MAX_BODY_CHARS = 60_000  # headroom under GitHub's 65,536 for the state line and the footer
FAILING = ("REGRESSED", "REJECTED")
QUIET = ("UNCHANGED", "IDENTICAL_BINARY")
_ORDER = {name: i for i, name in enumerate(
    ("REGRESSED", "REJECTED", "NOT_COMPARABLE", "MISSING", "IMPROVED", "NEW", "UNCHANGED", "IDENTICAL_BINARY"))}
_GLYPH = {"REGRESSED": "❌", "REJECTED": "⛔", "NOT_COMPARABLE": "⚠️", "MISSING": "⚠️", "IMPROVED": "✅",
          "NEW": "🆕", "UNCHANGED": "", "IDENTICAL_BINARY": ""}


class UntrustedVerdictError(ValueError):
    """verdict.json is not a verdict this tritongate reads. One line."""


@dataclass(frozen=True)
class Judgement:
    """What the comment says, computed here from the rows, never taken from the artifact's text."""

    passed: bool
    counts: dict[str, int]
    contradiction: Optional[str]

    @property
    def regressed(self) -> int:
        return self.counts.get("REGRESSED", 0)

    @property
    def rejected(self) -> int:
        return self.counts.get("REJECTED", 0)


def parse_verdict_doc(data: bytes, source: str) -> VerdictDoc:
    """``verdict.json`` bytes as a validated ``VerdictDoc`` of a schema version this package reads."""
    from tritongate.gate.verdict import VERDICT_SCHEMA_VERSION
    from tritongate.gate.verdict_file import MIN_READABLE_VERDICT_VERSION

    try:
        raw = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise UntrustedVerdictError(f"{source} is not UTF-8") from None
    except (ValueError, RecursionError) as exc:
        raise UntrustedVerdictError(f"{source} is not valid JSON ({str(exc)[:120]})") from None
    if not isinstance(raw, dict):
        raise UntrustedVerdictError(f"{source} is not a JSON object")
    version = raw.get("schema_version")
    if type(version) is not int or not MIN_READABLE_VERDICT_VERSION <= version <= VERDICT_SCHEMA_VERSION:
        raise UntrustedVerdictError(f"{source}: schema_version {json.dumps(version)[:20]} is not one this tritongate "
                                    f"reads ({MIN_READABLE_VERDICT_VERSION}-{VERDICT_SCHEMA_VERSION})")
    try:
        return validate(VerdictDoc, raw, source=source, error=RunDirError)
    except RunDirError as exc:
        raise UntrustedVerdictError(str(exc)) from None


def judge(doc: VerdictDoc) -> Judgement:
    counts = Counter(row.verdict for row in doc.rows)
    policy = sum(1 for row in doc.rows if row.fails_policy)
    bad = sum(counts[name] for name in FAILING)
    passed = doc.passed and bad == 0 and policy == 0 and doc.exit_code == 0
    contradiction = None
    if doc.passed and not passed:
        contradiction = (f"verdict.json says passed, but lists {counts['REGRESSED']} REGRESSED, "
                         f"{counts['REJECTED']} REJECTED and {policy} policy-failing rows "
                         f"(exit code {doc.exit_code}): shown as failing")
    elif any(doc.counts.get(name, 0) != counts[name] for name in set(doc.counts) | set(counts)):
        contradiction = "verdict.json's counts do not match its rows: the counts here are the rows'"
    return Judgement(passed=passed, counts=dict(counts), contradiction=contradiction)


def _us(value: Optional[float]) -> str:
    return "–" if value is None else f"{value:,.2f} µs"


def _change(row: VerdictRowDoc) -> str:
    if row.base_median_us and row.cand_median_us is not None:
        return f"{(row.cand_median_us / row.base_median_us - 1) * 100:+.1f}%"
    return "–"


def _why(row: VerdictRowDoc) -> str:
    return markdown_cell(row.why if row.why is not None else "; ".join(row.reasons), 200)


def _table(rows: Iterable[VerdictRowDoc]) -> list[str]:
    lines = ["| | op | case | dtype | verdict | base | PR | Δ | why |", "|---|---|---|---|---|--:|--:|--:|---|"]
    for row in rows:
        lines.append(f"| {_GLYPH[row.verdict]} | {markdown_cell(row.op, 120)} | {markdown_cell(row.case, 120)} | "
                     f"{markdown_cell(row.dtype, 40)} | {markdown_cell(row.verdict)} | {_us(row.base_median_us)} | "
                     f"{_us(row.cand_median_us)} | {_change(row)} | {_why(row)} |")
    return lines


def _headline(j: Judgement, total: int, state: str = "") -> str:
    shown = ", ".join(f"{j.counts[name]} {name.lower().replace('_', ' ')}"
                      for name in sorted(j.counts, key=_ORDER.__getitem__) if j.counts[name])
    mark = "❌ failed" if not j.passed else "⚠️ no regression found, some rows unresolved" if state == "blind" \
        else "✅ passed"
    return f"### tritongate: {mark} ({total} rows: {shown or 'none'})"


def _fit(head: list[str], tables: list[tuple[str, list[VerdictRowDoc], bool]], tail: list[str]) -> list[str]:
    """Rows in order until the body would pass MAX_BODY_CHARS; then one line saying how many were left out."""
    out, size = list(head), sum(len(line) + 1 for line in head + tail)
    left = 0
    for title, rows, folded in tables:
        if not rows:
            continue
        block = [f"<details><summary>{title}</summary>", ""] if folded else [f"**{title}**", ""]
        body = _table([])
        size += sum(len(line) + 1 for line in block + body) + 40
        for line, row in zip(_table(rows)[2:], rows):
            if left or size + len(line) + 1 > MAX_BODY_CHARS:
                left += 1
                continue
            body.append(line)
            size += len(line) + 1
        out += block + body + (["", "</details>"] if folded else []) + [""]
    if left:
        out.append(f"… {left} more rows left out to fit GitHub's comment limit; every row is in the verdict artifact.")
        out.append("")
    return out + tail


def _state_contradiction(doc: VerdictDoc, j: Judgement) -> Optional[str]:
    """Why the document's own three-state headline cannot be shown: the state it claims is not
    the one its rows give (a fake ✅ over blind or failing rows)."""
    from tritongate.report.verdict_view import fallback_state

    rows_state, _blind = fallback_state(j.passed, doc.rows)
    claimed = doc.state or rows_state
    if claimed != rows_state:
        return f"verdict.json says its state is {claimed!r}, but its rows give {rows_state!r}: shown from the rows"
    return None


def render_comment_body(doc: VerdictDoc) -> str:
    """The sticky comment's Markdown for a validated verdict document (without the state line).

    A document whose pass/fail, counts and state agree with its rows is shown by the shared
    renderer (``report.verdict_markdown.render_verdict``, which escapes every string), the same
    text as the job's verdict.md would be; any other is shown by the plain table below, with a
    warning naming the contradiction."""
    j = judge(doc)
    if j.contradiction is None:
        state_problem = _state_contradiction(doc, j)
        if state_problem is None:
            from tritongate.report.verdict_markdown import render_verdict

            return render_verdict(doc, limit=MAX_BODY_CHARS)
        j = Judgement(passed=j.passed, counts=j.counts, contradiction=state_problem)
    rows = sorted(doc.rows, key=lambda r: _ORDER[r.verdict])
    from tritongate.report.verdict_view import fallback_state

    head = [STICKY_MARKER, _headline(j, len(doc.rows), fallback_state(j.passed, doc.rows)[0]), ""]
    if j.contradiction:
        head += [f"> [!WARNING]\n> {markdown_cell(j.contradiction)}", ""]
    if not j.contradiction:  # a forged summary line is not repeated under the warning
        head += [f"Gate summary: {markdown_cell(doc.headline)}", ""]
    head += [f"- {markdown_cell(failure)}" for failure in doc.failures[:20]]
    if doc.failures:
        head.append("")
    if doc.geomean_speedup is not None:
        head += [f"Geomean speedup (base time / PR time): {doc.geomean_speedup:.4f}", ""]
    loud = [r for r in rows if r.verdict not in QUIET or r.fails_policy]
    quiet = [r for r in rows if r.verdict in QUIET and not r.fails_policy]
    tables = [("Rows that need a look", loud, False),
              (f"{len(quiet)} rows unchanged or with identical kernels", quiet, True)]
    tail = [f"<sub>Rendered by the trusted comment job from verdict.json (tritongate "
            f"{markdown_cell(doc.tool_version, 40)}); the job's own verdict.md is not posted.</sub>"]
    return "\n".join(_fit(head, tables, tail)) + "\n"


