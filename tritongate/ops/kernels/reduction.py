"""Row-wise reductions: softmax and RMSNorm (one program per row)."""

from __future__ import annotations

import triton
import triton.language as tl

from tritongate.ops.kernels.planted import plant_kwargs, planted_spin


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, x_stride, out_stride, plant_cycles, BLOCK: tl.constexpr,
                   PLANT: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    out = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_stride + cols, out.to(out_ptr.dtype.element_ty), mask=mask)
    if PLANT:
        planted_spin(plant_cycles)


def _warps(block: int) -> int:
    return 16 if block >= 16384 else 8 if block >= 4096 else 4 if block >= 1024 else 2


def softmax(x, out, *, plant=None) -> None:
    """Softmax over the last dimension of a contiguous tensor of any rank."""
    n_cols = x.shape[-1]
    rows = x.numel() // n_cols
    block = triton.next_power_of_2(n_cols)
    softmax_kernel[(rows,)](x, out, n_cols, n_cols, n_cols, BLOCK=block, num_warps=_warps(block),
                            **plant_kwargs(plant))


@triton.autotune(
    configs=[triton.Config({}, num_warps=w) for w in (2, 4, 8, 16)],
    key=["n_cols"],
)
@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, out_ptr, n_cols, eps, plant_cycles, BLOCK: tl.constexpr,
                   PLANT: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rms = tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(out_ptr + row * n_cols + cols, (x / rms * w).to(out_ptr.dtype.element_ty), mask=mask)
    if PLANT:
        planted_spin(plant_cycles)


def rmsnorm(x, weight, out, eps: float = 1e-6, *, plant=None) -> None:
    n_cols = x.shape[-1]
    rows = x.numel() // n_cols
    rmsnorm_kernel[(rows,)](x, weight, out, n_cols, eps, BLOCK=triton.next_power_of_2(n_cols),
                            **plant_kwargs(plant))
