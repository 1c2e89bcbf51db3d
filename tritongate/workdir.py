"""A working folder held by the process that writes it: a lock that refuses a second process
(``batch``, ``calibrate``), and whether a folder held open is still the one at its path (a run
or pair directory removed mid-run is an error, never finished in a folder made again)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import Iterator

from tritongate.errors import UsageError


@contextlib.contextmanager
def held_alone(lock: Path, busy: str) -> Iterator[None]:
    """Hold ``lock`` (created if need be) for this process alone; ``UsageError(busy)`` at once
    when another process holds it. The lock ends with the process, a killed one included."""
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UsageError(busy) from None
        yield
    finally:
        os.close(fd)


def still_there(held: int, path: Path) -> bool:
    """Whether the folder open as ``held`` is still the one at ``path``: not removed, nor
    removed and made again (held open, its inode cannot be reused meanwhile)."""
    mine = os.fstat(held)
    try:
        now = os.stat(path)
    except OSError:
        return False
    return mine.st_nlink > 0 and (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino)
