"""A prepared row hands the measurement fresh inputs with the tensors they are made of."""

from __future__ import annotations

import torch

from tritongate.backends import BACKENDS, make_device
from tritongate.ops.registry import Case, OpSpec, Registry
from tritongate.preflight import PlannedRow
from tritongate.rowcase import CaseLaunch, prepare_row


def _registry(launched: list) -> Registry:
    def build(shape, dtype, device, gen):
        x = torch.randn(shape, dtype=dtype, device=device, generator=gen)
        out = torch.empty_like(x)

        def launch():
            torch.mul(x, 2, out=out)
            launched.append(x)
        return Case(launch, lambda: out, lambda: x * 2, (x, out))

    registry = Registry()
    registry.register(OpSpec("double", "2x", "[n]", (1,), ("float32",), build, bytes=lambda s, e: 8.0 * s[0]))
    return registry


def test_each_build_is_a_launch_with_its_own_tensors():
    launched: list = []
    backend = BACKENDS["cpu"]
    prepared = prepare_row(PlannedRow("double", (16,), "float32"), backend, make_device(backend, 0),
                           registry=_registry(launched))
    assert prepared.correctness.ok
    first, second = prepared.make_fn(), prepared.make_fn()
    assert isinstance(first, CaseLaunch) and len(first.tensors) == 2
    assert first.tensors[0] is not second.tensors[0] and torch.equal(first.tensors[0], second.tensors[0])
    first()
    assert launched[-1] is first.tensors[0]
    # on the host there is nothing to share with another worker's device memory
    assert prepared.unshareable == "inputs on cpu"
