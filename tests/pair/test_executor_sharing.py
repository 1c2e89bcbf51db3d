"""The real executor's side of shared inputs, with the IPC calls stubbed (no GPU here): what
an exporting round keeps and hands out, what an importing round adopts, and when the holds
on exported memory are given back."""

from __future__ import annotations

import pytest

from tritongate.errors import UsageError
from tritongate.harness import shared_inputs
from tritongate.harness.measure import MeasureConfig, RowMeasurer
from tritongate.harness.shared_inputs import SharingError
from tritongate.pair.executor import TritonExecutor
from tritongate.rowcase import CaseLaunch

from tests.conftest import FakeDevice


@pytest.fixture
def ipc(monkeypatch):
    """Records what the executor asks of the IPC module."""
    calls: list[tuple] = []

    def export(tensors):
        calls.append(("export", tensors))
        return {"version": 1, "storages": [{"id": tensors[0]}], "tensors": []}

    def adopt(tensors, payload):
        calls.append(("adopt", tensors, payload))
        if payload.get("bad"):
            raise SharingError("shared inputs: tensor 0 differs between the sides")

    monkeypatch.setattr(shared_inputs, "export_inputs", export)
    monkeypatch.setattr(shared_inputs, "adopt_inputs", adopt)
    monkeypatch.setattr(shared_inputs, "release", lambda payload: calls.append(("release", payload)))
    monkeypatch.setattr(shared_inputs, "collect", lambda: calls.append(("collect",)))
    return calls


class _Session:
    def end_row(self) -> None:
        pass


def _executor() -> TritonExecutor:
    ex = TritonExecutor.__new__(TritonExecutor)  # only what round/unshare use: no device, no record
    ex.device = FakeDevice(cost_s=2e-6)
    ex.config = MeasureConfig(samples_per_round=2)
    ex._exported = None
    built = iter(range(1, 1000))
    ex._measurer = RowMeasurer(lambda: CaseLaunch(ex.device.launch, (f"inputs-{next(built)}",)),
                               device=ex.device, config=ex.config)
    ex._measurer.warm_up()  # builds inputs-1
    return ex


def test_an_exporting_round_hands_out_its_inputs_and_keeps_them_until_told(ipc):
    ex = _executor()
    answer = ex.round(inputs="export")
    assert answer["shared"] == {"version": 1, "storages": [{"id": "inputs-2"}], "tensors": []}
    assert len(answer["samples"]) == 2 and ipc == [("export", ("inputs-2",))]
    assert ex._exported[0].tensors == ("inputs-2",)  # alive after the round
    ex.unshare()
    assert ex._exported is None and ipc[1:] == [("collect",)]  # the other side gave its holds back


def test_an_importing_round_adopts_the_payload_on_its_own_fresh_inputs(ipc):
    ex = _executor()
    answer = ex.round(inputs="import", shared={"version": 1, "storages": [], "tensors": []})
    assert "shared" not in answer and ipc == [("adopt", ("inputs-2",), {"version": 1, "storages": [], "tensors": []})]
    with pytest.raises(SharingError, match=r"differs between the sides \(`--inputs own` times each side"):
        ex.round(inputs="import", shared={"bad": True})
    assert ex._measurer.rounds_done == 1  # the failed round added nothing


def test_holds_the_parent_never_confirmed_are_given_back(ipc):
    ex = _executor()
    payload = ex.round(inputs="export")["shared"]
    ex.unshare(release=True)  # the other side's worker died holding them
    assert ("release", payload) in ipc
    ipc.clear()
    payload = ex.round(inputs="export")["shared"]
    ex.round()  # a round starting while inputs are still handed out: the parent never said
    assert ipc[1] == ("release", payload)
    ipc.clear()
    payload = ex.round(inputs="export")["shared"]
    ex._prepared, ex.session = None, _Session()
    ex.abort()
    assert ipc[1] == ("release", payload) and ex._exported is None


@pytest.mark.parametrize("kw", [{"inputs": "import"}, {"inputs": "theirs"}, {"inputs": "own", "shared": {}}])
def test_a_round_with_inconsistent_sharing_arguments_is_refused(ipc, kw):
    with pytest.raises(UsageError, match="round: inputs="):
        _executor().round(**kw)


def test_a_payload_the_round_never_adopts_is_given_back_by_the_reader(ipc):
    payload = {"version": 1, "storages": [{"id": "theirs"}], "tensors": []}
    # refused before anything is built: this side holds the payload's holds, so it gives them back
    ex = TritonExecutor.__new__(TritonExecutor)
    ex._measurer, ex._exported = None, None
    with pytest.raises(UsageError, match="round before warm_up"):
        ex.round(inputs="import", shared=payload)
    assert ipc == [("release", payload)]
    # the inputs fail to build: adopt_inputs never ran, so the round gives them back
    ipc.clear()
    ex = _executor()

    def broken_build():
        raise RuntimeError("CUDA out of memory")
    ex._measurer._make_fn = broken_build
    with pytest.raises(RuntimeError, match="out of memory"):
        ex.round(inputs="import", shared=payload)
    assert ipc == [("release", payload)]


def test_a_payload_that_reached_adoption_is_not_given_back_twice(ipc):
    # adopt_inputs gives back what it did not open; what it opened goes back with the tensors
    ex = _executor()
    ex.round(inputs="import", shared={"version": 1, "storages": [], "tensors": []})
    with pytest.raises(SharingError):
        ex.round(inputs="import", shared={"bad": True})
    assert [c[0] for c in ipc] == ["adopt", "adopt"]
