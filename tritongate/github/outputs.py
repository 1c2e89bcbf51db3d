"""Step outputs through ``$GITHUB_OUTPUT``, written the way GitHub documents them.

GitHub ("Workflow commands": environment files, setting an output parameter) reads the file
as UTF-8 lines separated by newlines, each either ``{name}={value}`` or the start of a
multi-line value::

    {name}<<{delimiter}
    {value}
    {delimiter}

The runner splits a line at its first ``=`` (or ``<<``, whichever comes first) and, for the
second form, takes every line up to the first one that *is* the delimiter. So a name must not
hold ``=``, ``<<`` or a newline; a single-line value must not hold a newline (the rest of it
would be read as a line of its own: another output, chosen by whoever wrote the value); and
a multi-line value must not hold its delimiter. Here single-line values with a line break
are refused, never rewritten, and a multi-line value gets a random delimiter
(``ghadelimiter_<uuid4>``, the form of GitHub's own toolkit) checked to be absent from it.
Standard library only.
"""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path
from typing import Collection, Iterable, Mapping, Optional, Tuple, Union

Value = Union[str, int, float, bool, None]
Outputs = Union[Mapping[str, Value], Iterable[Tuple[str, Value]]]

# What a step's outputs can be named and still be read as `steps.<id>.outputs.<name>`.
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
_LINE_BREAKS = ("\n", "\r")  # \n ends a line for the runner; \r\n does on Windows runners
DELIMITER_PREFIX = "ghadelimiter_"


class OutputError(ValueError):
    """An output GitHub would misread (a bad name, a line break in a single-line value, a
    delimiter inside a multi-line value): refused, nothing written."""


def _name(name: str) -> str:
    if not isinstance(name, str) or not NAME.match(name):
        raise OutputError(f"output name {name!r} must be a letter or '_' then letters, digits, '_' or '-'")
    return name


def _text(name: str, value: Value) -> str:
    if isinstance(value, bool):  # before int: bool is an int
        text = "true" if value else "false"
    elif value is None:
        text = ""
    elif isinstance(value, (str, int, float)):
        text = str(value)
    else:
        raise OutputError(f"output {name}: a {type(value).__name__} is not a text, number or boolean")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise OutputError(f"output {name}: not valid UTF-8 text") from None
    return text


def line(name: str, value: Value) -> str:
    """``name=value`` and its newline; refuses a value with a line break in it."""
    text = _text(_name(name), value)
    if any(c in text for c in _LINE_BREAKS):
        raise OutputError(f"output {name}: a single-line value holds a line break ({text[:60]!r}); "
                          "write it as a multi-line output, or make it one line")
    return f"{name}={text}\n"


def block(name: str, value: Value, *, delimiter: Optional[str] = None) -> str:
    """The multi-line form. ``delimiter`` (default: a fresh random one) must not occur in
    the value anywhere, a stricter rule than GitHub's "not on a line of its own"."""
    text = _text(_name(name), value)
    if delimiter is None:
        delimiter = DELIMITER_PREFIX + uuid.uuid4().hex
        while delimiter in text:  # a value quoting this very delimiter: take another
            delimiter = DELIMITER_PREFIX + uuid.uuid4().hex
    elif not delimiter or any(c in delimiter for c in _LINE_BREAKS):
        raise OutputError(f"output {name}: delimiter {delimiter!r} must be one non-empty line")
    elif delimiter in text:
        raise OutputError(f"output {name}: the value holds its delimiter {delimiter!r}")
    return f"{name}<<{delimiter}\n{text}\n{delimiter}\n"


def render(outputs: Outputs, *, multiline: Collection[str] = ()) -> str:
    """The text for ``$GITHUB_OUTPUT``: names in ``multiline`` in the multi-line form, the
    rest one line each (refused when a value would not fit on one)."""
    items = outputs.items() if isinstance(outputs, Mapping) else outputs
    return "".join(block(k, v) if k in multiline else line(k, v) for k, v in items)


def append(path: Union[str, "os.PathLike[str]"], outputs: Outputs, *, multiline: Collection[str] = ()) -> str:
    """Check every output, then append them to ``path`` in one write; returns the text written.
    ``OutputError`` before anything is written; ``OSError`` when the file cannot be appended to."""
    text = render(outputs, multiline=multiline)
    with open(path, "a", encoding="utf-8", newline="\n") as f:
        f.write(text)
    return text


def output_path(environ: Optional[Mapping[str, str]] = None) -> Optional[Path]:
    """``$GITHUB_OUTPUT``, or None outside a GitHub Actions step."""
    value = (os.environ if environ is None else environ).get("GITHUB_OUTPUT")
    return Path(value) if value else None
