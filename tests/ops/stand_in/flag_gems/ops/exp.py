import torch
import triton
import triton.language as tl


@triton.jit
def _exp_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, tl.exp(x), mask=mask)


def exp(A):
    out = torch.empty_like(A)
    n = A.numel()
    _exp_kernel[(triton.cdiv(n, 1024),)](A, out, n, BLOCK=1024)
    return out
