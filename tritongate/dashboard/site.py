"""``build_site``: the store's histories as a static site, written into a temp folder beside
``out`` and renamed into place.

```
OUT/index.html                 every row (latest value, drift, change points) and every change
                               point, newest first, filterable; notes on damaged and missing nights
OUT/ops/<group>__<op>.html     one chart per case and dtype of the op in that group
OUT/static/                    uPlot (vendored, MIT), the pages' JS and CSS
OUT/.tritongate-dashboard      marks the folder as a site this function may replace
```

Pages are rendered by jinja2 with autoescape; each page's data is a JSON document in a
``<script type="application/json">`` block (jinja's ``tojson``: ``<``, ``>``, ``&`` and ``'``
escaped, so no string from the store can close the block), read by the page's JS, which puts
every string into the page with ``textContent`` only. No request is made at view time: the
pages work from ``file://``.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from tritongate.baselines.store import DIR_MODE
from tritongate.dashboard.pages import OPS_DIR, OpPage, group_label, index_rows, op_document
from tritongate.dashboard.reading import DashboardError, Group, find_entries, read_groups
from tritongate.history.changepoints import Detection
from tritongate.history.plot import file_name
from tritongate.history.report import build_report
from tritongate.report.untrusted import neutralize

MARKER = ".tritongate-dashboard"
STATIC = ("uPlot.iife.min.js", "uPlot.min.css", "uPlot.LICENSE", "common.js", "index.js", "op.js", "dashboard.css")
HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class SiteSummary:
    """What ``build_site`` wrote."""

    out: Path
    groups: int
    pages: int  # op pages
    rows: int
    entries: int  # entries read into a history
    damaged: int  # entries skipped: a group's (shown as gaps), and those of the filters' runner class,
    # suite and GPU whose manifest cannot be read or sits elsewhere (named in the notes)
    change_points: int
    files: int
    bytes: int
    notes: tuple[str, ...]

    def headline(self) -> str:
        return (f"dashboard: {self.rows} rows in {self.pages} op pages ({self.groups} "
                f"group{'' if self.groups == 1 else 's'}), {self.entries} entries, {self.damaged} damaged, "
                f"{self.change_points} change points; {self.files} files, {self.bytes / 2**20:.1f} MiB")


def _environment() -> Any:
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True)
    env.policies["json.dumps_kwargs"] = {"separators": (",", ":"), "allow_nan": False}
    return env


def _check_paths(store: Path, out: Path) -> None:
    s, o = store.resolve(), out.resolve()
    if s == o or s in o.parents or o in s.parents:
        raise DashboardError(f"--out {out} and the store {store} overlap; write the site outside the store")
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise DashboardError(f"--out {out} exists and is not a folder; pass a new folder or an earlier site")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise DashboardError(f"--out {out} is a folder with files that are not a tritongate dashboard; "
                             "pass a new folder or an earlier site (it is replaced whole)")


def _store_href(store: Path, out: Path, store_url: str | None) -> str:
    """How an op page (in ``OUT/ops``) reaches the store: ``store_url``, else a relative path."""
    if store_url is not None:
        if not store_url.startswith(("https://", "http://")) or any(c.isspace() for c in store_url):
            raise DashboardError(f"--store-url {store_url[:80]!r}: expected an http(s) URL of the store's root")
        return store_url.rstrip("/")
    rel = os.path.relpath(store.resolve(), (out.resolve() / OPS_DIR))
    return quote(Path(rel).as_posix())


def _group_slugs(groups: list[Group]) -> list[str]:
    base = [f"{g.key.runner_class}_{file_name(g.key.suite, set())[:-4]}_{g.key.gpu_slug}" for g in groups]
    taken: set[str] = set()
    out = []
    for g, b in zip(groups, base):
        name = b if base.count(b) == 1 else f"{b}_{file_name(g.key.repo_display or 'none', set())[:-4]}"
        out.append(file_name(name, taken)[:-4])
    return out


def build_site(store: Path, out: Path, *, window_nights: float = 90.0, runner_class: str | None = None,
               suite: str | None = None, gpu: str | None = None, compiler_repo: str | None = None,
               rule: Detection = Detection(), new_last: int = 1, store_url: str | None = None,
               now: dt.datetime | None = None) -> SiteSummary:
    """Write the dashboard of ``store`` (optionally one runner class, suite, GPU, compiler
    repository) into ``out``, replacing an earlier site there whole.

    ``window_nights``: the span (days before each group's last entry) the index's drift and
    counts cover and the charts open on. ``store_url``: where pages link the store's entries
    (default: the relative path from the site to ``store``). Raises ``DashboardError`` (exit
    2) for a store that is not a folder, no entries, or an ``out`` that is not a new folder or
    an earlier site.
    """
    store, out = Path(store), Path(out)
    if not (math.isfinite(window_nights) and window_nights > 0):
        raise DashboardError(f"--window-nights must be a number of days > 0, got {window_nights!r}")
    unreadable: list[Path] = []
    entries, scan_notes = find_entries(store, runner_class=runner_class, suite=suite, gpu=gpu,
                                       compiler_repo=compiler_repo, damaged=unreadable)
    _check_paths(store, out)
    store_href = _store_href(store, out, store_url)
    if not entries:
        raise DashboardError(f"no entries in {store} for the filters given; see what the store holds with "
                             f"`tritongate baseline list --store {store}`")
    groups = read_groups(store, entries)
    generated = (now or dt.datetime.now(dt.timezone.utc)).astimezone(dt.timezone.utc)
    site = {"generated": generated.isoformat(timespec="seconds"), "window_nights": window_nights}
    docs: list[tuple[str, dict[str, Any], str]] = []
    rows: list[dict[str, Any]] = []
    cps: list[dict[str, Any]] = []
    group_docs = []
    for g, (group, slug) in enumerate(zip(groups, _group_slugs(groups))):
        label = {**group_label(group), "damaged": len(group.damaged), "notes": [],
                 "entries": 0, "first": None, "last": None, "missing": 0}
        group_docs.append(label)
        h = group.history
        if h is None:
            label["notes"] = [neutralize(group.error)]
            continue
        report = build_report(h, rule, new_last=new_last, now=generated)
        window_start = h.entries[-1].recorded - dt.timedelta(days=window_nights)
        entry_pos = {e.record_path: i for i, e in enumerate(h.entries)}
        label.update(entries=len(h.entries), first=int(h.entries[0].recorded.timestamp()),
                     last=int(h.entries[-1].recorded.timestamp()), missing=sum(m.missing for m in h.missing),
                     notes=[neutralize(n) for n in report.notes])
        taken: set[str] = set()
        for op, analyses in report.by_op().items():
            page = OpPage(g, op, f"{slug}__{file_name(op, taken)[:-4]}.html", tuple(analyses))
            index_rows(g, report, page, window_start, rows, cps, group.key.repo, entry_pos)
            docs.append((page.file, op_document(site, group, report, page, store_href, window_start, entry_pos),
                         neutralize(page.op)))
    cps.sort(key=lambda c: (-c["at"], -abs(c["rel"]), c["op"], c["case"], c["dtype"]))
    index = {**site, "store": neutralize(store.resolve().name), "groups": group_docs, "rows": rows, "cps": cps,
             "notes": [neutralize(n) for n in scan_notes]}
    n_files, n_bytes = _write(out, index, docs)
    return SiteSummary(out=out, groups=len(groups), pages=len(docs), rows=len(rows),
                       entries=sum(len(g.history.entries) for g in groups if g.history),
                       damaged=sum(len(g.damaged) for g in groups) + len(unreadable), change_points=len(cps),
                       files=n_files, bytes=n_bytes,
                       notes=tuple(scan_notes) + tuple(n for g in group_docs for n in g["notes"]))


def _write(out: Path, index: dict[str, Any], docs: list[tuple[str, dict[str, Any], str]]) -> tuple[int, int]:
    """Every file into a temp folder beside ``out``, then renamed into place; (files, bytes)."""
    env = _environment()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        os.chmod(tmp, DIR_MODE)
        (tmp / OPS_DIR).mkdir()
        (tmp / "static").mkdir()
        for name in STATIC:
            shutil.copyfile(HERE / "static" / name, tmp / "static" / name)
        op_page = env.get_template("op.html.j2")
        for file, doc, title in docs:
            (tmp / OPS_DIR / file).write_text(op_page.render(doc=doc, title=title, group=doc["group"]),
                                              encoding="utf-8")
        (tmp / "index.html").write_text(env.get_template("index.html.j2").render(doc=index), encoding="utf-8")
        (tmp / MARKER).write_text(json.dumps({"generated": index["generated"]}) + "\n", encoding="utf-8")
        files = [p for p in tmp.rglob("*") if p.is_file()]
        counts = (len(files), sum(p.stat().st_size for p in files))
        _replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return counts


def _replace(tmp: Path, out: Path) -> None:
    """``tmp`` renamed to ``out``; an earlier site there is renamed aside first, then removed."""
    if not out.exists():
        os.rename(tmp, out)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.parent))
    os.rename(out, old / "site")
    try:
        os.rename(tmp, out)
    except OSError:
        os.rename(old / "site", out)  # the earlier site back where it was
        raise
    finally:
        shutil.rmtree(old, ignore_errors=True)
