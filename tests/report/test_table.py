from dataclasses import replace

import pytest

from tritongate.report.table import COLUMNS, fold_constant_columns, render_rows, row_cells, throughput
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
    assert cells["median"] == words
    assert cells["IQR"] == cells["rel IQR"] == "-" and cells["n"] == "0"
    assert "TB/s" not in cells and "TFLOP/s" not in cells


def test_skipped_rows_render_among_timed_ones():
    rows = [row(case="timed", median=20), untimed(SkipReason.IDENTICAL_BINARY, "same"),
            untimed(SkipReason.OTHER_SIDE_FAILED, "lonely")]
    text = render_rows(rows, color=False, width=200)
    lines = {ln.split("│")[2].strip(): ln for ln in text.splitlines() if ln.count("│") > 3}
    assert "20.01 µs" in lines["timed"]
    assert "not timed (identical binary)" in lines["same"]
    assert "not timed (other side failed)" in lines["lonely"]


def test_only_skipped_rows_still_show_why():
    text = render_rows([untimed(SkipReason.IDENTICAL_BINARY)], color=True, width=200)
    assert "not timed (identical binary)" in text


def test_error_rows_keep_a_dash():
    r = row(status="error", error="boom")
    assert row_cells(r)["median"] == "-"


def timed(case: str, samples, **kw):
    """A row with exactly these samples: 25 evenly spaced ones give q1/median/q3 at the 7th,
    13th and 19th values."""
    return replace(row(case=case, **kw), samples=tuple(samples))


def spaced(start: float, step: float, n: int = 25) -> list[float]:
    return [start + i * step for i in range(n)]


def test_cells_auto_scale_the_median_and_show_the_iqr_in_one_unit():
    cells = row_cells(timed("ms", spaced(1200, 2)))  # q1 1212, median 1224, q3 1236 µs
    assert (cells["median"], cells["IQR"]) == ("1.224 ms", "1.212–1.236 ms")
    cells = row_cells(timed("ns", spaced(0.800, 0.002)))
    assert (cells["median"], cells["IQR"]) == ("824.0 ns", "812.0–836.0 ns")
    cells = row_cells(timed("edge", [999.96] * 5))
    assert (cells["median"], cells["IQR"]) == ("1.000 ms", "1.000–1.000 ms")


def test_cells_keep_their_order_and_names():
    r = replace(timed("c", spaced(10, 0.1)), bytes=2e6, flops=4e9)
    assert list(row_cells(r)) == [*COLUMNS, "TB/s", "TFLOP/s"]
    assert "median µs" not in row_cells(r) and "IQR µs" not in row_cells(r)


def test_throughput_is_for_device_time_only():
    r = replace(timed("c", [10.0] * 5), bytes=2e6, flops=4e6)  # 2 MB and 4 MFLOP in 10 µs
    assert throughput(r) == pytest.approx((0.2, 0.4))
    assert row_cells(r)["TB/s"] == "0.20" and row_cells(r)["TFLOP/s"] == "0.4"
    host = replace(r, timer="host-wall")
    assert throughput(host) == (None, None) and "TB/s" not in row_cells(host)
    assert throughput(replace(r, bytes=None)) == (None, pytest.approx(0.4))
    assert throughput(row(status="error", error="boom")) == (None, None)


def test_the_table_heads_median_and_iqr_and_right_justifies_them():
    rows = [timed("short", spaced(1200, 2)), timed("a-much-longer-case", spaced(0.800, 0.002)),
            timed("mid", spaced(40, 0.1))]
    text = render_rows(rows, color=False, width=200)
    lines = text.splitlines()
    header = next(ln for ln in lines if "median" in ln)
    names = [c.strip() for c in header.split("┃")[1:-1]]
    assert "median" in names and "IQR" in names and not any("µs" in n for n in names)
    body = [ln for ln in lines if ln.count("│") > 3]
    for col in ("median", "IQR"):
        i = names.index(col) + 1
        cells = [ln.split("│")[i] for ln in body]
        # right-justified: every cell ends in its unit one space before the column rule
        assert all(c.endswith("s ") and not c.endswith("  ") for c in cells), cells
        assert len({len(c) for c in cells}) == 1
    shown = {ln.split("│")[2].strip(): [c.strip() for c in ln.split("│")[1:-1]] for ln in body}
    assert shown["short"][names.index("median")] == "1.224 ms"
    assert shown["mid"][names.index("IQR")] == "40.60–41.80 µs"


def test_a_constant_median_stays_a_column_not_a_legend():
    rows = [timed("a", [5.0] * 5), timed("b", [5.0] * 5)]
    shown, legend = fold_constant_columns([row_cells(r) for r in rows])
    assert "median" in shown and "median" not in legend
    assert legend["IQR"] == "5.000–5.000 µs"  # constant and not kept: folded into the legend


def test_the_columns_every_row_shares_are_one_line_and_n_and_k_are_said_in_words():
    rows = [row(case="a", median=20), row(case="b", median=30)]
    lines = render_rows(rows, color=False, width=200).splitlines()
    assert lines[0].startswith("every row: ") and "; n: " in lines[0] and "; k: " in lines[0]
    assert lines[-1] == "n: samples; k: kernel launches a sample (its time is per launch)"
    alone = render_rows([row(case="a", median=20)], color=False, width=200).splitlines()  # one row: all columns
    assert not alone[0].startswith("every row") and alone[-1].startswith("n: samples; k: ")


def test_an_ir_capture_shows_no_time_for_its_rows():
    # TRITONGATE_CAPTURE_ONLY=1: launches indexed, not executed; its samples time no kernel, and
    # a new user read them as the kernels' times
    rows = [row(op="add", case="4096", median=14.08, seed=1), row(op="softmax", case="8x256", median=20.0, seed=2)]
    text = render_rows(rows, color=False, capture_only=True)
    assert "14.08" not in text and "20.0" not in text and "µs" not in text
    assert text.count("not executed (IR capture)") == 2
    cells = row_cells(rows[0], capture_only=True)
    assert (cells["median"], cells["IQR"], cells["rel IQR"], cells["n"]) == ("not executed (IR capture)", "-", "-", "0")
    assert "µs" in render_rows(rows, color=False)  # a timed run still shows its times


def test_an_ir_capture_row_that_failed_says_error_not_not_executed():
    # a row whose capture raised indexed nothing: "not executed (IR capture)" read as a capture
    # like the others, in the table and in run's progress line
    from types import SimpleNamespace

    from tritongate.cli.common import captured_row_text

    failed = row(op="add", case="4096", status="error", error="RuntimeError: boom")
    assert row_cells(failed, capture_only=True)["median"] != "not executed (IR capture)"
    assert "error" in captured_row_text(SimpleNamespace(row=failed))
    assert captured_row_text(SimpleNamespace(row=row(op="add", case="4096"))) == "not executed (IR capture)"
