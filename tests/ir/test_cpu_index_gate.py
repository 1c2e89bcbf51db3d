"""Two CPU runs both carry an IR index (each launch's GPU specialization) but no TTGIR: the
gate shows no IR evidence for them, as before CPU runs had an index."""

from __future__ import annotations

from pathlib import Path

from tritongate.gate.ir_evidence import IREvidence, collect
from tritongate.ir.capture import RowIR
from tritongate.ir.index import CompiledVariant
from tritongate.ir.store import IRStore


def _cpu_run(root: Path) -> Path:
    store = IRStore(root)
    v = CompiledVariant(case="4096", kernel="m.k", signature={}, constexprs={}, specialization={},
                        options={"num_warps": 4}, compile_hash="h", rows=("add/float16",), launches=1)
    store.add(RowIR(variants=(v,)))  # interpreted: nothing compiled, no TTGIR
    store.close()
    assert (root / "ttgir" / "index.tsv").is_file()
    return root


def test_indexes_without_ttgir_give_no_ir_evidence(tmp_path: Path) -> None:
    ir = collect(_cpu_run(tmp_path / "a"), _cpu_run(tmp_path / "b"), tmp_path / "verdict")
    assert ir == IREvidence() and not (tmp_path / "verdict" / "ir-diff").exists()
