"""File names of the saved TTGIR: built from CompiledVariant values, nothing is compiled."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tritongate.ir.index import CompiledVariant
from tritongate.ir.naming import (MAX_STEM, abbreviate, abbreviations, assign_names, case_dir, kernel_dir, legend,
                                  option_block)

MATMUL = "tritongate.ops.kernels.matmul.matmul_kernel_fixed"
SOFTMAX = "tritongate.ops.kernels.softmax.softmax_kernel_inner"
DIV16 = [["tt.divisibility", 16]]
SAFE_STEM = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")


def cv(compile_hash: str, constexprs=None, dtype: str = "fp16", options=None, spec=None,
       case: str = "1024x1024", kernel: str = SOFTMAX, extra_args=("EM",)) -> CompiledVariant:
    constexprs = dict(constexprs or {})
    signature = {"x_ptr": f"*{dtype}"} if dtype else {}
    signature.update({a: "i32" for a in extra_args})
    signature.update({n: "constexpr" for n in constexprs})
    return CompiledVariant(case=case, kernel=kernel, signature=signature, constexprs=constexprs,
                           specialization=dict(spec or {}), options=dict({"num_warps": 4, "num_stages": 3} if options is None else options),
                           compile_hash=compile_hash)


def assert_safe(names: dict[str, str]) -> None:
    stems = list(names.values())
    assert len({s.casefold() for s in stems}) == len(stems), stems
    for s in stems:
        assert SAFE_STEM.fullmatch(s) and len(s) <= MAX_STEM, s


def assert_safe_dir(d: str) -> None:
    assert d not in ("", ".", "..") and not d.startswith(".") and len(d) <= MAX_STEM, d
    assert re.fullmatch(r"[A-Za-z0-9._=-]+", d), d


# --- abbreviations ----------------------------------------------------------------------

@pytest.mark.parametrize("name, short", [
    ("BLOCK_SIZE_M", "BSM"), ("GROUP_M", "GM"), ("stride_am", "sa"), ("BLOCK", "BLOCK"), ("EM", "EM"),
    ("_BLOCK__M_", "BM"), ("_x", "_x"), ("__", "__"), ("num_warps_x", "nwx"),
])
def test_abbreviate(name, short):
    assert abbreviate(name) == short


def test_names_sharing_an_abbreviation_keep_their_full_names():
    got = abbreviations(["BLOCK_M", "BATCH_M", "BLOCK_N", "GROUP_M", "BM_"])
    assert got == {"BLOCK_M": "BLOCK_M", "BATCH_M": "BATCH_M", "BM_": "BM_", "BLOCK_N": "BN", "GROUP_M": "GM"}


@settings(max_examples=300, deadline=None)
@given(st.sets(st.text(alphabet="ABab_é1", min_size=1, max_size=6), max_size=8))
def test_abbreviations_are_unambiguous_and_file_safe(names):
    got = abbreviations(names)
    assert set(got) == names
    assert len(set(got.values())) == len(names)
    assert all(re.fullmatch(r"[A-Za-z0-9_-]+", s) for s in got.values())


# --- stems ------------------------------------------------------------------------------

def test_spec_example_three_dtypes_same_options():
    group = [cv(f"{c}" * 16, {"BLOCK_SIZE": 1024}, dtype=d) for c, d in zip("abc", ("bf16", "fp16", "fp32"))]
    assert sorted(assign_names(group).values()) == ["w4s3__bf16", "w4s3__fp16", "w4s3__fp32"]


def _matmul(h, bm, bn, warps):
    return cv(h, {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": 32, "GROUP_M": 8, "EVEN_K": True},
              options={"num_warps": warps, "num_stages": 4, "num_ctas": 1, "maxnreg": None, "enable_fp_fusion": True},
              kernel=MATMUL, case="4096x4096", extra_args=("M", "N", "K", "stride_am"))


def test_matmul_autotune_group_names_only_what_differs():
    group = [_matmul("h1", 128, 128, 8), _matmul("h2", 128, 64, 4), _matmul("h3", 64, 64, 4)]
    assert assign_names(group) == {"h1": "BM128_BN128_w8s4", "h2": "BM128_BN64_w4s4", "h3": "BM64_BN64_w4s4"}


def test_constants_equal_across_the_group_are_left_out():
    assert assign_names([_matmul("h1", 128, 128, 8)]) == {"h1": "w8s4"}
    group = [_matmul("h1", 128, 64, 4), _matmul("h2", 128, 128, 4)]
    assert assign_names(group) == {"h1": "BN64_w4s4", "h2": "BN128_w4s4"}


def test_option_block():
    assert option_block({"num_warps": 4, "num_stages": 3, "num_ctas": 1, "maxnreg": None}) == "w4s3"
    assert option_block({"num_warps": 8, "num_stages": 2, "num_ctas": 2, "maxnreg": 128}) == "w8s2c2r128"
    assert option_block({}) == ""
    assert assign_names([cv("h", options={})]) == {"h": "variant"}


def test_clashing_abbreviations_use_full_names_in_stems():
    group = [cv("h1", {"BLOCK_M": 64, "BATCH_M": 2, "BLOCK_N": 32}), cv("h2", {"BLOCK_M": 128, "BATCH_M": 2, "BLOCK_N": 64})]
    assert assign_names(group) == {"h1": "BLOCK_M64_BN32_w4s3", "h2": "BLOCK_M128_BN64_w4s3"}


def test_a_constexpr_missing_in_one_variant_counts_as_differing():
    group = [cv("h1", {"FLAG": 1, "B": 4}), cv("h2", {"B": 4})]
    assert assign_names(group) == {"h1": "FLAG1_w4s3", "h2": "w4s3"}


def test_true_and_one_are_different_values():
    assert assign_names([cv("h1", {"F": True}), cv("h2", {"F": 1})]) == {"h1": "FTrue_w4s3", "h2": "F1_w4s3"}


def test_collisions_dtype_then_divisibility_then_hash():
    group = [
        cv("a" * 64, dtype="fp16", spec={"EM": DIV16}),
        cv("b" * 64, dtype="fp16", spec={"EM": []}),
        cv("c" * 64, dtype="fp32"),
        cv("d" * 64, dtype="fp32"),
        cv("e" * 64, dtype="bf16", spec={"EM": DIV16, "x_ptr": DIV16}),
        cv("f" * 64, dtype="bf16", spec={"EM": [["tt.divisibility", 8]], "x_ptr": DIV16}),
    ]
    assert assign_names(group) == {
        "a" * 64: "w4s3__fp16__EMdiv16",
        "b" * 64: "w4s3__fp16",  # not specialized: no suffix
        # the same parameters, told apart only by the compiler: the whole compile hash
        "c" * 64: "w4s3__fp32__" + "c" * 64,
        "d" * 64: "w4s3__fp32__" + "d" * 64,
        "e" * 64: "w4s3__bf16__EMdiv16",  # x_ptr agrees: left out
        "f" * 64: "w4s3__bf16__EMdiv8",
    }


def test_divisibility_as_a_mapping_and_abbreviated_arguments():
    group = [cv("h1", spec={"stride_am": {"tt.divisibility": 16}}, extra_args=("stride_am",)),
             cv("h2", spec={}, extra_args=("stride_am",))]
    assert assign_names(group) == {"h1": "w4s3__sadiv16", "h2": "w4s3"}


def test_dtype_suffix_only_where_dtypes_differ():
    group = [cv("h1", dtype="fp16", spec={"EM": DIV16}), cv("h2", dtype="fp16")]
    assert assign_names(group) == {"h1": "w4s3__EMdiv16", "h2": "w4s3"}
    assert assign_names([cv("h1", dtype=""), cv("h2", dtype="fp16")]) == {"h1": "w4s3", "h2": "w4s3__fp16"}


def test_shared_hash_prefix_falls_back_to_the_whole_hash():
    group = [cv("deadbeef" + "0" * 56), cv("deadbeef" + "1" * 56)]
    assert assign_names(group) == {h: f"w4s3__{h}" for h in (g.compile_hash for g in group)}


def test_stems_differing_only_in_case_are_collisions():
    group = [cv("h1", {"MODE": "Fast"}), cv("h2", {"MODE": "fast"})]
    names = assign_names(group)
    # told apart by a digest of their parameters: the same in every compiler build
    assert names == {"h1": f"MODEFast_w4s3__{params_digest(group[0])}", "h2": f"MODEfast_w4s3__{params_digest(group[1])}"}


def test_one_compile_recorded_twice_gets_one_name():
    names = assign_names([cv("h1", {"B": 1}), cv("h1", {"B": 1}), cv("h2", {"B": 2})])
    assert names == {"h1": "B1_w4s3", "h2": "B2_w4s3"}


def test_mixed_groups_are_refused():
    with pytest.raises(ValueError, match="one .case, kernel. group"):
        assign_names([cv("h1"), cv("h2", case="8x8")])


def test_names_do_not_depend_on_input_order():
    group = [
        _matmul("h1", 128, 128, 8), _matmul("h2", 128, 64, 4), _matmul("h3", 128, 64, 4),
        cv("h4", {"BLOCK_M": 64}, kernel=MATMUL, case="4096x4096", extra_args=("M", "N", "K", "stride_am")),
    ]
    expected = assign_names(group)
    for perm in itertools.permutations(group):
        assert assign_names(list(perm)) == expected
    assert_safe(expected)


def params_digest(v) -> str:
    from tritongate.ir.naming import _digest, _params_text

    return _digest(_params_text(v))


def test_the_hash_suffix_is_the_same_in_every_compiler_build():
    a = [cv("build1-x", {"MODE": "Fast"}), cv("build1-y", {"MODE": "fast"})]
    b = [cv("build2-x", {"MODE": "Fast"}), cv("build2-y", {"MODE": "fast"})]
    assert sorted(assign_names(a).values()) == sorted(assign_names(b).values())


def test_long_names_are_bounded():
    long = "x" * 400
    group = [cv("a" * 64, {"S": long + "1"}), cv("b" * 64, {"S": long + "2"})]
    names = assign_names(group)
    assert_safe(names)
    assert names["a" * 64].startswith("Sxxxx") and names["a" * 64].endswith(f"__{params_digest(group[0])}")
    assert names["b" * 64].endswith(f"__{params_digest(group[1])}")
    # cut alike, compile hashes sharing a prefix: the parameters' digests keep them apart
    group = [cv("abcdefgh1", {"S": long + "1"}), cv("abcdefgh2", {"S": long + "2"})]
    names = assign_names(group)
    assert_safe(names)
    assert {n[-8:] for n in names.values()} == {params_digest(v) for v in group}


@pytest.mark.parametrize("value, text", [
    ("a/b c", "a-b-c"), (True, "True"), (-1, "-1"), (None, "None"), (0.5, "0.5"), ([16, 32], "16-32"),
    ("../../etc/passwd", "..-..-etc-passwd"), ("a\x00b\nc", "a-b-c"), ("ä|`$(rm)", "-rm-"),
])
def test_values_are_file_safe(value, text):
    names = assign_names([cv("h1", {"V": value}), cv("h2", {"V": "other"})])
    assert names["h1"] == f"V{text}_w4s3"
    assert_safe(names)


def test_hostile_hashes_dtypes_and_parameter_names():
    group = [cv("../../x", {"é_/": 1}, dtype="f/p"), cv("..\\..\\x", {"é_/": 2}, dtype="f/p"),
             cv("A/B", {"é_/": 1}, dtype="f/p"), cv("a/b", {"é_/": 1}, dtype="f/p")]
    assert_safe(assign_names(group))


_values = st.one_of(st.integers(-3, 3), st.booleans(), st.sampled_from(["a", "A", "a/b", "", "x" * 200]))
_variant = st.builds(
    lambda h, c, d, w, div: cv(h, c, dtype=d, options={"num_warps": w, "num_stages": 3},
                               spec={"EM": [["tt.divisibility", div]]} if div else {}),
    st.text(alphabet="0123456789abcdefABC/.", min_size=1, max_size=12),
    st.dictionaries(st.sampled_from(["BLOCK_M", "BATCH_M", "B", "MODE"]), _values, max_size=3),
    st.sampled_from(["fp16", "fp32", ""]), st.sampled_from([4, 8]), st.sampled_from([0, 8, 16]))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(_variant, min_size=1, max_size=8), st.randoms())
def test_any_group_gets_unique_safe_order_independent_names(group, rnd):
    names = assign_names(group)
    assert set(names) == {v.compile_hash for v in group}
    assert_safe(names)
    shuffled = list(group)
    rnd.shuffle(shuffled)
    assert assign_names(shuffled) == names


# --- directories ------------------------------------------------------------------------

def test_kernel_dir_is_the_last_part_unless_shared():
    other = "tritongate.ops.kernels.softmax.softmax_kernel_inner"
    assert kernel_dir(MATMUL, [other]) == "matmul_kernel_fixed"
    assert kernel_dir(MATMUL, [MATMUL, other]) == "matmul_kernel_fixed"  # itself is not another
    twin = "user.matmul_kernel_fixed"
    assert kernel_dir(MATMUL, [twin]) == MATMUL
    assert kernel_dir(twin, [MATMUL]) == twin
    assert kernel_dir("a.Kernel", ["b.kernel"]) == "a.Kernel"  # case-insensitive file systems


def test_kernel_dir_hostile_ids():
    ids = ["m.f.<locals>.k", "m/f.<locals>.k", "m-f.-locals-.k", "../..", "", ".", "a.b.", "m.F.<LOCALS>.K"]
    dirs = [kernel_dir(k, ids) for k in ids]
    assert len({d.casefold() for d in dirs}) == len(ids), dirs
    for d in dirs:
        assert_safe_dir(d)
    assert kernel_dir("m.f.<locals>.k", []) == "k"


def test_case_dir():
    assert case_dir("4096x4096") == "4096x4096"
    assert case_dir("B=4-M=128.5") == "B=4-M=128.5"
    hostile = ["", ".", "..", "../x", "a/b", "a b", "a\x00b", "x" * 400, ".hidden", "a:b|c"]
    dirs = [case_dir(c) for c in hostile]
    assert len(set(dirs)) == len(hostile)
    for d in dirs:
        assert_safe_dir(d)
    assert case_dir("a/b").startswith("a-b-")


@given(st.text(max_size=40))
def test_case_dir_is_always_safe(case):
    assert_safe_dir(case_dir(case))


# --- legend -----------------------------------------------------------------------------

def test_legend():
    groups = {
        "4096x4096/" + MATMUL: [_matmul("h1", 128, 128, 8)],
        "1024x1024/" + MATMUL: [_matmul("h2", 64, 64, 4)],
        "1024x1024/evil": [cv("h3", {"BLOCK_SIZE_M": 1}, kernel="evil.k|`x`<b>")],
    }
    text = legend(groups)
    for letter, option in (("w", "num_warps"), ("s", "num_stages"), ("c", "num_ctas"), ("r", "maxnreg")):
        assert f"| {letter} | {option}" in text
    assert "__<dtype>" in text and "div<N>" in text and "__<hash>" in text
    assert text.count(f"## Kernel {MATMUL}") == 1  # regrouped by kernel id
    assert "| BM | BLOCK_M |" in text and "| sa | stride_am |" in text
    assert "| EK | EVEN_K |" in text
    assert "| BSM | BLOCK_SIZE_M |" in text
    evil = next(line for line in text.splitlines() if line.startswith("## Kernel evil"))
    assert "|" not in evil and "`" not in evil and "<b>" not in evil
    assert text.index("## Kernel evil") < text.index(f"## Kernel {MATMUL}")  # sorted


def test_legend_cells_escape_user_names():
    text = legend({"g": [cv("h", {"A|B": 1, "C`D": 2})]})
    rows = [line for line in text.splitlines() if "A" in line and "B" in line and line.startswith("| ")]
    assert rows and all(line.count("|") == 3 for line in rows)
    assert "C`D" not in text
