"""The shared argument types: every bad value is one argparse error naming what was expected."""

from __future__ import annotations

import argparse

import pytest

from tritongate.argtypes import number_in, whole_number

FRACTION = number_in(0, 1, open_low=True, open_high=True)
SECONDS = number_in(0, what="seconds")


@pytest.mark.parametrize("convert,text,value", [(FRACTION, "0.5", 0.5), (SECONDS, "0", 0.0), (SECONDS, "3.5", 3.5),
                                                (whole_number, "1", 1), (whole_number, "12", 12)])
def test_values_inside_the_bounds_are_taken(convert, text, value):
    assert convert(text) == value


@pytest.mark.parametrize("convert,text,message", [
    (FRACTION, "0", "expected a number > 0 and < 1, got '0'"),
    (FRACTION, "1", "expected a number > 0 and < 1, got '1'"),
    (FRACTION, "nan", "expected a number > 0 and < 1, got 'nan'"),
    (FRACTION, "x", "expected a number, got 'x'"),
    (SECONDS, "-1", "expected seconds >= 0, got '-1'"),
    (SECONDS, "inf", "expected seconds >= 0, got 'inf'"),
    (whole_number, "0", "expected a whole number >= 1, got '0'"),
    (whole_number, "2.5", "expected a whole number >= 1, got '2.5'"),
])
def test_values_outside_are_one_line_naming_the_bounds(convert, text, message):
    with pytest.raises(argparse.ArgumentTypeError) as err:
        convert(text)
    assert str(err.value) == message


def test_a_minimum_effect_of_0_is_refused_with_a_value_to_pass():
    from tritongate.argtypes import effect_size

    assert effect_size("0.005") == 0.005
    with pytest.raises(argparse.ArgumentTypeError, match="above 0, got '0': .* for 0.5 % pass 0.005"):
        effect_size("0")
    with pytest.raises(argparse.ArgumentTypeError, match="that would be 500%"):
        effect_size("5")
