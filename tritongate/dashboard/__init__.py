"""The baseline store's nightly history as a static site: ``build_site(store, out)``.

An index of every row (latest value, drift over a window, change points newest first,
filtered in the page by suite, runner class, GPU, dtype and op) and one page per op with an
interactive chart per case and dtype. The values, gaps and change points are ``history``'s
(``reading`` calls ``load_history`` once per runner class, suite, GPU and compiler repository,
``pages`` shapes each ``HistoryReport`` for the pages, ``site`` renders and writes them
atomically). The pages are plain files: no server, no build step and no network at view time,
so they open from ``file://`` as well as from any static host or a CI artifact.

Charts are drawn with uPlot (``static/uPlot.iife.min.js``, version ``UPLOT_VERSION``, MIT,
vendored unchanged; ``static/VENDORED.md`` has its source and sha256). Why uPlot: it is made for
long time series (tens of thousands of points per chart drawn on one canvas in milliseconds,
where SVG libraries build a DOM node per point); it is small (51 KB minified, no dependencies,
one IIFE file that works from ``file://`` without a bundler); it has what the pages need built
in (drag to zoom, a cursor that reports the nearest point, cursors synced across a page's
charts, draw hooks for the change-point and gap marks); it writes its own text with
``textContent`` only; and it is maintained (1.6.32, May 2025). The alternatives were Chart.js
(~200 KB, plus a date adapter and a zoom plugin for the same) and Plotly (megabytes).
"""

from __future__ import annotations

from tritongate.dashboard.reading import DashboardError
from tritongate.dashboard.site import SiteSummary, build_site

UPLOT_VERSION = "1.6.32"

__all__ = ["DashboardError", "SiteSummary", "UPLOT_VERSION", "build_site"]
