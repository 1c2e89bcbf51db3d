"""Checking the aim of rows whose time will not hold still in one process, by paired runs.

A power-bound kernel (a large matmul under the H200's power cap) moves 11-17 % between the
aim's timings, whatever their warm-up (``bench/results/2026-11-30_h200_aim_warmup.md``): its
clock follows the power limit, and only timings as close together as a paired run's rounds
share a clock. So a size the aim could not pin down (``RowAim.unsure``) has its spin run in a
paired run of its own (the base spinning 0; only such rows), and the effect measured there is
the size planted, provided the run resolved it (noise floor at most the tolerance, the estimate
with half its floor within the tolerance of the size; a noisier row stays unplanted, a miss for
the goals). A check that misses is followed by another spin (``next_spin``), up to ``CHECKS``
runs per size. The planted run that follows is another run: its call is not the check's.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Mapping, Sequence

from tritongate.calibrate.aim import TOLERANCE, RowAim
from tritongate.calibrate.analysis import StepRow
from tritongate.model.calibration import fraction_key
from tritongate.ops.planting import MAX_DELAY_NS

CHECKS = 3  # paired runs per size at most
MAX_SCALE = 4.0  # a check moves a spin by at most this factor, up or down

# (step name, size, the checked rows' spins) -> the rows of that paired run, by key
RunCheck = Callable[[str, float, Mapping[str, int]], Mapping[str, StepRow]]


def unsure_rows(aims: Mapping[str, RowAim]) -> list[str]:
    """The rows with a size the aim could not pin down."""
    return sorted(k for k, a in aims.items() if a.unsure)


def check_aims(aims: Mapping[str, RowAim], fractions: Sequence[float], run_check: RunCheck, *,
               tolerance: float = TOLERANCE, checks: int = CHECKS,
               log: Callable[[str], None] = lambda _: None) -> dict[str, RowAim]:
    """``aims`` with each unsure row's spins and sizes replaced by what paired runs measured."""
    unsure = unsure_rows(aims)
    found: dict[str, dict[str, list[tuple[int, float, float]]]] = {k: {} for k in unsure}
    noisy: dict[str, dict[str, float | None]] = {k: {} for k in unsure}
    for f in sorted(fractions):
        fk = fraction_key(f)
        spins = {k: aims[k].tried[fk] for k in unsure if fk in aims[k].unsure and fk in aims[k].tried}
        for n in range(1, checks + 1):
            if not spins:
                break
            log(f"check {f:.0%} ({n}/{checks}): {len(spins)} rows the aim could not size in one process, paired")
            rows = run_check(f"check-{fk}-{n}", f, spins)
            again = {}
            for key, spin in spins.items():
                row = rows.get(key)
                if row is None or row.effect is None or row.noise_floor is None \
                        or not row.noise_floor <= tolerance * f:
                    noisy[key].setdefault(fk, row.noise_floor if row is not None else None)
                    continue  # not measured, or not precisely enough to know the size it planted
                found[key].setdefault(fk, []).append((spin, row.effect, row.noise_floor))
                if not lands(row.effect, row.noise_floor, f, tolerance) and \
                        (nxt := next_spin([c[:2] for cs in found[key].values() for c in cs], f)) is not None:
                    again[key] = nxt
            spins = again
    return {**aims, **{key: _checked(aims[key], found[key], noisy[key],
                                     [f for f in fractions if fraction_key(f) in aims[key].unsure], tolerance)
                       for key in unsure}}


def next_spin(checked: Sequence[tuple[int, float]], f: float) -> int | None:
    """The next spin to check for size ``f``, from every (spin, effect) checked on the row (any
    size: it is one curve): between the two checks either side of ``f``, linearly; else the
    closest check scaled by ``f`` over its effect (at most ``MAX_SCALE`` either way). None when
    that spin was checked already."""
    below = [c for c in checked if c[1] < f]
    above = [c for c in checked if c[1] >= f]
    if below and above:
        (s0, e0), (s1, e1) = max(below, key=lambda c: c[1]), min(above, key=lambda c: c[1])
        nxt = round(s0 + (f - e0) / (e1 - e0) * (s1 - s0))
    else:
        spin, effect = min(checked, key=lambda c: abs(c[1] - f))
        scale = min(MAX_SCALE, max(1 / MAX_SCALE, f / effect)) if effect > 0 else MAX_SCALE
        nxt = round(spin * scale)
    nxt = min(MAX_DELAY_NS, max(1, nxt))
    return None if any(nxt == s for s, _ in checked) else nxt


def lands(effect: float, noise_floor: float, f: float, tolerance: float) -> bool:
    """A check's estimate, with half its noise floor (about a 95 % interval: the floor is four
    standard errors), lies within the tolerance of ``f``."""
    return abs(effect - f) + noise_floor / 2 <= tolerance * f


def _checked(aim: RowAim, found: Mapping[str, list[tuple[int, float, float]]],
             noisy: Mapping[str, float | None], fractions: Sequence[float], tolerance: float) -> RowAim:
    spins, aimed, missed = dict(aim.spins_ns), dict(aim.aimed), dict(aim.missed)
    for f in fractions:
        fk = fraction_key(f)
        tries = found.get(fk)
        for by_size in (spins, aimed, missed):
            by_size.pop(fk, None)
        if not tries:
            floor = noisy.get(fk)
            missed[fk] = ("the aim could not size it in one process, and its paired check was too noisy to "
                          f"(noise floor {'unknown' if floor is None else f'±{floor:.2%}'}, "
                          f"±{tolerance * f:.2%} needed)")
            continue
        landed = [c for c in tries if lands(c[1], c[2], f, tolerance)]
        if landed:  # the landed check with the smallest noise floor: not the luckiest estimate
            spins[fk], aimed[fk], _floor = min(landed, key=lambda c: (c[2], abs(c[1] - f)))
        else:
            spin, effect, floor = min(tries, key=lambda c: abs(c[1] - f))
            missed[fk] = (f"the aim could not size it in one process; paired checks of {len(tries)} spins, the "
                          f"closest {spin} ns at {effect:+.2%} (noise floor ±{floor:.2%}), none within "
                          f"±{tolerance:.0%} of {f:.0%}")
    return dataclasses.replace(aim, spins_ns=spins, aimed=aimed, missed=missed,
                               checked={k: tuple((s, e) for s, e, _ in v) for k, v in found.items()})
