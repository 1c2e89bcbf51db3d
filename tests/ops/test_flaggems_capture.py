"""What a FlagGems row launches, learned without a GPU (``prescreen/provider_capture``),
against the stand-in ``flag_gems`` run as the real one runs: real ``JITFunction`` kernels (no
interpreter), the device asked at import, ``LibEntry`` refusing interpreted kernels and
launching cached ones past the JIT."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from tests.conftest import make_row
from tritongate.autotune.records import Record, write_records
from tritongate.ir.device_lens import gpu_lens
from tritongate.ir.index import read_index
from tritongate.ir.launchless import NotCapturable
from tritongate.ir.standin_device import PROFILES, profile_for, standin_cuda
from tritongate.prescreen import respecialize
from tritongate.prescreen.provider_capture import CaptureDoc
from tritongate.rundir import RunWriter

ROOT = Path(__file__).resolve().parents[2]
STAND_IN = Path(__file__).resolve().parent / "stand_in"
H200 = PROFILES["NVIDIA H200"]
ROWS = [("flag_gems.add", "4096", "float16"), ("flag_gems.cumsum", "1024x64", "float16"),
        ("flag_gems.mm", "32x32x32", "float16"), ("flag_gems.mm", "48x64x32", "float16")]


# -- the stand-in device ------------------------------------------------------------------------

def test_the_stand_in_answers_what_is_known_and_refuses_the_rest():
    before = torch.cuda.get_device_name
    with standin_cuda(H200) as log:
        assert torch.cuda.is_available() and torch.cuda.device_count() == 1
        assert torch.cuda.get_device_name() == "NVIDIA H200"
        assert torch.cuda.get_device_capability() == (9, 0)
        assert torch.cuda.get_device_properties(0).multi_processor_count == 132
        with pytest.raises(NotCapturable, match="total_memory"):
            torch.cuda.get_device_properties(0).total_memory  # not measured: never guessed
        with pytest.raises(NotCapturable, match="GPU 1"):
            torch.cuda.get_device_properties(1)
        with pytest.raises(NotCapturable):
            torch.cuda.default_generators[0]
        with torch.cuda.device(torch.device("cpu")):  # the capture's tensors stand for the GPU's
            pass
    assert torch.cuda.get_device_name is before
    assert "get_device_properties().multi_processor_count" in log and "get_device_name" in log


def test_a_gpu_without_a_profile_or_of_another_target_is_not_capturable():
    with pytest.raises(NotCapturable, match="no stand-in profile"):
        profile_for("NVIDIA A100-SXM4-80GB", "cuda:80")
    with pytest.raises(NotCapturable, match="cuda:90"):
        profile_for("NVIDIA H200", "cuda:100")


def test_tensors_answer_as_the_gpu_and_host_reads_are_refused():
    x = torch.ones(8, 16)
    with gpu_lens():
        assert x.is_cuda and x.device.type == "cuda" and x.get_device() == 0 and not x.is_cpu
        y = torch.empty((4,), device=x.device)  # allocated on the host, seen as the GPU's
        assert y.is_cuda and x.to(x.device) is not None and x.cuda() is x
        for read in (lambda: x.sum().item(), lambda: bool(x[0, 0]), lambda: torch.nonzero(x), lambda: x.tolist()):
            with pytest.raises(NotCapturable, match="host"):
                read()
    assert x.device.type == "cpu" and not x.is_cuda and x.sum().item() == 128.0


# -- end to end, in a process without the interpreter --------------------------------------------

def _suite(folder: Path) -> Path:
    (folder / "inventory_cuda.csv").write_text(textwrap.dedent("""\
        op,callable,class,status
        add,flag_gems.add,BinaryPointwiseBenchmark,ok
        cumsum,flag_gems.cumsum,ScanBenchmark,ok
        mm,flag_gems.mm,MatmulBenchmark,ok
        """))
    (folder / "s.yaml").write_text(textwrap.dedent("""\
        provider: flaggems
        inventory: inventory_cuda.csv
        dtypes: [float16]
        ops:
          add: {shapes: [[4096]]}
          cumsum: {shapes: [[1024, 64]]}
          mm: {shapes: [[32, 32, 32], [48, 64, 32]]}
        """))
    return folder / "s.yaml"


def _record(path: Path, device: str = "NVIDIA H200") -> Path:
    w = RunWriter(path, {"backend": "cuda", "device": device, "suite": {"name": "s"}})
    for op, case, dtype in ROWS:
        w.add(make_row(op, case, dtype))
    w.finish()
    # the H200 chose 16x16x16 for mm's 32x32x32 key; the 48x64x32 row's key is not recorded
    config = {"kwargs": {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16}, "num_warps": 1, "num_stages": 3}
    write_records(path, [Record(op="flag_gems.mm", kernel="flag_gems.ops.mm.mm_kernel", tuner="LibTuner",
                                key=[32, 32, 32, "torch.float16", "torch.float16", "torch.float16"],
                                config=config, cases=("32x32x32/float16",))],
                  {"backend": "cuda", "device": device})
    return path


def _capture(tmp_path: Path, record: Path) -> tuple[dict, Path]:
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "PYTHONPATH", "GEMS_VENDOR")}
    env["PYTHONPATH"] = os.pathsep.join([str(STAND_IN), str(ROOT)])
    proc = subprocess.run([sys.executable, "-m", respecialize.PROVIDER_CAPTURE, "--record", str(record),
                           "--suite", str(_suite(tmp_path)), "--target", "cuda:90", "--out", str(tmp_path / "cap")],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir = tmp_path / "cap" / "s_capture"
    return json.loads((run_dir / "capture.json").read_text()), run_dir


@pytest.mark.slow
def test_the_stand_in_captures_each_row_exactly_or_says_why_not(tmp_path):
    doc, run_dir = _capture(tmp_path, _record(tmp_path / "record"))
    # one typed document beside the IR: no run identity pretending to be a run's
    assert sorted(p.name for p in run_dir.iterdir()) == ["capture.json", "ttgir"]
    assert [tuple(r[:3]) for r in doc["captured"]] == [ROWS[0], ROWS[1], ROWS[2]]
    (missing,) = doc["not_capturable"]
    assert tuple(missing[:3]) == ROWS[3] and "key_missing" in missing[3]
    variants = {(v.kernel.rsplit(".", 1)[1], v.case): v for v in read_index(run_dir / "ttgir" / "index.tsv")}
    assert all(v.target == "cuda:90" and not v.sweep_loser for v in variants.values())
    mm = variants[("mm_kernel", "32x32x32")]
    # the record's config, launched once in the recorded pass: LibEntry's cached launch, past the JIT
    assert (mm.constexprs, mm.options["num_warps"], mm.launches) == (
        {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16}, 1, 1)
    assert mm.signature["a_ptr"] == "*fp16" and mm.specialization["a_ptr"] == [["tt.divisibility", 16]]
    # cumsum sized by the H200's 132 SMs (1024 rows -> 8 per program), asked through torch.cuda
    assert variants[("_scan_kernel", "1024x64")].constexprs == {"BLOCK": 64, "ROWS_PER_PROGRAM": 8}
    assert "get_device_properties().multi_processor_count" in doc["device_queries"]
    assert "get_device_name" in doc["device_queries"]  # asked at import, as FlagGems does
    assert variants[("_add_kernel", "4096")].specialization["n"] == [["tt.divisibility", 16]]


@pytest.mark.slow
def test_a_record_from_a_gpu_without_a_profile_captures_nothing(tmp_path):
    doc, run_dir = _capture(tmp_path, _record(tmp_path / "record", device="NVIDIA A100-SXM4-80GB"))
    assert not doc["captured"] and len(doc["not_capturable"]) == len(ROWS)
    assert all("no stand-in profile" in why for *_, why in doc["not_capturable"])
    assert read_index(run_dir / "ttgir" / "index.tsv") == []


# -- the pre-screen's wiring --------------------------------------------------------------------

def test_the_prescreen_captures_a_flaggems_suite_without_the_interpreter(tmp_path):
    record = _record(tmp_path / "record")
    cmd, env = respecialize.capture_cmd(sys.executable, record, str(_suite(tmp_path)), ROWS, tmp_path / "c",
                                        "cuda:90", str(ROOT))
    assert cmd[1:3] == ["-m", respecialize.PROVIDER_CAPTURE] and "TRITON_INTERPRET" not in env
    cmd, env = respecialize.capture_cmd(sys.executable, record, "pr", ROWS, tmp_path / "d", "cuda:90", str(ROOT))
    assert cmd[3] == "run" and env["TRITON_INTERPRET"] == "1"


def test_a_row_the_capture_could_not_take_is_timed_with_its_reason(tmp_path):
    from tritongate.ir.capture import RowIR
    from tritongate.ir.index import CompiledVariant
    from tritongate.ir.store import IRStore

    key = ("flag_gems.add", "4096", "float16")
    for name in ("record", "base", "cand"):
        store = IRStore(tmp_path / name)
        store.add(RowIR(variants=(CompiledVariant(case="4096", kernel="m.k", signature={}, constexprs={},
                                                  specialization={}, options={}, compile_hash="h", launches=1,
                                                  rows=("flag_gems.add/float16",), target="cuda:90"),)))
        store.close()
    other = ("flag_gems.mm", "32x32x32", "float16")
    for side in ("base", "cand"):
        (tmp_path / side / "capture.json").write_text(CaptureDoc(
            suite="flaggems-pr", record="r", target="cuda:90", device="NVIDIA H200", flag_gems={}, versions={},
            captured=[(*key, 1)], not_capturable=[(*other, "aten._local_scalar_dense reads tensor values on the host")],
            device_queries=[], wall_s=0.1).model_dump_json())
    timed = respecialize.respecialized_rows(*(tmp_path / n / "ttgir" for n in ("record", "base", "cand")),
                                            [key, other])
    assert key not in timed
    assert "could not capture" in timed[other] and "_local_scalar_dense" in timed[other]
