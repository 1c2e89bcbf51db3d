"""A baseline entry keeps the record's IR index (and its TTGIR when small), hashed in the
manifest like every other file; links and paths out of ttgir/ are never copied."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tritongate.baselines.ir_files import ir_files
from tritongate.ir.capture import RowIR
from tritongate.ir.index import CompiledVariant
from tritongate.ir.store import IRStore


def _run(tmp_path: Path) -> Path:
    store = IRStore(tmp_path / "run")
    for case in ("a", "b"):
        v = CompiledVariant(case=case, kernel="m.k", signature={}, constexprs={}, specialization={},
                            options={"num_warps": 4}, compile_hash=f"h{case}", rows=("op/float16",), launches=1)
        store.add(RowIR(variants=(v,), ttgir={v.compile_hash: "x" * 100}))
    store.close()
    return tmp_path / "run"


def test_the_index_legend_and_small_ttgir_are_kept(tmp_path: Path) -> None:
    run = _run(tmp_path)
    assert ir_files(run) == ["ttgir/index.tsv", "ttgir/naming.md", "ttgir/a/k/w4.ttgir", "ttgir/b/k/w4.ttgir"]
    assert ir_files(run, max_ttgir_bytes=150) == ["ttgir/index.tsv", "ttgir/naming.md"]  # 200 bytes: index only


def test_a_run_without_an_index_or_with_linked_ttgir_keeps_no_link(tmp_path: Path) -> None:
    assert ir_files(tmp_path) == []
    run = _run(tmp_path)
    target = run / "ttgir" / "a" / "k" / "w4.ttgir"
    target.unlink()
    os.symlink("/etc/hostname", target)
    assert "ttgir/a/k/w4.ttgir" not in ir_files(run)


@pytest.mark.parametrize("linked", ["ttgir", "ttgir/index.tsv"])
def test_a_linked_ir_index_is_refused_not_published_without_it(tmp_path: Path, linked: str) -> None:
    """An entry published without its index could never be pre-screened, and nothing said so."""
    elsewhere = _run(tmp_path / "other")
    run = tmp_path / "linked"
    run.mkdir()
    if linked == "ttgir":
        (run / "ttgir").symlink_to(elsewhere / "ttgir", target_is_directory=True)
    else:
        (run / "ttgir").mkdir()
        (run / "ttgir" / "index.tsv").symlink_to(elsewhere / "ttgir" / "index.tsv")
    with pytest.raises(ValueError, match=r"is (a link|not a plain file); the IR index is part of a baseline"):
        ir_files(run)
