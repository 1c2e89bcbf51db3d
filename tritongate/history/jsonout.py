"""``history.json`` written a series at a time, atomically.

A year of a deep scan is ~100 MB of JSON: built as one object tree, then one string, then
its bytes, it held several times its own size at once (most of the peak memory of
``history``). Written here item by item with the same encoder settings, the file is byte for
byte what ``json.dumps(doc, allow_nan=False) + "\\n"`` gives.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from tritongate.atomicio import write_pieces_atomic


class Items:
    """A list value written one element at a time (each element built only when written)."""

    def __init__(self, items: Iterable[Any]) -> None:
        self.items = items


def chunks(doc: Mapping[str, Any]) -> Iterator[str]:
    """The text of ``json.dumps(doc, allow_nan=False)``, in pieces; an ``Items`` value is
    encoded element by element."""
    encode = json.JSONEncoder(allow_nan=False).encode  # json.dumps' own settings
    yield "{"
    for i, (key, value) in enumerate(doc.items()):
        yield f"{', ' if i else ''}{encode(key)}: "
        if isinstance(value, Items):
            yield "["
            for j, item in enumerate(value.items):
                yield f"{', ' if j else ''}{encode(item)}"
            yield "]"
        else:
            yield encode(value)
    yield "}"


def write_json_chunks_atomic(path: Path, doc: Mapping[str, Any]) -> None:
    """``doc`` as one line of JSON (and a newline) in ``path``: written to a temporary file in
    the same folder, synced, then renamed over ``path``, so a reader sees the old file or the
    new one, never half of either."""
    write_pieces_atomic(path, itertools.chain(chunks(doc), ("\n",)))
