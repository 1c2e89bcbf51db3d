"""The one choke point for text that comes from the code under test, a PR, or a file: op and
case names, kernel names, error messages, markers, policy keys. Everything a verdict or a
terminal shows from outside goes through here.

- ``neutralize``: control and invisible format characters (bidi overrides, zero-width
  spaces: they can make a name read as another) become visible ``\\u202e``-style escapes.
- ``markdown_cell``: safe inside a Markdown table cell, on one line: HTML is inert, and the
  characters that make links, mentions, tables, code or emphasis become entities. An
  underscore inside a word stays literal (GitHub does not read it as emphasis there), so
  ``grep attention_causal verdict.md`` works.
- ``terminal_text``: a rich ``Text`` that is never parsed as markup (``[bold]`` stays text).
"""

from __future__ import annotations

import unicodedata
from typing import Any

from rich.text import Text

_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;", "|": "&#124;", "*": "&#42;",
             "_": "&#95;", "`": "&#96;", "[": "&#91;", "]": "&#93;", "\\": "&#92;", "~": "&#126;", "@": "&#64;",
             "#": "&#35;", "!": "&#33;", "$": "&#36;"}


def neutralize(value: Any) -> str:
    """One line; control and format characters shown as escapes, not obeyed."""
    text = " ".join(str(value if value is not None else "–").split())
    return "".join(f"\\u{ord(ch):04x}" if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co") else ch
                   for ch in text)


def markdown_cell(value: Any) -> str:
    text = neutralize(value)
    out = []
    for i, ch in enumerate(text):
        if ch == "_" and 0 < i < len(text) - 1 and text[i - 1].isalnum() and text[i + 1].isalnum():
            out.append(ch)  # intraword: never emphasis on GitHub
        else:
            out.append(_ENTITIES.get(ch, ch))  # one pass: entities are never re-escaped
    return "".join(out)


def terminal_text(value: Any, style: str = "") -> Text:
    return Text(neutralize(value), style=style)
