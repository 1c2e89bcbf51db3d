"""Which device errors are fatal to the process, recognised by their exact text.

After a fatal error the CUDA context is dead, so falling back to another timer would only
produce garbage: the row must fail. A capture that was merely refused (host sync inside
the captured function, an allocation on the capture stream) is not fatal and falls back.

Broad substrings are a trap: recent torch appends "Compile with `TORCH_USE_CUDA_DSA` to
enable device-side assertions." to *every* CUDA error, so matching "device-side assert"
would call every failed capture fatal. Only the error's own line counts here.
"""

from __future__ import annotations

import re

# cudaGetErrorString texts of the sticky errors that poison the context.
FATAL_CUDA_MESSAGES: tuple[str, ...] = (
    "an illegal memory access was encountered",
    "device-side assert triggered",
    "unspecified launch failure",
    "an illegal instruction was encountered",
    "misaligned address",
    "invalid program counter",
    "the launch timed out and was terminated",
    "uncorrectable ECC error encountered",
    "hardware stack error",
    "operation not supported on global/shared address space",
)

# The matching CUresult / cudaError names, as some drivers and wrappers print them.
FATAL_CUDA_NAMES: tuple[str, ...] = (
    "CUDA_ERROR_ILLEGAL_ADDRESS",
    "CUDA_ERROR_ASSERT",
    "CUDA_ERROR_LAUNCH_FAILED",
    "CUDA_ERROR_ILLEGAL_INSTRUCTION",
    "CUDA_ERROR_MISALIGNED_ADDRESS",
    "CUDA_ERROR_INVALID_PC",
    "CUDA_ERROR_LAUNCH_TIMEOUT",
    "CUDA_ERROR_ECC_UNCORRECTABLE",
    "CUDA_ERROR_HARDWARE_STACK_ERROR",
    "cudaErrorIllegalAddress",
    "cudaErrorAssert",
    "cudaErrorLaunchFailure",
    "cudaErrorIllegalInstruction",
    "cudaErrorMisalignedAddress",
)

_MESSAGE_LINE = re.compile(
    r"(?:CUDA error|\[CUDA\]|CUDA driver error|CUDA Error)\s*:\s*(?P<msg>.+?)\s*\.?\s*$"
)
_NAME_TOKEN = re.compile(r"\b(" + "|".join(map(re.escape, FATAL_CUDA_NAMES)) + r")\b")


def fatal_cuda_error(text: str) -> str | None:
    """The fatal error named in ``text`` (exact message or error name), else None."""
    for line in text.splitlines():
        m = _MESSAGE_LINE.search(line.strip())
        if m and m.group("msg") in FATAL_CUDA_MESSAGES:
            return m.group("msg")
        t = _NAME_TOKEN.search(line)
        if t:
            return t.group(1)
    return None


def is_fatal(exc: BaseException) -> bool:
    return fatal_cuda_error(str(exc)) is not None
