"""An ir-diff folder decides which rows are never measured, so ``pair --changed-from``
takes one only when it proves, by content hashes and build identities, that it was made
from this baseline record and these two builds, and that its index was not edited."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tritongate.errors import UsageError
from tritongate.ir.capture import RowIR
from tritongate.ir.changed import load_changed_rows
from tritongate.ir.diff import diff_trees
from tritongate.ir.diff_dir import write_diff_dir
from tritongate.ir.index import CompiledVariant
from tritongate.ir.provenance import (AOT_FILE, PROVENANCE, check_diff_provenance, diff_provenance, this_build,
                                      write_aot, write_diff_provenance)
from tritongate.ir.store import IRStore
from tritongate.rundir import RunWriter


def _variant(case: str, row: str, binary: str) -> CompiledVariant:
    return CompiledVariant(case=case, kernel="m.kern", signature={"x": "*fp16"}, constexprs={}, specialization={},
                           options={"num_warps": 4}, compile_hash=f"h{case}", binary_hash=binary, rows=(row,),
                           launches=1)


def _tree(root: Path, texts: dict[str, str], binaries: dict[str, str]) -> Path:
    store = IRStore(root)
    for case, text in texts.items():
        v = _variant(case, f"add/{case}", binaries[case])
        store.add(RowIR(variants=(v,), ttgir={v.compile_hash: text}))
    store.close()
    return root / "ttgir"


@pytest.fixture
def record(tmp_path: Path) -> Path:
    run = tmp_path / "record"
    RunWriter(run, {"backend": "cuda"}).finish()
    _tree(run, {"float16": "a\n", "float32": "b\n"}, {"float16": "1", "float32": "2"})
    return run


def _diff(tmp_path: Path, record: Path, name: str = "d", cand_text: str = "b\n",
          cand_env: dict[str, str] | None = None) -> Path:
    base = _tree(tmp_path / f"{name}-base", {"float16": "a\n", "float32": "b\n"}, {"float16": "1", "float32": "2"})
    cand = _tree(tmp_path / f"{name}-cand", {"float16": "a\n", "float32": cand_text}, {"float16": "1", "float32": "3"})
    for side, env in ((base, {}), (cand, cand_env or {})):
        write_aot(side, record, target="cuda:90", compiled=2, failed=[],
                  codegen_env={"TRITON_DISABLE_LINE_INFO": "1", **env})
    out = write_diff_dir(diff_trees(base, cand), tmp_path / name)
    write_diff_provenance(out, diff_provenance(base, cand))
    return out


def test_a_proven_folder_is_read_with_its_builds(tmp_path: Path, record: Path) -> None:
    folder = _diff(tmp_path, record)
    rows = load_changed_rows(folder, record=record, base_build=this_build(), cand_build=this_build())
    assert rows.unchanged == {("add", "float16", "float16")} and rows.changed == {("add", "float32", "float32")}
    doc = json.loads((folder / PROVENANCE).read_text())
    assert doc["base"]["build"]["triton_key"] == this_build()["triton_key"] and len(doc["index_sha256"]) == 64


def test_a_forged_index_that_marks_a_row_identical_is_refused(tmp_path: Path, record: Path) -> None:
    folder = _diff(tmp_path, record)
    index = folder / "index.tsv"
    index.write_text(index.read_text().replace("binary_changed", "identical"))
    with pytest.raises(UsageError, match="index.tsv does not match the sha256 in provenance.json"):
        load_changed_rows(folder, record=record)


def test_a_folder_without_provenance_is_refused(tmp_path: Path, record: Path) -> None:
    folder = _diff(tmp_path, record)
    (folder / PROVENANCE).unlink()
    with pytest.raises(UsageError, match="no ir-diff provenance"):
        load_changed_rows(folder, record=record)


def test_a_folder_made_from_another_record_is_refused(tmp_path: Path, record: Path) -> None:
    other = tmp_path / "other"
    RunWriter(other, {"backend": "cuda", "note": "another record"}).finish()
    _tree(other, {"float16": "a\n"}, {"float16": "1"})
    folder = _diff(tmp_path, other)
    with pytest.raises(UsageError, match="made from another baseline record"):
        load_changed_rows(folder, record=record)
    mine = _diff(tmp_path, record, "d2")
    (record / "ttgir" / "index.tsv").write_text((record / "ttgir" / "index.tsv").read_text() + "\n")
    with pytest.raises(UsageError, match="made from another baseline record"):  # the record edited since
        check_diff_provenance(mine, record, None, None)


def test_a_folder_compiled_by_other_builds_is_refused(tmp_path: Path, record: Path) -> None:
    folder = _diff(tmp_path, record)
    other = {**this_build(), "triton_key": "0" * 64, "triton_version": "9.9.9"}
    with pytest.raises(UsageError, match="its cand IR was compiled by Triton .* not by this pair's cand build"):
        load_changed_rows(folder, record=record, base_build=this_build(), cand_build=other)


def test_a_folder_screened_with_other_settings_between_the_builds_is_refused(tmp_path: Path, record: Path) -> None:
    """Screened without an overlay (every row unchanged), paired with `--cand-env DISABLE_MMA_V3=1`:
    its unchanged rows would go untimed although the pair's builds differ by that knob. Refused
    both ways; the same settings on both sides, or the same difference, are taken."""
    def build(**env: str) -> dict:
        return {**this_build(), "codegen_env": {"TRITON_DEFAULT_FP_FUSION": "0", **env}}  # shared: cancels

    plain, knob = _diff(tmp_path, record, "plain"), _diff(tmp_path, record, "knob", cand_env={"DISABLE_MMA_V3": "1"})
    with pytest.raises(UsageError, match=r"screened with no code-generation setting differing between the builds, "
                                         r"and this pair has DISABLE_MMA_V3 unset \(base\) vs 1 \(candidate\)"):
        load_changed_rows(plain, record=record, base_build=build(), cand_build=build(DISABLE_MMA_V3="1"))
    with pytest.raises(UsageError, match="screened with DISABLE_MMA_V3 unset .base. vs 1 .candidate."):
        load_changed_rows(knob, record=record, base_build=build(), cand_build=build())
    assert load_changed_rows(knob, record=record, base_build=build(), cand_build=build(DISABLE_MMA_V3="1")).changed
    assert load_changed_rows(plain, record=record, base_build=build(), cand_build=build())
    doc = json.loads((knob / PROVENANCE).read_text())
    assert doc["cand"]["codegen_env"] == {"TRITON_DISABLE_LINE_INFO": "1", "DISABLE_MMA_V3": "1"}
    del doc["cand"]["codegen_env"]  # an ir-diff written before its sides' settings were kept: not checked
    (knob / PROVENANCE).write_text(json.dumps(doc))
    assert load_changed_rows(knob, record=record, base_build=build(), cand_build=build())


def test_ir_diff_refuses_two_folders_from_different_records(tmp_path: Path, record: Path) -> None:
    other = tmp_path / "other"
    RunWriter(other, {"backend": "cuda", "note": "x"}).finish()
    _tree(other, {"float16": "a\n"}, {"float16": "1"})
    base = _tree(tmp_path / "b", {"float16": "a\n"}, {"float16": "1"})
    cand = _tree(tmp_path / "c", {"float16": "a\n"}, {"float16": "1"})
    write_aot(base, record, target="cuda:90", compiled=1, failed=[])
    write_aot(cand, other, target="cuda:90", compiled=1, failed=[])
    with pytest.raises(UsageError, match="different baseline records"):
        diff_provenance(base, cand)
    (cand / "index.tsv").write_text("edited")
    with pytest.raises(UsageError, match=f"does not match the sha256 in {cand / AOT_FILE}"):
        diff_provenance(base, cand)


def test_pair_refuses_a_forged_folder_before_anything_runs(tmp_path: Path, record: Path, capsys) -> None:
    from tritongate.cli import main

    folder = _diff(tmp_path, record)
    index = folder / "index.tsv"
    index.write_text(index.read_text().replace("binary_changed", "identical"))  # "nothing changed"
    code = main(["pair", str(record), "--suite", "smoke", "--out", str(tmp_path / "o"), "--changed-from", str(folder)])
    assert code == 2
    err = capsys.readouterr().err
    assert f"--changed-from {folder}: index.tsv does not match the sha256 in provenance.json" in err
    assert not (tmp_path / "o").exists()


def test_the_build_probe_sees_the_path_its_compiles_see(tmp_path, monkeypatch) -> None:
    """The probe that names a build's Triton applies the overlay by the compiles' rule: an
    overlay PYTHONPATH is added before the runner's, not replacing it (it replaced it, so the
    probe could name another Triton than the one the compiles import)."""
    import sys

    from tritongate.ir.provenance import build_of

    fake = tmp_path / "site"
    (fake / "triton" / "runtime").mkdir(parents=True)
    (fake / "triton" / "__init__.py").write_text("__version__ = '9.9.9'\n")
    (fake / "triton" / "runtime" / "__init__.py").write_text("")
    (fake / "triton" / "runtime" / "cache.py").write_text("def triton_key():\n    return 'fake'\n")
    monkeypatch.setenv("PYTHONPATH", str(fake))  # the runner's path holds this Triton
    probed = build_of(sys.executable, {"PYTHONPATH": str(tmp_path / "empty"), "DISABLE_MMA_V3": "1"})
    assert probed["triton_version"] == "9.9.9" and probed["triton_dir"] == str((fake / "triton").resolve())
