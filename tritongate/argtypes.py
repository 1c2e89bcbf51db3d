"""Argument types shared by every command line (``tritongate``, its ``baseline`` and
``batch`` commands): each refuses a bad value with one line, before anything runs."""

from __future__ import annotations

import argparse
import math


def nonempty_text(value: str) -> str:
    """An option's text: empty is an error, not "absent" (an unset variable in a CI script
    would otherwise silently change what runs)."""
    if not value.strip():
        raise argparse.ArgumentTypeError("must not be empty (an unset variable in a script?)")
    return value


def finite_number(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {value!r}") from None
    if not math.isfinite(number):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {value!r}")
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
