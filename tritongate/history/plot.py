"""One PNG per op: each (case, dtype) a line of nightly medians over time.

Gaps break the line and show as an ``x`` at the last value before them; missing nightlies
are shaded; each change point is a dashed vertical line between its two points, labelled with
the relative change. matplotlib is imported only here, lazily, and drawn through the Agg
canvas directly (no pyplot: no global figure state, no display needed).
"""

from __future__ import annotations

import io
import itertools
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

from tritongate.atomicio import write_bytes_atomic
from tritongate.history.series import MissingNightly
from tritongate.report.untrusted import neutralize

if TYPE_CHECKING:
    from tritongate.history.changepoints import SeriesAnalysis
    from tritongate.history.report import HistoryReport

MAX_LABEL = 60  # characters of a name in a title or legend
MAX_LEGEND = 16  # series named in one plot's legend; the rest are drawn unnamed
LOG_SCALE_SPAN = 20.0  # a plot whose medians span more than this ratio gets a log y axis


def label(value: object, max_chars: int = MAX_LABEL) -> str:
    """A name from the store as plot text: one line, bounded, and never mathtext (``$``)."""
    text = neutralize(value)
    if len(text) > max_chars:
        text = text[: max_chars - 1] + "…"
    return text.replace("$", r"\$")


def file_name(op: str, taken: set[str]) -> str:
    """A safe, unique (also on case-insensitive filesystems) PNG name for an op."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", op).strip("-.")[:60] or "op"
    name, i = stem, 1
    while name.lower() in taken:
        i += 1
        name = f"{stem}-{i}"
    taken.add(name.lower())
    return f"{name}.png"


def render_op(analyses: Sequence["SeriesAnalysis"], missing: Sequence[MissingNightly], title: str) -> bytes:
    """The PNG of one op's series."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    fig = Figure(figsize=(11, 5.5), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    for m in missing:
        ax.axvspan(m.after, m.before, color="0.92", zorder=0)
    values: list[float] = []
    for i, a in enumerate(analyses):
        pts = a.series.points
        xs = [p.recorded for p in pts]
        ys = [p.median_us if p.median_us is not None else math.nan for p in pts]
        values += [y for y in ys if not math.isnan(y)]
        name = f"{label(a.series.case)} {label(a.series.dtype, 20)}" if i < MAX_LEGEND else "_nolegend_"
        (line,) = ax.plot(xs, ys, marker="o", markersize=3.5, linewidth=1.4, label=name)
        color = line.get_color()
        gaps = [j for j, p in enumerate(pts) if p.is_gap]
        if gaps:  # each at the last value before it (before any value: at the first one)
            first = next((y for y in ys if not math.isnan(y)), math.nan)
            held = list(itertools.accumulate(ys, lambda last, y: last if math.isnan(y) else y, initial=first))[1:]
            ax.plot([xs[j] for j in gaps], [held[j] for j in gaps], linestyle="none", marker="x", markersize=7,
                    color=color)
        for cp in a.change_points:
            at = cp.before.recorded + (cp.after.recorded - cp.before.recorded) / 2
            ax.axvline(at, color=color, linestyle="--", linewidth=1.0, alpha=0.8)
            ax.annotate(f"{cp.rel_change:+.1%}", xy=(at, cp.median_after_us), xytext=(4, 6),
                        textcoords="offset points", color=color, fontsize=9, fontweight="bold")
    if values and max(values) / min(values) > LOG_SCALE_SPAN:
        ax.set_yscale("log")
    locator = AutoDateLocator()
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(ConciseDateFormatter(locator))
    ax.set_xlabel("recorded (UTC)")
    ax.set_ylabel("median time per launch (µs)")
    ax.set_title(title, fontsize=12)
    ax.grid(True, alpha=0.3)
    extra = [Line2D([], [], linestyle="none", marker="x", color="0.3", label="gap (no clean value)"),
             Line2D([], [], linestyle="--", color="0.3", label="change point (+ is slower)")]
    if missing:
        from matplotlib.patches import Patch

        extra.append(Patch(color="0.92", label="missing nightly"))
    handles = ax.get_legend_handles_labels()[0]
    ax.legend(handles=handles + extra, fontsize=8, loc="upper left",  # more than 6: outside, on the right
              **({"bbox_to_anchor": (1.01, 1.0), "borderaxespad": 0} if len(handles) > 6 else {}))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    return buf.getvalue()


def plot_history(report: "HistoryReport", out_dir: Path) -> dict[str, Path]:
    """Write one PNG per op into ``out_dir`` (created); returns op -> its file."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    h = report.history
    taken: set[str] = set()
    written = {}
    for op, analyses in report.by_op().items():
        title = f"{label(op)} — {label(h.suite)} on {label(h.runner_class)} ({label(h.gpu_slug)})"
        path = out_dir / file_name(op, taken)
        write_bytes_atomic(path, render_op(analyses, h.missing, title))
        written[op] = path
    return written


def remove_stale_plots(out_dir: Path, kept: Iterable[Path]) -> list[Path]:
    """Remove the PNGs in ``out_dir`` (``OUT/plots``, the history's own folder) that are not
    ``kept``: an earlier run's plot of an op no longer in the history, or of every op after a
    ``--no-plots`` run, would otherwise sit beside the new report as if it were current."""
    out_dir = Path(out_dir)
    if not out_dir.is_dir():
        return []
    keep = {Path(p).name for p in kept}
    removed = [png for png in sorted(out_dir.glob("*.png")) if png.name not in keep and png.is_file()]
    for png in removed:
        png.unlink()
    return removed
