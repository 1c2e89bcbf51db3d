"""``history.json`` (every series with its values, every change point, notes; versioned) and
``history.md`` (change points newest first, the new ones flagged, counts and notes).

Every string that comes from the store (op, case and dtype names, commits, paths in notes)
goes through ``report.untrusted`` before it reaches Markdown: a hostile op name can neither
break a table nor make a link or a mention.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import re
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping

from tritongate.atomicio import write_text_atomic
from tritongate.history.changepoints import ChangePoint, Detection, SeriesAnalysis, analyse_many
from tritongate.history.jsonout import write_json_chunks_atomic
from tritongate.history.points import Key, Point
from tritongate.history.series import History
from tritongate.report.units import format_time
from tritongate.report.untrusted import markdown_cell

SCHEMA = 2  # 2: points carry `config`, change points `config_changed`
HISTORY_JSON = "history.json"
HISTORY_MD = "history.md"
MAX_NOTES = 20  # notes listed in history.md; history.json keeps all
_HEX = re.compile(r"^[0-9a-fA-F]{7,64}$")


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


@dataclass(frozen=True)
class HistoryReport:
    """A history with its analysed series; ``new_last`` entries count as new."""

    history: History
    analyses: tuple[SeriesAnalysis, ...]
    rule: Detection
    new_last: int = 1
    generated: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.timezone.utc))
    # (series key, index of the first point after) of the change points found with the last
    # ``new_last`` entries left out: what the history said before those nights
    earlier: frozenset[tuple[Key, int]] = frozenset()

    def __post_init__(self) -> None:
        object.__setattr__(self, "analyses", tuple(self.analyses))
        if isinstance(self.new_last, bool) or not isinstance(self.new_last, int) or self.new_last < 1:
            raise ValueError(f"new_last must be an integer >= 1, got {self.new_last!r}")

    @property
    def change_points(self) -> list[ChangePoint]:
        """Newest first (by the first point after), the largest change first among equals."""
        cps = [c for a in self.analyses for c in a.change_points]
        return sorted(cps, key=lambda c: (-c.after.recorded.timestamp(), -abs(c.rel_change), c.key))

    def is_new(self, cp: ChangePoint) -> bool:
        """Not found (within one point) when the last ``new_last`` entries are left out: first
        seen in them. A change needs points on both sides, so it is seen some nights after it
        happened; "new" says when the history first showed it."""
        return not any((cp.key, cp.index + d) in self.earlier for d in (-1, 0, 1))

    @property
    def new_change_points(self) -> list[ChangePoint]:
        return [c for c in self.change_points if self.is_new(c)]

    @cached_property
    def _drifts(self) -> dict[Key, float]:
        return {a.series.key: a.drift for a in self.analyses}

    def drift_of(self, key: Key) -> float:
        return self._drifts[key]

    def by_op(self) -> dict[str, list[SeriesAnalysis]]:
        out: dict[str, list[SeriesAnalysis]] = {}
        for a in self.analyses:
            out.setdefault(a.series.op, []).append(a)
        return out

    @property
    def notes(self) -> list[str]:
        """The history's notes (skipped entries, missing nightlies) and one line for the series
        too short to look at."""
        notes = list(self.history.notes)
        short = [a for a in self.analyses if a.note]
        if short:
            first = short[0].series
            notes.append(f"{_plural(len(short), 'series has', 'series have')} fewer than "
                         f"{self.rule.min_length} valued points, so no change was looked for "
                         f"(e.g. {first.op} {first.case} {first.dtype}: {short[0].note})")
        return notes

    def headline(self) -> str:
        h = self.history
        cps = self.change_points
        return (f"history {h.runner_class}/{h.suite}/{h.gpu_slug}: {_plural(len(self.analyses), 'series', 'series')} "
                f"over {_plural(len(h.entries), 'entry', 'entries')}, "
                f"{_plural(sum(m.missing for m in h.missing), 'missing nightly', 'missing nightlies')}; "
                f"{_plural(len(cps), 'change point', 'change points')} ({len(self.new_change_points)} new)")


def build_report(history: History, rule: Detection = Detection(), *, new_last: int = 1,
                 now: dt.datetime | None = None) -> HistoryReport:
    """Analyse every series of ``history``; only those with a change point now are analysed again
    without the last ``new_last`` entries (only their change points can be new)."""
    analyses = tuple(analyse_many(history.series, rule))
    cut = {e.record_path for e in history.entries[-new_last:]}
    shorter = [replace(a.series, points=before) for a in analyses if a.change_points
               and (before := tuple(p for p in a.series.points if p.entry not in cut))]
    earlier = frozenset((b.series.key, c.index) for b in analyse_many(shorter, rule) for c in b.change_points)
    return HistoryReport(history=history, analyses=analyses, rule=rule, new_last=new_last, earlier=earlier,
                         **({"generated": now} if now else {}))


# -- history.json --------------------------------------------------------------------------

def to_json(report: HistoryReport, plots: Mapping[str, str] | None = None, *, stream: bool = False) -> dict[str, Any]:
    """``history.json``'s document; with ``stream`` its series are a generator (see ``jsonout``)."""
    h = report.history
    series = (a.to_dict() for a in report.analyses)
    cps = report.change_points
    return {
        "schema": SCHEMA,
        "generated_utc": report.generated.isoformat(timespec="seconds"),
        "store": str(h.store), "runner_class": h.runner_class, "suite": h.suite, "gpu_slug": h.gpu_slug,
        "rule": {**report.rule.to_dict(), "new_last": report.new_last},
        "counts": {"series": len(report.analyses), "entries": len(h.entries),
                   "missing_nightlies": sum(m.missing for m in h.missing), "change_points": len(cps),
                   "new_change_points": len(report.new_change_points)},
        "entries": [e.to_dict() for e in h.entries],
        "missing_nightlies": [m.to_dict() for m in h.missing],
        "change_points": [{**c.to_dict(), "new": report.is_new(c), "drift": report.drift_of(c.key)} for c in cps],
        "series": series if stream else list(series),
        "plots": dict(plots or {}),
        "notes": report.notes,
    }


# -- history.md ----------------------------------------------------------------------------

def _commit(point: Point) -> tuple[str, bool]:
    """A commit as shown: 7 hex digits (safe in a code span), else escaped text."""
    c = point.commit
    if c and _HEX.match(c):
        return c[:7].lower(), True
    return (markdown_cell(c, max_chars=13) if c else "?"), False


def _between(cp: ChangePoint) -> str:
    (a, a_code), (b, b_code) = _commit(cp.before), _commit(cp.after)
    commits = f"`{a}…{b}`" if a_code and b_code else f"{a}…{b}"
    return f"{commits} ({cp.before.recorded:%Y-%m-%d} → {cp.after.recorded:%Y-%m-%d})"


def confirmable_sides(rule: Detection, most: int = 3) -> list[tuple[int, int]]:
    """The fewest nights on the two sides of a shift that the rule's test can confirm, smallest
    side first (``most`` of them): a two-sided Mann–Whitney U of sides a and b gives at best
    p = 2 / C(a + b, a), so a step three nights old needs nine before it at p < 0.01."""
    out: list[tuple[int, int]] = []
    small = rule.min_points
    while len(out) < most:
        big = small
        while 2 / math.comb(small + big, small) >= rule.p_value and big < 10_000:
            big += 1
        out.append((big, small))
        small += 1
        if big <= small:  # the sides have met: a larger small side only repeats them
            break
    return out


@functools.lru_cache(maxsize=8)
def confirmable_text(rule: Detection) -> str:
    """``confirmable_sides`` as words ("9 and 3, 6 and 4 or 5 and 5"), for history.md and the
    nightly page (once per rule, not once per row)."""
    pairs = [f"{a} and {b}" for a, b in confirmable_sides(rule)]
    return ", ".join(pairs[:-1]) + (" or " if len(pairs) > 1 else "") + pairs[-1]


def _p(p: float) -> str:
    return f"{p:.1e}" if p < 0.001 else f"{p:.2g}"  # 0.0095, not 0.010 (read as failing p < 0.01)


def _table(report: HistoryReport, cps: list[ChangePoint], *, flag: bool) -> list[str]:
    head = (["new"] if flag else []) + ["op", "case", "dtype", "change", "before → after", "series drift",
                                        "between commits", "p"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in cps:
        cells = ([("**new**" if report.is_new(c) else "")] if flag else []) + [
            markdown_cell(c.op), markdown_cell(c.case), markdown_cell(c.dtype),
            f"{c.rel_change:+.1%}" + (" (other configs chosen)" if c.config_changed else ""),
            f"{format_time(c.median_before_us)} → {format_time(c.median_after_us)}",
            f"{report.drift_of(c.key):+.1%}", _between(c), _p(c.p_value)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def new_change_points_markdown(report: HistoryReport) -> str:
    """The "new change points" section alone (for a nightly job's step summary)."""
    window = "the last entry" if report.new_last == 1 else f"the last {report.new_last} entries"
    h = report.history
    where = f"{markdown_cell(h.suite)} on {markdown_cell(h.runner_class)} ({markdown_cell(h.gpu_slug)})"
    lines = [f"## New change points: {where}", ""]
    new = report.new_change_points
    if new:
        lines += [f"{_plural(len(new), 'change point', 'change points')} first seen in {window} (+ is slower):", "",
                  *_table(report, new, flag=False)]
    else:
        looked = sum(1 for a in report.analyses if not a.note)
        short = len(report.analyses) - looked
        lines.append(f"No new change points in {window}" + (
            f" ({_plural(looked, 'series', 'series')} long enough to look at; {short} with fewer than "
            f"{report.rule.min_length} valued points were not looked at)." if short else "."))
    return "\n".join(lines) + "\n"


def render_markdown(report: HistoryReport, plots: Mapping[str, str] | None = None) -> str:
    h, rule = report.history, report.rule
    cps = report.change_points
    first, last = h.entries[0].recorded, h.entries[-1].recorded
    lines = [f"# Performance history: {markdown_cell(h.suite)} on {markdown_cell(h.runner_class)} "
             f"({markdown_cell(h.gpu_slug)})", "",
             f"{_plural(len(report.analyses), 'series', 'series')}, {_plural(len(h.entries), 'entry', 'entries')} "
             f"({first:%Y-%m-%d} to {last:%Y-%m-%d}), "
             f"{_plural(sum(m.missing for m in h.missing), 'missing nightly', 'missing nightlies')}; "
             f"{_plural(len(cps), 'change point', 'change points')}, {len(report.new_change_points)} new.", "",
             f"A change point is a shift of a row's nightly median (PELT on log medians scaled by their noise, "
             f"penalty {rule.beta:g}·log n) confirmed by both neighbouring segments: medians at least "
             f"{rule.min_effect:.1%} apart and a Mann–Whitney U test with p < {rule.p_value:g}, at least "
             f"{rule.min_points} points a side. Series drift: the last segment's median over the first's.", "",
             new_change_points_markdown(report).rstrip("\n"), "", "## All change points (newest first)", ""]
    if cps:
        lines += _table(report, cps, flag=True)
    elif not any(a.note is None for a in report.analyses):
        lines.append(f"No change points looked for: no series has the {rule.min_length} valued points it takes.")
    else:
        sides = confirmable_text(rule)
        lines.append(f"No change points: no shift of {rule.min_effect:.1%} or more was confirmed at p < "
                     f"{rule.p_value:g}, which takes enough nights on both sides of it (at the least {sides}).")
    notes = report.notes
    if notes:
        lines += ["", "## Notes", "", *(f"- {markdown_cell(n, max_chars=1000)}" for n in notes[:MAX_NOTES])]
        if len(notes) > MAX_NOTES:
            lines.append(f"- … and {len(notes) - MAX_NOTES} more (see {HISTORY_JSON})")
    if plots:
        lines += ["", "## Plots", "", *(f"- [{markdown_cell(op)}]({path})" for op, path in plots.items())]
    return "\n".join(lines) + "\n"


def write_report(report: HistoryReport, out: Path, plots: Mapping[str, str] | None = None) -> tuple[Path, Path]:
    """Write ``history.json`` and ``history.md`` into ``out`` (created), each atomically.
    ``plots`` maps an op to its PNG's path relative to ``out`` (a safe file name)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out / HISTORY_JSON, out / HISTORY_MD
    # one line: a year of a deep scan is ~100 MB, which an indented dump takes seconds to
    # write; a series at a time: as one string (and its bytes) it held several times that
    write_json_chunks_atomic(json_path, to_json(report, plots, stream=True))
    write_text_atomic(md_path, render_markdown(report, plots))
    return json_path, md_path
