"""Where two compiles' code first differs, on real cuda:90 compiles (no GPU): names and
locations only -> identical at every level; fp fusion off -> PTX; no LLVM optimizer -> LLVM
IR; line info on -> the binary only; another num_warps -> TTGIR."""

from __future__ import annotations

import csv
import os
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tritongate.cli import main
from tritongate.ir.capture import LOWER_LEVELS, RowIR, describe_compiled, lower_irs, ttgir_of
from tritongate.ir.diff import BINARY_CHANGED, CHANGED, IDENTICAL, diff_trees
from tritongate.ir.diff_dir import write_diff_dir
from tritongate.ir.levels import LEVEL_COLUMNS
from tritongate.ir.store import IRStore, TTGIR_DIR

from tests.ir.compiled.level_kernels import FMA, FMA_RENAMED

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
DIV16 = [["tt.divisibility", 16]]
ENV = ("TRITON_DISABLE_LINE_INFO", "TRITON_DEFAULT_FP_FUSION", "DISABLE_LLVM_OPT", "TRITON_CACHE_DIR")


def compile_fma(fn: Any = FMA, num_warps: int = 4, **env: str) -> Any:
    """A real compile for cuda:90, in a fresh cache, with line info off (as a GPU run) unless ``env`` says."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    names = fn.arg_names
    src = ASTSource(fn=fn, signature={**{n: "*fp32" for n in names[:4]}, names[4]: "i32", "BLOCK": "constexpr"},
                    constexprs={"BLOCK": 1024}, attrs={(i,): DIV16 for i in range(4)})
    saved = {k: os.environ.get(k) for k in ENV}
    os.environ.update({"TRITON_DISABLE_LINE_INFO": "1", "TRITON_CACHE_DIR": tempfile.mkdtemp(), **env})
    try:
        return triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": num_warps})
    finally:
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)


def ir_folder(root: Path, compiled: Any) -> Path:
    """A ``tritongate ir``-like folder holding one variant, under one kernel id for both sides."""
    store = IRStore(root)
    v = describe_compiled(compiled, kernel="level_kernels.fma_kernel", case="n1024")
    # options off the name: another num_warps must pair with the base's variant, as a build's would
    v = replace(v, launches=1, rows=("fma/fp32",), options={})
    store.add(RowIR(variants=(v,), ttgir={v.compile_hash: ttgir_of(compiled)},
                    lower={v.compile_hash: lower_irs(compiled)}))
    store.close()
    return root


@pytest.fixture(scope="module")
def base() -> Any:
    return compile_fma()


def compare(tmp_path: Path, base: Any, cand: Any) -> tuple[Any, Path]:
    (d,) = diff_trees(ir_folder(tmp_path / "base", base), ir_folder(tmp_path / "cand", cand))
    return d, write_diff_dir([d], tmp_path / "diff")


def test_the_levels_below_ttgir_are_kept_beside_it(tmp_path: Path, base: Any) -> None:
    root = ir_folder(tmp_path / "ir", base) / TTGIR_DIR
    kept = {p.suffix: p.stat().st_size for p in root.rglob("*") if p.suffix in (".ttgir", ".llir", ".ptx", ".sass")}
    assert set(kept) == {".ttgir", *(f".{level}" for level in LOWER_LEVELS)}, kept
    assert all(size > 1000 for size in kept.values()), kept
    assert "fma.rn.f32" in next(root.rglob("*.ptx")).read_text()


def test_names_and_locations_only_are_identical_at_every_level(tmp_path: Path, base: Any) -> None:
    renamed = compile_fma(FMA_RENAMED)
    assert ttgir_of(renamed) != ttgir_of(base)  # the names differ ...
    assert "%x_ptr" in ttgir_of(base) and "%a:" in ttgir_of(renamed)
    d, _ = compare(tmp_path, base, renamed)
    assert (d.status, d.first_level, d.diff_text) == (IDENTICAL, "", "")  # ... the code does not
    assert dict(d.levels) == dict.fromkeys(("ttgir", "llir", "ptx", "sass", "cubin"), "same")


def test_fp_fusion_off_first_differs_in_ptx(tmp_path: Path, base: Any) -> None:
    d, out = compare(tmp_path, base, compile_fma(TRITON_DEFAULT_FP_FUSION="0"))
    assert (d.status, d.first_level) == (BINARY_CHANGED, "ptx"), d
    assert dict(d.levels) == {"ttgir": "same", "llir": "same", "ptx": "differs", "sass": "differs", "cubin": "differs"}
    assert "first differs at PTX" in d.reason
    ptx_diff = next(out.rglob("*.ptx.diff")).read_text()
    assert "-\tfma.rn.f32" in ptx_diff and "+\tmul.rn.f32" in ptx_diff  # the real change, shown
    changed = [line for line in ptx_diff.splitlines()[2:] if line.startswith(("-", "+"))]
    assert not [line for line in changed if "ld.param" in line or "ld.global" in line], ptx_diff  # no renumbering noise
    with open(out / "levels.tsv", encoding="utf-8", newline="") as f:
        (rec,) = csv.DictReader(f, delimiter="\t")
    assert tuple(rec) == LEVEL_COLUMNS and rec["first_level"] == "ptx"
    assert sorted(Path(p).name for p in rec["level_diffs"].split(",")) == [
        f"{d.name}.ptx.diff", f"{d.name}.sass.diff"]
    summary = (out / "summary.md").read_text()
    assert "| PTX | 1 |" in summary and "## TTGIR identical, lower levels not" in summary


def test_no_llvm_optimizer_first_differs_in_llvm_ir(tmp_path: Path, base: Any) -> None:
    d, _ = compare(tmp_path, base, compile_fma(DISABLE_LLVM_OPT="1"))
    assert (d.status, d.first_level) == (BINARY_CHANGED, "llir"), d
    assert [level for level, *_ in d.level_diffs] == ["llir", "ptx", "sass"]


def test_line_info_changes_the_binary_only(tmp_path: Path, base: Any) -> None:
    d, _ = compare(tmp_path, base, compile_fma(TRITON_DISABLE_LINE_INFO="0"))
    assert (d.status, d.first_level, d.level_diffs) == (BINARY_CHANGED, "cubin", ()), d
    assert "binary only" in d.reason


def test_num_warps_first_differs_in_ttgir(tmp_path: Path, base: Any) -> None:
    d, out = compare(tmp_path, base, compile_fma(num_warps=8))
    assert (d.status, d.first_level, d.level_diffs) == (CHANGED, "ttgir", ())
    assert '-module attributes {"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4' in d.diff_text
    assert "| TTGIR |" in (out / "summary.md").read_text()


def test_ir_keeps_the_levels_and_ir_diff_prints_them(tmp_path: Path, capsys: Any) -> None:
    from tests.ir.compiled.check_aot import recorded_run
    from tests.ir.compiled.aot_kernels import compiled_add

    run = recorded_run(tmp_path, compiled_add())
    assert main(["ir", "--from", str(run), "--target", "cuda:90", "--out", str(tmp_path / "a")]) == 0
    assert "kept: 1 .ttgir, 1 .llir, 1 .ptx, 1 .sass (settings: TRITON_DISABLE_LINE_INFO=1)" in capsys.readouterr().out
    os.environ["TRITON_DEFAULT_FP_FUSION"] = "0"  # set here: wins over the record's enable_fp_fusion
    try:
        assert main(["ir", "--from", str(run), "--target", "cuda:90", "--out", str(tmp_path / "b"), "--no-sass"]) == 0
    finally:
        os.environ.pop("TRITON_DEFAULT_FP_FUSION")
    import json
    aot = json.loads((tmp_path / "b" / TTGIR_DIR / "aot.json").read_text())
    assert aot["codegen_env"]["TRITON_DEFAULT_FP_FUSION"] == "0" and "sass" not in aot["levels"]
    capsys.readouterr()
    assert main(["ir-diff", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "d")]) == 0
    printed = capsys.readouterr().out
    # an add: nothing to fuse, yet the PTX says add.rn.f16x2 (no contraction allowed); ptxas emits the same cubin
    assert "1 identical\nfirst differs at: 1 PTX text only (cubin identical) (0 variants the same at every level)\n" \
        in printed, printed
    assert "+\tadd.rn.f16x2" in next((tmp_path / "d").rglob("*.ptx.diff")).read_text()


def test_a_rewritten_diff_folder_drops_the_lower_diffs_no_longer_listed(tmp_path: Path, base: Any) -> None:
    _, out = compare(tmp_path / "one", base, compile_fma(TRITON_DEFAULT_FP_FUSION="0"))
    assert list(out.rglob("*.ptx.diff"))
    (d,) = diff_trees(ir_folder(tmp_path / "b", base), ir_folder(tmp_path / "c", compile_fma(FMA_RENAMED)))
    write_diff_dir([d], out)
    assert sorted(p.name for p in out.rglob("*") if p.is_file()) == ["index.tsv", "levels.tsv", "summary.md"]
