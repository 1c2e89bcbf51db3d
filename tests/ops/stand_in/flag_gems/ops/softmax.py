import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * cols + offs, e / tl.sum(e, axis=0), mask=mask)


def softmax(self, dim, half_to_float=False):
    assert dim in (-1, self.ndim - 1), "the stand-in normalizes the last dim only"
    x = self.contiguous()
    cols = x.shape[-1]
    out = torch.empty_like(x)
    _softmax_kernel[(x.numel() // cols,)](x, out, cols, BLOCK=triton.next_power_of_2(cols))
    return out
