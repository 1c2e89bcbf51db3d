import json

import pytest

from pydantic import TypeAdapter

from tritongate.schema import Correctness, PairInfo, Row, RowStatus, Variant

from tests.conftest import make_row


def row_of(d: dict) -> Row:
    """A row as results.json's reader makes it: strictly from JSON, its stored summary checked."""
    row = TypeAdapter(Row).validate_json(json.dumps(d), strict=True)
    row.check_stored_summary()
    return row


def test_row_round_trips_through_json_dict():
    row = make_row(markers=("AUTOTUNE_REPLAY_FALLBACK reason=key_missing kernel=m.k",),
                   correctness=Correctness(ok=True, max_abs_err=1e-6, atol=1e-5, rtol=1e-5),
                   variants=(Variant("m.k", "BLOCK=1024 w4 s3", "src", "bin", 3),),
                   params={"shape": [4096]}, flops=1.0, bytes=49152.0)
    d = row.to_dict()
    assert d["summary"]["median"] == 1.0 and d["summary"]["iqr"] == pytest.approx(0.05)
    assert row_of(d) == row


def test_row_validation():
    with pytest.raises(ValueError, match="op\n  String should have at least 1 character"):
        make_row(op="")
    with pytest.raises(ValueError, match="samples.1\n  Input should be greater than 0"):
        make_row(samples=(1.0, -1.0))
    with pytest.raises(ValueError, match="needs samples"):
        make_row(samples=())
    with pytest.raises(ValueError, match="error text"):
        make_row(samples=(), status=RowStatus.ERROR)
    err = make_row(samples=(), status="error", error="boom")
    assert err.summary is None


def test_edited_summary_is_detected():
    d = make_row().to_dict()
    d["summary"]["median"] = 0.5
    with pytest.raises(ValueError, match="edited"):
        row_of(d)


def test_pairing_says_whose_inputs_a_pair_read():
    shared = PairInfo(pair_id="p", side="base", went_first=(True, False), inputs="shared")
    pairing = TypeAdapter(PairInfo)
    assert pairing.validate_json(json.dumps(shared.to_dict()), strict=True) == shared
    assert shared.to_dict()["inputs"] == "shared"
    older = {k: v for k, v in shared.to_dict().items() if k != "inputs"}  # written before the key
    assert pairing.validate_json(json.dumps(older), strict=True).inputs == "own"
    with pytest.raises(ValueError, match="inputs\n  Input should be 'own' or 'shared'"):
        PairInfo(pair_id="p", side="base", went_first=(), inputs="theirs")


def test_a_row_keeps_the_launch_state_of_each_round():
    from tritongate.schema import MeasurementInfo

    info = MeasurementInfo(launches_per_sample=500, samples_per_round=5, warmup_calls=3, l2="warm",
                           launch_state_us=(0.82, 0.82, 0.99))
    row = make_row(measurement=info)
    d = row.to_dict()
    assert d["measurement"]["launch_state_us"] == [0.82, 0.82, 0.99]
    assert row_of(d) == row
    older = json.loads(json.dumps(d))
    del older["measurement"]["launch_state_us"]  # written before the key: no state known
    assert row_of(older).measurement.launch_state_us == ()
    for bad in (0.0, float("inf"), -1.0):
        with pytest.raises(ValueError, match="launch_state_us"):
            MeasurementInfo(launches_per_sample=1, samples_per_round=1, warmup_calls=0, l2="warm",
                            launch_state_us=(bad,))
