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


def test_an_inference_mode_tensor_cannot_be_pointed_elsewhere():
    with torch.inference_mode():
        t = torch.zeros(4)
    assert "inference-mode tensor" in unshareable((t,))


@pytest.mark.parametrize("storage_keys, groups, storages, message", [
    ([7, 8, 9], [0, 0, 1], 2, "tensors 0 and 1 share a storage on the other side, not on this one"),
    ([7, 7, 9], [0, 1, 2], 3, "tensors 0 and 1 share a storage on this side, not on the other"),
    ([7, 8], [0, 1], 3, "the payload has 3 storages, its tensors use 2"),
])
def test_both_sides_must_group_their_tensors_into_storages_alike(storage_keys, groups, storages, message):
    from tritongate.harness.shared_inputs import storage_map

    with pytest.raises(SharingError, match=message):
        storage_map(storage_keys, [{"storage": g} for g in groups], storages)


def test_each_storage_is_copied_from_this_sides_first_tensor_on_it():
    from tritongate.harness.shared_inputs import storage_map

    assert storage_map([7, 7, 9], [{"storage": 0}, {"storage": 0}, {"storage": 1}], 2) == [0, 2]


def test_a_view_must_start_where_the_other_sides_does():
    mine = [describe_tensor(torch.zeros(8)[2:])]
    theirs = {**mine[0], "offset": 0, "storage": 0}
    with pytest.raises(SharingError, match="tensor 0 differs"):
        check_payload(mine, _payload([theirs]))


def test_a_refused_payload_gives_back_every_hold_it_carries(monkeypatch):
    """A payload this side does not open would otherwise keep the exporter's memory until that
    worker exits."""
    from tritongate.harness import shared_inputs

    given_back = []
    monkeypatch.setattr(shared_inputs, "_release", lambda entry: given_back.append(entry) or True)
    payload = {"version": PAYLOAD_VERSION, "storages": [{"n": 1}, {"n": 2}], "tensors": []}
    with pytest.raises(SharingError):
        adopt_inputs((torch.zeros(4),), payload)  # refused: a host tensor
    assert given_back == [{"n": 1}, {"n": 2}]
    assert shared_inputs.release({"storages": [{"n": 3}]}) == 1 and shared_inputs.release("junk") == 0


def test_adopting_copies_each_storage_over_the_shared_memory_and_points_the_tensors_at_it(monkeypatch):
    """The copy and the re-pointing, with host storages standing in for the opened IPC memory
    (the IPC round trip itself is tests/gpu/test_shared_inputs.py)."""
    from tritongate.harness import shared_inputs

    base = torch.randn(6, 8)
    leaf = torch.randn(16).requires_grad_()
    ones = torch.ones(1).expand(16)  # stride 0: a view copy_ could not write into
    mine = (base, base[:, 2:], leaf, ones)
    fresh = [t.detach().clone() for t in mine]
    theirs = [torch.full((6, 8), -1.0), torch.full((16,), -1.0), torch.full((1,), -1.0)]  # what the owner holds
    stand_ins = [t.untyped_storage() for t in theirs]
    views = [{"storage": s, **describe_tensor(t)} for s, t in zip((0, 0, 1, 2), mine)]
    payload = {"version": PAYLOAD_VERSION, "storages": [{"n": i} for i in range(3)], "tensors": views}
    monkeypatch.setattr(shared_inputs, "unshareable", lambda tensors: "")
    monkeypatch.setattr(shared_inputs, "_open", lambda entry, device: stand_ins[entry["n"]])
    monkeypatch.setattr(shared_inputs, "_release", lambda entry: pytest.fail("an opened storage was released"))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    adopt_inputs(mine, payload)
    assert [t.untyped_storage().data_ptr() for t in mine] == [s.data_ptr() for s in (stand_ins[0], stand_ins[0],
                                                                                       stand_ins[1], stand_ins[2])]
    assert all(torch.equal(t.detach(), f) for t, f in zip(mine, fresh))  # this side's values, in their memory
    assert torch.equal(theirs[0], fresh[0]) and torch.equal(theirs[1], fresh[2]) and theirs[2].item() == 1.0
    assert mine[1].storage_offset() == 2 and mine[2].requires_grad and mine[3].stride() == (0,)
    mine[0][0, 2] = 42.0  # the view still views its base, in the shared memory
    assert mine[1][0, 0].item() == 42.0 == theirs[0][0, 2].item()
