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


def test_a_full_disk_names_the_file_it_could_not_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write or fsync that fails (disk full, a file-size limit) raises an OSError naming no
    file; the CLI's one line would say only "No space left on device". It names the file."""
    import errno

    from tritongate.atomicio import write_json_atomic

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    target = tmp_path / "results.json"
    with pytest.raises(OSError) as caught:
        write_json_atomic(target, {"rows": []})
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(target)
    assert list(tmp_path.iterdir()) == []
