import math
import re

import numpy as np
import pytest
from hypothesis import given, strategies as st

from tritongate.report.units import format_time, format_time_range


@pytest.mark.parametrize("us, text", [
    (0.812, "812 ns"),
    (1.234, "1.23 µs"),
    (45.6, "45.6 µs"),
    (123.4, "123 µs"),
    (1234, "1.23 ms"),
    (12_300_000, "12.3 s"),
    (1.0, "1.00 µs"),
    (0.001, "1.00 ns"),
    (0.02, "20.0 ns"),
    (100.0, "100 µs"),
    (20.0123, "20.0 µs"),
])
def test_each_scale_shows_three_significant_digits(us, text):
    assert format_time(us, digits=3) == text


@pytest.mark.parametrize("us, text", [
    (999.96, "1.00 ms"),  # rounds to 1000 µs: shown in the next unit, never "1000 µs"
    (999.5, "1.00 ms"),
    (999.4999, "999 µs"),
    (0.99996, "1.00 µs"),
    (0.99949, "999 ns"),
    (999_996.0, "1.00 s"),
    (0.00099996, "1.00 ns"),
    (0.00099949, "0.999 ns"),
])
def test_rounding_at_a_unit_boundary_moves_to_the_next_unit(us, text):
    assert format_time(us, digits=3) == text


def test_rounding_is_half_up_on_the_number_as_written():
    # 1.235 is 1.2349999... in binary; people read and expect 1.24
    assert format_time(1.235, digits=3) == "1.24 µs"
    assert format_time(1.245, digits=3) == "1.25 µs"
    assert format_time(12.35, digits=3) == "12.4 µs"


@pytest.mark.parametrize("us, text", [
    (0.0005, "0.500 ns"),  # below 1 ns: still ns
    (0.0000123, "0.0123 ns"),
    (999_950_000.0, "1000 s"),  # 1000 s and above: still s
    (12_345_000_000.0, "12300 s"),
    (0, "0 ns"),
    (0.0, "0 ns"),
])
def test_beyond_the_units_the_smallest_and_largest_stay(us, text):
    assert format_time(us, digits=3) == text


def test_the_format_is_value_space_unit():
    assert re.fullmatch(r"\d+(\.\d+)? (ns|µs|ms|s)", format_time(3.21, digits=3))
    assert format_time(3, digits=3) == "3.00 µs"  # ints are times too


def test_numpy_scalars_are_accepted():
    assert format_time(np.float64(1234.0)) == "1.234 ms"
    assert format_time(np.float32(45.6)) == "45.60 µs"
    assert format_time_range(np.float32(1.0), np.float64(2.0)) == "1.000–2.000 µs"


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, -1.0, -1e-9])
def test_non_finite_or_negative_times_are_refused(bad):
    with pytest.raises(ValueError, match="finite and >= 0"):
        format_time(bad)
    with pytest.raises(ValueError, match="lower end must be finite and >= 0"):
        format_time_range(bad, 1.0)
    with pytest.raises(ValueError, match="upper end must be finite and >= 0"):
        format_time_range(0.5, bad)


@pytest.mark.parametrize("bad", ["1.5", None, True])
def test_non_numbers_are_refused(bad):
    with pytest.raises(TypeError, match="number of microseconds"):
        format_time(bad)


@pytest.mark.parametrize("lo, hi, text", [
    (1210, 1250, "1.21–1.25 ms"),
    (219.86, 220.33, "220–220 µs"),
    (0.812, 1.23, "0.812–1.23 µs"),  # the larger end's unit for both
    (999.0, 999.96, "0.999–1.00 ms"),  # the larger end rounded into ms: both ends in ms
    (17.96, 17.98, "18.0–18.0 µs"),
    (5, 1230, "0.00500–1.23 ms"),  # a far smaller end keeps its 3 digits
    (2.0, 2.0, "2.00–2.00 µs"),
    (0, 0, "0–0 ns"),
])
def test_a_range_shows_both_ends_in_one_unit(lo, hi, text):
    assert format_time_range(lo, hi, digits=3) == text


def test_the_default_is_four_digits_so_a_tight_iqr_keeps_its_width():
    assert format_time(220.12) == "220.1 µs" and format_time(1234.5) == "1.235 ms"
    assert format_time_range(219.86, 220.33) == "219.9–220.3 µs"
    assert format_time_range(17.96, 17.98) == "17.96–17.98 µs"


def test_an_inverted_range_is_refused():
    with pytest.raises(ValueError, match="lo <= hi"):
        format_time_range(2.0, 1.0)


def test_more_digits_can_be_asked_for():
    assert format_time(220.12, digits=4) == "220.1 µs"
    assert format_time_range(219.86, 220.33, digits=4) == "219.9–220.3 µs"
    assert format_time(999.996, digits=4) == "1.000 ms"
    with pytest.raises(ValueError, match="digits"):
        format_time(1.0, digits=0)


@given(st.floats(min_value=1e-3, max_value=1e9, allow_nan=False, allow_infinity=False))
def test_any_time_from_1_ns_to_1000_s_shows_three_digits_in_1_to_1000(us):
    text = format_time(us, digits=3)
    value, unit = text.split(" ")
    if value == "1000":  # 999.5 s and up round to 1000 s: there is no larger unit
        assert unit == "s" and us >= 999.5e6
    else:
        assert 1 <= float(value) < 1000 and len(value.replace(".", "")) == 3
    scale = {"ns": 1e-3, "µs": 1.0, "ms": 1e3, "s": 1e6}[unit]
    assert float(value) * scale == pytest.approx(us, rel=5e-3)  # 3 digits: off by at most half a step


@given(st.floats(min_value=1e-3, max_value=1e8), st.floats(min_value=1.0, max_value=1.5))
def test_a_range_ends_in_the_unit_its_upper_end_shows_alone(lo, ratio):
    hi = lo * ratio
    text = format_time_range(lo, hi)
    assert text.endswith(" " + format_time(hi).split(" ")[1])
    assert text.split("–")[1] == format_time(hi)
