import pytest

from tritongate.backends import BACKENDS, resolve_backend
from tritongate.errors import PreflightError
from tritongate.ops.builtin import REGISTRY
from tritongate.preflight import check_out_dir, plan_rows
from tritongate.suites import load_suite

from tests.conftest import write_suite

CPU = BACKENDS["cpu"]


def _suite(tmp_path, ops, shapes):
    return load_suite(str(write_suite(tmp_path, f"shapes: shapes.yaml\nops: {ops}\n", shapes)))


def test_plan_rows_expands_shapes_and_dtypes(tmp_path):
    s = _suite(tmp_path, "{add: {dtypes: [float32, float16]}}", "add: {shapes: [[16], [4, 8]]}")
    rows = plan_rows(s, REGISTRY, CPU)
    assert [(r.op, r.case, r.dtype) for r in rows] == [
        ("add", "16", "float32"), ("add", "4x8", "float32"), ("add", "16", "float16"), ("add", "4x8", "float16")]
    assert len(plan_rows(s, REGISTRY, CPU, only_dtypes=["float16"])) == 2


@pytest.mark.parametrize("ops,shapes,check", [
    ("{nosuchop: {}}", "nosuchop: {shapes: [[1]]}", "unknown_op"),
    ("{matmul: {dtypes: [float16]}}", "matmul: {shapes: [[64, 64]]}", "shape_arity"),
    ("{add: {}}", "softmax: {shapes: [[4, 4]]}", "missing_shapes"),
    ("{matmul: {dtypes: [float32]}}", "matmul: {shapes: [[8, 8, 8]]}", "dtype"),
    ("{add: {dtypes: [bfloat16]}}", "add: {shapes: [[8]]}", "dtype"),  # interpreter has no bf16
])
def test_bad_selection_names_its_check(tmp_path, ops, shapes, check):
    s = _suite(tmp_path, ops, shapes)
    with pytest.raises(PreflightError) as info:
        plan_rows(s, REGISTRY, CPU)
    assert info.value.check == check
    assert info.value.marker == f"!!! PREFLIGHT_FAILED check={check}"


def test_backend_names_and_aliases():
    assert resolve_backend("nvidia").name == "cuda"
    assert resolve_backend("AMD").name == "rocm"
    assert resolve_backend("npu").name == "ascend"
    assert resolve_backend("interpreter").name == "cpu"
    with pytest.raises(PreflightError, match="unknown backend 'tpu'") as info:
        resolve_backend("tpu")
    assert info.value.check == "backend"


def test_unwritable_out_dir(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(PreflightError) as info:
        check_out_dir(blocker / "runs")
    assert info.value.check == "out_dir"


def test_a_suite_directory_and_an_unknown_dtype_are_named(tmp_path, capsys):
    from tritongate.cli import main

    assert main(["run", "--suite", str(tmp_path), "--backend", "cpu", "--out", str(tmp_path / "o")]) == 3
    assert "is a directory, not a YAML file" in capsys.readouterr().err
    assert main(["run", "--suite", "smoke", "--dtypes", "float17", "--backend", "cpu", "--out", str(tmp_path / "o")]) == 3
    err = capsys.readouterr().err
    assert "check=dtype" in err and "'float17'" in err and "float16" in err


def test_a_dimension_below_one_is_refused_when_the_shape_file_is_read(tmp_path):
    with pytest.raises(PreflightError, match=r"shapes.yaml: add.shapes\[0\]\[0\]: expected a number >= 1, got 0") as info:
        _suite(tmp_path, "{add: {}}", "add: {shapes: [[0]]}")
    assert info.value.check == "shape_file"


def test_a_wrong_inline_shape_names_the_suite_not_a_shape_file(tmp_path):
    # with every shape inline there is no shape file: the message said "None: add takes shapes ..."
    path = tmp_path / "inline.yaml"
    path.write_text("ops: {add: {shapes: [[4, 4, 4]]}}\n")
    with pytest.raises(PreflightError) as info:
        plan_rows(load_suite(str(path)), REGISTRY, CPU)
    assert info.value.check == "shape_arity"
    assert str(info.value).startswith(f"{path} (ops.add.shapes): add takes shapes"), str(info.value)
    assert "None" not in str(info.value)


def test_a_wrong_shape_from_the_shape_file_names_the_shape_file(tmp_path):
    s = _suite(tmp_path, "{add: {}, softmax: {shapes: [[4, 4]]}}", "add: {shapes: [[2, 2, 2]]}")
    with pytest.raises(PreflightError) as info:
        plan_rows(s, REGISTRY, CPU)
    assert str(info.value).startswith(f"{tmp_path / 'shapes.yaml'}: add takes shapes"), str(info.value)
