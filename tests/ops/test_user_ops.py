"""Ops from a suite's own modules (``modules:``): the contract's failure modes, the example
module, and the example suite run end to end on the CPU backend."""

from __future__ import annotations

import json
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from tritongate.backends import BACKENDS
from tritongate.errors import PreflightError, UsageError
from tritongate.ops.user import registry_for

CPU = BACKENDS["cpu"]
EXAMPLES = Path(__file__).resolve().parents[2] / "ops" / "examples"

GOOD_SPEC = """
from tritongate.ops.registry import Case, OpSpec

def _build(shape, dtype, device, gen):
    raise NotImplementedError

def spec(name, **kw):
    fields = dict(description="test op", shape_doc="[n]", ranks=(1,), dtypes=("float32",),
                  build=_build, bytes=lambda s, e: 1.0)
    fields.update(kw)
    return OpSpec(name, **fields)
"""


@pytest.fixture
def make_module(tmp_path):
    """Write a throwaway module into tmp_path under a fresh name (a module is imported once
    per process); forget it afterwards."""
    made: list[str] = []

    def make(source: str, *, with_spec: bool = True) -> str:
        name = f"tg_user_{uuid.uuid4().hex[:10]}"
        body = (GOOD_SPEC if with_spec else "") + textwrap.dedent(source)
        (tmp_path / f"{name}.py").write_text(body)
        made.append(name)
        return name

    yield make
    for name in made:
        sys.modules.pop(name, None)


def _fails(modules, search_dir, *fragments: str) -> str:
    path_before = list(sys.path)
    with pytest.raises(PreflightError) as caught:
        registry_for(modules, search_dir=search_dir)
    assert caught.value.check == "user_ops"
    message = str(caught.value)
    assert "\n" not in message, message
    for fragment in fragments:
        assert fragment in message, message
    assert sys.path == path_before  # the suite's directory is off the path again
    return message


# -- failure modes ---------------------------------------------------------------------------

def test_module_not_found_names_the_directory_searched(tmp_path):
    _fails(["tg_no_such_module"], tmp_path, "'tg_no_such_module'", "not found", str(tmp_path.resolve()),
           "put tg_no_such_module.py next to the suite")


def test_import_error_is_reported_with_its_first_line(tmp_path, make_module):
    name = make_module("raise ValueError('bad constant\\nsecond line')\n")
    message = _fails([name], tmp_path, f"importing module {name!r} raised ValueError: bad constant")
    assert "second line" not in message


def test_a_missing_dependency_is_an_import_error_not_a_missing_module(tmp_path, make_module):
    name = make_module("import tg_dependency_that_is_not_installed\n")
    message = _fails([name], tmp_path, "raised ModuleNotFoundError", "tg_dependency_that_is_not_installed")
    assert "not found; searched" not in message


def test_sys_exit_in_a_module_does_not_exit(tmp_path, make_module):
    _fails([make_module("import sys\nsys.exit(3)\n")], tmp_path, "raised SystemExit: 3")


def test_ctrl_c_during_import_is_not_swallowed(tmp_path, make_module):
    path_before = list(sys.path)
    with pytest.raises(KeyboardInterrupt):
        registry_for([make_module("raise KeyboardInterrupt\n")], search_dir=tmp_path)
    assert sys.path == path_before


def test_no_ops_attribute(tmp_path, make_module):
    _fails([make_module("X = 1\n")], tmp_path, "has no TRITONGATE_OPS", "TRITONGATE_OPS = [OpSpec(")


def test_ops_attribute_not_a_list(tmp_path, make_module):
    _fails([make_module("TRITONGATE_OPS = (spec('t_tuple'),)\n")], tmp_path,
           "TRITONGATE_OPS must be a list of OpSpec, got tuple")


def test_an_element_that_is_not_an_opspec(tmp_path, make_module):
    _fails([make_module("TRITONGATE_OPS = [spec('t_ok'), {'name': 't_dict'}]\n")], tmp_path,
           "TRITONGATE_OPS[1] is a dict, not an OpSpec")


def test_a_name_clashing_with_a_builtin_op(tmp_path, make_module):
    name = make_module("TRITONGATE_OPS = [spec('add')]\n")
    _fails([name], tmp_path, f"op 'add' of module {name!r} clashes with the builtin op", f"'{name}.add'")


def test_a_name_clashing_with_another_module(tmp_path, make_module):
    first = make_module("TRITONGATE_OPS = [spec('t_same')]\n")
    second = make_module("TRITONGATE_OPS = [spec('t_same')]\n")
    _fails([first, second], tmp_path, f"op 't_same' of module {second!r} is defined by module {first!r} too")


def test_a_name_defined_twice_in_one_module(tmp_path, make_module):
    _fails([make_module("TRITONGATE_OPS = [spec('t_twice'), spec('t_twice')]\n")], tmp_path,
           "is defined twice in that module")


@pytest.mark.parametrize("field,fragment", [
    ("dtypes", "has empty dtypes"),
    ("ranks", "has empty ranks"),
])
def test_empty_dtypes_or_ranks(tmp_path, make_module, field, fragment):
    _fails([make_module(f"TRITONGATE_OPS = [spec('t_empty', {field}=())]\n")], tmp_path, fragment)


def test_a_dtype_torch_does_not_know(tmp_path, make_module):
    _fails([make_module("TRITONGATE_OPS = [spec('t_dt', dtypes=('fp16',))]\n")], tmp_path,
           "dtypes ['fp16'] are not torch dtype names")


# "." and "..": batch's ops/<op>/ folder was the batch folder itself; "-A1": batch ran `run --ops -A1`, an option
@pytest.mark.parametrize("op_name", ["has space", "a/b", "", "ünï", "x\n", ".", "..", ".hidden", "-A1", "--ops"])
def test_a_bad_op_name(tmp_path, make_module, op_name):
    _fails([make_module(f"TRITONGATE_OPS = [spec({op_name!r})]\n")], tmp_path,
           "an op name may use only letters, digits", "starts with a letter, digit or '_'")


@pytest.mark.parametrize("op_name", ["mymodule.add", "0day", "_x-y.z", "a..b"])
def test_a_good_op_name(tmp_path, make_module, op_name):
    assert op_name in registry_for([make_module(f"TRITONGATE_OPS = [spec({op_name!r})]\n")], search_dir=tmp_path)


@pytest.mark.parametrize("module,hint", [
    ("scale_shift.py", "write 'scale_shift', without '.py'"),
    ("examples/scale_shift", "put the file next to the suite"),
    ("", "is not a Python module name"),
])
def test_a_module_name_that_is_a_file_or_a_path(tmp_path, module, hint):
    _fails([module], tmp_path, hint)


# -- the happy path --------------------------------------------------------------------------

def test_no_modules_is_the_builtin_registry():
    from tritongate.ops.builtin import REGISTRY

    assert registry_for((), search_dir=None) is REGISTRY


@pytest.mark.slow
def test_the_example_module_loads_beside_the_builtin_ops():
    import torch

    from tritongate.ops.builtin import REGISTRY

    path_before = list(sys.path)
    registry = registry_for(["scale_shift", "scale_shift"], search_dir=EXAMPLES)  # twice: once
    assert sys.path == path_before
    assert set(registry.names()) == set(REGISTRY.names()) | {"scale_shift"}
    assert "scale_shift" not in REGISTRY  # a new registry; the builtin one is untouched
    spec = registry.get("scale_shift")
    assert spec.check_shape((8, 512)) is None and spec.check_shape((1, 2, 3)) is not None
    assert spec.bytes((8, 512), 2) == 2 * 8 * 512 * 2 and spec.flops((4096,)) == 2 * 4096
    case = spec.build((300,), torch.float32, torch.device("cpu"), torch.Generator().manual_seed(0))
    case.launch()
    torch.testing.assert_close(case.output(), case.reference())
    assert sys.modules["scale_shift"].__file__ == str(EXAMPLES / "scale_shift.py")


def test_ops_from_two_modules(tmp_path, make_module):
    first = make_module("TRITONGATE_OPS = [spec('t_one')]\n")
    second = make_module("TRITONGATE_OPS = [spec('t_two'), spec('t.three-3')]\n")
    registry = registry_for([first, second], search_dir=tmp_path)
    assert {"t_one", "t_two", "t.three-3", "add"} <= set(registry.names())


# -- end to end ------------------------------------------------------------------------------

@pytest.mark.slow
def test_the_example_suite_runs_on_the_cpu(tmp_path):
    from tritongate.ops import builtin
    from tritongate.rundir import load_run
    from tritongate.runner import RunRequest, run_suite
    from tritongate.schema import RowStatus

    registry_before = builtin.REGISTRY
    outcome = run_suite(RunRequest(suite=str(EXAMPLES / "user_ops.yaml"), backend=CPU, out=tmp_path / "runs",
                                   only_ops=("scale_shift",), only_dtypes=("float32",)))
    assert builtin.REGISTRY is registry_before and "scale_shift" not in builtin.REGISTRY
    run = load_run(outcome.path)
    assert run.complete and [(r.op, r.case) for r in run.rows] == [("scale_shift", "4096"),
                                                                   ("scale_shift", "8x512")]
    for row in run.rows:
        assert row.status is RowStatus.OK, row.error
        assert row.correctness.ok, row.correctness
        assert row.samples and not row.markers
        assert row.bytes == 2 * 4096 * 4 and row.flops == 2 * 4096
        assert [v.kernel for v in row.variants] == ["scale_shift.scale_shift_kernel"]
    ident = json.loads((outcome.path / "run_identity.json").read_text())
    (module,) = ident["suite"]["modules"]
    assert module["name"] == "scale_shift" and module["file"] == str(EXAMPLES / "scale_shift.py")
    assert len(module["sha256"]) == 16


@pytest.mark.slow
def test_a_pair_worker_loads_the_suite_modules_from_its_settings(tmp_path, monkeypatch):
    """Only the base worker is asked to plan: the other gets the suite in its init settings."""
    from tritongate.pair.executor import TritonExecutor
    from tritongate.runner import RunRequest, run_suite

    suite = str(EXAMPLES / "user_ops.yaml")
    record = run_suite(RunRequest(suite=suite, backend=CPU, out=tmp_path / "runs",
                                  only_ops=("scale_shift",), only_dtypes=("float32",))).path
    # the worker's host quieting (one torch thread) would outlive this test in this process
    monkeypatch.setattr(TritonExecutor, "_quiet_host", lambda self, cpus: None)
    settings = {"backend": "cpu", "replay_from": str(record)}
    planner = TritonExecutor(settings)
    try:
        plan = planner.plan(suite, only_ops=["scale_shift"], only_dtypes=["float32"])
        assert [r["case"] for r in plan["rows"]] == ["4096", "8x512"]
        assert plan["suite"]["modules"][0]["name"] == "scale_shift"
    finally:
        planner.close()
    bare = TritonExecutor(settings)
    try:
        with pytest.raises(UsageError, match="op 'scale_shift' is not known to this worker"):
            bare.prepare("scale_shift", [4096], "float32")
    finally:
        bare.close()
    told = TritonExecutor({**settings, "suite": suite})
    try:
        prepared = told.prepare("scale_shift", [4096], "float32")
        assert prepared["correctness"]["ok"]
        told.finish()
    finally:
        told.close()


def test_a_bad_module_stops_a_run_before_it_starts(tmp_path, make_module):
    from tritongate.runner import RunRequest, run_suite

    from tests.conftest import write_suite

    name = make_module("TRITONGATE_OPS = {}\n")
    suite = write_suite(tmp_path, f"modules: [{name}]\nshapes: shapes.yaml\nops: {{add: {{}}}}\n")
    with pytest.raises(PreflightError, match="TRITONGATE_OPS must be a list") as caught:
        run_suite(RunRequest(suite=str(suite), backend=CPU, out=tmp_path / "runs"))
    assert caught.value.check == "user_ops" and not (tmp_path / "runs").exists()


@pytest.mark.parametrize("source, how", [("import os\nos._exit(0)\n", "exit code 0"),
                                         ("import os\nos._exit(3)\n", "exit code 3"),
                                         ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", "signal 9")])
def test_a_module_that_ends_the_interpreter_at_import_is_refused_before_it_is_imported_here(tmp_path, make_module,
                                                                                           source, how):
    good = make_module("TRITONGATE_OPS = [spec('fine_op')]\n")
    bad = make_module(source)
    message = _fails([good, bad], tmp_path, f"module {bad!r} ended the interpreter while it was imported", how,
                     "nothing would be measured")
    assert bad not in sys.modules and good not in message


def test_a_module_that_hangs_at_import_is_refused_after_the_probe_timeout(tmp_path, make_module):
    from tritongate.ops.user import probe_imports

    name = make_module("import time\ntime.sleep(60)\n")
    with pytest.raises(PreflightError, match=r"did not finish within 0.5 s"):
        probe_imports([name], tmp_path, timeout_s=0.5)


@pytest.mark.parametrize("tolerance, fragment", [
    ({"float32": (float("nan"), 0.0)}, "two finite numbers >= 0"),
    ({"float32": (1e-4, float("inf"))}, "two finite numbers >= 0"),
    ({"float32": (-1.0, 0.0)}, "two finite numbers >= 0"),
    ({"float32": (1e-4,)}, "two finite numbers >= 0"),
    ({"float32": (1e30, 0.0)}, "is too loose for a correctness check"),
    ({"float32": (0.0, 0.5)}, "is too loose for a correctness check"),
    ([1e-4, 1e-4], "must be a dict of dtype"),
])
def test_an_ops_tolerance_must_be_finite_and_bounded(tmp_path, make_module, tolerance, fragment):
    name = make_module(f"TRITONGATE_OPS = [spec('tol_op', tolerance={tolerance!r})]\n".replace("nan", "float('nan')")
                       .replace("inf)", "float('inf'))"))
    _fails([name], tmp_path, "op 'tol_op'", fragment)


@pytest.mark.parametrize("value", ["float('nan')", "-1.0", "'many'", "float('inf')", "sys.exit(0)"])
def test_what_bytes_and_flops_return_is_checked_when_called(tmp_path, make_module, value):
    name = make_module(f"import sys\nTRITONGATE_OPS = [spec('count_op', bytes=lambda s, e: {value}, "
                       f"flops=lambda s: {value})]\n")
    spec = registry_for([name], search_dir=tmp_path).get("count_op")
    for call in (lambda: spec.bytes((4,), 4), lambda: spec.flops((4,))):
        with pytest.raises(ValueError, match=r"op 'count_op' .* (must return a finite number >= 0|called sys.exit)"):
            call()


def test_a_bytes_that_calls_sys_exit_fails_its_row_not_the_command(tmp_path, make_module, capsys):
    # on the interpreter bytes() is first called for the slow-row estimate, outside any row: `run` exited 0,
    # printed no run folder and left it "running"
    from tritongate.cli import main

    name = make_module("""
        import sys, torch

        def _build(shape, dtype, device, gen):
            y = torch.ones(shape, dtype=dtype, device=device)
            return Case(launch=lambda: None, output=lambda: y, reference=lambda: y, tensors=(y,))

        TRITONGATE_OPS = [spec('exit_op', build=_build, bytes=lambda s, e: sys.exit(0))]
        """)
    (tmp_path / "s.yaml").write_text(f"modules: [{name}]\nops: {{exit_op: {{shapes: [[8]]}}}}\n")
    assert main(["run", "--suite", str(tmp_path / "s.yaml"), "--backend", "cpu", "--out", str(tmp_path / "o")]) == 2
    captured = capsys.readouterr()
    assert "bytes((8,), 4) called sys.exit(0)" in captured.err and "no row of the run was measured" in captured.err
    run_dir = captured.out.splitlines()[-1]
    assert json.loads((Path(run_dir) / "results.json").read_text())["status"] == "complete"


@pytest.mark.parametrize("field,value,fragment", [
    ("ranks", "1", "ranks must be a tuple, e.g. ranks=(1, 2), got int 1"),  # was an internal error (exit 4)
    ("dtypes", "'float32'", "dtypes must be a tuple, e.g. dtypes=('float32', 'float16'), got str 'float32'"),
    ("description", "None", "description must be text"),  # `tritongate ops` failed on it (exit 4)
    ("shape_doc", "None", "shape_doc must be text"),
])
def test_opspec_fields_of_the_wrong_type_are_named(tmp_path, make_module, field, value, fragment):
    _fails([make_module(f"TRITONGATE_OPS = [spec('t_typed', {field}={value})]\n")], tmp_path, "op 't_typed'", fragment)


@pytest.mark.parametrize("case,error,fragment", [
    ("42", TypeError, "build returned int, not a Case"),
    ("Case(launch=1, output=lambda: y, reference=lambda: y)", TypeError, "the Case's launch is a int"),
    # a paired round's shared inputs took tuple(y): y's rows, views the launch never reads
    ("Case(launch=lambda: None, output=lambda: y, reference=lambda: y, tensors=y)", TypeError,
     "the Case's tensors must be a tuple of the tensors launch uses, e.g. tensors=(x, y), got Tensor"),
    ("Case(launch=lambda: None, output=lambda: None, reference=lambda: y)", TypeError,
     "the Case's output() returned NoneType, not a torch.Tensor"),
    ("Case(launch=lambda: None, output=lambda: y, reference=lambda: [1.0])", TypeError,
     "the Case's reference() returned list, not a torch.Tensor"),
])
def test_what_build_returns_is_checked_when_a_row_builds(tmp_path, make_module, case, error, fragment):
    import torch

    name = make_module(f"""
        import torch

        def _bad(shape, dtype, device, gen):
            y = torch.ones(shape, dtype=dtype, device=device)
            return {case}

        TRITONGATE_OPS = [spec('built_op', build=_bad)]
        """)
    spec = registry_for([name], search_dir=tmp_path).get("built_op")
    with pytest.raises(error, match=r"op 'built_op' of module .*: ") as caught:
        made = spec.build((4,), torch.float32, torch.device("cpu"), torch.Generator())
        made.output()
        made.reference()
    assert fragment in str(caught.value)


def test_a_good_case_passes_the_checks_unchanged(tmp_path, make_module):
    import torch

    name = make_module("""
        import torch

        def _good(shape, dtype, device, gen):
            y = torch.full(shape, 2.0, dtype=dtype, device=device)
            return Case(launch=lambda: None, output=lambda: y, reference=lambda: y * 1, tensors=(y,))

        TRITONGATE_OPS = [spec('good_op', build=_good)]
        """)
    made = registry_for([name], search_dir=tmp_path).get("good_op").build((3,), torch.float32, torch.device("cpu"),
                                                                         torch.Generator())
    assert made.output().tolist() == [2.0] * 3 and made.reference().tolist() == [2.0] * 3
    assert made.tensors[0] is made.output()


@pytest.mark.parametrize("how", [
    "REGISTRY.register(spec('..'))",  # an op that passed none of the checks, listed as builtin
    "REGISTRY._ops['add'] = spec('add')",  # a builtin op replaced
])
def test_a_module_that_changes_the_builtin_registry_is_refused(tmp_path, make_module, how):
    from tritongate.ops.builtin import REGISTRY

    before = {n: REGISTRY.get(n) for n in REGISTRY.names()}
    name = make_module(f"from tritongate.ops.builtin import REGISTRY\n{how}\nTRITONGATE_OPS = []\n")
    try:
        _fails([name], tmp_path, "changed tritongate's builtin ops", "list your ops in the module's TRITONGATE_OPS")
        # a second run in the same process (a batch worker) imports nothing anew: still refused
        _fails([name], tmp_path, "changed tritongate's builtin ops")
    finally:
        REGISTRY._ops.clear()
        REGISTRY._ops.update(before)


@pytest.mark.parametrize("reference", ["y * float('nan')", "y + float('inf')"])
def test_a_non_finite_reference_fails_the_rows_check_once(tmp_path, make_module, reference, monkeypatch):
    # a NaN or inf reference was a pydantic "1 validation error for Correctness" in the row;
    # rowcase.check_output names it for every op, so the wrapper does not scan the tensor again
    import torch

    from tritongate.rowcase import check_output

    name = make_module(f"""
        import torch

        def _nan(shape, dtype, device, gen):
            y = torch.ones(shape, dtype=dtype, device=device)
            return Case(launch=lambda: None, output=lambda: y, reference=lambda: {reference})

        TRITONGATE_OPS = [spec('nan_ref', build=_nan)]
        """)
    made = registry_for([name], search_dir=tmp_path).get("nan_ref").build(
        (4,), torch.float32, torch.device("cpu"), torch.Generator())
    scans = []
    real = torch.isfinite
    monkeypatch.setattr(torch, "isfinite", lambda t: scans.append(t.numel()) or real(t))
    result = check_output(made, (1e-2, 1e-2))
    assert not result.ok and "non-finite values in the reference" in result.detail
    assert len(scans) == 1  # the reference scanned once per row, not by the wrapper as well


def test_a_wrapped_build_still_names_the_users_module(tmp_path, make_module):
    # `tritongate ops --suite` lists a module's op as "(from <module>)", read off its build
    name = make_module("TRITONGATE_OPS = [spec('named_op')]\n")
    build = registry_for([name], search_dir=tmp_path).get("named_op").build
    assert build.__module__ == name and build.__name__ == "_build"
