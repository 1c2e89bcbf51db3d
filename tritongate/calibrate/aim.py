"""Aiming the planted spin: per row, the spin that makes its launches a given fraction slower.

What a spin adds to a launch is not proportional to it (``bench/results/*_planted_delay.md``):
a short spin can end under the kernel's own memory traffic and add nothing, a one-wave kernel
can pay a fixed cost once any spin runs, a kernel of several waves can gain one spin or one
per wave. So nothing is extrapolated: in one process the row is timed at 0 and along a ladder
of spins (each ×√2) past the largest fraction; per fraction a spin is chosen (``predict``, then
``bracket`` where lines keep missing: a memory-bound kernel hides a spin under its other waves'
traffic, then pays it in every wave) and timed until its 95 % interval is within half the
tolerance; it is planted where that interval lies within the tolerance of the size. A size no
spin lands on is not planted on that row, and says why: the instrument cannot plant it there,
which is not the gate missing it. A size still uncertain after ``MAX_TIMINGS`` timings (a
power-capped matmul, whose clock follows the power limit) is ``unsure``: ``aim_check`` measures
it by paired runs instead.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from tritongate.model.calibration import fraction_key
from tritongate.ops.planting import MAX_DELAY_NS

MeasureUs = Callable[[int], float]  # spin per program (ns) -> the row's median time per launch (µs)
GROWTH = math.sqrt(2.0)
MAX_STEPS = 24  # ladder steps per row: from a quarter of the smallest fraction to the largest, with room
TOLERANCE = 0.25  # a planted 2 % lands within 1.5–2.5 %
ZEROS = 3  # timings at 0 before the ladder: their spread decides whether the ladder is paired
MIN_TIMINGS = 6  # least timings of a chosen spin (its ladder step's included), each against the 0s beside it
MAX_TIMINGS = 12  # most, for a row whose noise keeps its planted size uncertain
REFINE = 2  # secant steps for a chosen spin that its confirmation moved out of the tolerance
BRACKET = 4  # then steps that narrow the spins timed either side of the size (a kink in the response)


@dataclass(frozen=True)
class AimPoint:
    spin_ns: int
    effect: float  # median of its timings, each over the time at 0 beside it, minus 1
    timings: int


@dataclass(frozen=True)
class RowAim:
    """One row's aim: its time spinning 0, every spin timed, and per fraction the spin chosen
    with the effect it had in this process (``aimed``) or why none was chosen."""

    key: str
    zero_us: float
    points: tuple[AimPoint, ...]
    spins_ns: Mapping[str, int] = field(default_factory=dict)  # fraction key -> spin
    aimed: Mapping[str, float] = field(default_factory=dict)  # fraction key -> effect at that spin, in process
    missed: Mapping[str, str] = field(default_factory=dict)  # fraction key -> why not planted
    paired_ladder: bool = False  # the time at 0 moved: every ladder step was paired with 0s
    tried: Mapping[str, int] = field(default_factory=dict)  # fraction key -> the spin chosen, planted or not
    unsure: tuple[str, ...] = ()  # fraction keys whose size stayed uncertain after MAX_TIMINGS timings
    checked: Mapping[str, tuple[tuple[int, float], ...]] = field(default_factory=dict)  # paired checks: (spin, effect)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.zero_us) and self.zero_us > 0):
            raise ValueError(f"{self.key}: time spinning 0 is {self.zero_us!r} µs")

    def to_dict(self) -> dict[str, object]:
        return {"zero_us": self.zero_us, "paired_ladder": self.paired_ladder,
                "points": [[p.spin_ns, p.effect, p.timings] for p in self.points],
                "spins_ns": dict(self.spins_ns), "aimed": dict(self.aimed), "missed": dict(self.missed),
                "tried": dict(self.tried), "unsure": list(self.unsure),
                "checked": {k: [list(c) for c in v] for k, v in self.checked.items()}}

    @classmethod
    def from_dict(cls, key: str, doc: Mapping[str, Any]) -> "RowAim":
        """The inverse of ``to_dict``; raises KeyError, TypeError or ValueError on a bad document."""
        def by_size(name: str, kind: Callable[[Any], Any]) -> dict[str, Any]:
            return {str(k): kind(v) for k, v in doc[name].items()}

        return cls(key=str(key), zero_us=float(doc["zero_us"]),
                   points=tuple(AimPoint(int(s), float(e), int(n)) for s, e, n in doc["points"]),
                   spins_ns=by_size("spins_ns", int), aimed=by_size("aimed", float), missed=by_size("missed", str),
                   paired_ladder=bool(doc["paired_ladder"]), tried=by_size("tried", int),
                   unsure=tuple(str(k) for k in doc["unsure"]),
                   checked={str(k): tuple((int(s), float(e)) for s, e in v)
                            for k, v in doc.get("checked", {}).items()})


def ladder_start(zero_us: float, fractions: Sequence[float]) -> int:
    """The first spin tried: a quarter of the smallest fraction of the row's time."""
    return max(1, math.floor(min(fractions) * zero_us * 1000 / 4))


class _Timings:
    """A row's timings as effects: each spin's time over the time at 0 beside it."""

    def __init__(self, measure: MeasureUs, key: str, quiet_within: float) -> None:
        self.measure = measure
        self.zeros = [measure(0) for _ in range(ZEROS)]
        zero = statistics.median(self.zeros)
        if not (math.isfinite(zero) and zero > 0):
            raise ValueError(f"{key}: time spinning 0 is {zero!r} µs")
        self.paired = (max(self.zeros) - min(self.zeros)) / zero > quiet_within
        self.effects: dict[int, list[float]] = {}

    def time(self, spin: int, *, paired: bool) -> None:
        """One more timing of ``spin``; paired: against the 0 before it and one timed after."""
        t = self.measure(spin)
        if paired:
            self.zeros.append(self.measure(0))
        ref = (self.zeros[-2] + self.zeros[-1]) / 2 if paired else statistics.median(self.zeros)
        self.effects.setdefault(spin, []).append(t / ref - 1)

    def effect(self, spin: int) -> float:
        if spin not in self.effects:
            self.time(spin, paired=self.paired)
        return statistics.median(self.effects[spin])

    def half_width(self, spin: int) -> float:
        """The 95 % confidence half-width of ``spin``'s mean effect (Student's t); inf below
        ``MIN_TIMINGS`` timings, whose spread says too little about the noise."""
        got = self.effects[spin]
        if len(got) < MIN_TIMINGS:
            return math.inf
        from scipy.stats import t as student_t

        return float(student_t.ppf(0.975, len(got) - 1)) * statistics.stdev(got) / math.sqrt(len(got))

    def confirm(self, spin: int, within: float) -> float:
        """Time ``spin`` (paired) to a half-width of ``within`` or ``MAX_TIMINGS`` timings: its mean effect."""
        self.effect(spin)
        while len(self.effects[spin]) < MAX_TIMINGS and self.half_width(spin) > within:
            self.time(spin, paired=True)
        return statistics.fmean(self.effects[spin])


def aim_row(key: str, measure: MeasureUs, fractions: Sequence[float], *, tolerance: float = TOLERANCE,
            max_steps: int = MAX_STEPS) -> RowAim:
    """Time the row along the ladder and choose a spin per fraction (see the module's doc)."""
    if not fractions or any(not 0 < f < 1 for f in fractions):
        raise ValueError(f"fractions {list(fractions)}: each must be in (0, 1)")
    t = _Timings(measure, key, quiet_within=tolerance * min(fractions) / 2)
    top = max(fractions) * (1 + tolerance)
    spin = ladder_start(statistics.median(t.zeros), fractions)
    while spin > 1 and t.effect(spin) >= min(fractions):  # a kernel of many waves: start lower
        spin = max(1, spin // 4)
    ladder: list[int] = []
    for _ in range(max_steps):
        ladder.append(spin)
        if t.effect(spin) >= top:
            t.time(spin, paired=True)  # one glitched timing must not end the ladder: the median of three
            t.time(spin, paired=True)
            if t.effect(spin) >= top:
                break
        spin = min(MAX_DELAY_NS, max(spin + 1, math.ceil(spin * GROWTH)))
        if spin == ladder[-1]:
            break

    def predict(f: float) -> int | None:
        """Where a weighted least-squares line through the spins timed around the ladder's crossing
        of ``f`` puts it (one timing's noise would steer a two-point secant anywhere); None below
        the ladder's first step or where the line is not rising."""
        past = next((i for i, s in enumerate(ladder) if t.effect(s) >= f), 0)
        if not past:
            return None
        lo, hi = ladder[past - 1] / GROWTH, ladder[past] * GROWTH
        near = [(s, t.effect(s), len(t.effects[s])) for s in t.effects if lo <= s <= hi]
        n = sum(w for _, _, w in near)
        mx = sum(s * w for s, _, w in near) / n
        my = sum(e * w for _, e, w in near) / n
        sxx = sum(w * (s - mx) ** 2 for s, _, w in near)
        slope = sum(w * (s - mx) * (e - my) for s, e, w in near) / sxx if sxx else 0.0
        if slope <= 0:
            return None
        return min(max(1, round(mx + (f - my) / slope)), MAX_DELAY_NS)

    def lands(spin: int, got: float, f: float) -> bool:
        """Its 95 % interval lies within the tolerance of ``f``."""
        return abs(got - f) + t.half_width(spin) <= tolerance * f

    def ends(f: float) -> tuple[int, int] | None:
        """The smallest spin timed past ``f`` and the largest below it short of ``f``, or None."""
        above = [s for s in t.effects if t.effect(s) >= f]
        below = [s for s in t.effects if above and s < min(above) and t.effect(s) < f]
        return (max(below), min(above)) if below else None

    def bracket(f: float) -> int | None:
        """A spin interpolated inside the bracket of ``f``, an eighth of it from either end so that
        it always narrows; None without one. Its ends are timed three times first (the median, as
        the ladder's top): one glitched ladder step must not steer the narrowing."""
        pair = ends(f)
        for s in pair or ():
            while len(t.effects[s]) < 3:
                t.time(s, paired=True)
        pair = ends(f)
        if pair is None or pair[1] - pair[0] < 2:
            return None
        lo, hi = pair
        e_lo, e_hi = t.effect(lo), t.effect(hi)
        x = lo + (f - e_lo) / (e_hi - e_lo) * (hi - lo)
        margin = (hi - lo) / 8
        nxt = round(min(hi - margin, max(lo + margin, x)))
        return nxt if lo < nxt < hi else None

    spins, aimed, missed, tried = {}, {}, {}, {}
    unsure: list[str] = []
    for f in sorted(fractions):
        k = fraction_key(f)
        within = tolerance * f / 2  # the 95 % interval within half the tolerance
        guess = predict(f)
        best = guess if guess is not None else min(t.effects, key=lambda s: (abs(t.effect(s) - f), s))
        got = t.confirm(best, within)
        for _ in range(REFINE):  # the confirmed size is off: a new line, with the confirmed timings in it
            if lands(best, got, f):
                break
            nxt = predict(f)
            if nxt is None or nxt == best or nxt in tried.values():
                break
            got_nxt = t.confirm(nxt, within)
            if abs(got_nxt - f) < abs(got - f):
                best, got = nxt, got_nxt
        for _ in range(BRACKET):  # lines keep missing: narrow the spins either side of the size
            if lands(best, got, f) or t.half_width(best) > within:
                break  # landed, or too noisy to aim in one process (the paired check's case)
            nxt = bracket(f)
            if nxt is None:
                break
            got_nxt = t.confirm(nxt, within)
            if abs(got_nxt - f) < abs(got - f):
                best, got = nxt, got_nxt
        tried[k] = best
        if t.half_width(best) > within:
            unsure.append(k)
        if lands(best, got, f):
            spins[k], aimed[k] = best, got
        else:
            missed[k] = (f"no spin lands within ±{tolerance:.0%} of {f:.0%}: the closest, {best} ns, "
                         f"added {got:+.2%} (±{min(t.half_width(best), 9.99):.2%})")
    points = tuple(AimPoint(s, statistics.median(e), len(e)) for s, e in sorted(t.effects.items()))
    return RowAim(key=key, zero_us=statistics.median(t.zeros), points=points, spins_ns=spins, aimed=aimed,
                  missed=missed, paired_ladder=t.paired, tried=tried, unsure=tuple(unsure))


def unplanted_notes(aims: Mapping[str, RowAim]) -> list[str]:
    """One note per row and fraction the aim could not plant, with the closest it got."""
    return [f"{key} not planted at {float(k):.0%}: {why}" for key, a in sorted(aims.items())
            for k, why in sorted(a.missed.items())]
