import torch
import triton
import triton.language as tl


@triton.jit
def _row_sum_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        mask = start + offs < cols
        acc += tl.load(x_ptr + row * cols + start + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def sum_dim(inp, dim=None, keepdim=False, *, dtype=None):
    assert list(dim) in ([-1], [inp.ndim - 1]), "the stand-in reduces the last dim only"
    x = inp.contiguous()
    cols = x.shape[-1]
    out = torch.empty(x.shape[:-1], dtype=dtype or x.dtype, device=x.device)
    _row_sum_kernel[(out.numel(),)](x, out, cols, BLOCK=64)
    return out.unsqueeze(-1) if keepdim else out
