import pytest

from tritongate.harness.cuda_errors import fatal_cuda_error
from tritongate.markers import one_line

DSA_HINT = "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."


@pytest.mark.parametrize("text,expected", [
    (f"CUDA error: an illegal memory access was encountered\n{DSA_HINT}\n",
     "an illegal memory access was encountered"),
    (f"CUDA error: device-side assert triggered\n{DSA_HINT}", "device-side assert triggered"),
    ("Triton Error [CUDA]: misaligned address", "misaligned address"),
    ("RuntimeError: CUDA driver error: CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_ILLEGAL_ADDRESS"),
    ("CUDA error: unspecified launch failure.", "unspecified launch failure"),
])
def test_fatal_errors_are_recognised_by_their_own_line(text, expected):
    assert fatal_cuda_error(text) == expected


@pytest.mark.parametrize("text", [
    # Every recent torch CUDA error carries the DSA hint; it must not make a refusal fatal.
    f"CUDA error: operation not permitted when stream is capturing\n{DSA_HINT}",
    f"CUDA error: operation failed due to a previous error during capture\n{DSA_HINT}",
    "Offset increment outside graph capture encountered unexpectedly.",
    "an illegal memory access was encountered in the docs, not an error line",
])
def test_capture_refusals_are_not_fatal(text):
    assert fatal_cuda_error(text) is None


def test_one_line_is_bounded_and_single_line():
    assert one_line("\n  first   line \nsecond") == "first line"
    assert len(one_line("x" * 1000)) == 200
