"""The line reader every child-process protocol uses: whole lines, a deadline that holds on a
half-written line, the writer's end, and a line too long, driven through real pipes."""

from __future__ import annotations

import os
import time

import pytest

from tritongate.linepipe import LineReader, LineTooLong


@pytest.fixture
def pipe():
    r, w = os.pipe()
    yield r, w
    for fd in (r, w):
        try:
            os.close(fd)
        except OSError:
            pass


def test_lines_written_together_or_in_pieces_come_out_whole(pipe) -> None:
    r, w = pipe
    lines = LineReader(r, 100)
    os.write(w, b"one\ntwo\nthr")
    assert lines.read_line(time.monotonic() + 5) == b"one"
    assert lines.read_line(time.monotonic() + 5) == b"two"
    os.write(w, b"ee\n")
    assert lines.read_line(time.monotonic() + 5) == b"three"


def test_a_half_written_line_returns_none_at_the_deadline_and_is_kept(pipe) -> None:
    r, w = pipe
    lines = LineReader(r, 100)
    os.write(w, b"half")
    t0 = time.monotonic()
    assert lines.read_line(t0 + 0.2) is None
    assert time.monotonic() - t0 < 5
    os.write(w, b" and the rest\n")
    assert lines.read_line(time.monotonic() + 5) == b"half and the rest"


def test_the_writer_closing_is_an_eof_once_every_whole_line_was_read(pipe) -> None:
    r, w = pipe
    lines = LineReader(r, 100)
    os.write(w, b"last\n")
    os.close(w)
    assert lines.read_line(time.monotonic() + 5) == b"last"
    with pytest.raises(EOFError):
        lines.read_line(time.monotonic() + 5)


def test_a_line_past_the_limit_is_refused_and_dropped(pipe) -> None:
    r, w = pipe
    lines = LineReader(r, 10)
    os.write(w, b"x" * 50)
    with pytest.raises(LineTooLong):
        lines.read_line(time.monotonic() + 5)
    os.write(w, b"\nok\n")
    assert lines.read_line(time.monotonic() + 5) == b""  # the end of the dropped line
    assert lines.read_line(time.monotonic() + 5) == b"ok"
