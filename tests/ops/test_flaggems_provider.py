"""The FlagGems provider (``provider: flaggems`` suites), against the stand-in ``flag_gems``
in ``stand_in/`` (small Triton kernels under the interpreter, ``mm`` tuned by a LibTuner
behind a LibEntry), and the real assets in ``ops/`` (inventory, shapes, dismiss list, suites).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from tritongate.errors import PreflightError
from tritongate.ops import providers
from tritongate.ops.providers import flaggems, flaggems_recipes
from tritongate.ops.providers.flaggems_recipes import FAMILIES, RECIPES
from tritongate.rowcase import check_output
from tritongate.suites import load_suite, ops_dir

ROOT = Path(__file__).resolve().parents[2]
STAND_IN = Path(__file__).resolve().parent / "stand_in"
OPS = ROOT / "ops"
STAND_IN_OPS = ("add", "cumsum", "exp", "mm", "softmax", "sum_dim")


def _forget_flag_gems() -> None:
    for name in [m for m in sys.modules if m == "flag_gems" or m.startswith("flag_gems.")]:
        del sys.modules[name]
    flaggems._specs_cache = None


@pytest.fixture
def stand_in(monkeypatch):
    """The stand-in flag_gems importable in this process (forgotten afterwards, so no other
    test's autotune session finds a flag_gems to patch)."""
    monkeypatch.delenv("GEMS_VENDOR", raising=False)
    monkeypatch.delenv(flaggems.BACKEND_ENV, raising=False)
    _forget_flag_gems()
    monkeypatch.syspath_prepend(str(STAND_IN))
    yield
    _forget_flag_gems()


def _one_line(exc: PreflightError, check: str, *fragments: str) -> str:
    message = str(exc)
    assert exc.check == check, (exc.check, message)
    assert "\n" not in message, message
    for fragment in fragments:
        assert fragment in message, message
    return message


# -- importing flag_gems --------------------------------------------------------------------

def test_flag_gems_not_installed_is_one_preflight_line(monkeypatch):
    _forget_flag_gems()
    monkeypatch.setitem(sys.modules, "flag_gems", None)  # what an absent package raises
    with pytest.raises(PreflightError) as caught:
        flaggems.op_specs("cuda")
    _one_line(caught.value, "flaggems", "not installed", "pip install flag_gems==5.0.2", "builtin suite")
    assert caught.value.__cause__ is None  # no chained traceback to print


def test_flag_gems_failing_at_import_is_one_preflight_line(tmp_path, monkeypatch):
    broken = tmp_path / "flag_gems"
    broken.mkdir()
    (broken / "__init__.py").write_text("raise RuntimeError('No device were detected on your machine !\\nmore')\n")
    _forget_flag_gems()
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("GEMS_VENDOR", raising=False)
    try:
        with pytest.raises(PreflightError) as caught:
            flaggems.op_specs("cuda")
    finally:
        _forget_flag_gems()
    _one_line(caught.value, "flaggems", "RuntimeError: No device were detected", "GEMS_VENDOR=nvidia",
              "GPU machine")


@pytest.mark.slow
def test_run_without_flag_gems_exits_3_with_the_check_and_no_traceback(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TRITONGATE_OPS_DIR")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([sys.executable, "-m", "tritongate", "run", "--suite", "flaggems-pr", "--backend", "cpu",
                           "--out", str(tmp_path / "runs")], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)
    assert proc.returncode == 3, proc.stderr
    assert "!!! PREFLIGHT_FAILED check=flaggems" in proc.stderr
    assert "pip install flag_gems==5.0.2" in proc.stderr and "Traceback" not in proc.stderr


def test_gems_vendor_is_set_from_the_backend_before_import(stand_in, monkeypatch):
    assert flaggems.vendor_for_backend("cuda") == "nvidia" and flaggems.vendor_for_backend("rocm") == "amd"
    flaggems.op_specs("cuda")
    import flag_gems

    assert flag_gems.vendor_name == "nvidia"  # what the package saw when it was imported
    assert flaggems.identity()["source"] == "backend" and flaggems.identity()["version"] == "0.0+stand-in"


def test_a_vendor_the_user_set_is_kept(monkeypatch):
    monkeypatch.setenv("GEMS_VENDOR", "metax")
    note = flaggems.ensure_vendor("cuda")
    assert os.environ["GEMS_VENDOR"] == "metax" and note["source"] == "user"
    monkeypatch.delenv("GEMS_VENDOR")
    monkeypatch.setenv("FLAGGEMS_VENDOR", "amd")
    assert flaggems.ensure_vendor("cuda")["vendor"] == "amd" and "GEMS_VENDOR" not in os.environ
    monkeypatch.delenv("FLAGGEMS_VENDOR")
    monkeypatch.setenv(flaggems.BACKEND_ENV, "rocm")
    assert flaggems.ensure_vendor()["vendor"] == "amd" and os.environ["GEMS_VENDOR"] == "amd"


# -- the ops: inputs, references ---------------------------------------------------------------

def test_specs_are_named_flag_gems_dot_op_and_call_the_top_level_function(stand_in):
    specs = {s.name: s for s in flaggems.op_specs("cpu")}
    assert set(specs) == {f"flag_gems.{op}" for op in RECIPES}
    assert specs["flag_gems.mm"].ranks == (3,) and specs["flag_gems.add"].flops((4, 4)) == 16


@pytest.mark.parametrize("op,shape", [("add", (1000,)), ("exp", (16, 64)), ("sum_dim", (8, 100)),
                                      ("softmax", (4, 8, 100)), ("mm", (40, 24, 72))])
def test_inputs_are_seeded_and_the_op_matches_torch(stand_in, op, shape):
    spec = next(s for s in flaggems.op_specs("cpu") if s.name == f"flag_gems.{op}")
    cases = [spec.build(shape, torch.float32, torch.device("cpu"), torch.Generator().manual_seed(7))
             for _ in range(2)]
    other = spec.build(shape, torch.float32, torch.device("cpu"), torch.Generator().manual_seed(8))
    assert all(torch.equal(a, b) for a, b in zip(cases[0].tensors, cases[1].tensors))
    assert not torch.equal(cases[0].tensors[0], other.tensors[0])
    from tritongate.autotune.hostbench import host_benchmarker

    with host_benchmarker():  # mm's LibTuner sweeps on the host timer here
        cases[0].launch()
    result = check_output(cases[0], spec.tolerance["float32"])
    assert result.ok, result.detail


def test_a_missing_callable_fails_its_row_with_one_line(stand_in):
    spec = next(s for s in flaggems.op_specs("cpu") if s.name == "flag_gems.layer_norm")
    with pytest.raises(LookupError, match="has no callable flag_gems.layer_norm; regenerate the inventory"):
        spec.build((4, 8), torch.float32, torch.device("cpu"), torch.Generator().manual_seed(0))


@pytest.mark.parametrize("op", sorted(RECIPES))
def test_every_recipe_builds_inputs_its_torch_reference_accepts(op):
    """Each recipe's arguments, made at its class's first default shape (shrunk), go through
    the torch reference on the CPU: the table's arguments and references agree."""
    rec = RECIPES[op]
    shape = tuple(min(d, 24) for d in rec.family.default_shapes[0])
    if rec.min_dims and rec.min_dims(shape):
        shape = shape[:-1] + (16,)
    dtype = rec.all_dtypes[0]
    spec = flaggems._spec(type("fake_flag_gems", (), {op: staticmethod(lambda *a, **k: None)}), rec)
    case = spec.build(shape, getattr(torch, dtype), torch.device("cpu"), torch.Generator().manual_seed(0))
    want = case.reference()
    assert isinstance(want, torch.Tensor) and torch.isfinite(want.float()).all(), op
    assert spec.bytes(shape, 2) >= 0 and (spec.flops is None or spec.flops(shape) > 0)


# -- suites: names, the fallback chain, the schema ----------------------------------------------

INVENTORY = """\
# a test inventory; regenerate on the GPU with: python scripts/collect_flaggems_inventory.py --backend cuda
op,callable,class,status
add,flag_gems.add,BinaryPointwiseBenchmark,ok
exp,flag_gems.exp,UnaryPointwiseBenchmark,ok
mm,flag_gems.mm,MatmulBenchmark,ok
mv,flag_gems.mv,MvAndOuterBenchmark,ok
softmax,flag_gems.softmax,SoftmaxBenchmark,ok
sum_dim,flag_gems.sum_dim,DimReductionBenchmark,ok
bmm,flag_gems.bmm,BlasBenchmark,missing
conv2d,flag_gems.conv2d,,no_recipe
"""


def _suite(tmp_path, body: str, *, shapes: str | None = None, inventory: str = INVENTORY,
           dismiss: str | None = None) -> Path:
    (tmp_path / "inventory_cuda.csv").write_text(inventory)
    head = "provider: flaggems\ninventory: inventory_cuda.csv\n"
    if shapes is not None:
        (tmp_path / "shapes.yaml").write_text(shapes)
        head += "shapes: shapes.yaml\n"
    if dismiss is not None:
        (tmp_path / "dismiss.txt").write_text(dismiss)
        head += "dismiss: dismiss.txt\n"
    path = tmp_path / "s.yaml"
    path.write_text(head + textwrap.dedent(body))
    return path


def test_an_unknown_op_names_the_inventory_and_close_matches(tmp_path):
    with pytest.raises(PreflightError) as caught:
        load_suite(str(_suite(tmp_path, "ops: {mmm: {}}\n")))
    _one_line(caught.value, "unknown_op", "'mmm' is not in the inventory", "inventory_cuda.csv",
              "close matches: mm, bmm")


@pytest.mark.parametrize("op,check,fragment", [
    ("conv2d", "unknown_op", "has no input recipe in tritongate"),
    ("bmm", "unknown_op", "is missing from the flag_gems the inventory was collected from"),
])
def test_ops_the_inventory_marks_unusable_are_refused(tmp_path, op, check, fragment):
    with pytest.raises(PreflightError) as caught:
        load_suite(str(_suite(tmp_path, f"ops: {{{op}: {{}}}}\n")))
    _one_line(caught.value, check, fragment)


def test_an_inventory_class_that_disagrees_with_the_recipe_is_refused(tmp_path):
    bad = INVENTORY.replace("mm,flag_gems.mm,MatmulBenchmark", "mm,flag_gems.mm,BlasBenchmark")
    with pytest.raises(PreflightError) as caught:
        load_suite(str(_suite(tmp_path, "ops: {mm: {}}\n", inventory=bad)))
    _one_line(caught.value, "inventory", "inventory_cuda.csv:5", "class 'BlasBenchmark'", "MatmulBenchmark",
              "collect_flaggems_inventory.py")


@pytest.mark.parametrize("text,fragment", [
    ("op,callable,status\nmm,flag_gems.mm,ok\n", "the header must be op,callable,class,status,module"),
    ("op,callable,class,status\nmm,flag_gems.mm,MatmulBenchmark,fine\n",
     "inventory_cuda.csv:2: status: expected one of 'ok', 'missing' or 'no_recipe'"),
    ("op,callable,class,status\nmm,mm,MatmulBenchmark,ok\n", "inventory_cuda.csv:2: callable: expected text"),
    ("op,callable,class,status\nmm,flag_gems.mm,MatmulBenchmark,ok\nmm,flag_gems.mm,MatmulBenchmark,ok\n",
     "op 'mm' is listed twice (first on line 2)"),
])
def test_a_bad_inventory_is_one_line_naming_file_and_line(tmp_path, text, fragment):
    with pytest.raises(PreflightError) as caught:
        load_suite(str(_suite(tmp_path, "ops: {mm: {}}\n", inventory=text)))
    _one_line(caught.value, "inventory", fragment)


def test_the_shape_fallback_chain_op_then_class_then_default(tmp_path):
    shapes = textwrap.dedent("""\
        Benchmark: {shapes: [[1024], [64, 64], [2, 3, 4, 5]]}
        exp: {shapes: [[7, 7]]}
        BinaryPointwiseBenchmark: {shapes: [[9]]}
        MvAndOuterBenchmark: {shapes: [[8, 8]]}
        mv: {shapes: [[5, 6]]}
    """)
    suite = load_suite(str(_suite(tmp_path, """\
        dtypes: [float32]
        ops:
          exp: {}
          add: {}
          mv: {}
          softmax: {}
          mm: {}
          sum_dim: {shapes: [[3, 4]]}
        """, shapes=shapes)))
    label = str(tmp_path / "shapes.yaml")
    assert suite.shape_sources == {
        "flag_gems.exp": f"{label}:exp",  # its own key
        "flag_gems.add": f"{label}:BinaryPointwiseBenchmark",  # its class
        "flag_gems.mv": f"{label}:mv",  # its own key wins over its class
        "flag_gems.softmax": f"{label}:Benchmark",  # the default, only shapes of a rank it takes
        "flag_gems.mm": "default:MatmulBenchmark",  # no rank-3 default: the class's built-in one
        "flag_gems.sum_dim": "suite",  # inline shapes win
    }
    assert suite.shapes["flag_gems.softmax"] == ((64, 64),)
    assert suite.shapes["flag_gems.exp"] == ((7, 7),) and suite.shapes["flag_gems.add"] == ((9,),)
    assert suite.modules == ("tritongate.ops.providers.flaggems",) and suite.provider == "flaggems"
    assert [op.name for op in suite.ops][:2] == ["flag_gems.exp", "flag_gems.add"]


def test_a_class_key_of_the_wrong_rank_is_named(tmp_path):
    with pytest.raises(PreflightError) as caught:
        load_suite(str(_suite(tmp_path, "ops: {mm: {}}\n", shapes="MatmulBenchmark: {shapes: [[64, 64]]}\n")))
    _one_line(caught.value, "shape_arity", "shapes.yaml:MatmulBenchmark: op 'mm' (class MatmulBenchmark)",
              "[M, N, K]", "got [64, 64]")


def test_ops_inventory_is_every_ok_op_not_dismissed(tmp_path):
    dismiss = "# op | date | reason\nmv | 2026-11-30 | a test reason\n"
    suite = load_suite(str(_suite(tmp_path, "dtypes: [float16]\nops: inventory\n", dismiss=dismiss)))
    assert [op.name for op in suite.ops] == ["flag_gems.add", "flag_gems.exp", "flag_gems.mm", "flag_gems.softmax",
                                              "flag_gems.sum_dim"]
    assert suite.dismissed == ("mv",)
    assert all(op.dtypes == ("float16",) for op in suite.ops)
    other = _suite(tmp_path, "dtypes: [float16]\nops: inventory\n", dismiss="")
    assert load_suite(str(other)).digest != suite.digest  # the dismiss list is part of what was measured


@pytest.mark.parametrize("dismiss,fragment", [
    ("mv | 2026-13-01 | why\n", "dismiss.txt:1: date: date '2026-13-01' is not a calendar date"),
    ("mv | 2026-11-30\n", "dismiss.txt:1: expected 'op | YYYY-MM-DD | reason'"),
    ("mv | 2026-11-30 | \n", "dismiss.txt:1: reason: expected at least 3 characters"),
    ("mvv | 2026-11-30 | a typo\n", "op 'mvv' is not in the inventory"),
    ("mv | 2026-11-30 | one\nmv | 2026-11-30 | two\n", "op 'mv' is dismissed twice"),
])
def test_a_bad_dismiss_list_is_one_line(tmp_path, dismiss, fragment):
    with pytest.raises(PreflightError) as caught:
        load_suite(str(_suite(tmp_path, "ops: inventory\n", dismiss=dismiss)))
    _one_line(caught.value, "dismiss_file", fragment)


@pytest.mark.parametrize("body,fragment", [
    ("ops: all\n", "ops: expected a mapping of op names, or the word 'inventory'"),
    ("ops: {mm: {}}\nmodules: [x]\n", "modules: is not a known key (allowed: description, dismiss, dtypes, inventory, ops, provider, shapes)"),
    ("ops: {mm: {dtype: [float16]}}\n", "ops.mm.dtype: is not a known key (allowed: dtypes, sample_ms, shapes)"),
    ("ops: {'mm/x': {}}\n", "does not match"),
])
def test_the_provider_suite_schema_is_strict(tmp_path, body, fragment):
    with pytest.raises(PreflightError) as caught:
        load_suite(str(_suite(tmp_path, body)))
    message = _one_line(caught.value, "suite_file", fragment)
    assert "s.yaml" in message


def test_a_provider_suite_needs_an_inventory(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("provider: flaggems\nops: {mm: {}}\n")
    with pytest.raises(PreflightError) as caught:
        load_suite(str(path))
    _one_line(caught.value, "suite_file", "s.yaml: inventory: is required but missing")


def test_a_misspelt_suite_dtype_is_refused_not_ignored(tmp_path):
    with pytest.raises(PreflightError) as caught:
        load_suite(str(_suite(tmp_path, "dtypes: [flaot16]\nops: inventory\n")))
    _one_line(caught.value, "dtype", "dtypes ['flaot16'] are not dtypes any flag_gems op here runs")


def test_an_op_that_runs_none_of_the_suite_dtypes_runs_its_own(tmp_path):
    inv = "op,callable,class,status\nbitwise_not,flag_gems.bitwise_not,UnaryPointwiseBenchmark,ok\n"
    suite = load_suite(str(_suite(tmp_path, "dtypes: [float16]\nops: inventory\n", inventory=inv)))
    assert suite.ops[0].dtypes == ("int32",)


# -- end to end: run, record, replay (subprocesses with the stand-in on PYTHONPATH) -----------------

def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TRITONGATE_OPS_DIR", "GEMS_VENDOR")}
    env["PYTHONPATH"] = os.pathsep.join([str(STAND_IN), str(ROOT)])
    return env


def _not_clean(rows: list[dict]) -> list[tuple]:
    """Rows that failed, mismatched or carry markers, with what they say."""
    return [(r["op"], r["case"], r["status"], r["correctness"], r["markers"], r.get("error")) for r in rows
            if not (r["status"] == "ok" and r["correctness"]["ok"] and not r["markers"])]


def _tritongate(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "tritongate", *args], capture_output=True, text=True, env=_env(),
                          cwd=cwd, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _rows(run_dir: Path) -> list[dict]:
    return json.loads((run_dir / "results.json").read_text())["rows"]


@pytest.mark.slow
def test_collect_run_record_and_replay_on_the_stand_in(tmp_path):
    # the collect script, importing the stand-in: 5 ops ok, the other recipes missing, conv2d no recipe
    collect = subprocess.run([sys.executable, str(ROOT / "scripts" / "collect_flaggems_inventory.py"),
                              "--backend", "cuda", "--out", str(tmp_path / "inventory_cuda.csv")],
                             capture_output=True, text=True, env=_env(), timeout=120)
    assert collect.returncode == 0, collect.stderr
    inventory = providers.read_inventory(tmp_path / "inventory_cuda.csv")
    assert sorted(inventory.ok()) == sorted(STAND_IN_OPS)
    assert inventory.entries["conv2d"].status == "no_recipe" and inventory.entries["mv"].status == "missing"
    assert "collect_flaggems_inventory.py --backend cuda --out" in inventory.comments[0]
    (tmp_path / "s.yaml").write_text(textwrap.dedent("""\
        provider: flaggems
        inventory: inventory_cuda.csv
        dtypes: [float32]
        ops:
          add: {shapes: [[4096]]}
          exp: {shapes: [[64, 64]]}
          sum_dim: {shapes: [[16, 256]]}
          softmax: {shapes: [[16, 256]]}
          mm: {shapes: [[32, 32, 32], [48, 64, 32]]}
        """))
    record = Path(_tritongate("run", "--suite", "s.yaml", "--backend", "cpu", "--out", "rec",
                              "--color", "never", cwd=tmp_path).stdout.strip().splitlines()[-1])
    record = tmp_path / record if not record.is_absolute() else record
    rows = _rows(record)
    assert [(r["op"], r["case"]) for r in rows] == [
        ("flag_gems.add", "4096"), ("flag_gems.exp", "64x64"), ("flag_gems.sum_dim", "16x256"),
        ("flag_gems.softmax", "16x256"), ("flag_gems.mm", "32x32x32"), ("flag_gems.mm", "48x64x32")]
    assert not _not_clean(rows)
    tuned = [r for r in rows if r["autotune"]["kernels"]]
    assert [r["op"] for r in tuned] == ["flag_gems.mm"] * 2
    assert all(r["autotune"]["sweep_benchmarks"] == 2 for r in tuned)  # both configs swept live
    # the LibTuner key is its own get_key's: align32 buckets (48 -> 64) and dtypes
    assert [r["autotune"]["kernels"][0]["key"][:3] for r in tuned] == [[32, 32, 32], [64, 64, 32]]
    # LibEntry serves mm's recording pass from its cache, past the JIT: still one launch recorded
    assert [[(v["kernel"], v["launches"]) for v in r["variants"]] for r in tuned] == [
        [("flag_gems.ops.mm.mm_kernel", 1)]] * 2
    identity = json.loads((record / "run_identity.json").read_text())
    assert identity["suite"]["modules"][0]["name"] == "tritongate.ops.providers.flaggems"

    # force the record to the config the sweep did not pick: replay must launch that one
    path = record / "autotune_records" / "flag_gems.mm.json"
    doc = json.loads(path.read_text())
    for entry in doc["entries"]:
        entry["config"]["kwargs"] = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16}
    path.write_text(json.dumps(doc))
    replay = Path(_tritongate("run", "--suite", "s.yaml", "--backend", "cpu", "--out", "rep", "--replay-from",
                              str(record), "--color", "never", cwd=tmp_path).stdout.strip().splitlines()[-1])
    replay = tmp_path / replay if not replay.is_absolute() else replay
    rows = _rows(replay)
    assert not _not_clean(rows)
    assert all(r["autotune"]["mode"] == "replay" and r["autotune"]["sweep_benchmarks"] == 0 for r in rows)
    tuned = [k for r in rows for k in r["autotune"]["kernels"]]
    assert len(tuned) == 2 and all(k["source"] == "replayed" for k in tuned)
    assert all(k["config"]["kwargs"]["BLOCK_M"] == 16 for k in tuned)
    launched = [v for r in rows if r["op"] == "flag_gems.mm" for v in r["variants"]]
    assert [(v["kernel"], v["launches"], "BLOCK_M=16" in v["name"]) for v in launched] == [
        ("flag_gems.ops.mm.mm_kernel", 1, True)] * 2
    assert not (replay / "autotune_records").exists()


# -- the real assets in ops/ ---------------------------------------------------------------------

def test_the_shipped_inventory_matches_the_recipes_and_names_its_command():
    inventory = providers.read_inventory(OPS / "inventory_cuda.csv")
    assert "scripts/collect_flaggems_inventory.py --backend cuda --out ops/inventory_cuda.csv" in inventory.comments[0]
    for op, rec in RECIPES.items():
        entry = inventory.entries[op]
        assert entry.status == "ok" and entry.family == rec.family.name and entry.callable == f"flag_gems.{op}"
    assert all(e.op in RECIPES or e.status == "no_recipe" for e in inventory.entries.values())
    assert ops_dir().resolve() == OPS.resolve()  # the assets ship from here


def test_the_dismiss_list_gives_every_entry_a_reason_and_a_date():
    entries, raw = providers.read_dismiss(OPS / "dismiss.txt")
    lines = [line for line in raw.decode().splitlines() if line.strip() and not line.startswith("#")]
    assert len(lines) == len(entries)
    inventory = providers.read_inventory(OPS / "inventory_cuda.csv")
    for entry in entries.values():
        assert len(entry.reason) >= 10 and entry.date.startswith("20") and entry.op in inventory.entries


def test_flaggems_deep_is_every_inventory_op_not_dismissed():
    inventory = providers.read_inventory(OPS / "inventory_cuda.csv")
    dismissed, _ = providers.read_dismiss(OPS / "dismiss.txt")
    deep = load_suite("flaggems-deep")
    want = sorted(op for op in inventory.ok() if op not in dismissed)
    assert sorted(op.name.removeprefix("flag_gems.") for op in deep.ops) == want
    assert sorted(deep.dismissed) == sorted(op for op in dismissed if inventory.entries[op].status == "ok")
    assert len(want) >= 100


def test_flaggems_pr_has_at_least_30_ops_of_every_kind():
    pr = load_suite("flaggems-pr")
    ops = {op.name.removeprefix("flag_gems.") for op in pr.ops}
    assert len(ops) >= 30
    families = {flaggems_recipes.recipe(op).family.name for op in ops}
    assert {"UnaryPointwiseBenchmark", "BinaryPointwiseBenchmark", "UnaryReductionBenchmark",
            "DimReductionBenchmark", "SoftmaxBenchmark", "LayerNormBenchmark", "MatmulBenchmark",
            "BlasBenchmark", "MvAndOuterBenchmark"} <= families
    assert (16, 4096, 4096) in pr.shapes["flag_gems.mm"]  # a small-M matmul
    assert {"mm", "addmm", "bmm"} <= ops


@pytest.mark.parametrize("suite", ["flaggems-pr", "flaggems-deep"])
def test_every_op_of_the_suites_gets_shapes_from_the_shape_files(suite):
    loaded = load_suite(suite)
    for op in loaded.ops:
        source = loaded.shape_sources[op.name]
        assert not source.startswith("default:"), (op.name, source)  # the chain ends in a file key
        rec = flaggems_recipes.recipe(op.name.removeprefix("flag_gems."))
        assert all(len(s) in rec.family.ranks and not flaggems_recipes.shape_problem(rec, s)
                   for s in loaded.shapes[op.name]), op.name
    for key in ("shapes_single.yaml", "shapes_multi.yaml"):
        text = (OPS / key).read_text()
        assert all(f"\n{name}:" in text for name in FAMILIES), key  # every class has a key
