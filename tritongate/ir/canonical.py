"""IR text in a canonical form: names that only say in which order a compiler numbered things
renumbered by first appearance, so two compiles of the same code compare equal at each level.

Every renaming here is a bijection of the text's tokens (two distinct names never get the same
canonical name), so canonical texts are equal only when the code is the same up to names.
What stays byte for byte: string literals, constants and literals,
symbols (``@kernel``), attribute aliases (``#blocked1``), PTX register declarations
(``.reg .b32 %r<55>``: the count is code) and SASS.

- TTGIR (after ``normalize_ttgir`` removed locations): every SSA value (``%12``,
  ``%offs_3``, ``%cst_0``, ``%x_ptr``) -> ``%0, %1, ...``; ``^bb3`` -> ``^bb0, ...``.
- LLVM IR: ``%N`` values and ``N:`` block labels, ``!N`` metadata and ``#N`` attribute
  groups renumbered; comments, ``!dbg`` attachments, debug-info metadata and records, the
  module id, ``source_filename`` and ``!llvm.ident`` dropped.
- PTX (after ``normalize_ptx``): comments dropped; virtual registers of each declared class
  (``%r``, ``%rd``, ``%p``, ...) renumbered per class; special registers (``%tid.x``,
  ``%envreg3``) are not declared and stay.

``renumbered_names`` gives a diff the names a level's canonical form renumbered (``ir.diff``
aligns lines that differ only in them).
"""

from __future__ import annotations

import functools
import re

from tritongate.ir.normalize import _normalize_lines, normalize_ptx, normalize_ttgir, strip_abs_paths

# --------------------------------------------------------------------------- TTGIR (MLIR)

# a string literal (copied whole), or an SSA value / block name not inside a longer word
_MLIR_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|(?<![\w$.@%#^-])(?P<ns>[%^])(?P<name>[\w$.-]+)')


def canonical_mlir_names(text: str) -> str:
    """SSA values (``%12``, ``%offs_3``, ``%c1_i32``, ``%x_ptr``, ``%arg0``) renamed ``%0, %1,
    ...`` and block labels ``^bb0, ...`` in order of first appearance. Every value, named or
    not: a build that names values after the source's variables (name locations) and one that
    numbers them emit the same code; the definition line still shows each constant's value."""
    values: dict[str, str] = {}
    blocks: dict[str, str] = {}

    def rename(m: re.Match[str]) -> str:
        sigil, name = m.group(1), m.group(2)
        if sigil is None:  # a string literal
            return m.group()
        if sigil == "^":
            return "^" + blocks.setdefault(name, f"bb{len(blocks)}")
        return "%" + values.setdefault(name, str(len(values)))

    return _MLIR_TOKEN.sub(rename, text)


def canonical_ttgir(text: str) -> str:
    """TTGIR (or TTIR) with locations and paths removed (``normalize_ttgir``) and its value
    and block names canonical. Idempotent."""
    return canonical_mlir_names(normalize_ttgir(text))


# --------------------------------------------------------------------------- LLVM IR

# whole lines that only say where or by what the module was made, or carry debug info
_LLVM_DROP_LINE = re.compile(
    r"^\s*(?:; ModuleID\b|source_filename\s*=|!llvm\.ident\s*=|!llvm\.dbg\.cu\s*=|"
    r"!\d+\s*=\s*(?:distinct\s+)?!DI|#dbg_)")
# a string (LLVM escapes quotes as \22: none inside), a comment, or a numbered name
_LLVM_TOKEN = re.compile(r'"[^"\n]*"|;.*$|(?<![\w$.-])([%!#])(\d+)(?![\w$.-])|^(\d+)(?=:)', re.M)
_LLVM_DBG = re.compile(r"(?:,\s*|[ \t]+)!dbg\s+!\d+")  # on an instruction or a define


def canonical_llir(text: str) -> str:
    """LLVM IR with debug info, comments and the module's origin dropped and its numbered
    values, labels, metadata and attribute groups renumbered by first appearance. Idempotent."""
    # a line that is only a comment ("; Function Attrs: ...") goes; blank lines stay
    lines = [line for line in text.replace("\r\n", "\n").split("\n")
             if not _LLVM_DROP_LINE.match(line) and not line.lstrip().startswith(";")]
    lines = _without_orphan_metadata(lines)
    maps: dict[str, dict[str, str]] = {"%": {}, "!": {}, "#": {}}

    def rename(m: re.Match[str]) -> str:
        token = m.group()
        if token.startswith('"'):
            return token
        if token.startswith(";"):  # a trailing comment ("; preds = %4")
            return ""
        if m.group(3) is not None:  # an unnamed block's label: shares the values' numbering
            return maps["%"].setdefault(m.group(3), str(len(maps["%"])))
        seen = maps[m.group(1)]
        return m.group(1) + seen.setdefault(m.group(2), str(len(seen)))

    body = _LLVM_TOKEN.sub(rename, _LLVM_DBG.sub("", "\n".join(lines)))
    return _normalize_lines(strip_abs_paths(body))


_LLVM_MD_DEF = re.compile(r"^!(\d+)\s*=")
_LLVM_MD_REF = re.compile(r"(?<![\w$.-])!(\d+)(?![\w$.-])")


def _without_orphan_metadata(lines: list[str]) -> list[str]:
    """``lines`` without the metadata nodes nothing refers to any more (those only the dropped
    debug info used, ``!2 = !{}``), repeated until none is left."""
    while True:
        used = {ref for line in lines for ref in _LLVM_MD_REF.findall(_LLVM_MD_DEF.sub("", line, count=1))}
        kept = [line for line in lines if (m := _LLVM_MD_DEF.match(line)) is None or m.group(1) in used]
        if len(kept) == len(lines):
            return lines
        lines = kept


# --------------------------------------------------------------------------- PTX

_PTX_REG_DECL = re.compile(r"^\s*\.reg\s+[.\w]+\s+%([A-Za-z_]+)<\d+>", re.M)
_PTX_REG = re.compile(r"(?<![\w$.%])%([A-Za-z_]+)(\d+)(?![\w$.])")
_PTX_COMMENT = re.compile(r"[ \t]*//.*$", re.M)


def canonical_ptx(text: str) -> str:
    """PTX normalized (``normalize_ptx``), comments dropped, and the virtual registers of
    each class its ``.reg`` lines declare renumbered per class by first use (from 1); the
    declarations stay as they are, so a different register count still shows. Idempotent."""
    text = normalize_ptx(text)
    lines = [line for line in text.split("\n") if not line.lstrip().startswith("//")]
    text = _PTX_COMMENT.sub("", "\n".join(lines))
    classes = set(_PTX_REG_DECL.findall(text))
    maps: dict[str, dict[str, str]] = {}

    def rename(m: re.Match[str]) -> str:
        cls, number = m.group(1), m.group(2)
        if cls not in classes:  # a special register (%envreg3, %clock64) is a name, not a number
            return m.group()
        seen = maps.setdefault(cls, {})
        return f"%{cls}{seen.setdefault(number, str(len(seen) + 1))}"

    return _normalize_lines(_PTX_REG.sub(rename, text))


# --------------------------------------------------------------------------- SASS

def canonical_sass(text: str) -> str:
    """SASS as ``triton.tools.disasm`` prints it (no addresses, no registers to rename:
    they are allocated); trailing blanks normalized only."""
    return _normalize_lines(text.replace("\r\n", "\n"))


# --------------------------------------------------------------------------- names, for a diff

# the numbered names of canonical LLVM IR as ``_LLVM_TOKEN`` finds them, a label (``12:``) in the
# values' numbering (no ``ns``), strings and comments matched whole
_LLVM_NAMES = re.compile(r'"[^"\n]*"|;.*$|(?:(?<![\w$.-])(?:%|(?P<ns>[!#]))|^(?=\d+:))(?P<name>\d+)(?![\w$.-])')


@functools.lru_cache(maxsize=64)
def _ptx_names(classes: frozenset[str]) -> re.Pattern[str]:
    """``_PTX_REG`` limited to ``classes`` (longest first; each class its own numbering)."""
    alternatives = "|".join(sorted(map(re.escape, classes), key=lambda c: (-len(c), c)))
    return re.compile(rf"(?<![\w$.%])%(?P<ns>{alternatives})(?P<name>\d+)(?![\w$.])")


def renumbered_names(level: str, base: str, cand: str) -> re.Pattern[str] | None:
    """The names ``level``'s canonical form renumbered, as a pattern over a line of the canonical
    texts ``base`` and ``cand``: group ``name`` is a renumbered name, ``ns`` (when matched) the
    numbering it belongs to; a match without ``name`` (a string literal) is text. The tokens are
    those the canonicaliser renames, so a line that matches another except in them differs only
    by numbering. PTX: the register classes both texts declare (a class one side lacks names a
    special register there, a fixed name). None: the level renames nothing (SASS)."""
    if level == "ttgir":
        return _MLIR_TOKEN
    if level == "llir":
        return _LLVM_NAMES
    if level == "ptx":
        classes = frozenset(_PTX_REG_DECL.findall(base)) & frozenset(_PTX_REG_DECL.findall(cand))
        return _ptx_names(classes) if classes else None
    return None


CANONICAL = {"ttgir": canonical_ttgir, "llir": canonical_llir, "ptx": canonical_ptx, "sass": canonical_sass}
