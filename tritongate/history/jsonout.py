"""``history.json`` written a series at a time, atomically.

A year of a deep scan is ~100 MB of JSON: as one object tree, one string and its bytes it held
several times its size (most of ``history``'s peak memory). Written item by item with the same
encoder settings, the file is byte for byte ``json.dumps(doc, allow_nan=False) + "\\n"``.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Mapping

from tritongate.atomicio import write_pieces_atomic


def chunks(doc: Mapping[str, Any]) -> Iterator[str]:
    """The text of ``json.dumps(doc, allow_nan=False)``, in pieces; an iterator value (a
    generator: each element built only when written) is encoded as a list, element by element."""
    encode = json.JSONEncoder(allow_nan=False).encode  # json.dumps' own settings
    yield "{"
    for i, (key, value) in enumerate(doc.items()):
        yield f"{', ' if i else ''}{encode(key)}: "
        if isinstance(value, Iterator):
            yield "["
            for j, item in enumerate(value):
                yield f"{', ' if j else ''}{encode(item)}"
            yield "]"
        else:
            yield encode(value)
    yield "}"


def write_json_chunks_atomic(path: Path, doc: Mapping[str, Any]) -> None:
    """``doc`` as one line of JSON (and a newline) in ``path``, replaced atomically (a reader
    sees the old file or the new one, never half of either)."""
    write_pieces_atomic(path, itertools.chain(chunks(doc), ("\n",)))
