"""The one choke point for text that comes from the code under test, a PR, or a file: op and
case names, kernel names, error messages, markers, policy keys. Everything a verdict or a
terminal shows from outside goes through here.

- ``neutralize``: control and invisible format characters (bidi overrides, zero-width
  spaces: they can make a name read as another) become visible ``\\u202e``-style escapes.
- ``markdown_cell``: safe inside a Markdown table cell, on one line: HTML is inert, and the
  characters that make links, mentions, tables, code or emphasis become entities; mentions,
  issue references and bare URLs are broken by an escaped zero-width space; a cell is cut
  at 500 characters (before escaping, so no entity is split). An
  underscore inside a word stays literal (GitHub does not read it as emphasis there), so
  ``grep attention_causal verdict.md`` works.
- ``terminal_text``: a rich ``Text`` that is never parsed as markup (``[bold]`` stays text).
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.text import Text

# Quotes stay as they are: with ``<`` escaped no HTML attribute can open, and a cell is never
# inside a link title, so an apostrophe reads as one in the raw file too.
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "|": "&#124;", "*": "&#42;",
             "_": "&#95;", "`": "&#96;", "[": "&#91;", "]": "&#93;", "\\": "&#92;", "~": "&#126;", "@": "&#64;",
             "#": "&#35;", "!": "&#33;", "$": "&#36;"}


def neutralize(value: Any) -> str:
    """One line; control and format characters shown as escapes, not obeyed."""
    text = " ".join(str(value if value is not None else "–").split())
    return "".join(f"\\u{ord(ch):04x}" if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co") else ch
                   for ch in text)


# GitHub links mentions, issue references and bare URLs in the *rendered* text, where an
# entity is already decoded: an (escaped) zero-width space after the sign breaks the pattern
# and stays invisible, as bots that quote release notes do (`@&#8203;user`).
_BREAK = "&#8203;"
MAX_CELL_CHARS = 500  # of the source text; verdict.json keeps the whole value


def markdown_cell(value: Any, max_chars: int = MAX_CELL_CHARS) -> str:
    text = neutralize(value)
    if len(text) > max_chars:  # cut before escaping: an entity is never split
        text = text[: max_chars - 1] + "…"
    out = []
    for i, ch in enumerate(text):
        if ch == "_" and 0 < i < len(text) - 1 and text[i - 1].isalnum() and text[i + 1].isalnum():
            out.append(ch)  # intraword: never emphasis on GitHub
        elif ch in "@#":
            out.append(_ENTITIES[ch] + _BREAK)  # no mention, no issue reference
        elif ch == ":" and text.startswith("//", i + 1):
            out.append("&#58;" + _BREAK)  # scheme://: no autolink
        elif ch == "." and i >= 3 and text[i - 3:i].lower() == "www":
            out.append(_BREAK + "&#46;")  # www.: no autolink
        else:
            out.append(_ENTITIES.get(ch, ch))  # one pass: entities are never re-escaped
    return "".join(out)


_URL = re.compile(r"https://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~/%+=&?,;:@!$-]*)?")
MAX_URL = 2000


def safe_url(url: str) -> str:
    """A link target for verdict.md: an https URL with none of the characters that end or
    break out of a Markdown link (spaces, quotes, brackets, parentheses, angle brackets)."""
    if len(url) > MAX_URL or not _URL.fullmatch(url):
        raise ValueError(f"{neutralize(url)[:120]!r} is not an https:// URL without spaces, quotes, "
                         "brackets or parentheses")
    return url


def code_block(text: str, language: str = "") -> str:
    """A fenced Markdown code block showing ``text`` literally (GitHub decodes no entity,
    makes no link or mention in it): the fence is longer than any backtick or tilde run
    inside, so no line can close it; control and format characters become escapes and tabs
    spaces, line by line."""
    lines = ["".join(f"\\u{ord(ch):04x}" if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co") else ch
                     for ch in line.replace("\t", "    ")) for line in text.splitlines()]
    longest = max((len(m.group()) for m in re.finditer(r"`+", "\n".join(lines))), default=0)
    fence = "`" * max(3, longest + 1)
    lang = language if re.fullmatch(r"[a-z]{0,12}", language) else ""
    return "\n".join([fence + lang, *lines, fence])


def terminal_text(value: Any, style: str = "") -> Text:
    from rich.text import Text  # the terminal's renderers only: the gate's Markdown needs no rich

    return Text(neutralize(value), style=style)


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A CSV cell a spreadsheet shows as text: a string starting with ``= + - @``, a tab or a
    carriage return (a formula to Excel, LibreOffice and Sheets: ``=HYPERLINK(...)``) gets a
    leading ``'`` unless it reads as a number (``-1.5``); every other value is kept exactly
    (the csv writer quotes line breaks)."""
    if not isinstance(value, str) or not value.startswith(_FORMULA_START):
        return value
    try:
        float(value)
        return value
    except ValueError:
        return "'" + value
