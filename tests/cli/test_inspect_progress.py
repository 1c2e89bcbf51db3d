"""`tritongate ir`'s progress line names each variant so that two ops sharing a kernel and a case
(attention and attention_causal) can be told apart, with no trailing space."""

from tritongate.cli.inspect import _progress_line
from tritongate.ir.index import CompiledVariant


def variant(**kw: object) -> CompiledVariant:
    base = {"case": "1x2x64x32", "kernel": "tritongate.ops.kernels.attention.attention_fwd_kernel", "signature": {},
            "constexprs": {}, "specialization": {}, "options": {}, "compile_hash": "c0ffee"}
    return CompiledVariant(**{**base, **kw})  # type: ignore[arg-type]


def test_the_rows_that_launched_it_tell_two_ops_of_one_kernel_apart() -> None:
    causal = _progress_line(0, 8, variant(rows=("attention_causal/float16",)))
    plain = _progress_line(1, 8, variant(rows=("attention/float16",)))
    assert causal == "[1/8] 1x2x64x32 attention_fwd_kernel (attention_causal/float16)"
    assert plain == "[2/8] 1x2x64x32 attention_fwd_kernel (attention/float16)"


def test_a_named_variant_shows_its_file_name_and_nothing_trails() -> None:
    line = _progress_line(2, 8, variant(name="CAUSALTrue_w4s3"))
    assert line == "[3/8] 1x2x64x32 attention_fwd_kernel CAUSALTrue_w4s3" and not line.endswith(" ")


def test_names_from_the_index_are_made_safe() -> None:
    assert "\\u202e" in _progress_line(0, 1, variant(case="a\u202eb"))
