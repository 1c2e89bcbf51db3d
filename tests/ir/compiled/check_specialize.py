"""The specialization ``ir.specialize`` records compiles, for cuda:90, to the very binary the
GPU JIT's own ASTSource for the same launch gives (line info off, as every GPU run)."""

from __future__ import annotations

import hashlib

import pytest
import torch

from tests.ir.compiled.aot_kernels import compiled_add
from tritongate.ir.specialize import specialize_launch
from tritongate.ops.kernels.elementwise import add_kernel_fixed


def test_the_recorded_specialization_compiles_to_the_gpu_jit_binary(monkeypatch: pytest.MonkeyPatch) -> None:
    import triton
    from triton.backends.compiler import GPUTarget

    monkeypatch.setenv("TRITON_DISABLE_LINE_INFO", "1")  # enters the compile key too
    args = (*(torch.zeros(4096, dtype=torch.float16) for _ in range(3)), 4096)
    spec = specialize_launch(add_kernel_fixed, args, {"BLOCK": 1024, "num_warps": 4})
    mine = triton.compile(spec.src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4, "num_stages": 3})
    reference = compiled_add()
    assert hashlib.sha256(mine.kernel).hexdigest() == hashlib.sha256(reference.kernel).hexdigest()
    assert mine.hash == spec.hash  # in a process without the interpreter, the compile key is the JIT's
