"""One kernel written twice (``FMA`` and ``FMA_RENAMED``): the same code and kernel name, every
argument and local named otherwise, so its TTGIR differs only in SSA names and locations.
A multiply-add, so whether fp fusion is on changes the PTX (``fma.rn.f32``) but not the IR above."""

import triton
import triton.language as tl


@triton.jit
def fma_kernel(x_ptr, y_ptr, z_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    z = tl.load(z_ptr + offs, mask=mask)
    acc = x * y + z
    tl.store(out_ptr + offs, acc * 2.0 + 1.0, mask=mask)


FMA = fma_kernel


@triton.jit
def fma_kernel(a, b, c, result, count, BLOCK: tl.constexpr):  # the same kernel, renamed throughout
    block_id = tl.program_id(0)
    index = block_id * BLOCK + tl.arange(0, BLOCK)
    inside = index < count
    av = tl.load(a + index, mask=inside)
    bv = tl.load(b + index, mask=inside)
    cv = tl.load(c + index, mask=inside)
    total = av * bv + cv
    tl.store(result + index, total * 2.0 + 1.0, mask=inside)


FMA_RENAMED = fma_kernel
