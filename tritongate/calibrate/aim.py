"""Aiming the planted spin: per row, the spin that makes its launches a given fraction slower.

What a spin adds to a launch is not proportional to it (``bench/results/*_planted_delay.md``):
a short spin can end under the kernel's own memory traffic and add nothing, a one-wave kernel
can pay a fixed cost once any spin runs, a kernel of several waves can gain one spin or one
per wave. So nothing is extrapolated: in one process, the row is timed with the spin compiled
in and 0, then along a ladder of spins (each ×√2, from below the smallest fraction) until the
largest fraction is passed; for each fraction the spin between the two ladder steps around it
is interpolated and timed too, and the timed spin closest to the fraction is chosen, then timed
``confirm`` more times alternating with 0 (the median is its planted size); where that moves
it out of the tolerance, a secant step along the ladder's slope is tried, and confirmed. A fraction no
chosen spin lands within ``tolerance`` of (relative) is not planted on that row, and says why:
the instrument cannot plant it there, which is not the gate missing it.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from tritongate.calibrate.model import fraction_key
from tritongate.planting import MAX_DELAY_NS

MeasureUs = Callable[[int], float]  # spin per program (ns) -> the row's median time per launch (µs)
GROWTH = math.sqrt(2.0)
MAX_STEPS = 24  # ladder steps per row: from a quarter of the smallest fraction to the largest, with room
TOLERANCE = 0.25  # a planted 2 % lands within 1.5–2.5 %
CONFIRM = 3  # more timings of each chosen spin and of 0, interleaved
REFINE = 2  # secant steps for a chosen spin that its confirmation moved out of the tolerance


@dataclass(frozen=True)
class AimPoint:
    spin_ns: int
    time_us: float

    def effect(self, zero_us: float) -> float:
        return self.time_us / zero_us - 1


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

    def __post_init__(self) -> None:
        if not (math.isfinite(self.zero_us) and self.zero_us > 0):
            raise ValueError(f"{self.key}: time spinning 0 is {self.zero_us!r} µs")

    def to_dict(self) -> dict[str, object]:
        return {"zero_us": self.zero_us, "points": [[p.spin_ns, p.time_us] for p in self.points],
                "spins_ns": dict(self.spins_ns), "aimed": dict(self.aimed), "missed": dict(self.missed)}


def ladder_start(zero_us: float, fractions: Sequence[float]) -> int:
    """The first spin tried: a quarter of the smallest fraction of the row's time."""
    return max(1, math.floor(min(fractions) * zero_us * 1000 / 4))


def aim_row(key: str, measure: MeasureUs, fractions: Sequence[float], *, tolerance: float = TOLERANCE,
            max_steps: int = MAX_STEPS, confirm: int = CONFIRM) -> RowAim:
    """Time the row along the ladder and choose a spin per fraction (see the module's doc)."""
    if not fractions or any(not 0 < f < 1 for f in fractions):
        raise ValueError(f"fractions {list(fractions)}: each must be in (0, 1)")
    zero = measure(0)
    if not (math.isfinite(zero) and zero > 0):
        raise ValueError(f"{key}: time spinning 0 is {zero!r} µs")
    timed: dict[int, float] = {0: zero}

    def time_spin(spin: int) -> float:
        if spin not in timed:
            timed[spin] = measure(spin)
        return timed[spin] / zero - 1

    top = max(fractions) * (1 + tolerance)
    spin = ladder_start(zero, fractions)
    while spin > 1 and time_spin(spin) >= min(fractions):  # a kernel of many waves: start lower
        spin = max(1, spin // 4)
    ladder: list[int] = []
    for _ in range(max_steps):
        ladder.append(spin)
        if time_spin(spin) >= top:
            break
        spin = min(MAX_DELAY_NS, max(spin + 1, math.ceil(spin * GROWTH)))
        if spin == ladder[-1]:
            break
    chosen: dict[str, int] = {}
    for f in sorted(fractions):
        past = next((i for i, s in enumerate(ladder) if timed[s] / zero - 1 >= f), 0)
        if past:  # interpolate between the last ladder step short of f and the first at or past it
            lo, hi = ladder[past - 1], ladder[past]
            e_lo, e_hi = timed[lo] / zero - 1, timed[hi] / zero - 1
            guess = round(lo + (f - e_lo) / (e_hi - e_lo) * (hi - lo))
            if lo < guess < hi:
                time_spin(guess)
        chosen[fraction_key(f)] = min((s for s in timed if s), key=lambda s: (abs(timed[s] / zero - 1 - f), s))
    # Each chosen spin is timed again, alternating with the spin at 0, so what it adds is not one
    # timing's noise (a ladder step's error would otherwise become the planted size).
    repeats: dict[int, list[float]] = {0: [zero]}

    def confirmed(spin: int) -> float:
        if spin not in repeats:
            repeats[spin] = [timed[spin]] if spin in timed else []
            for _ in range(confirm):
                repeats[0].append(measure(0))
                repeats[spin].append(measure(spin))
        return statistics.median(repeats[spin]) / statistics.median(repeats[0]) - 1

    def slope_at(spin: int) -> float:
        """Effect per ns around ``spin``, from the ladder steps either side of it."""
        lo = max((s for s in ladder if s < spin), default=0)
        hi = min((s for s in ladder if s > spin), default=spin)
        return (timed[hi] - timed[lo]) / zero / (hi - lo) if hi > lo else 0.0

    for f in sorted(fractions):
        k = fraction_key(f)
        best, got = chosen[k], confirmed(chosen[k])
        for _ in range(REFINE):  # missed by the noise of the ladder's timings: one secant step, confirmed
            slope = slope_at(best)
            if abs(got - f) <= tolerance * f or slope <= 0:
                break
            nxt = round(best + (f - got) / slope)
            if nxt < 1 or nxt > MAX_DELAY_NS or nxt in repeats:
                break
            got_nxt = confirmed(nxt)
            if abs(got_nxt - f) < abs(got - f):
                best, got = nxt, got_nxt
        chosen[k] = best
    zero_confirmed = statistics.median(repeats[0])
    spins, aimed, missed = {}, {}, {}
    for f in sorted(fractions):
        k = fraction_key(f)
        best = chosen[k]
        got = statistics.median(repeats[best]) / zero_confirmed - 1
        if abs(got - f) <= tolerance * f:
            spins[k], aimed[k] = best, got
        else:
            missed[k] = (f"no spin lands within ±{tolerance:.0%} of {f:.0%}: the closest, {best} ns, "
                         f"added {got:+.2%}")
    for spin, times in repeats.items():  # the points show every spin timed, each at its median
        timed[spin] = statistics.median(times)
    points = tuple(AimPoint(s, t) for s, t in sorted(timed.items()))
    return RowAim(key=key, zero_us=zero_confirmed, points=points, spins_ns=spins, aimed=aimed, missed=missed)
