"""The planted delay compiles into every builtin kernel for cuda:90, and only when asked for
(a real compile, no GPU): with PLANT off the PTX has no clock read."""

from __future__ import annotations

import pytest

from tritongate.ops.kernels import attention, elementwise, matmul, reduction

# (kernel, the constexprs of one variant, pointer element type)
KERNELS = [
    (elementwise.add_kernel.fn, {"BLOCK": 1024}, "fp16"),
    (elementwise.silu_mul_kernel.fn, {"BLOCK": 1024}, "fp16"),
    (reduction.softmax_kernel, {"BLOCK": 1024}, "fp32"),
    (reduction.rmsnorm_kernel.fn, {"BLOCK": 1024}, "bf16"),
    (matmul.matmul_kernel_fixed, {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}, "fp16"),
    (attention.attention_fwd_kernel.fn, {"HEAD_DIM": 64, "CAUSAL": True, "BLOCK_M": 64, "BLOCK_N": 32}, "fp16"),
]


def compile_ptx(fn, consts: dict, elem: str, plant: bool) -> str:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    sig = {}
    for p in fn.params:
        if p.is_constexpr:
            sig[p.name] = "constexpr"
        elif p.name.endswith("_ptr"):
            sig[p.name] = f"*{elem}"
        elif p.name == "plant_cycles":
            sig[p.name] = "i64"
        elif p.name in ("sm_scale", "eps"):
            sig[p.name] = "fp32"
        else:
            sig[p.name] = "i32"
    src = ASTSource(fn=fn, signature=sig, constexprs={**consts, "PLANT": plant})
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4, "num_stages": 2}).asm["ptx"]


@pytest.mark.parametrize("fn,consts,elem", KERNELS, ids=[k[0].__name__ for k in KERNELS])
def test_the_delay_is_compiled_in_only_when_planted(fn, consts, elem):
    plain, planted = compile_ptx(fn, consts, elem, False), compile_ptx(fn, consts, elem, True)
    assert "%clock64" not in plain and "atom." not in plain
    # the spin counts SM cycles; programs share nothing (no atomics), so no process pays more
    assert "%clock64" in planted and "%globaltimer" not in planted and "atom." not in planted
