"""Elementwise kernels: vector add and fused SiLU-and-mul (the gated MLP activation)."""

from __future__ import annotations

import triton
import triton.language as tl

from tritongate.ops.kernels.planted import plant_kwargs, planted_spin


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 1024}, num_warps=4),
        triton.Config({"BLOCK": 2048}, num_warps=8),
        triton.Config({"BLOCK": 4096}, num_warps=8),
    ],
    key=["n"],
)
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, plant_cycles, BLOCK: tl.constexpr, PLANT: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)
    if PLANT:
        planted_spin(plant_cycles)


@triton.jit
def add_kernel_fixed(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def add(x, y, out, *, autotuned: bool = True, plant=None) -> None:
    n = out.numel()
    if autotuned:
        add_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, n, **plant_kwargs(plant))
    else:
        add_kernel_fixed[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024, num_warps=4)


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 1024}, num_warps=4),
        triton.Config({"BLOCK": 2048}, num_warps=8),
    ],
    key=["n_cols"],
)
@triton.jit
def silu_mul_kernel(x_ptr, out_ptr, n_rows, n_cols, plant_cycles, BLOCK: tl.constexpr, PLANT: tl.constexpr):
    # x is [rows, 2*cols]: gate = x[:, :cols], up = x[:, cols:]; out = silu(gate) * up
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    base = x_ptr + row * 2 * n_cols
    gate = tl.load(base + cols, mask=mask).to(tl.float32)
    up = tl.load(base + n_cols + cols, mask=mask).to(tl.float32)
    act = gate / (1.0 + tl.exp(-gate))
    tl.store(out_ptr + row * n_cols + cols, (act * up).to(out_ptr.dtype.element_ty), mask=mask)
    if PLANT:
        planted_spin(plant_cycles)


def silu_mul(x, out, *, plant=None) -> None:
    n_rows, n_cols = out.shape
    silu_mul_kernel[lambda meta: (n_rows, triton.cdiv(n_cols, meta["BLOCK"]))](x, out, n_rows, n_cols,
                                                                               **plant_kwargs(plant))
