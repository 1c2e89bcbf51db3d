"""Unified diffs of canonical IR in which renumbering is not change (``ir.diff`` writes them).

Canonical IR numbers its values by first appearance (``ir.canonical``), so one op added shifts
every later ``%N``. Lines are aligned with the renumbered names set aside, then the aligned
lines are walked with a one-to-one base -> candidate name correspondence: a line that differs
only by a consistent renaming is context, one whose operands are other values than the lines
before it say is a change (even where its text reads the same). Where that shows more changed
lines than a plain diff, or none, the plain diff is shown: it never reads worse.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from typing import Literal, Sequence

# lines alike once names are set aside ("%N = arith.addi %N, %N : i32") are compared place by
# place; past this many pairs of places SequenceMatcher keeps its autojunk heuristic (a 5,000-line
# run of one such line took 1.7 s without it; the pr record's largest PTX diff has 121,000 pairs)
MAX_ALIKE_PAIRS = 1_000_000
Opcode = tuple[Literal["equal", "replace", "delete", "insert"], int, int, int, int]  # difflib's


def unified_diff(base_text: str, cand_text: str, base_rel: str, cand_rel: str,
                 names: re.Pattern[str] | None = None) -> tuple[str, int, int]:
    """(diff text, added lines, removed lines) of two normalized texts; ("", 0, 0) if equal.
    ``names`` (``canonical.renumbered_names``): lines that differ only in these names, and
    consistently so, are context (``renumbering_opcodes``), shown as the candidate's; where that
    leaves no change (names the pattern does not know) or more changed lines than the plain diff,
    the plain diff is shown. None: lines must be equal."""
    if base_text == cand_text:
        return "", 0, 0
    base, cand = _lines(base_text), _lines(cand_text)
    opcodes: list[Opcode] = renumbering_opcodes(base, cand, names) if names is not None else []
    plain: list[Opcode] = difflib.SequenceMatcher(None, base, cand).get_opcodes()
    if not 0 < _changed(opcodes) <= _changed(plain):  # never more changed lines than the plain diff
        opcodes = plain
    lines = [f"--- a/{base_rel}", f"+++ b/{cand_rel}"]
    added = removed = 0
    for group in _Opcodes(opcodes).get_grouped_opcodes(3):
        (_, i1, _, j1, _), (_, _, i2, _, j2) = group[0], group[-1]
        lines.append(f"@@ -{_hunk_range(i1, i2)} +{_hunk_range(j1, j2)} @@")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":  # the candidate's text: with the added lines it reads as the new code
                lines += [" " + line for line in cand[j1:j2]]
                continue
            lines += ["-" + line for line in base[i1:i2]] + ["+" + line for line in cand[j1:j2]]
            added, removed = added + j2 - j1, removed + i2 - i1
    return ("\n".join(lines) + "\n", added, removed) if len(lines) > 2 else ("\n", 0, 0)


def _lines(text: str) -> list[str]:
    """``text``'s lines, split at newlines only (a form feed inside a line is part of it): texts
    that end in a newline, as canonical ones do, have equal lines only when equal."""
    lines = text.split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def renumbering_opcodes(base: Sequence[str], cand: Sequence[str], names: re.Pattern[str]) -> list[Opcode]:
    """``difflib`` opcodes of two canonical texts' lines, aligned with the ``names`` masked, then
    walked top down carrying a one-to-one correspondence of base to candidate names: an
    aligned pair whose names map as earlier pairs mapped them (a name seen first in this pair
    joins the correspondence) is ``equal``; one that breaks it (a rewired operand) is a change."""
    b_split, c_split = [_split_names(line, names) for line in base], [_split_names(line, names) for line in cand]
    b_keys, c_keys = [k for k, _ in b_split], [k for k, _ in c_split]
    n = min(len(b_keys), len(c_keys))  # lines alike at both ends: aligned as they stand, not matched
    head = next((k for k in range(n) if b_keys[k] != c_keys[k]), n)
    tail = next((k for k in range(n - head) if b_keys[-1 - k] != c_keys[-1 - k]), n - head)
    mid_b, mid_c = b_keys[head:len(b_keys) - tail], c_keys[head:len(c_keys) - tail]
    in_cand = Counter(mid_c)
    alike = sum(in_cand[k] for k in mid_b)  # the pairs of places SequenceMatcher would compare
    matcher = difflib.SequenceMatcher(None, mid_b, mid_c, autojunk=alike > MAX_ALIKE_PAIRS)
    to_cand: dict[str, str] = {}
    to_base: dict[str, str] = {}
    out: list[Opcode] = []
    for tag, i1, i2, j1, j2 in [("equal", 0, head, 0, head)] + [
            (t, i1 + head, i2 + head, j1 + head, j2 + head) for t, i1, i2, j1, j2 in matcher.get_opcodes()] + [
            ("equal", len(b_keys) - tail, len(b_keys), len(c_keys) - tail, len(c_keys))]:
        if tag != "equal":
            for k in range(i2 - i1 if i2 - i1 == j2 - j1 else 0):  # lines edited in place
                _pair_new(b_split[i1 + k][1], c_split[j1 + k][1], to_cand, to_base)
            _extend(out, "replace", i1, i2, j1, j2)
            continue
        for i, j in zip(range(i1, i2), range(j1, j2)):
            same = _correspond(b_split[i][1], c_split[j][1], to_cand, to_base)
            _extend(out, "equal" if same else "replace", i, i + 1, j, j + 1)
    return out


def _changed(opcodes: list[Opcode]) -> int:
    return sum(i2 - i1 + j2 - j1 for tag, i1, i2, j1, j2 in opcodes if tag != "equal")


def _split_names(line: str, names: re.Pattern[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the text around the names, each name with its numbering's ``ns`` before it): two lines
    whose first parts are equal differ only in their names."""
    text: list[str] = []
    found: list[str] = []
    start = 0
    for m in names.finditer(line):
        if m.group("name") is None:  # a string literal: text
            continue
        text.append(line[start:m.start("name")])
        found.append(f"{m.group('ns') or ''}{m.group('name')}")
        start = m.end("name")
    text.append(line[start:])
    return tuple(text), tuple(found)


def _correspond(base_names: tuple[str, ...], cand_names: tuple[str, ...], to_cand: dict[str, str],
                to_base: dict[str, str]) -> bool:
    """Whether each base name maps to the candidate name beside it; a pair of names neither side
    has mapped yet (a definition, or a use of a value only a changed line defined) is added."""
    same = True
    for b, c in zip(base_names, cand_names):
        if b not in to_cand and c not in to_base:
            to_cand[b], to_base[c] = c, b
        elif to_cand.get(b) != c:
            same = False
    return same


def _pair_new(base: tuple[str, ...], cand: tuple[str, ...], to_cand: dict[str, str], to_base: dict[str, str]) -> None:
    """The names a changed line pair brings in, paired in order within each numbering: left to a
    later line's first use, values changed lines define could pair crosswise (a swap as context)."""
    fresh = [c for c in dict.fromkeys(cand) if c not in to_base]
    for b in (b for b in dict.fromkeys(base) if b not in to_cand):
        if (c := next((c for c in fresh if c.rstrip("0123456789") == b.rstrip("0123456789")), None)) is not None:
            fresh.remove(c)
            to_cand[b], to_base[c] = c, b


def _extend(out: list[Opcode], tag: Literal["equal", "replace"], i1: int, i2: int, j1: int, j2: int) -> None:
    """Append an opcode, merged into the last one when both are equal or both changes (a
    change's removed lines then all precede its added ones)."""
    if out and (out[-1][0] == "equal") == (tag == "equal"):
        last = out.pop()
        i1, j1 = last[1], last[3]
    out.append((tag, i1, i2, j1, j2))


class _Opcodes(difflib.SequenceMatcher[str]):
    """Given opcodes, grouped into hunks by ``SequenceMatcher.get_grouped_opcodes``."""

    def __init__(self, opcodes: list[Opcode]) -> None:
        super().__init__(None, [], [])
        self._given = opcodes

    def get_opcodes(self) -> list[Opcode]:
        return list(self._given)  # a copy: grouping edits the first and last in place


def _hunk_range(start: int, stop: int) -> str:
    """A hunk header's range as ``difflib.unified_diff`` writes it (1-based; an empty range names
    the line before it)."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start if length == 0 else start + 1},{length}"
