"""What can be shared, and the checks on a payload before any memory is opened (on the host;
the CUDA IPC round trip itself is tests/gpu/test_shared_inputs.py)."""

from __future__ import annotations

import pytest
import torch

from tritongate.harness.shared_inputs import (PAYLOAD_VERSION, SharingError, adopt_inputs, check_payload,
                                              describe_tensor, export_inputs, unshareable)


def _payload(views, storages=1):
    return {"version": PAYLOAD_VERSION, "storages": [{}] * storages, "tensors": views}


def test_only_cuda_tensors_listed_by_the_builder_can_be_shared():
    assert "lists no tensors" in unshareable(())
    assert unshareable((3,)) == "Case.tensors[0] is not a tensor (int)"
    assert unshareable((torch.zeros(4),)) == "Case.tensors[0] is on cpu, not a CUDA device"
    with pytest.raises(SharingError, match="cannot share these inputs: Case.tensors\\[0\\] is on cpu"):
        export_inputs((torch.zeros(4),))
    with pytest.raises(SharingError, match="cannot adopt shared inputs"):
        adopt_inputs((torch.zeros(4),), _payload([]))


def test_a_view_is_described_by_what_both_sides_must_agree_on():
    base = torch.zeros(4, 6, dtype=torch.float16)
    view = base[:, 2:]
    assert describe_tensor(view) == {"dtype": "float16", "size": [4, 4], "stride": [6, 1], "offset": 2,
                                     "storage_bytes": 48}


def test_a_matching_payload_gives_its_views():
    mine = [describe_tensor(torch.zeros(3, 5)), describe_tensor(torch.zeros(5))]
    views = [{"storage": 0, **mine[0]}, {"storage": 1, **mine[1]}]
    assert check_payload(mine, _payload(views, storages=2)) == views


@pytest.mark.parametrize("payload, message", [
    (None, "not a version-1 payload"),
    ({"version": 99, "storages": [], "tensors": []}, "not a version-1 payload"),
    ({"version": PAYLOAD_VERSION, "tensors": []}, "needs 'tensors' and 'storages' lists"),
    (_payload([]), "the other side built 0 tensors, this side 1"),
    (_payload([{"storage": 0, "offset": 0, "dtype": "float16", "size": [3, 5], "stride": [5, 1],
                "storage_bytes": 60}]), "tensor 0 differs between the sides"),
    (_payload([{"storage": 1, "offset": 0, "dtype": "float32", "size": [3, 5], "stride": [5, 1],
                "storage_bytes": 60}]), "tensor 0 differs"),  # no storage 1
    (_payload([{"storage": 0, "offset": -4, "dtype": "float32", "size": [3, 5], "stride": [5, 1],
                "storage_bytes": 60}]), "tensor 0 differs"),
    (_payload([{"storage": True, "offset": 0, "dtype": "float32", "size": [3, 5], "stride": [5, 1],
                "storage_bytes": 60}]), "tensor 0 differs"),
    (_payload(["not a view"]), "tensor 0 differs"),
], ids=["none", "version", "no storages", "count", "dtype", "storage index", "offset", "bool index", "not a dict"])
def test_a_payload_that_does_not_match_is_refused_before_anything_opens(payload, message):
    mine = [describe_tensor(torch.zeros(3, 5))]
    with pytest.raises(SharingError, match=message):
        check_payload(mine, payload)
