"""At which level two builds' code of one variant first differs: TTGIR, LLVM IR, PTX, SASS,
or only the cubin's bytes.

``tritongate ir`` keeps ``<variant>.llir``, ``.ptx`` and ``.sass`` beside each ``.ttgir``; a
GPU run keeps TTGIR only. Each level is compared in canonical form (``ir.canonical``), top
down; the first that differs is where the change entered. Where a level is not kept on both
sides the walk stops: a cubin that differs is then ``below_<last equal level>``.

``<ir-diff>/levels.tsv``: one line per compared variant (``LEVEL_COLUMNS``): each level's
state (``same``/``differs``/``absent``; the cubin's from the binary hashes), ``first_level``
and the diffs of the levels below TTGIR that differ (written only when TTGIR is equal: below
a TTGIR change they only repeat it).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Callable, Mapping

from tritongate.ir.canonical import CANONICAL

TEXT_LEVELS = ("ttgir", "llir", "ptx", "sass")
LEVELS = (*TEXT_LEVELS, "cubin")
SAME, DIFFERS, ABSENT = "same", "differs", "absent"
LEVELS_FILE = "levels.tsv"
LEVEL_COLUMNS = ("case", "kernel", "name", "status", "first_level", *LEVELS, "level_diffs")
TITLES = {"ttgir": "TTGIR", "llir": "LLVM IR", "ptx": "PTX", "sass": "SASS", "cubin": "binary only"}


def title(first_level: str) -> str:
    """``first_level`` for people: ``PTX``, ``binary only``, ``below TTGIR (lower IR not kept)``."""
    if first_level.startswith("below_"):
        return f"below {TITLES.get(first_level[6:], first_level[6:])} (lower IR not kept)"
    return TITLES.get(first_level, first_level or "identical")


def label(first_level: str, cubin_same: bool) -> str:
    """``title``, and for a text that differs above a cubin that does not (``add.rn.f32`` for
    ``add.f32``: ptxas emits the same code) "PTX text only (cubin identical)"."""
    return f"{title(first_level)} text only (cubin identical)" if cubin_same and first_level in TEXT_LEVELS \
        else title(first_level)


@dataclass(frozen=True)
class LevelCompare:
    """One variant's levels: (level, state) top down, the first differing level ("" when the
    code is the same as far as kept), and (level, base text, cand text) of the text levels
    below TTGIR that differ, canonical (to diff)."""

    states: tuple[tuple[str, str], ...]
    first_level: str
    differing: tuple[tuple[str, str, str], ...] = ()


def _state(base: str | None, cand: str | None, level: str) -> tuple[str, str, str]:
    if base is None or cand is None:
        return ABSENT, "", ""
    if base == cand:  # byte-equal (most are): canonicalising is the slow part
        return SAME, "", ""
    b, c = CANONICAL[level](base), CANONICAL[level](cand)
    return (SAME, "", "") if b == c else (DIFFERS, b, c)


def compare_levels(ttgir_equal: bool, read: Callable[[str, str], str | None], base_hash: str,
                   cand_hash: str) -> LevelCompare:
    """``ttgir_equal``: the canonical TTGIRs agree; ``read(side, level)``: a side's ("base",
    "cand") raw text at a level below TTGIR, or None when not kept; the hashes: of each cubin
    ("" when not hashed)."""
    states: list[tuple[str, str]] = [("ttgir", SAME if ttgir_equal else DIFFERS)]
    differing: list[tuple[str, str, str]] = []
    for level in TEXT_LEVELS[1:]:
        state, b, c = _state(read("base", level), read("cand", level), level)
        states.append((level, state))
        if state == DIFFERS:
            differing.append((level, b, c))
    cubin = ABSENT if not (base_hash and cand_hash) else SAME if base_hash == cand_hash else DIFFERS
    states.append(("cubin", cubin))
    return LevelCompare(tuple(states), first_level(dict(states)), tuple(differing) if ttgir_equal else ())


def first_level(states: Mapping[str, str]) -> str:
    """The first level whose state is ``differs``, top down; a level not kept on a side stops
    the walk (a differing cubin is then ``below_<last equal level>``); "" when nothing differs."""
    last = ""
    for level in TEXT_LEVELS:
        state = states.get(level, ABSENT)
        if state == DIFFERS:
            return level
        if state == ABSENT:
            return f"below_{last}" if last and states.get("cubin") == DIFFERS else ""
        last = level
    return "cubin" if states.get("cubin") == DIFFERS else ""


def listed_diffs(text: str) -> list[str]:
    """The level diff paths a ``levels.tsv`` lists (to remove the stale ones); [] if unreadable."""
    try:
        return [p for rec in csv.DictReader(io.StringIO(text, newline=""), delimiter="\t")
                for p in (rec.get("level_diffs") or "").split(",") if p]
    except csv.Error:
        return []
