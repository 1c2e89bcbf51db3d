"""Atomic file writes: a reader sees the old file or the new one, never half of either; and
``jsonable``, what a written value becomes when JSON cannot hold it as it is."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_umask()  # what open() would give: mkstemp's files are 0600


def jsonable(value: Any) -> Any:
    """``value`` as JSON can hold it: sequences as lists, mapping keys as text, anything else
    that is not a JSON scalar as its ``str`` (a dtype, a Triton constexpr)."""
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def write_bytes_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write to a temp file in the same directory, fsync, then rename over ``path``; the file
    gets the mode a plain write would (the user's umask), not the temp file's 0600.
    ``durable=False`` leaves out the fsync: still atomic for any reader and through a crash
    of the writing process, not through a crash of the machine (for files rewritten often,
    whose last version is written durably)."""
    _replace(path, (data,), durable=durable)


def write_pieces_atomic(path: Path, pieces: Iterable[str]) -> None:
    """Text written piece by piece (a document too large to hold as one string), atomically
    and durably as ``write_bytes_atomic``: a failure part-way leaves ``path`` as it was."""
    _replace(path, (piece.encode("utf-8") for piece in pieces), durable=True)


def _replace(path: Path, chunks: Iterable[bytes], *, durable: bool) -> None:
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, _FILE_MODE)
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError) and exc.filename is None:  # a write or fsync names no file: name it
            raise type(exc)(exc.errno, exc.strerror or str(exc), str(path)) from exc
        raise


def write_text_atomic(path: Path, text: str, *, durable: bool = True) -> None:
    write_bytes_atomic(path, text.encode("utf-8"), durable=durable)


def write_json_atomic(path: Path, data: Any, *, indent: int | None = 1) -> None:
    """``indent=None`` writes one line: Python's json encodes that in C, an indented document
    in pure Python (several times slower; it matters for documents of many megabytes)."""
    write_text_atomic(path, json.dumps(data, indent=indent, sort_keys=False, allow_nan=False) + "\n")
