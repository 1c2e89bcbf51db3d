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


def test_a_non_finite_reference_is_named_not_a_validation_error() -> None:
    """A reference of NaN or inf (an op's reference() or inputs gone wrong) fails the row's check
    with what is wrong; it made a pydantic error about max_abs_err before."""
    import torch

    from tritongate.rowcase import check_output

    class Case:
        def __init__(self, want: torch.Tensor) -> None:
            self.want = want

        def output(self) -> torch.Tensor:
            return torch.ones(4)

        def reference(self) -> torch.Tensor:
            return self.want

    for bad in (float("nan"), float("inf")):
        got = check_output(Case(torch.tensor([1.0, 1.0, bad, 1.0])), (1e-5, 1e-5))
        assert not got.ok and got.max_abs_err is None and "non-finite values in the reference" in got.detail
    assert check_output(Case(torch.ones(4)), (1e-5, 1e-5)).ok


def test_a_matching_row_does_not_scan_its_reference_for_nan(monkeypatch) -> None:
    """The reference's NaN/inf check costs a pass over the whole tensor (12 ms for 4M floats on
    a CPU): it runs only where the largest difference says something is non-finite."""
    import torch

    from tritongate.rowcase import check_output

    class Case:
        def __init__(self, got: torch.Tensor) -> None:
            self.got = got

        def output(self) -> torch.Tensor:
            return self.got

        def reference(self) -> torch.Tensor:
            return torch.ones(4)

    scanned: list[int] = []
    real = torch.isfinite
    monkeypatch.setattr(torch, "isfinite", lambda t: scanned.append(t.numel()) or real(t))
    assert check_output(Case(torch.ones(4)), (1e-5, 1e-5)).ok
    assert len(scanned) == 1  # the output's own check only
    got = check_output(Case(torch.tensor([1.0, float("nan"), 1.0, 1.0])), (1e-5, 1e-5))
    assert not got.ok and got.detail == "non-finite values in the output"
