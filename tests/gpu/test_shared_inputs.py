"""GPU-only: one process adopts another's inputs through CUDA IPC (run on the GPU machine:
pytest -m gpu)."""

import json

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu

from tritongate.harness.shared_inputs import adopt_inputs, export_inputs  # noqa: E402

N = 1 << 16


def _inputs():
    """What a builder may list: a base and a view of it, a leaf that requires grad, a stride-0
    expanded view, and an output."""
    gen = torch.Generator(device="cuda").manual_seed(7)
    a = torch.randn((64, 96), generator=gen, device="cuda", dtype=torch.float16)
    x = torch.randn(N, generator=gen, device="cuda").requires_grad_()
    one = torch.ones(1, device="cuda").expand(N)
    out = torch.empty(N, device="cuda")
    return (a, a[:, 32:], x, one, out)


def _owner(to_parent, from_parent) -> None:
    tensors = _inputs()
    payload = export_inputs(tensors)
    with torch.no_grad():
        for t in (tensors[0], tensors[2], tensors[4]):
            t.zero_()  # as if its round's launches had written its inputs: the reader must not see this
    torch.cuda.synchronize()
    to_parent.put(json.dumps(payload))
    assert from_parent.get() == "check"
    torch.cuda.synchronize()
    to_parent.put([float(t.detach().float().sum()) for t in tensors])
    assert from_parent.get() == "done"


def test_adopted_inputs_are_the_other_process_memory_with_this_sides_fresh_values():
    import multiprocessing as mp

    from tritongate.ops.kernels import elementwise

    ctx = mp.get_context("spawn")
    to_parent, from_parent = ctx.Queue(), ctx.Queue()
    child = ctx.Process(target=_owner, args=(to_parent, from_parent))
    child.start()
    try:
        payload = json.loads(to_parent.get(timeout=120))
        assert [v["storage"] for v in payload["tensors"]] == [0, 0, 1, 2, 3]  # a view shares a's storage
        mine = _inputs()
        fresh = [t.detach().clone() for t in mine]
        own_ptrs = [t.data_ptr() for t in mine]
        adopt_inputs(mine, payload)
        assert all(t.data_ptr() != p for t, p in zip(mine, own_ptrs))
        # this side's fresh values were copied over what the owner had written
        assert all(torch.equal(t.detach(), f) for t, f in zip(mine, fresh))
        assert mine[1].data_ptr() == mine[0].data_ptr() + 32 * 2  # the view still views its base
        assert mine[2].requires_grad and mine[3].stride() == (0,)
        # a Triton kernel captured in a CUDA graph on the adopted tensors writes the owner's memory
        x, one, out = mine[2].detach(), mine[3].contiguous(), mine[4]
        elementwise.add(x, one, out, autotuned=False)  # compiled outside the capture
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            elementwise.add(x, one, out, autotuned=False)
        graph.replay()
        torch.cuda.synchronize()
        from_parent.put("check")
        sums = to_parent.get(timeout=60)
        expected = [float(t.detach().float().sum()) for t in fresh]
        expected[4] = float((fresh[2] + 1).sum())
        assert sums == pytest.approx(expected, rel=1e-3)
        del mine, x, one, out, graph
        from_parent.put("done")
        child.join(60)
        assert child.exitcode == 0
    finally:
        if child.is_alive():
            child.kill()
