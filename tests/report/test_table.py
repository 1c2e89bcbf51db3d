from dataclasses import replace

import pytest

from tritongate.report.table import render_rows, row_cells
from tritongate.schema import SkipReason

from tests.gate.helpers import binary, row


def untimed(skip: SkipReason, case="4096"):
    return replace(row(op="add", case=case, dtype="float32", variants=[binary("abc")]), samples=(), skipped=skip)


@pytest.mark.parametrize("skip, words", [(SkipReason.IDENTICAL_BINARY, "not timed (identical binary)"),
                                         (SkipReason.OTHER_SIDE_FAILED, "not timed (other side failed)")])
def test_a_skipped_row_says_it_was_not_timed(skip, words):
    r = untimed(skip)
    assert r.summary is None
    cells = row_cells(r)
    assert cells["median µs"] == words
    assert cells["IQR µs"] == cells["rel IQR"] == "-" and cells["n"] == "0"
    assert "TB/s" not in cells and "TFLOP/s" not in cells


def test_skipped_rows_render_among_timed_ones():
    rows = [row(case="timed", median=20), untimed(SkipReason.IDENTICAL_BINARY, "same"),
            untimed(SkipReason.OTHER_SIDE_FAILED, "lonely")]
    text = render_rows(rows, color=False, width=200)
    lines = {ln.split("│")[2].strip(): ln for ln in text.splitlines() if ln.count("│") > 3}
    assert "20.0" in lines["timed"]
    assert "not timed (identical binary)" in lines["same"]
    assert "not timed (other side failed)" in lines["lonely"]


def test_only_skipped_rows_still_show_why():
    text = render_rows([untimed(SkipReason.IDENTICAL_BINARY)], color=True, width=200)
    assert "not timed (identical binary)" in text


def test_error_rows_keep_a_dash():
    r = row(status="error", error="boom")
    assert row_cells(r)["median µs"] == "-"
