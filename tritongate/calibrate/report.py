"""The calibration as Markdown (catch rates by size class, goals, every row) and as a plot of
each row's detectable effect against its kernel time."""

from __future__ import annotations

import io
import math
from pathlib import Path

from tritongate.atomicio import write_bytes_atomic, write_text_atomic
from tritongate.baselines.manifest import suite_folder
from tritongate.model.calibration import SIZE_CLASSES, Calibration, Rate, false_verdicts, fraction_key
from tritongate.report.units import format_time
from tritongate.report.untrusted import markdown_cell

CALIBRATION_MD = "calibration.md"
CALIBRATION_PNG = "calibration.png"


def _pct(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{value * 100:+.{digits}f} %"


def _rate(rate: Rate) -> str:
    return "–" if rate.rows == 0 else f"{rate.caught}/{rate.rows} ({rate.caught / rate.rows:.0%})"


# A calibration on the interpreter: what its plant and its rates are (a new user could not tell)
INTERPRETER_NOTE = ("⚠️ **On the Triton interpreter** (timer host-wall): the plant is a busy-wait on the host after "
                    "each launch (`tritongate/ops/planting.py`), not the in-kernel spin described below, and the "
                    "rates are of the interpreter on this host: nothing a GPU runner's gate uses. Calibrate on "
                    "the GPU runner.")


def on_interpreter(cal: Calibration) -> bool:
    """Whether the calibration timed the Triton interpreter (its timer is the host's wall clock)."""
    return cal.runner.get("timer") == "host-wall"


def _scope(cal: Calibration) -> str:
    """Where the steps ran: one GPU, or (several physical GPUs) the class of runner PRs meet."""
    gpus = [markdown_cell(str(g)) for g in cal.runner.get("gpus") or ()]
    if not gpus:
        return " The steps' GPUs were not recorded."
    if len(gpus) == 1:
        return f" Every step on one {'host' if on_interpreter(cal) else 'GPU'} ({gpus[0]})."
    return (f" The steps ran on {len(gpus)} physical GPUs ({', '.join(gpus)}): a calibration of the runner "
            "class, not of one GPU (each step's GPU is in calibration.json's `steps`).")


def render(cal: Calibration) -> str:
    r = {k: markdown_cell(str(v)) if v is not None else "n/a" for k, v in cal.runner.items()}
    lines = [f"# Calibration of `{markdown_cell(suite_folder(cal.suite))}` ({cal.created_utc[:10]})", "",
             f"{r.get('device', 'n/a')}, driver {r.get('driver', 'n/a')}, torch {r.get('torch', 'n/a')}, triton "
             f"{r.get('triton', 'n/a')}, timer {r.get('timer', 'n/a')}." + _scope(cal), "",
             *([INTERPRETER_NOTE, ""] if on_interpreter(cal) else []),
             f"**A/A: {false_verdicts(cal.aa_false)} in {cal.aa_rows} rows** (the build against itself, every row "
             "timed; every REGRESSED or IMPROVED is false).", ""]
    goals = [f"- {'✅' if g.met else '❌' if g.met is False else '–'} {g.text()}" for g in cal.goals()]
    lines += ["Goals:", "", *goals, ""] if goals else [
        "Goals: not checked (they are set at 2 % and 5 %; plant those sizes to check them).", ""]
    lines += ["| size class | rows | " + " | ".join(f"{f:.0%} caught" for f in cal.fractions) + " |",
              "|---|---:|" + "---:|" * len(cal.fractions)]
    for name, _lo, _hi in SIZE_CLASSES:
        cells = [_rate(cal.rate(f, size=name)) for f in cal.fractions]
        lines.append(f"| {name} | {sum(x.size_class == name for x in cal.rows)} | " + " | ".join(cells) + " |")
    lines += [f"| all | {len(cal.rows)} | " + " | ".join(_rate(cal.rate(f)) for f in cal.fractions) + " |", ""]
    unplanted = [(f, cal.rate(f).unplanted) for f in cal.fractions if cal.rate(f).unplanted]
    if unplanted:
        lines += ["Not plantable (no spin timed within ±25 % of the size; left out of the table's rates, "
                  "counted as missed by a goal above that covers them): "
                  + ", ".join(f"{f:.0%} on {n} rows" for f, n in unplanted) + ".", ""]
    lines += ["| op | case | dtype | kernel | A/A | detectable | " + " | ".join(f"{f:.0%}" for f in cal.fractions)
              + " | smallest caught |", "|---|---|---|---:|---|---:|" + "---|" * len(cal.fractions) + "---:|"]
    for x in sorted(cal.rows, key=lambda x: x.kernel_us):
        outcomes = [x.planted.get(fraction_key(f)) for f in cal.fractions]
        cells = ["–" if o is None else f"{'✅' if o.caught else '·'} {_pct(o.effect)} (planted {_pct(o.aimed)})"
                 for o in outcomes]
        aa = ", ".join(f"{v.lower()} {_pct(e)}" for v, e in zip(x.aa_verdicts, x.aa_effects))
        smallest = f"{x.smallest_caught:.0%}" if x.smallest_caught is not None else "none"
        lines.append(f"| {markdown_cell(x.op)} | {markdown_cell(x.case)} | {markdown_cell(x.dtype)} | "
                     f"{format_time(x.kernel_us)} | {markdown_cell(aa)} | {_pct(x.detectable)} | "
                     + " | ".join(cells) + f" | {smallest} |")
    lines += ["", "Cost: " + ", ".join(f"{markdown_cell(s['name'])} {markdown_cell(s['wall_s'])} s" for s in cal.steps)
              + f" (total {sum(float(s['wall_s']) for s in cal.steps):.0f} s).", "",
              "Planted runs: both sides have the planted spin compiled in (every program spins after its "
              "work; `tritongate/ops/kernels/planted.py`), the base spinning 0, the candidate the spin aimed at "
              "the size: in the `aim` step each row was timed, in one process, along a ladder of spins, and the "
              "spin whose time came closest to the size was kept (planted: what it added there); a size it could "
              "not pin down in one process (a power-bound kernel, whose clock moves between timings) was measured "
              "instead by a paired run of that spin (the `check-*` steps). A cell shows "
              "the gate's own estimate of the effect, then the planted size. ✅ caught (REGRESSED), · not caught, "
              "– not planted."]
    lines += [f"- note: {markdown_cell(n)}" for n in cal.notes]
    return "\n".join(lines) + "\n"


def plot(cal: Calibration, path: Path) -> Path | None:
    """Detectable effect against kernel time, one point per row, coloured by the smallest
    planted slowdown the row caught. None when no row has a detectable effect."""
    # each row: (time, detectable, smallest planted size caught; None: none caught; "-": not planted)
    pts = [(x.kernel_us, x.detectable, x.smallest_caught if x.planted else "-") for x in cal.rows
           if x.detectable is not None and math.isfinite(x.detectable)]
    if not pts:
        return None
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4.5), dpi=110)
    ax = fig.add_subplot()
    palette = ["#1a9850", "#fee08b", "#d73027", "#4575b4"]
    styles: dict[float | str | None, tuple[str, str]] = {
        f: (f"smallest caught: {f:.0%}", palette[i % len(palette)]) for i, f in enumerate(sorted(cal.fractions))}
    for key, (label, colour) in {**styles, None: ("none caught", "#555555"), "-": ("not planted", "none")}.items():
        xs, ys = [p[0] for p in pts if p[2] == key], [p[1] * 100 for p in pts if p[2] == key]
        if xs:
            ax.scatter(xs, ys, s=28, color=colour, edgecolors="black", linewidths=0.6, label=label)
    for f in cal.fractions:
        ax.axhline(f * 100, color="#cccccc", linewidth=0.8, linestyle="--")
    ax.set_xscale("log")
    ax.set_xlabel("kernel time (µs, A/A median)")
    ax.set_ylabel("detectable effect in the A/A run (%)")
    ax.set_title(f"{cal.suite} on {cal.runner.get('device')} ({cal.created_utc[:10]})")
    ax.legend(fontsize=8)
    ax.grid(True, which="major", alpha=0.3)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    write_bytes_atomic(path, buf.getvalue())
    return path


def write_reports(cal: Calibration, out: Path) -> tuple[Path, Path | None]:
    md = out / CALIBRATION_MD
    write_text_atomic(md, render(cal))
    return md, plot(cal, out / CALIBRATION_PNG)
