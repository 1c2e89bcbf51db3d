"""``ci/prescreen.py``: the rows a PR can change, from the two builds' AOT trees (faked here:
the real recompiles are bench/prescreen_e2e.py's), the zero-change verdict through the
gate's writer, the GitHub output lines and the exit codes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import make_row
from tritongate import prescreen
from tritongate.ir.capture import RowIR
from tritongate.ir.index import CompiledVariant
from tritongate.ir.provenance import this_build, write_aot
from tritongate.ir.store import IRStore
from tritongate.rundir import RunWriter

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ci"))
import prescreen as ci_prescreen

ROWS = (("add", "4096", "float32"), ("matmul", "64x64x64", "float16"))


def _tree(root: Path, texts: dict[str, str]) -> None:
    store = IRStore(root)
    for op, case, dtype in ROWS:
        v = CompiledVariant(case=case, kernel=f"m.{op}_kernel", signature={"x": "*fp16"}, constexprs={},
                            specialization={}, options={"num_warps": 4}, compile_hash=f"h{op}",
                            binary_hash=texts[op][:8], rows=(f"{op}/{dtype}",), launches=1)
        store.add(RowIR(variants=(v,), ttgir={v.compile_hash: texts[op]}))
    store.close()


@pytest.fixture
def record(tmp_path: Path) -> Path:
    w = RunWriter(tmp_path / "record", {"backend": "cuda", "suite": {"name": "pr"}})
    for op, case, dtype in ROWS:
        w.add(make_row(op, case, dtype))
    w.finish()
    _tree(tmp_path / "record", {"add": "add v1\n", "matmul": "mm v1\n"})
    return tmp_path / "record"


@pytest.fixture
def fake_builds(monkeypatch: pytest.MonkeyPatch):
    """Each "python" names the TTGIR its compiler would emit for matmul."""
    texts = {"base": "mm v1\n", "same": "mm v1\n", "newer": "mm v2\n"}

    def aot(pythons, record: Path, out: Path, target: str) -> dict:
        for side, python in pythons.items():
            _tree(out / f"ir-{side}", {"add": "add v1\n", "matmul": texts[Path(python).name]})
            write_aot(out / f"ir-{side}" / "ttgir", record, target=target, compiled=2, failed=[])
        return {}

    monkeypatch.setattr(prescreen, "_aot_both", aot)
    monkeypatch.setattr(prescreen, "build_of", lambda python, env=None: this_build())
    return lambda tmp_path, name: _exe(tmp_path / name)


def _exe(path: Path) -> str:
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return str(path)


def test_a_changed_kernel_lists_exactly_its_rows(tmp_path, record, fake_builds, monkeypatch, capsys) -> None:
    out_file = tmp_path / "github_output"
    monkeypatch.setenv("GITHUB_OUTPUT", str(out_file))
    code = ci_prescreen.main(["--baseline", str(record), "--base-python", fake_builds(tmp_path, "base"),
                              "--cand-python", fake_builds(tmp_path, "newer"), "--out", str(tmp_path / "o")])
    assert code == 0
    doc = json.loads((tmp_path / "o" / "prescreen.json").read_text())
    assert doc["schema_version"] == 1 and doc["rows_total"] == 2
    assert doc["rows_changed"] == [["matmul", "64x64x64", "float16"]]
    assert {k["kernel"]: k["status"] for k in doc["kernels"]} == {"m.add_kernel": "identical",
                                                                   "m.matmul_kernel": "changed"}
    assert doc["baseline"]["content_sha256"] and doc["builds"]["cand"]["triton_key"]
    assert out_file.read_text() == "rows_changed=1\nrows_total=2\n"
    assert not (tmp_path / "o" / "verdict").exists()
    assert (tmp_path / "o" / "ir-diff" / "provenance.json").is_file()


def test_identical_builds_write_a_zero_verdict_and_no_gpu_job(tmp_path, record, fake_builds) -> None:
    code = ci_prescreen.main(["--baseline", str(record), "--base-python", fake_builds(tmp_path, "base"),
                              "--cand-python", fake_builds(tmp_path, "same"), "--out", str(tmp_path / "o")])
    assert code == 0
    verdict = json.loads((tmp_path / "o" / "verdict" / "verdict.json").read_text())
    assert verdict["headline"] == "✅ 0 of 2 rows' kernels changed under this PR; no GPU time used"
    assert [r["verdict"] for r in verdict["rows"]] == ["IDENTICAL_BINARY"] * 2
    assert not any(r["timed"] for r in verdict["rows"])
    assert "no GPU time used" in (tmp_path / "o" / "verdict" / "verdict.md").read_text()


def test_bad_input_is_exit_2_naming_it_and_a_crash_is_exit_4(tmp_path, record, fake_builds, monkeypatch,
                                                             capsys) -> None:
    base = fake_builds(tmp_path, "base")
    assert ci_prescreen.main(["--baseline", str(tmp_path), "--base-python", base, "--cand-python", base,
                              "--out", str(tmp_path / "o")]) == 2
    assert "--baseline" in capsys.readouterr().err
    assert ci_prescreen.main(["--baseline", str(record), "--base-python", base, "--cand-python",
                              str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 2
    assert "--cand-python" in capsys.readouterr().err

    def broken(*args, **kw):
        raise RuntimeError("boom")

    monkeypatch.setattr(prescreen, "_aot_both", broken)
    assert ci_prescreen.main(["--baseline", str(record), "--base-python", base, "--cand-python", base,
                              "--out", str(tmp_path / "o2")]) == 4
    assert "internal error" in capsys.readouterr().err and not (tmp_path / "o2" / "prescreen.json").exists()


def test_the_renderer_knows_the_ahead_of_time_reason() -> None:
    from tritongate.gate.verdict import AHEAD_OF_TIME_REASON
    from tritongate.report.verdict_view import AHEAD_OF_TIME

    assert AHEAD_OF_TIME in AHEAD_OF_TIME_REASON
