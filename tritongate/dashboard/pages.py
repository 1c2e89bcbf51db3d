"""What each page shows, as the JSON documents the pages embed: the index's rows and change
points, and one document per (group, op) with its rows' points, gaps and change points.

Every value is ``history``'s: medians, nights, commits, gaps, change points and the series
drift come from its ``HistoryReport``; only presentation is added here (names made one line
by ``report.untrusted.neutralize``, links, the drift over the window). Times are UNIX seconds;
a row's points are positions in its group's ``entries`` (its first point at ``first``), so
each night's commit and entry are written once per page, not once per row.

The drift over the window is the change of level since the window's start: the last change
point's median after over the median before the window's first change point, minus one (the
segments between change points are contiguous, so this is the last level over the level in
force when the window started). Without a change point (in the window) there is no drift to
give: the history confirmed no shift, which is not a measured 0 (a step of the last nights has
too few nights after it to be confirmed yet); the row's ``dn`` (``dwn``) says which instead.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any, Sequence
from urllib.parse import quote

from tritongate.baselines.repo import GITHUB, Repo
from tritongate.dashboard.reading import Group
from tritongate.history.changepoints import ChangePoint, Detection, SeriesAnalysis
from tritongate.history.report import HistoryReport, confirmable_text
from tritongate.report.untrusted import neutralize

_HEX = re.compile(r"^[0-9a-fA-F]{7,64}$")
OPS_DIR = "ops"


def _t(when: dt.datetime) -> int:
    return int(when.timestamp())


def compare_url(repo: Repo | None, before: str | None, after: str | None) -> str | None:
    """GitHub's compare view of two commits of ``repo`` (None: not on GitHub, a commit that is
    not hex, or one commit)."""
    if (repo is None or repo.host != GITHUB or not before or not after or before == after
            or not (_HEX.match(before) and _HEX.match(after))):
        return None
    return f"https://github.com/{quote(repo.path)}/compare/{before}...{after}"


def window_drift(cps: Sequence[ChangePoint], start: dt.datetime) -> float | None:
    """The change of level since ``start`` (see the module docstring); None without a change
    point after ``start``: no shift confirmed, not a measured 0."""
    inside = [c for c in cps if c.after.recorded > start]
    return inside[-1].median_after_us / inside[0].median_before_us - 1.0 if inside else None


def no_drift(a: SeriesAnalysis, rule: Detection, *, window: bool = False) -> str:
    """What a row without a (window's) change point shows in place of a drift, and why."""
    if a.note:  # too short to look at
        return f"too few nights: {a.note}"
    sides = confirmable_text(rule)
    where = "in the window" if window and a.change_points else "so far"
    return (f"no shift confirmed {where}: a shift of {rule.min_effect:.1%} or more is confirmed only with "
            f"enough nights on both sides of it (at the least {sides}), so a step of the last nights is not "
            "one yet")


def drifts(a: SeriesAnalysis, rule: Detection, window_start: dt.datetime) -> dict[str, Any]:
    """A row's drift over the window (``dw``) and over its history (``dt``), each None with the
    reason (``dwn``, ``dn``) where no change point gives one."""
    dw = window_drift(a.change_points, window_start)
    dt_ = a.drift if a.change_points else None
    return {"dw": dw, "dt": dt_, "dwn": None if dw is not None else no_drift(a, rule, window=True),
            "dn": None if dt_ is not None else no_drift(a, rule)}


def group_label(group: Group) -> dict[str, Any]:
    k = group.key
    return {"runner_class": k.runner_class, "suite": neutralize(k.suite), "gpu": k.gpu_slug,
            "repo": k.repo_display}


@dataclass(frozen=True)
class OpPage:
    """One (group, op) page: its file name under ``ops/`` and its rows' analyses."""

    group: int  # position in the site's groups
    op: str
    file: str
    analyses: tuple[SeriesAnalysis, ...]


def anchor(i: int) -> str:
    return f"row{i}"


def _cp(report: HistoryReport, c: ChangePoint, repo: Repo | None, entry_pos: dict[str, int]) -> dict[str, Any]:
    return {"i": entry_pos[c.after.entry], "ib": entry_pos[c.before.entry], "at": _t(c.after.recorded),
            "bt": _t(c.before.recorded), "cb": c.before.commit, "ca": c.after.commit,
            "url": compare_url(repo, c.before.commit, c.after.commit), "rel": c.rel_change,
            "mb": c.median_before_us, "ma": c.median_after_us, "p": c.p_value, "new": report.is_new(c),
            "cfg": c.config_changed}


def index_rows(g: int, report: HistoryReport, page: OpPage, window_start: dt.datetime,
               rows_out: list[dict[str, Any]], cps_out: list[dict[str, Any]], repo: Repo | None,
               entry_pos: dict[str, int]) -> None:
    """The index's rows and change points of one op page's series."""
    for i, a in enumerate(page.analyses):
        s = a.series
        names = {"g": g, "op": neutralize(s.op), "case": neutralize(s.case), "dtype": neutralize(s.dtype)}
        href = f"{OPS_DIR}/{page.file}#{anchor(i)}"
        last = next((p for p in reversed(s.points) if not p.is_gap), None)
        tail = s.points[-1]
        rows_out.append({**names, "last": last.median_us if last else None, "lt": _t(last.recorded) if last else None,
                         "gone": entry_pos[tail.entry] < len(entry_pos) - 1,  # not in the group's latest entry
                         "gap": tail.gap if tail.is_gap else None, **drifts(a, report.rule, window_start),
                         "nc": len(a.change_points),
                         "nw": sum(c.after.recorded > window_start for c in a.change_points), "href": href})
        cps_out += [{**_cp(report, c, repo, entry_pos), **names, "href": href} for c in a.change_points]


def op_document(site: dict[str, Any], group: Group, report: HistoryReport, page: OpPage, store_href: str,
                window_start: dt.datetime, entry_pos: dict[str, int]) -> dict[str, Any]:
    """The document an op page embeds."""
    h = report.history
    prefix = "/".join(h.entries[0].record_path.split("/")[:3])
    reasons: dict[str, int] = {}
    rows = []
    for i, a in enumerate(page.analyses):
        pts = a.series.points
        ns = [p.n for p in pts]
        iqr = [group.iqr.get(p.entry, {}).get(a.series.key) for p in pts]
        rows.append({
            "case": neutralize(a.series.case), "dtype": neutralize(a.series.dtype), "anchor": anchor(i),
            "first": entry_pos[pts[0].entry],
            "v": [p.median_us for p in pts],
            "n": ns[0] if len(set(ns)) == 1 else ns,
            "q": [None if q is None else float(f"{q:.4g}") for q in iqr],
            "gaps": [[j, reasons.setdefault(neutralize(p.gap), len(reasons))] for j, p in enumerate(pts) if p.gap],
            "cps": [_cp(report, c, group.key.repo, entry_pos) for c in a.change_points],
            **{k: v for k, v in drifts(a, report.rule, window_start).items() if k != "dt"},
            "drift": a.drift if a.change_points else None, "noise": a.noise, "note": a.note})
    return {
        **site, "group": group_label(group), "op": neutralize(page.op), "index": "../index.html",
        "window_start": _t(window_start), "store": store_href, "prefix": quote(prefix),
        "entries": {"t": [_t(e.recorded) for e in h.entries], "c": [e.commit for e in h.entries],
                    "e": [quote(e.record_path.rsplit("/", 1)[-1]) for e in h.entries]},
        "missing": [[_t(m.after), _t(m.before), m.missing, m.note] for m in h.missing],
        "damaged": [[_t(d.recorded), quote(d.path.rsplit("/", 1)[-1]), neutralize(d.reason)] for d in group.damaged],
        "reasons": list(reasons), "rows": rows}
