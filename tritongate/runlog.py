"""``run.log``: the plain-text record of a run, every marker line included.

Terminals get colour; the log never does, so it stays greppable and diffable.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TextIO

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


class RunLog:
    """Append-only, line-buffered, ANSI-free log file."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._file: TextIO = open(self.path, "a", encoding="utf-8", buffering=1)

    def write(self, text: str) -> None:
        clean = strip_ansi(text)
        self._file.write(clean if clean.endswith("\n") else clean + "\n")

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()

    def __enter__(self) -> "RunLog":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
