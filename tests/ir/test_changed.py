"""Reading an ir-diff folder for ``pair --changed-from``: a row is skipped only when every
one of its variants is identical; anything else, or anything unknown, is measured."""

from __future__ import annotations

from pathlib import Path

import pytest

from tritongate.cli import main
from tritongate.errors import UsageError
from tritongate.ir.changed import load_changed_rows
from tritongate.ir.provenance import record_identity, write_diff_provenance
from tritongate.rundir import RunWriter
from tritongate.ir.diff import BASE_ONLY, BINARY_CHANGED, CHANGED, IDENTICAL, MISSING_FILE, VariantDiff
from tritongate.ir.diff_dir import write_diff_dir


def d(case: str, name: str, status: str, rows: tuple[str, ...]) -> VariantDiff:
    text = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n" if status == CHANGED else ""
    return VariantDiff(case=case, kernel="k.kern", name=name, status=status, base_file=f"{case}/kern/{name}.ttgir",
                       cand_file=f"{case}/kern/{name}.ttgir", added=int(bool(text)), removed=int(bool(text)),
                       diff_text=text, rows=rows)


def test_a_row_is_unchanged_only_when_all_its_variants_are_identical(tmp_path: Path) -> None:
    write_diff_dir([
        d("n1", "w4", IDENTICAL, ("add/float16", "add/bfloat16")),
        d("n1", "w8", IDENTICAL, ("add/float16",)),
        d("n2", "w4", IDENTICAL, ("add/float16",)),
        d("n2", "w8", CHANGED, ("add/float16",)),  # one changed variant marks the whole row
        d("n3", "w4", BINARY_CHANGED, ("add/float16",)),
        d("n4", "w4", BASE_ONLY, ("add/float16",)),
        d("n5", "w4", MISSING_FILE, ("add/float16",)),
        d("n6", "w4", IDENTICAL, ("ops/with/slash/float32",)),
    ], tmp_path)
    record = tmp_path / "record"
    RunWriter(record, {"backend": "cuda"}).finish()
    (record / "ttgir").mkdir()
    (record / "ttgir" / "index.tsv").write_text("case\n")
    write_diff_provenance(tmp_path, {"record": record_identity(record), "base": {}, "cand": {}})
    rows = load_changed_rows(tmp_path, record=record)
    assert rows.unchanged == {("add", "n1", "float16"), ("add", "n1", "bfloat16"), ("ops/with/slash", "n6", "float32")}
    assert rows.changed == {("add", f"n{i}", "float16") for i in (2, 3, 4, 5)}
    assert not rows.is_unchanged(("add", "n9", "float16"))  # unknown: measured
    assert rows.to_dict() == {"source": str(tmp_path), "unchanged_rows": 3, "changed_rows": 4}


@pytest.mark.parametrize("content, match", [
    (None, "no index.tsv there"),
    ("case\tkernel\tname\n", "is not an ir-diff index"),
    ("case\tkernel\tname\tstatus\tadded\tremoved\tdiff\trows\treason\nn1\tk\tw4\tweird\t0\t0\t\tadd/f16\t\n",
     "line 2: a status among"),
    ("case\tkernel\tname\tstatus\tadded\tremoved\tdiff\trows\treason\nn1\tk\tw4\tidentical\n", "line 2"),
    (b"\xff\xfe", "unreadable"),
])
def test_a_folder_that_is_not_an_ir_diff_is_named_with_the_fix(tmp_path: Path, content, match) -> None:
    if isinstance(content, bytes):
        (tmp_path / "index.tsv").write_bytes(content)
    elif content is not None:
        (tmp_path / "index.tsv").write_text(content, encoding="utf-8")
    with pytest.raises(UsageError, match=match) as info:
        load_changed_rows(tmp_path, record=tmp_path / "record")
    assert "tritongate ir-diff BASE_IR CAND_IR --out DIR" in str(info.value)


def test_pair_refuses_a_bad_changed_from_before_anything_runs(tmp_path: Path, capsys) -> None:
    code = main(["pair", str(tmp_path / "rec"), "--suite", "smoke", "--out", str(tmp_path / "o"),
                 "--changed-from", str(tmp_path / "nothing")])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --changed-from") and "no index.tsv there" in err
    assert not (tmp_path / "o").exists()
