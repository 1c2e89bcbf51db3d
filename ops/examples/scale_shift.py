"""An example of a user op for tritongate: ``y = x * a + b``, elementwise, in Triton.

A suite takes it with ``modules: [scale_shift]`` (see ``user_ops.yaml`` next to this file):
while the suite's modules are imported, the suite's directory is on the import path. The
contract (``ops/README.md``, "Your own ops"): the module defines ``TRITONGATE_OPS``, a list
of ``OpSpec``; ``build`` allocates and seeds every input and returns a ``Case`` whose
``launch`` only launches the kernel.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from tritongate.ops.registry import Case, OpSpec

# Fixed constants: every run does the same work and checks against the same reference.
SCALE = 1.5
SHIFT = -0.25
BLOCK = 1024


@triton.jit
def scale_shift_kernel(x_ptr, y_ptr, n, a, b, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)  # compute in fp32 for every dtype
    tl.store(y_ptr + offs, (x * a + b).to(y_ptr.dtype.element_ty), mask=mask)


def scale_shift(x: torch.Tensor, y: torch.Tensor, a: float, b: float) -> None:
    n = x.numel()
    scale_shift_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, a, b, BLOCK=BLOCK)


def _build(shape, dtype, device, gen) -> Case:
    # Everything is allocated here, outside the timed launch; the inputs come from the
    # generator tritongate seeds per row (drawn in fp32, then cast: same values per dtype).
    x = torch.randn(shape, device=device, generator=gen, dtype=torch.float32).to(dtype)
    y = torch.empty_like(x)
    return Case(
        launch=lambda: scale_shift(x, y, SCALE, SHIFT),
        output=lambda: y,
        reference=lambda: x.float() * SCALE + SHIFT,
        tensors=(x, y),
    )


TRITONGATE_OPS = [
    OpSpec(
        name="scale_shift",
        description="elementwise y = x * 1.5 - 0.25 (an example user op)",
        shape_doc="[n] or [rows, cols]",
        ranks=(1, 2),
        dtypes=("float32", "float16", "bfloat16"),
        build=_build,
        bytes=lambda shape, elem: 2 * math.prod(shape) * elem,  # read x, write y
        flops=lambda shape: 2 * math.prod(shape),  # a multiply and an add per element
    ),
]
