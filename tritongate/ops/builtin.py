"""The builtin operators: Triton kernels of this project, each with a torch reference."""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F

from tritongate.ops import planting
from tritongate.ops.kernels import attention as attn_k
from tritongate.ops.kernels import elementwise, matmul as mm_k, reduction
from tritongate.ops.registry import Case, OpSpec, Registry

REGISTRY = Registry()
FLOAT_DTYPES = ("float32", "float16", "bfloat16")
HALF_DTYPES = ("float16", "bfloat16")
_numel = math.prod


def _randn(shape, dtype, device, gen, scale: float = 1.0):
    # Generated in float32 on the target device, then cast: the same values for every dtype.
    return (torch.randn(shape, device=device, generator=gen, dtype=torch.float32) * scale).to(dtype)


def _case(run, reference, *tensors) -> Case:
    """``run(plant)`` launches with the planted delay of the row, if any (calibration only: see
    planting.py; on the interpreter a host spin after the launch). The last tensor is the output."""
    plant = planting.active()
    return Case(planting.host_delayed(lambda: run(plant), plant), lambda: tensors[-1], reference, tensors)


def _build_add(shape, dtype, device, gen):
    x, y = _randn(shape, dtype, device, gen), _randn(shape, dtype, device, gen)
    out = torch.empty_like(x)
    return _case(lambda p: elementwise.add(x, y, out, plant=p), lambda: x.float() + y.float(), x, y, out)


def _build_silu_mul(shape, dtype, device, gen):
    rows, cols = shape
    x = _randn((rows, 2 * cols), dtype, device, gen)
    out = torch.empty((rows, cols), dtype=dtype, device=device)
    return _case(lambda p: elementwise.silu_mul(x, out, plant=p),
                 lambda: F.silu(x[:, :cols].float()) * x[:, cols:].float(), x, out)


def _build_softmax(shape, dtype, device, gen):
    x = _randn(shape, dtype, device, gen, scale=2.0)
    out = torch.empty_like(x)
    return _case(lambda p: reduction.softmax(x, out, plant=p), lambda: torch.softmax(x.float(), dim=-1), x, out)


def _build_rmsnorm(shape, dtype, device, gen):
    x, w = _randn(shape, dtype, device, gen), _randn(shape[-1:], dtype, device, gen)
    out = torch.empty_like(x)
    return _case(lambda p: reduction.rmsnorm(x, w, out, plant=p),
                 lambda: x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6) * w.float(),
                 x, w, out)


def _build_matmul(shape, dtype, device, gen):
    m, n, k = shape
    a = _randn((m, k), dtype, device, gen, scale=1 / math.sqrt(k) ** 0.5)
    b = _randn((k, n), dtype, device, gen, scale=1 / math.sqrt(k) ** 0.5)
    c = torch.empty((m, n), dtype=dtype, device=device)
    return _case(lambda p: mm_k.matmul(a, b, c, plant=p), lambda: a.float() @ b.float(), a, b, c)


def _attention_builder(causal: bool):
    def build(shape, dtype, device, gen):
        q, k, v = (_randn(shape, dtype, device, gen) for _ in range(3))
        out = torch.empty_like(q)
        return _case(lambda p: attn_k.attention(q, k, v, out, causal=causal, plant=p),
                     lambda: F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal),
                     q, k, v, out)
    return build


_planted_spec = functools.partial(OpSpec, plantable=True)  # every builtin op takes calibration's planted delay
REGISTRY.register(_planted_spec(
    "add", "elementwise x + y (autotuned block size)", "[n] or [rows, cols]", (1, 2), FLOAT_DTYPES,
    _build_add, bytes=lambda s, e: 3 * _numel(s) * e, flops=_numel))
REGISTRY.register(_planted_spec(
    "silu_mul", "fused SiLU(gate) * up of a [rows, 2*cols] input (gated MLP)", "[rows, cols]", (2,),
    FLOAT_DTYPES, _build_silu_mul, bytes=lambda s, e: 3 * _numel(s) * e, flops=lambda s: 5 * _numel(s)))
REGISTRY.register(_planted_spec(
    "softmax", "row softmax over the last dimension", "[rows, cols] or [batch, rows, cols]", (2, 3),
    FLOAT_DTYPES, _build_softmax, bytes=lambda s, e: 2 * _numel(s) * e, flops=lambda s: 5 * _numel(s)))
REGISTRY.register(_planted_spec(
    "rmsnorm", "RMSNorm over the last dimension with a weight (autotuned warps)",
    "[rows, cols]", (2, 3), FLOAT_DTYPES, _build_rmsnorm,
    bytes=lambda s, e: (2 * _numel(s) + s[-1]) * e, flops=lambda s: 4 * _numel(s)))
REGISTRY.register(_planted_spec(
    "matmul", "C = A @ B, fp32 accumulate (autotuned tiles, warps, stages)", "[M, N, K]", (3,),
    HALF_DTYPES, _build_matmul,
    bytes=lambda s, e: (s[0] * s[2] + s[2] * s[1] + s[0] * s[1]) * e,
    flops=lambda s: 2.0 * s[0] * s[1] * s[2],
    tolerance={"float16": (2e-2, 1e-2), "bfloat16": (6e-2, 2e-2)}))
for _causal in (False, True):
    REGISTRY.register(_planted_spec(
        "attention_causal" if _causal else "attention",
        f"fused attention forward{' with a causal mask' if _causal else ''} (online softmax, autotuned)",
        "[batch, heads, seq, head_dim]", (4,), HALF_DTYPES, _attention_builder(_causal),
        bytes=lambda s, e: 4 * _numel(s) * e,
        flops=lambda s, f=2.0 if _causal else 4.0: f * s[0] * s[1] * s[2] * s[2] * s[3],
        tolerance={"float16": (2e-2, 2e-2), "bfloat16": (4e-2, 4e-2)}))

# The builtin ops as defined here: a user's module that changes REGISTRY is refused (ops.user),
# also in a later run of the same process (a batch worker), where its import is no longer seen.
DEFINED = {name: REGISTRY.get(name) for name in REGISTRY.names()}


def autotuners() -> list:
    """Every Autotuner of the builtin kernels (to start a record run from live tuning)."""
    from triton.runtime.autotuner import Autotuner

    modules = (attn_k, elementwise, mm_k, reduction)
    return [obj for mod in modules for obj in vars(mod).values() if isinstance(obj, Autotuner)]
