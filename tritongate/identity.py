"""What a run was measured on and with: the run identity (``run_identity.json``).

The gate refuses to compare runs whose identities differ where it matters (GPU model,
driver, backend, timer, code-generation settings); everything here is recorded so a
mismatch can be named.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import platform
import socket
from typing import Any

from tritongate import __version__

# Settings that change the code Triton emits for a given target: a recompile (``tritongate ir``)
# reproduces them, and the pre-screen refuses to pair IR screened with other values.
CODEGEN_SETTINGS = ("TRITON_DISABLE_LINE_INFO", "TRITON_DEFAULT_FP_FUSION", "TRITON_F32_DEFAULT",
                    "DISABLE_LLVM_OPT", "DISABLE_MMA_V3", "DISABLE_PTXAS_OPT")
# Environment that changes generated code or its numbers; recorded verbatim. The rest say where
# and how it ran (interpreter, arch override, cache, device), which a recompile sets itself.
CODEGEN_ENV = (*CODEGEN_SETTINGS, "TRITON_INTERPRET", "TRITON_OVERRIDE_ARCH", "TRITON_CACHE_DIR",
               "CUDA_VISIBLE_DEVICES")


def triton_build() -> dict[str, str]:
    import triton

    info = {"version": triton.__version__, "path": os.path.dirname(triton.__file__)}
    try:
        from triton.runtime.cache import triton_key

        # triton_key hashes the frontend, compiler, backends and libtriton: one per build.
        info["build_hash"] = hashlib.sha256(triton_key().encode()).hexdigest()[:16]
    except Exception as exc:  # noqa: BLE001 - older layouts: record why it is missing
        info["build_hash"] = f"unknown ({type(exc).__name__})"
    from tritongate.overlay import overlay_identity

    overlay = overlay_identity(info["path"])
    if overlay is not None:  # a patched overlay of an installed build: which patches
        info["overlay"] = json.dumps(overlay, sort_keys=True)
    return info


def software() -> dict[str, Any]:
    import torch

    return {
        "tritongate": __version__,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda or "",
        "hip": getattr(torch.version, "hip", None) or "",
        "triton": triton_build(),
    }


def host() -> dict[str, str]:
    return {"hostname": socket.gethostname(), "platform": platform.platform(),
            "machine": platform.machine()}


def codegen_env() -> dict[str, str | None]:
    return {k: os.environ.get(k) for k in CODEGEN_ENV}


def compiler_ref() -> str:
    """The compiler build under test, as CI names it (falls back to the triton version)."""
    import triton

    return os.environ.get("TRITONGATE_COMPILER_REF") or f"triton {triton.__version__}"


def config_dict(config: Any) -> dict[str, Any]:
    return {k: (v.value if hasattr(v, "value") else v) for k, v in dataclasses.asdict(config).items()}


def source_commit() -> str | None:
    """The commit of the code under test, as CI names it."""
    return os.environ.get("TRITONGATE_COMMIT") or os.environ.get("GITHUB_SHA")
