import pytest

from tritongate import markers


def test_marker_round_trip_with_reason_last():
    line = markers.make(markers.NO_CUDAGRAPH, phase="capture", reason="RuntimeError: a b=c\nmore")
    assert line == "BENCHMARK_DIRECT_NO_CUDAGRAPH phase=capture reason=RuntimeError: a b=c"
    m = markers.parse_marker(line)
    assert m.kind == markers.NO_CUDAGRAPH
    assert m.fields == {"phase": "capture", "reason": "RuntimeError: a b=c"}
    assert markers.kinds([line, "AUTOTUNE_REPLAY_FALLBACK reason=key_missing"]) == {
        markers.NO_CUDAGRAPH, markers.REPLAY_FALLBACK}


@pytest.mark.parametrize("kind,fields", [("lower", {}), ("OK", {"Bad": "x"}), ("OK", {"k": "two words"})])
def test_invalid_markers_are_refused(kind, fields):
    with pytest.raises(ValueError):
        markers.Marker(kind, fields)
