"""Whole lines from the read end of a pipe, never waiting past a deadline.

The tool talks to its own child processes (paired workers, batch workers, the GPU-turn partner)
one line at a time. A blocking ``readline`` on a pipe hangs on a half-written line, and a
buffered file object hides what it has read from ``select``; so each reader selects on the raw
descriptor, reads what is there and keeps the rest of a line for the next call.
"""

from __future__ import annotations

import os
import select
import time


class LineTooLong(ValueError):
    """A line ran past the reader's limit (what was read of it is dropped)."""


class LineReader:
    def __init__(self, fd: int, max_line: int) -> None:
        self.fd = fd
        self.max_line = max_line
        self._buffer = b""

    def read_line(self, deadline: float) -> bytes | None:
        """The next line without its newline, or None when ``deadline`` (``time.monotonic``)
        passed first. Raises EOFError once the writer closed the pipe, and LineTooLong."""
        while True:
            line, newline, rest = self._buffer.partition(b"\n")
            if newline:
                self._buffer = rest
                return line
            if len(self._buffer) > self.max_line:
                self._buffer = b""
                raise LineTooLong(f"a line of more than {self.max_line} bytes")
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                return None
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                raise EOFError("the writer closed the pipe")
            self._buffer += chunk
