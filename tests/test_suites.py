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
    ("shapes: shapes.yaml\nops: {add: {}}\nbogus: 1\n", "suite_file", "unknown keys"),
    ("shapes: nope.yaml\nops: {add: {}}\n", "shape_file", "does not exist"),
    ("ops: {add: {}}\n", "suite_file", "'shapes' must name a shape file"),
])
def test_bad_suites_name_their_check(tmp_path, suite, check, msg):
    with pytest.raises(PreflightError, match=msg) as info:
        load_suite(str(write_suite(tmp_path, suite)))
    assert info.value.check == check


def test_bad_shape_file(tmp_path):
    with pytest.raises(PreflightError, match="shapes:") as info:
        load_suite(str(write_suite(tmp_path, "shapes: shapes.yaml\nops: {add: {}}\n", "add: [16]\n")))
    assert info.value.check == "shape_file"


def test_unknown_suite_name_lists_builtin_ones():
    with pytest.raises(PreflightError, match="builtin suites: deep, pr, smoke"):
        load_suite("nightly-typo")
