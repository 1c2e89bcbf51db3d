"""GPU-only: one process adopts another's inputs through CUDA IPC (run on the GPU machine:
pytest -m gpu)."""

import json

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu

from tritongate.harness.shared_inputs import adopt_inputs, export_inputs  # noqa: E402


def _inputs():
    gen = torch.Generator(device="cuda").manual_seed(7)
    a = torch.randn((64, 96), generator=gen, device="cuda", dtype=torch.float16)
    return (a, a[:, 32:], torch.randn(1000, generator=gen, device="cuda"))  # a view shares a's storage


def _owner(to_parent, from_parent) -> None:
    tensors = _inputs()
    to_parent.put(json.dumps(export_inputs(tensors)))
    assert from_parent.get() == "check"
    torch.cuda.synchronize()
    to_parent.put([float(t.float().sum()) for t in tensors])
    assert from_parent.get() == "done"


def test_adopted_inputs_are_the_other_process_memory():
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    to_parent, from_parent = ctx.Queue(), ctx.Queue()
    child = ctx.Process(target=_owner, args=(to_parent, from_parent))
    child.start()
    try:
        payload = json.loads(to_parent.get(timeout=120))
        assert len(payload["storages"]) == 2 and [v["storage"] for v in payload["tensors"]] == [0, 0, 1]
        mine = _inputs()
        before = [t.clone() for t in mine]
        own_ptrs = [t.data_ptr() for t in mine]
        adopt_inputs(mine, payload)
        assert [t.data_ptr() for t in mine] != own_ptrs
        assert all(torch.equal(t, b) for t, b in zip(mine, before))  # same seed: the same values
        assert mine[1].data_ptr() == mine[0].data_ptr() + 32 * 2  # the view still views its base
        mine[0].fill_(1.0)  # writes here are what the owner reads
        mine[2].fill_(2.0)
        torch.cuda.synchronize()
        from_parent.put("check")
        sums = to_parent.get(timeout=60)
        assert sums == [64 * 96, 64 * 64, 2000.0]
        del mine
        from_parent.put("done")
        child.join(60)
        assert child.exitcode == 0
    finally:
        if child.is_alive():
            child.kill()
