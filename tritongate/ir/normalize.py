"""IR text normalized for comparison: what differs between two compiles of the same code only
because of where it was compiled (source locations, absolute paths, PTX debug info) removed,
the rest kept byte for byte, so a non-empty diff of normalized text means different code.

Raw TTGIR carries source locations (``#loc`` aliases, ``loc(...)`` suffixes) with absolute
paths, so the same kernel compiled from two checkouts differs line by line although the
code is the same; PTX carries ``.file``/``.loc`` lines and debug sections the same way.
"""

from __future__ import annotations

import re


# what strip_locations acts on: a string literal, a ``loc(`` that is not the tail of a
# longer name (``@myloc(``), a location alias definition at a line start (``#loc12 = loc(``)
_LOC_TOKEN = re.compile(r'"|(?<![\w.$@%#-])loc\(|^#loc[\w$.-]*[ \t]*=[ \t]*loc\(', re.M)
# the directories of an absolute path: inside a quoted string (may hold spaces), or bare
_QUOTED_DIRS = re.compile(r'"/(?:[^"\\\n/]*/)+')
_BARE_DIRS = re.compile(r"(?<![\w.~/:-])/(?:[\w.+@~-]+/)+(?=[\w.+@~-])")


def _skip_string(text: str, pos: int) -> int:
    """Index after the MLIR string literal opening at ``pos``; strings never span lines
    (MLIR escapes newlines), so an unterminated one ends at the line end."""
    i = pos + 1
    while i < len(text):
        ch = text[i]
        if ch == "\\" and text.startswith("\n", i + 1):
            return i + 1  # a stray backslash at the line end escapes nothing
        if ch == "\\":
            i += 2
            continue
        if ch == '"':
            return i + 1
        if ch == "\n":
            return i
        i += 1
    return len(text)


def _close_paren(text: str, open_pos: int) -> int:
    """Index after the ``)`` matching the ``(`` at ``open_pos`` (strings skipped), or -1
    when unbalanced on that line: nested ``callsite(...)``, ``fused[...]`` and ``"a(b"``
    paths are fine; MLIR prints a location on one line, so damage never eats the next."""
    depth = 0
    i = open_pos
    while i < len(text):
        ch = text[i]
        if ch == "\n":
            return -1
        if ch == '"':
            i = _skip_string(text, i)
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


def _line_end(text: str, pos: int) -> int:
    """Index after the newline ending the line that holds ``pos`` (or the text's end)."""
    nl = text.find("\n", pos)
    return len(text) if nl < 0 else nl + 1


def strip_locations(text: str) -> str:
    """``text`` without ``#locN = loc(...)`` lines and ``loc(...)`` suffixes (with the blanks
    before them). Quoted strings are left alone; an unbalanced ``loc(`` stays as it is."""
    out: list[str] = []
    i = 0
    while (m := _LOC_TOKEN.search(text, i)) is not None:
        out.append(text[i:m.start()])
        token = m.group()
        if token == '"':  # copied whole: a "loc(" inside a string is data
            i = _skip_string(text, m.start())
            out.append(text[m.start():i])
            continue
        end = _close_paren(text, m.end() - 1)
        if end < 0:
            out.append(token)
        elif token.startswith("#"):
            end = _line_end(text, end)  # the whole definition line goes
        else:
            _drop_trailing_blanks(out)
        i = m.end() if end < 0 else end
    out.append(text[i:])
    return "".join(out)


def _drop_trailing_blanks(out: list[str]) -> None:
    """Remove the spaces/tabs just emitted (the separator before a removed ``loc(...)``);
    string chunks end with their quote, so they are never touched."""
    while out:
        kept = out[-1].rstrip(" \t")
        if kept:
            out[-1] = kept
            return
        out.pop()


def strip_abs_paths(text: str) -> str:
    """Absolute paths reduced to their file name: two checkouts or build dirs then agree."""
    return _BARE_DIRS.sub("", _QUOTED_DIRS.sub('"', text))


def _normalize_lines(text: str) -> str:
    """Trailing blanks (and CRs) off every line, trailing empty lines dropped, one final
    newline: editors, transfers and the removal of suffixes leave these differences."""
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n" if lines else ""


def normalize_ttgir(text: str) -> str:
    """TTGIR (or TTIR) from two builds or checkouts made comparable: locations and absolute
    paths removed, trailing whitespace normalized, everything else byte for byte.
    Idempotent: ``normalize_ttgir(normalize_ttgir(t)) == normalize_ttgir(t)``."""
    return _normalize_lines(strip_abs_paths(strip_locations(text)))


_PTX_LINE_INFO = re.compile(r"^\s*\.(?:file|loc)\b")
# labels emitted only for debug info (scopes, function bounds); branch targets are $L__BB*
_PTX_DEBUG_LABEL = re.compile(r"^\$L__(?:tmp|func_begin|func_end)\d+:\s*$")
_PTX_DEBUG_SECTION = re.compile(r"^\s*\.section\s+\.debug_\w*")
_PTX_VERSION = re.compile(r"^(\s*)\.version\s+\d+\.\d+\s*$")


def normalize_ptx(text: str) -> str:
    """PTX from two builds or checkouts made comparable: the ``//`` header comment block,
    ``.file``/``.loc`` lines, debug-only labels and ``.debug_*`` sections (DWARF with the
    source path as bytes) dropped, ``.version X.Y`` (follows the bundled ptxas) made
    generic, absolute paths reduced to file names. Idempotent."""
    lines = text.replace("\r\n", "\n").split("\n")
    start = 0
    while start < len(lines) and (not lines[start].strip() or lines[start].lstrip().startswith("//")):
        start += 1  # the header: "Generated by LLVM NVPTX Back-End", toolchain versions
    kept = [_PTX_VERSION.sub(r"\1.version X.Y", line) for line in _without_debug_sections(lines[start:])
            if not _PTX_LINE_INFO.match(line) and not _PTX_DEBUG_LABEL.match(line)]
    return _normalize_lines(strip_abs_paths("\n".join(kept)))


def _without_debug_sections(lines: list[str]) -> list[str]:
    """``lines`` without ``.section .debug_* { ... }`` blocks (braces counted outside ``//``
    comments; a section whose brace never opens drops only its own line)."""
    out: list[str] = []
    depth, opened, skipping = 0, False, False
    for line in lines:
        code = line.split("//", 1)[0]
        if not skipping and _PTX_DEBUG_SECTION.match(line):
            depth, opened, skipping = 0, False, True
        elif skipping and not opened and code.strip() and not code.strip().startswith("{"):
            skipping = False  # no block follows the directive
        if not skipping:
            out.append(line)
            continue
        depth += code.count("{") - code.count("}")
        opened = opened or "{" in code
        if opened and depth <= 0:
            skipping = False
    return out
