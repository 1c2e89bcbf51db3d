"""Atomic writes: a reader sees the old file or the new one, never half of either."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tritongate.atomicio import write_pieces_atomic


def test_pieces_are_written_in_order_with_a_plain_files_mode(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    write_pieces_atomic(path, (str(i) for i in range(5)))
    assert path.read_text() == "01234"
    mask = os.umask(0)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask


def test_a_failure_part_way_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    path.write_text("old")

    def pieces():
        yield "new and half"
        raise RuntimeError("the encoder failed")

    with pytest.raises(RuntimeError):
        write_pieces_atomic(path, pieces())
    assert path.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["doc.json"]
