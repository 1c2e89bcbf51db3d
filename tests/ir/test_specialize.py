"""A CPU run's IR index: each interpreted launch recorded with the specialization a GPU
launch would compile for cuda:90, by Triton's own binder; compared with the ``ASTSource``
the GPU JIT builds for the same arguments (the real cuda:90 compile of a recorded
specialization is ``compiled/check_specialize.py``: compiling needs a process without the
interpreter)."""

from __future__ import annotations

import os

import pytest
import torch

from tests.ir.compiled.aot_kernels import DIV16, add_source
from tritongate.ir.capture import observe_compiled, row_ir
from tritongate.ir.specialize import specialize_launch
from tritongate.ops.kernels.elementwise import add_kernel_fixed
from tritongate.ir.variants import record_launches

pytestmark = pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="interpreter session only")


def _args(n: int = 4096, offset: int = 0):
    x, y, out = (torch.zeros(n + offset, dtype=torch.float16)[offset:] for _ in range(3))
    return x, y, out, n


def test_an_aligned_launch_specializes_as_the_gpu_jit_does() -> None:
    spec = specialize_launch(add_kernel_fixed, _args(), {"BLOCK": 1024, "num_warps": 4})
    expected = add_source()  # what JITFunction.run builds on the GPU for 16-byte aligned pointers, n % 16 == 0
    assert spec.src.signature == expected.signature
    assert spec.src.constants == expected.constants
    # 3.7+ lists constexprs with no attribute too (``[]``): only the attributes themselves compare
    assert {k: [list(a) for a in v] for k, v in spec.src.attrs.items() if v} == expected.attrs
    assert (spec.metadata.num_warps, spec.metadata.num_stages, spec.metadata.num_ctas) == (4, 3, 1)
    assert spec.metadata.target.arch == 90 and spec.kernel == b""


def test_misaligned_pointers_and_odd_sizes_lose_their_divisibility() -> None:
    x, y, out, _ = _args(4096, offset=1)  # 2 bytes past a 16-byte boundary
    spec = specialize_launch(add_kernel_fixed, (x, y, out, 4095), {"BLOCK": 1024})
    assert not any(spec.src.attrs.values())  # neither pointer nor 4095 is divisible by 16
    one = specialize_launch(add_kernel_fixed, (*_args()[:3], 1), {"BLOCK": 1024})
    assert one.src.signature["n"] == "constexpr" and one.src.constants[(3,)] == 1  # Triton folds n == 1
    assert spec.hash != one.hash != specialize_launch(add_kernel_fixed, _args(), {"BLOCK": 1024}).hash


def test_an_interpreted_row_is_indexed_with_its_launches_and_no_ttgir() -> None:
    args = _args()
    with observe_compiled() as seen:
        add_kernel_fixed[(4,)](*args, BLOCK=1024, num_warps=4)
    with record_launches() as launches:
        add_kernel_fixed[(4,)](*args, BLOCK=1024, num_warps=4)
        add_kernel_fixed[(4,)](*args, BLOCK=1024, num_warps=4)
    assert torch.equal(args[2], args[0] + args[1])  # the launch itself still ran
    ir = row_ir(seen, dict(launches.compiled_launches), case="4096", row="add/float16")
    (v,) = ir.variants
    assert (v.launches, v.sweep_loser, v.file, v.target) == (2, False, "", "cuda:90")
    assert {k: a for k, a in v.specialization.items() if a} == {"n": DIV16, "out_ptr": DIV16, "x_ptr": DIV16,
                                                                 "y_ptr": DIV16}
    assert v.constexprs == {"BLOCK": 1024} and ir.ttgir == {} and ir.notes == ()
    assert [x.name for x in launches.variants()] == ["BLOCK=1024 w4"]  # the row's variants as before


def test_a_launch_triton_cannot_specialize_is_a_note_never_a_failed_row() -> None:
    with observe_compiled() as seen:
        with pytest.raises(Exception):
            add_kernel_fixed[(1,)](object(), object(), object(), 4, BLOCK=16)
    assert seen.kernels == {} and any("no GPU specialization" in n for n in seen.notes)


def test_capture_only_indexes_launches_without_executing_them(monkeypatch: pytest.MonkeyPatch) -> None:
    from triton.runtime.interpreter import InterpretedFunction

    from tritongate.backends import CAPTURE_ONLY_ENV
    from tritongate.ir.capture import install_capture_only

    monkeypatch.setattr(InterpretedFunction, "run", InterpretedFunction.run)  # restored after the test
    assert not install_capture_only({"TRITON_INTERPRET": "1"})  # off unless asked for
    monkeypatch.setenv(CAPTURE_ONLY_ENV, "1")
    args = _args()
    args[0].fill_(1.0)
    with observe_compiled() as seen:
        add_kernel_fixed[(4,)](*args, BLOCK=1024, num_warps=4)
    assert not torch.any(args[2])  # not executed: out stays zero
    (v,) = row_ir(seen, None, case="4096", row="add/float16").variants
    assert v.constexprs == {"BLOCK": 1024} and v.specialization["x_ptr"] == DIV16
    assert any("indexed, not executed" in n for n in seen.notes)


def test_capture_only_is_an_interpreter_option_only() -> None:
    from tritongate.backends import CAPTURE_ONLY_ENV, capture_only_requested

    assert capture_only_requested("cpu", {CAPTURE_ONLY_ENV: "1"})
    assert not capture_only_requested("cuda", {CAPTURE_ONLY_ENV: "1"})  # a GPU run always executes and times
    assert not capture_only_requested("cpu", {})
