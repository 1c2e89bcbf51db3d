"""Times for people: one auto-scaled unit (ns, µs, ms, s) and four significant digits.

Every time the reports show (terminal table, verdict.md, ``show --format md``) goes through
here, so a row's median reads the same everywhere: ``812.0 ns``, ``1.234 µs``, ``45.61 µs``,
``123.4 µs``, ``1.234 ms``, ``12.30 s`` (four digits: a 0.5 % difference and a tight IQR stay
visible). Machine-readable outputs (csv, json, verdict.json) keep
raw microseconds instead.

Rounding is decimal and half-up on the number as written (``repr``), so ``1.235`` µs shows
``1.24 µs`` whatever its binary value, and the unit is chosen *after* rounding: 999.96 µs
rounds to 1000 µs, which shows as ``1.00 ms``.
"""

from __future__ import annotations

import math
import numbers
from decimal import ROUND_HALF_UP, Decimal

# (unit, power of ten of one unit in ns), largest first
_UNITS: tuple[tuple[str, int], ...] = (("s", 9), ("ms", 6), ("µs", 3), ("ns", 0))
DIGITS = 4  # significant digits of every time shown to people
RANGE_DASH = "–"  # en dash, as the IQR has always been written


def _checked(us: float, what: str = "a time") -> Decimal:
    """``us`` as exact decimal nanoseconds; refuses what is not a finite time >= 0."""
    if isinstance(us, bool) or not isinstance(us, numbers.Real):
        raise TypeError(f"{what} must be a number of microseconds, got {us!r}")
    value = float(us)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{what} must be finite and >= 0 µs, got {us!r}")
    # repr is the shortest text that reads back as the same float: round what was meant
    return Decimal(repr(value)).scaleb(3)


def _round_sig(ns: Decimal, digits: int) -> Decimal:
    if ns == 0:
        return Decimal(0)
    quantum = Decimal(1).scaleb(ns.adjusted() - digits + 1)
    return ns.quantize(quantum, rounding=ROUND_HALF_UP)


def _unit_of(rounded_ns: Decimal) -> tuple[str, int]:
    """The largest unit in which the (already rounded) value is >= 1; ns below 1 ns."""
    for unit, power in _UNITS:
        if rounded_ns >= Decimal(1).scaleb(power):
            return unit, power
    return _UNITS[-1]


def _number(ns: Decimal, power: int, digits: int) -> str:
    """``ns`` in the unit 10**power ns, with ``digits`` significant digits (none dropped as
    trailing zeros: ``1.00``, not ``1``)."""
    rounded = _round_sig(ns, digits)
    if rounded == 0:
        return "0"
    value = rounded.scaleb(-power)
    decimals = max(0, digits - 1 - value.adjusted())
    return f"{value:.{decimals}f}"


def _check_digits(digits: int) -> None:
    if isinstance(digits, bool) or not isinstance(digits, int) or digits < 1:
        raise ValueError(f"digits must be an integer >= 1, got {digits!r}")


def format_time(us: float, *, digits: int = DIGITS) -> str:
    """``us`` microseconds as ``"{value} {unit}"``, the unit picked so that the value is in
    [1, 1000) (ns below 1 ns, s from 1000 s up), with ``digits`` significant digits."""
    _check_digits(digits)
    ns = _checked(us)
    unit, power = _unit_of(_round_sig(ns, digits))
    return f"{_number(ns, power, digits)} {unit}"


def format_time_range(lo_us: float, hi_us: float, *, digits: int = DIGITS) -> str:
    """An interval (an IQR) with both ends in one unit, the larger end's: ``1.21–1.25 ms``.
    Each end keeps ``digits`` significant digits."""
    _check_digits(digits)
    lo, hi = _checked(lo_us, "the lower end"), _checked(hi_us, "the upper end")
    if lo > hi:
        raise ValueError(f"a time range needs lo <= hi, got {lo_us!r} > {hi_us!r}")
    unit, power = _unit_of(_round_sig(hi, digits))
    return f"{_number(lo, power, digits)}{RANGE_DASH}{_number(hi, power, digits)} {unit}"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 row``, ``2 rows``: a count with its noun, for every count printed."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
