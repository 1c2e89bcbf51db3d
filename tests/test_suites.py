import pytest

from tritongate.errors import PreflightError
from tritongate.suites import builtin_suites, load_suite

from tests.conftest import write_suite


def test_builtin_suites_load():
    assert {"smoke", "pr", "deep"} <= set(builtin_suites())
    pr = load_suite("pr")
    assert pr.name == "pr" and pr.shape_file.name == "pr.yaml"
    rows = sum(len(pr.shapes[op.name]) * len(op.dtypes) for op in pr.ops)
    assert rows >= 30
    assert {op.name for op in pr.ops} >= {"add", "silu_mul", "softmax", "rmsnorm", "matmul", "attention"}


@pytest.mark.parametrize("suite,check,msg", [
    ("ops: {add: {}\n", "suite_file", "not valid YAML at line"),
    ("- a list\n", "suite_file", "must be a mapping"),
    ("shapes: shapes.yaml\nops: {}\n", "suite_empty", "lists no ops"),
    ("shapes: shapes.yaml\n", "suite_empty", "lists no ops"),
    ("shapes: shapes.yaml\nops: {add: {dtypes: float32}}\n", "suite_file", "ops.add.dtypes"),
    ("shapes: shapes.yaml\nops: {add: {}}\nbogus: 1\n", "suite_file", r"bogus: is not a known key \(allowed: description, dtypes, modules, ops, shapes\)"),
    ("shapes: shapes.yaml\nops: {add: {dtype: [float32]}}\n", "suite_file", r"ops.add.dtype: is not a known key \(allowed: dtypes, sample_ms, shapes\)"),
    ("shapes: shapes.yaml\nops: {add: {dtypes: [true]}}\n", "suite_file", r"ops.add.dtypes\[0\]: expected a string, got true"),
    ("shapes: shapes.yaml\nops: {add: {shapes: [[0]]}}\n", "suite_file", r"ops.add.shapes\[0\]\[0\]: expected a number >= 1, got 0"),
    ("shapes: shapes.yaml\nopz: {add: {}}\n", "suite_file", r"opz: is not a known key \(allowed: description, dtypes, modules, ops, shapes\)"),
    ("shapes: shapes.yaml\nops: {add: {dtypes: [float32, float16, float32]}}\n", "suite_file",
     r"ops.add.dtypes: 'float32' is listed twice; list each once"),
    ("dtypes: [float16, float16]\nshapes: shapes.yaml\nops: {add: {}}\n", "suite_file", r"^\S+: dtypes: 'float16' is listed twice"),
    ("ops: {add: {shapes: [[4096], [64], [4096]]}}\n", "suite_file", r"ops.add.shapes: \[4096\] is listed twice"),
    ("ops: {add: {shapes: [[1099511627776]]}}\n", "suite_file", r"ops.add.shapes\[0\]\[0\]: expected a number <= 17179869184, got 1099511627776"),
    ("ops: {add: {shapes: [[99999999999999999999]]}}\n", "suite_file", r"expected a number <= 17179869184, got 99999999999999999999"),
    ("shapes: shapes.yaml\nops: {add: {shapes: [['4096']]}}\n", "suite_file", r"ops.add.shapes\[0\]\[0\]: expected an integer, got the text '4096'"),
    ("shapes: shapes.yaml\nops: {add: {shapes: []}}\n", "suite_file", r"ops.add.shapes: expected at least 1 items"),
    ("shapes: shapes.yaml\nmodules: [../evil]\nops: {add: {}}\n", "suite_file", r"modules\[0\]: expected text matching"),
    ("shapes: [a]\nops: {add: {}}\n", "suite_file", r"shapes: expected a string, got a list"),
    ("ops: {add: {shapes: [[16]]}, softmax: {}}\n", "suite_file", "give these ops inline shapes: softmax"),
    ("shapes: nope.yaml\nops: {add: {}}\n", "shape_file", "does not exist"),
    ("ops: {add: {}}\n", "suite_file", "'shapes' must name a shape file"),
    ("shapes: shapes.yaml\nops: {add: {sample_ms: 0}}\n", "suite_file", r"ops.add.sample_ms: expected a number > 0"),
    ("shapes: shapes.yaml\nops: {add: {sample_ms: 101}}\n", "suite_file", r"ops.add.sample_ms: expected a number <= 100"),
    ("shapes: shapes.yaml\nops: {add: {sample_ms: '2'}}\n", "suite_file", r"ops.add.sample_ms: expected a number, got the text '2'"),
])
def test_bad_suites_name_their_check(tmp_path, suite, check, msg):
    with pytest.raises(PreflightError, match=msg) as info:
        load_suite(str(write_suite(tmp_path, suite)))
    assert info.value.check == check


def test_bad_shape_file(tmp_path):
    with pytest.raises(PreflightError, match=r"shapes.yaml: add: expected a mapping, got a list \[16\] \(a shape file maps") as info:
        load_suite(str(write_suite(tmp_path, "shapes: shapes.yaml\nops: {add: {}}\n", "add: [16]\n")))
    assert info.value.check == "shape_file"


def test_unknown_suite_name_lists_builtin_ones():
    with pytest.raises(PreflightError, match="builtin suites: deep, pr, smoke"):
        load_suite("nightly-typo")


def test_inline_shapes_win_over_the_shape_file(tmp_path):
    suite = load_suite(str(write_suite(tmp_path, "shapes: shapes.yaml\nops: {add: {shapes: [[32], [64]]}, "
                                                 "softmax: {}}\n", "add: {shapes: [[16]]}\nsoftmax: {shapes: [[2, 8]]}\n")))
    assert suite.shapes == {"add": ((32,), (64,)), "softmax": ((2, 8),)}


def test_a_suite_of_inline_shapes_needs_no_shape_file(tmp_path):
    path = tmp_path / "inline.yaml"
    path.write_text("modules: [my_ops]\nops: {add: {dtypes: [float16], shapes: [[4096]]}}\n")
    suite = load_suite(str(path))
    assert suite.shape_file is None and suite.shapes == {"add": ((4096,),)}
    assert suite.modules == ("my_ops",) and suite.ops[0].dtypes == ("float16",)


def test_an_op_may_set_its_own_sample_length(tmp_path):
    suite = load_suite(str(write_suite(tmp_path, "shapes: shapes.yaml\nops: {add: {sample_ms: 2.5}, softmax: {}}\n",
                                       "add: {shapes: [[16]]}\nsoftmax: {shapes: [[2, 8]]}\n")))
    assert {op.name: op.sample_s for op in suite.ops} == {"add": 0.0025, "softmax": None}


@pytest.mark.parametrize("text, ms", [("5e-1", 0.5), ("2E0", 2.0), ("1.5e+0", 1.5), ("2", 2.0)])
def test_a_sample_length_written_as_yaml_writes_numbers_is_a_number(tmp_path, text, ms):
    """PyYAML reads `5e-1` (no dot) as text; `--sample-ms 5e-1` takes it, so the suite does too."""
    suite = load_suite(str(write_suite(tmp_path, f"shapes: shapes.yaml\nops: {{add: {{sample_ms: {text}}}}}\n")))
    assert suite.ops[0].sample_s == pytest.approx(ms / 1e3)


def test_the_builtin_pr_suite_samples_attention_causal_longer():
    """Its launches jitter about 1 % a sample at 0.5 ms: 2 ms (14 launches) caught +1 % on both rows
    (bench/results/2026-12-06_h100c_sample2ms.md); no other op's rows need it."""
    for name in ("pr", "deep"):
        lengths = {op.name: op.sample_s for op in load_suite(name).ops}
        assert lengths.pop("attention_causal") == 0.002
        assert set(lengths.values()) == {None}, name


def test_a_policy_s_yaml_exponent_is_a_number(tmp_path):
    """`min_effect: 1e-2` is text to PyYAML (no dot); the policy reads the number."""
    from tritongate.gate.policy import load_policy

    path = tmp_path / "gate.yaml"
    path.write_text("min_effect: 1e-2\nnoise_z: 4E0\nops: {add: {min_effect: 5e-3}}\n")
    policy = load_policy(path)
    assert policy.min_effect == pytest.approx(0.01) and policy.noise_z == pytest.approx(4.0)
    assert policy.min_effect_for("add") == pytest.approx(0.005)


def test_a_shape_file_listing_a_shape_twice_is_refused(tmp_path):
    with pytest.raises(PreflightError, match=r"shapes.yaml: add.shapes: \[16\] is listed twice") as info:
        load_suite(str(write_suite(tmp_path, "shapes: shapes.yaml\nops: {add: {}}\n", "add: {shapes: [[16], [16]]}\n")))
    assert info.value.check == "shape_file"


@pytest.mark.slow
def test_a_shape_file_of_many_shapes_is_checked_for_repeats_in_linear_time(tmp_path):
    import time

    shapes = ", ".join(f"[{i}, 8]" for i in range(1, 40_001))
    t0 = time.process_time()
    suite = load_suite(str(write_suite(tmp_path, "shapes: shapes.yaml\nops: {add: {}}\n", f"add: {{shapes: [{shapes}]}}\n")))
    assert len(suite.shapes["add"]) == 40_000
    assert time.process_time() - t0 < 20  # CPU seconds; a pairwise check would take minutes


@pytest.mark.parametrize("stem,ok", [("s" * 200, True), ("s" * 201, False), ("é" * 101, False)])
def test_a_suite_file_name_too_long_for_its_run_folders_is_refused(tmp_path, stem, ok):
    # `run` recorded a 235-character suite, then `pair` could not make pair-<name>_<UTC> ("File name too long")
    path = tmp_path / f"{stem}.yaml"
    path.write_text("ops: {add: {shapes: [[16]]}}\n")
    if ok:
        assert load_suite(str(path)).name == stem
        return
    with pytest.raises(PreflightError) as info:
        load_suite(str(path))
    assert info.value.check == "suite_file"
    assert "it names the run folders, so it may be at most 200" in str(info.value)
    assert "rename the file" in str(info.value)


@pytest.mark.parametrize("stem", ["nl\nname", "cr\rname", "tab\tname", "bidi\u202ename", "esc\x1b[31m"])
def test_a_suite_file_name_with_a_control_character_is_refused(tmp_path, stem):
    # run's last line of stdout is the run folder: "nl\nname.yaml" printed it as two lines
    path = tmp_path / f"{stem}.yaml"
    path.write_text("ops: {add: {shapes: [[16]]}}\n")
    with pytest.raises(PreflightError) as info:
        load_suite(str(path))
    assert info.value.check == "suite_file"
    assert "holds control characters" in str(info.value) and "rename the file" in str(info.value)
    assert "\n" not in str(info.value) and "\x1b" not in str(info.value)


@pytest.mark.parametrize("stem", ["ü 🚀 spaced", "-dash", "a.b..c"])
def test_a_suite_file_name_with_spaces_or_unicode_loads(tmp_path, stem):
    path = tmp_path / f"{stem}.yaml"
    path.write_text("ops: {add: {shapes: [[16]]}}\n")
    assert load_suite(str(path)).name == stem
