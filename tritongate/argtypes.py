"""Argument types shared by every command line (``tritongate``, its ``baseline``, ``batch``
and ``history`` commands): each refuses a bad value with one line, before anything runs."""

from __future__ import annotations

import argparse
import math
from typing import Callable


def nonempty_text(value: str) -> str:
    """An option's text: empty is an error, not "absent" (an unset variable in a CI script
    would otherwise silently change what runs)."""
    if not value.strip():
        raise argparse.ArgumentTypeError("must not be empty (an unset variable in a script?)")
    return value


def names_in(value: str) -> list[str]:
    """The names of a comma- or space-separated list."""
    return value.replace(",", " ").split()


def name_list(value: str) -> str:
    """A comma- or space-separated list of names (``--ops``, ``--dtypes``): one that names
    nothing (``--ops "$A,$B"`` with both unset) is an error, never "every one of the suite"."""
    if not names_in(value):
        raise argparse.ArgumentTypeError(f"{value!r} names nothing; name one or more, or leave the option out")
    return value


def finite_number(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {value!r}") from None
    if not math.isfinite(number):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {value!r}")
    return number


def number_in(low: float, high: float = math.inf, *, what: str = "a number",
              open_low: bool = False, open_high: bool = False) -> Callable[[str], float]:
    """A finite number from ``low`` to ``high`` (each end closed unless ``open_*``), for argparse."""
    def bound(value: float, is_open: bool, op: str) -> str:
        return f"{op}{'' if is_open else '='} {value:g}"

    limits = " and ".join([bound(low, open_low, ">")] + ([bound(high, open_high, "<")] if math.isfinite(high) else []))

    def convert(value: str) -> float:
        try:
            number = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {value!r}") from None
        inside = (number > low if open_low else number >= low) and (number < high if open_high else number <= high)
        if not (math.isfinite(number) and inside):
            raise argparse.ArgumentTypeError(f"expected {what} {limits}, got {value!r}")
        return number
    return convert


def whole_number(value: str) -> int:
    """A count of at least 1, for argparse."""
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {value!r}")
    return number


def shard_spec(text: str) -> tuple[int, int]:
    """``I/N``: the I-th of N shards (1-based)."""
    i, sep, n = text.partition("/")
    try:
        index, count = int(i), int(n)
    except ValueError:
        index = count = 0
    if not sep or not 1 <= index <= count:
        raise ValueError(f"expected I/N with 1 <= I <= N (e.g. 2/4), got {text!r}")
    return index, count


# Relative sizes (a minimum effect, a planted slowdown) are fractions on every command line,
# as in the policy file and every JSON document: 0.01 is 1 %. A value of 1 or more is refused,
# not read as 100 % or more: it is almost always a per-cent number typed by habit.
FRACTION_HINT = "a fraction: 0.01 is 1 %"


def _per_cent_hint(values: list[float]) -> str:
    return ", ".join(f"{v / 100:g}" for v in values)


def fraction(value: str) -> float:
    """A relative size from 0 to below 1 (0.01 = 1 %), for argparse; ``2`` is refused with
    the fraction it probably meant."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {FRACTION_HINT}, got {value!r}") from None
    if not math.isfinite(number) or number < 0:
        raise argparse.ArgumentTypeError(f"expected {FRACTION_HINT}, from 0 to below 1, got {value!r}")
    if number >= 1:
        raise argparse.ArgumentTypeError(f"expected {FRACTION_HINT}, got {value!r} (that would be "
                                         f"{number:.0%}); for {number:g} % pass {_per_cent_hint([number])}")
    return number


def effect_size(value: str) -> float:
    """A minimum effect: a fraction above 0 and below 1. 0 would be a precision no run can
    reach (every row would run to its round cap and still say it could not resolve it)."""
    number = fraction(value)
    if number <= 0:
        raise argparse.ArgumentTypeError(f"expected {FRACTION_HINT}, above 0, got {value!r}: a minimum effect of 0 "
                                         "is a precision no run reaches; for 0.5 % pass 0.005")
    return number


def fraction_list(value: str) -> tuple[float, ...]:
    """``0.01,0.02,0.05``: distinct fractions above 0 and below 1, sorted, for argparse; a list
    in per cent (``1,2,5``) is refused with the fractions it probably meant."""
    try:
        numbers = sorted({float(v) for v in value.replace(" ", ",").split(",") if v})
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected fractions separated by commas (e.g. 0.01,0.02,0.05; "
                                         f"{FRACTION_HINT}), got {value!r}") from None
    if not numbers or not all(math.isfinite(v) and v > 0 for v in numbers):
        raise argparse.ArgumentTypeError(f"expected fractions above 0 (e.g. 0.01,0.02,0.05), got {value!r}")
    if any(v >= 1 for v in numbers):
        raise argparse.ArgumentTypeError(f"expected fractions ({FRACTION_HINT}), got {value!r}: per cent? "
                                         f"for {', '.join(f'{v:g}' for v in numbers)} % pass "
                                         f"{_per_cent_hint(numbers).replace(', ', ',')}")
    return tuple(numbers)
