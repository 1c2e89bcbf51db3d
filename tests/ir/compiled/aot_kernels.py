"""Real ahead-of-time compiles for cuda:90 on the CPU, shared by the IR tests (compiled once
per session, about 1 s each).

The tests run under TRITON_INTERPRET=1, so Triton's own ``@jit`` helpers (``tl.cdiv``, ...)
are interpreter functions in this process: the kernels compiled here use builtins only.
A kernel calling those helpers is compiled by ``tritongate ir`` in a subprocess instead.
"""

from __future__ import annotations

import functools
import os
import tempfile

ADD = "tritongate.ops.kernels.elementwise.add_kernel_fixed"
DIV16 = [["tt.divisibility", 16]]
_CACHE = tempfile.mkdtemp(prefix="tritongate-test-cache-")  # fresh: every compile really compiles


def add_source(dtype: str = "fp16", block: int = 1024):
    from triton.compiler import ASTSource

    from tritongate.ir.aot import resolve_kernel

    sig = {"x_ptr": f"*{dtype}", "y_ptr": f"*{dtype}", "out_ptr": f"*{dtype}", "n": "i32", "BLOCK": "constexpr"}
    return ASTSource(fn=resolve_kernel(ADD), signature=sig, constexprs={"BLOCK": block},
                     attrs={(0,): DIV16, (1,): DIV16, (2,): DIV16, (3,): DIV16})


@functools.lru_cache(maxsize=None)
def compiled_add(dtype: str = "fp16", block: int = 1024, num_warps: int = 4, num_stages: int = 3):
    import triton
    from triton.backends.compiler import GPUTarget

    saved = {k: os.environ.get(k) for k in ("TRITON_DISABLE_LINE_INFO", "TRITON_CACHE_DIR")}
    os.environ.update(TRITON_DISABLE_LINE_INFO="1", TRITON_CACHE_DIR=_CACHE)  # as every GPU run
    try:
        return triton.compile(add_source(dtype, block), target=GPUTarget("cuda", 90, 32),
                              options={"num_warps": num_warps, "num_stages": num_stages})
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
