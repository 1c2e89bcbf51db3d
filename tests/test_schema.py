import json

import pytest

from tritongate.rundir import pairing_of, row_of
from tritongate.schema import Correctness, RowStatus, Variant
from tritongate.validation.runfiles import PairingDoc, RowDoc

from tests.conftest import make_row


def test_row_round_trips_through_json_dict():
    row = make_row(markers=("AUTOTUNE_REPLAY_FALLBACK reason=key_missing kernel=m.k",),
                   correctness=Correctness(ok=True, max_abs_err=1e-6, atol=1e-5, rtol=1e-5),
                   variants=(Variant("m.k", "BLOCK=1024 w4 s3", "src", "bin", 3),),
                   params={"shape": [4096]}, flops=1.0, bytes=49152.0)
    d = row.to_dict()
    assert d["summary"]["median"] == 1.0 and d["summary"]["iqr"] == pytest.approx(0.05)
    assert row_of(RowDoc.model_validate(json.loads(json.dumps(d)))) == row


def test_row_validation():
    with pytest.raises(ValueError, match="non-empty"):
        make_row(op="")
    with pytest.raises(ValueError, match="> 0"):
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
        row_of(RowDoc.model_validate(d))


def test_pairing_says_whose_inputs_a_pair_read():
    from tritongate.schema import PairInfo

    shared = PairInfo(pair_id="p", side="base", went_first=(True, False), inputs="shared")
    assert pairing_of(PairingDoc.model_validate(shared.to_dict())) == shared and shared.to_dict()["inputs"] == "shared"
    older = {k: v for k, v in shared.to_dict().items() if k != "inputs"}  # written before the key
    assert pairing_of(PairingDoc.model_validate(older)).inputs == "own"
    with pytest.raises(ValueError, match="pairing inputs must be one of own, shared, got 'theirs'"):
        PairInfo(pair_id="p", side="base", went_first=(), inputs="theirs")
