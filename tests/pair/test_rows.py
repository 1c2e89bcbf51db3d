"""One side's measurement merged over the worker pairs that measured a row."""

from tritongate.pair.rows import merged_measurement


def _part(samples, states, shifts=()):
    return {"measurement": {"timer": "cuda-graph", "samples": samples, "samples_per_round": 2,
                            "launches_per_sample": 10, "warmup_calls": 3, "l2": "warm",
                            "shift_bytes": list(shifts), "markers": [], "launch_state_us": states}}


def test_the_launch_states_of_every_worker_pair_are_kept_in_round_order():
    merged = merged_measurement([_part([1.0, 1.0, 1.1, 1.1], [0.8, 1.0]), _part([1.2, 1.2], [1.0])])
    assert merged["samples"] == [1.0, 1.0, 1.1, 1.1, 1.2, 1.2]
    assert merged["launch_state_us"] == [0.8, 1.0, 1.0]


def test_a_worker_pair_without_states_drops_them_all_so_none_is_misaligned():
    older = _part([1.2, 1.2], [])
    del older["measurement"]["launch_state_us"]  # a worker of a tool version before the key
    merged = merged_measurement([_part([1.0, 1.0, 1.1, 1.1], [0.8, 1.0]), older])
    assert merged["launch_state_us"] == []
