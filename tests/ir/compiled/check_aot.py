"""`tritongate ir`: a run's launched variants recompiled for cuda:90 on a machine without a GPU."""

from __future__ import annotations

import pytest

from tritongate.cli import main
from tritongate.ir.capture import CompiledSeen, row_ir
from tritongate.ir.index import INDEX, read_index
from tritongate.ir.store import IRStore, TTGIR_DIR
from tritongate.ops.kernels.elementwise import add_kernel_fixed
from tritongate.rundir import RunWriter

from tests.ir.compiled.aot_kernels import compiled_add

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def recorded_run(tmp_path, *kernels_launched, loser=None):
    run = tmp_path / "rec"
    writer = RunWriter(run, {"backend": "cuda", "codegen_env": {"TRITON_DISABLE_LINE_INFO": "1"}})
    writer.finish()
    store = IRStore(run)
    seen = CompiledSeen()
    for k in (*kernels_launched, *([loser] if loser else [])):
        seen.add(add_kernel_fixed, k)
    store.add(row_ir(seen, {k.hash: 1 for k in kernels_launched}, case="4096", row="add/float16"))
    store.close()
    return run


def test_the_launched_variants_recompile_to_the_same_ir_under_the_same_compiler(tmp_path, capsys):
    run = recorded_run(tmp_path, compiled_add(), loser=compiled_add(num_warps=8))
    out = tmp_path / "aot"
    assert main(["ir", "--from", str(run), "--target", "cuda:90", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "1 of 1 launched variants recompiled for cuda:90; 0 failed" in captured.out, captured.err[-3000:]
    (before,) = [v for v in read_index(run / TTGIR_DIR / INDEX) if not v.sweep_loser]
    (after,) = read_index(out / TTGIR_DIR / INDEX)  # sweep losers are not recompiled
    assert (after.case, after.kernel, after.name, after.file) == (before.case, before.kernel, before.name, before.file)
    assert after.source_hash == before.source_hash and after.binary_hash == before.binary_hash
    assert (out / TTGIR_DIR / after.file).read_text() == (run / TTGIR_DIR / before.file).read_text()


def test_a_run_without_ir_and_a_bad_target_are_named(tmp_path, capsys):
    writer = RunWriter(tmp_path / "cpu", {"backend": "cpu"})
    writer.finish()
    assert main(["ir", "--from", str(tmp_path / "cpu"), "--out", str(tmp_path / "o")]) == 2
    assert "has no ttgir/index.tsv: its IR was not captured" in capsys.readouterr().err
    run = recorded_run(tmp_path, compiled_add())
    assert main(["ir", "--from", str(run), "--target", "cuda", "--out", str(tmp_path / "o")]) == 2
    assert "expected BACKEND:ARCH" in capsys.readouterr().err


def test_a_variant_whose_kernel_is_gone_is_listed_not_fatal(tmp_path, capsys):
    run = recorded_run(tmp_path, compiled_add())
    index = run / TTGIR_DIR / INDEX
    index.write_text(index.read_text().replace("tritongate.ops.kernels.elementwise.add_kernel_fixed",
                                               "tritongate.ops.kernels.elementwise.renamed_kernel"))
    assert main(["ir", "--from", str(run), "--out", str(tmp_path / "o")]) == 2  # nothing recompiled: not a success
    captured = capsys.readouterr()
    assert "0 of 1 launched variants recompiled" in captured.out
    assert "not compiled: 4096 tritongate.ops.kernels.elementwise.renamed_kernel" in captured.err


def test_ir_diff_shows_exactly_the_variant_a_codegen_option_changed(tmp_path, capsys):
    """Two 'builds' of the same two rows: one launched variant compiled with 8 warps instead
    of 4 in the candidate; the other identical. Only the first is reported changed."""
    def build(name, warps_for_4096):
        run = tmp_path / name
        RunWriter(run, {"backend": "cuda"}).finish()
        store = IRStore(run)
        for case, k in (("4096", compiled_add(num_warps=warps_for_4096)), ("8192", compiled_add(block=2048))):
            seen = CompiledSeen()
            seen.add(add_kernel_fixed, k)
            store.add(row_ir(seen, {k.hash: 1}, case=case, row="add/float16"))
        store.close()
        return run

    base, cand = build("base", 4), build("cand", 8)
    # the file names come from the parameters: w4 vs w8 would not pair up, so name both w4 here
    cand_index = cand / TTGIR_DIR / INDEX
    cand_tree = cand / TTGIR_DIR / "4096" / "add_kernel_fixed"
    (cand_tree / "w8s3.ttgir").rename(cand_tree / "w4s3.ttgir")
    cand_index.write_text(cand_index.read_text().replace("w8s3", "w4s3"))
    assert main(["ir-diff", str(base), str(cand), "--out", str(tmp_path / "d")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("1 changed, 1 identical") and "changed  4096  tritongate.ops.kernels.elementwise.add_kernel_fixed  w4s3" in out
    diff = (tmp_path / "d" / "4096" / "add_kernel_fixed" / "w4s3.diff").read_text()
    assert '"ttg.num-warps" = 8' in diff and "loc(" not in diff


def test_an_autotuned_kernel_resolves_to_its_jit_function():
    from triton.runtime.jit import JITFunction

    from tritongate.ir.aot import resolve_kernel

    fn = resolve_kernel("tritongate.ops.kernels.elementwise.add_kernel")  # @triton.autotune over @triton.jit
    assert isinstance(fn, JITFunction) and fn.arg_names[:3] == ["x_ptr", "y_ptr", "out_ptr"]


def test_a_record_made_on_the_interpreter_recompiles_as_a_gpu_run_would(tmp_path, monkeypatch):
    """An index captured on a CPU never set TRITON_DISABLE_LINE_INFO; the recompile uses the
    GPU run's setting (no line info), so the same kernel gives the same binary as a GPU run's."""
    from tritongate.ir.aot import Target, recompile

    monkeypatch.delenv("TRITON_DISABLE_LINE_INFO", raising=False)
    run = recorded_run(tmp_path, compiled_add())
    variants = [v for v in read_index(run / TTGIR_DIR / INDEX) if not v.sweep_loser]
    cpu_record = recompile(variants, Target.parse("cuda:90"), tmp_path / "cpu",
                           codegen_env={"TRITON_DISABLE_LINE_INFO": None, "TRITON_INTERPRET": "1"})
    gpu_record = recompile(variants, Target.parse("cuda:90"), tmp_path / "gpu",
                           codegen_env={"TRITON_DISABLE_LINE_INFO": "1"})
    assert cpu_record.codegen_env["TRITON_DISABLE_LINE_INFO"] == "1" == gpu_record.codegen_env["TRITON_DISABLE_LINE_INFO"]
    (a,), (b,) = read_index(tmp_path / "cpu" / TTGIR_DIR / INDEX), read_index(tmp_path / "gpu" / TTGIR_DIR / INDEX)
    assert a.binary_hash == b.binary_hash
    import os
    assert "TRITON_DISABLE_LINE_INFO" not in os.environ  # put back as it was
