"""Aiming the planted spin at a size, against scripted rows whose time is a known function of
the spin: proportional, hidden below a threshold, several waves, a fixed cost, noisy."""

from __future__ import annotations

import random

import pytest

from tritongate.calibrate.aim import aim_row, ladder_start


def row(us: float, *, gain: float = 1.0, hidden_ns: float = 0.0, fixed_ns: float = 0.0, noise: float = 0.0,
        seed: int = 0):
    rng = random.Random(seed)
    calls: list[int] = []

    def measure(spin: int) -> float:
        calls.append(spin)
        added = max(0.0, spin - hidden_ns) * gain + (fixed_ns if spin else 0.0)
        return (us + added / 1000) * (1 + rng.gauss(0, noise))
    return measure, calls


def test_a_proportional_row_is_aimed_at_each_size_and_each_chosen_spin_confirmed():
    measure, calls = row(10.0)
    aim = aim_row("add/4096/float16", measure, (0.01, 0.02, 0.05))
    assert calls[0] == 0 and calls[1] == ladder_start(10.0, (0.01, 0.02, 0.05)) == 25
    ladder = calls[:-18]  # then each chosen spin three more times, alternating with 0
    assert len(ladder) == len(set(ladder)) and calls[-18:] == [0, 100] * 3 + [0, 200] * 3 + [0, 500] * 3
    assert aim.spins_ns == {"0.01": 100, "0.02": 200, "0.05": 500} and not aim.missed
    assert aim.aimed == pytest.approx({"0.01": 0.01, "0.02": 0.02, "0.05": 0.05})
    assert aim.points[0].spin_ns == 0 and aim.zero_us == 10.0


@pytest.mark.parametrize("gain,hidden_ns", [(4.0, 0.0), (1.0, 300.0), (8.0, 150.0)])
def test_spins_hidden_or_multiplied_by_waves_are_found_by_timing_not_by_a_rule(gain, hidden_ns):
    measure, _ = row(48.0, gain=gain, hidden_ns=hidden_ns)
    aim = aim_row("add/16777216/float16", measure, (0.01, 0.02, 0.05))
    for f in (0.01, 0.02, 0.05):
        k = f"{f:g}"
        assert aim.aimed[k] == pytest.approx(f, rel=0.02)
        assert aim.spins_ns[k] == pytest.approx(hidden_ns + f * 48_000 / gain, abs=1)


def test_a_size_below_a_fixed_cost_is_not_planted_and_says_how_close_it_came():
    """A one-wave kernel that pays 200 ns once any spin runs: 1 % and 2 % of 1 µs cannot be planted."""
    measure, _ = row(1.0, fixed_ns=200.0)
    aim = aim_row("add/4096/float16", measure, (0.01, 0.02, 0.05))
    assert set(aim.missed) == {"0.01", "0.02", "0.05"}
    assert "no spin lands within ±25% of 1%: the closest, 1 ns, added +20.10%" == aim.missed["0.01"]
    assert aim.spins_ns == {} and aim.to_dict()["missed"] == dict(aim.missed)


def test_noise_within_the_tolerance_still_aims_and_reports_what_it_measured():
    measure, _ = row(20.0, noise=0.0005, seed=3)
    aim = aim_row("softmax/64x512/float16", measure, (0.01, 0.02, 0.05))
    assert set(aim.spins_ns) == {"0.01", "0.02", "0.05"}
    for k, f in (("0.01", 0.01), ("0.02", 0.02), ("0.05", 0.05)):
        assert abs(aim.aimed[k] - f) <= 0.25 * f
        assert aim.spins_ns[k] == pytest.approx(f * 20_000, rel=0.3)


def test_bad_sizes_and_a_row_that_takes_no_time_are_refused():
    measure, _ = row(1.0)
    with pytest.raises(ValueError, match="each must be in"):
        aim_row("x", measure, (0.0,))
    with pytest.raises(ValueError, match="time spinning 0"):
        aim_row("x", lambda spin: 0.0, (0.02,))
