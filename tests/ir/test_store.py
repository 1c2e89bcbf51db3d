"""The ``ttgir/`` folder written row by row: the same folder as naming everything at once,
and a flush that costs what the row changed (the groups it touched, the files it added)."""

from __future__ import annotations

import pathlib
from pathlib import Path

import pytest

from tritongate.ir import naming, store as store_mod
from tritongate.ir.capture import RowIR
from tritongate.ir.index import INDEX, CompiledVariant, index_text, read_index
from tritongate.ir.store import NAMING, TTGIR_DIR, IRStore, merge_ttgir

SOFTMAX = "tritongate.ops.kernels.softmax.softmax_kernel"
OTHER_SOFTMAX = "tritongate.ops.other.softmax_kernel"  # the same last part: folders must tell them apart


def cv(h: str, *, case: str = "1024x1024", kernel: str = SOFTMAX, dtype: str = "fp16", block: int = 64,
       loser: bool = False, row: str = "softmax/float16") -> CompiledVariant:
    return CompiledVariant(case=case, kernel=kernel, signature={"x_ptr": f"*{dtype}", "BLOCK": "constexpr"},
                           constexprs={"BLOCK": block}, specialization={}, options={"num_warps": 4, "num_stages": 3},
                           compile_hash=h, launches=0 if loser else 10, sweep_loser=loser, rows=(row,))


def row_ir(*variants: CompiledVariant) -> RowIR:
    return RowIR(variants=variants, ttgir={v.compile_hash: f"// ttgir of {v.compile_hash}\n"
                                           for v in variants if not v.sweep_loser})


ROWS = [
    row_ir(cv("a1", block=64), cv("a2", block=128), cv("a0", block=32, loser=True)),
    row_ir(cv("b1", dtype="bf16", block=64, row="softmax/bfloat16")),  # renames the fp16 files of its group
    row_ir(cv("c1", case="4096x4096")),
    row_ir(cv("d1", kernel=OTHER_SOFTMAX)),  # a second softmax_kernel in the case: both folders change
    row_ir(cv("a1", block=64, row="softmax/float32")),  # a variant seen again: its launches and rows grow
]


def folder(root: Path) -> dict[str, str]:
    base = root / TTGIR_DIR
    return {p.relative_to(base).as_posix(): p.read_text() for p in sorted(base.rglob("*")) if p.is_file()}


def written_at_once(tmp_path: Path, rows: list[RowIR]) -> dict[str, str]:
    one = IRStore(tmp_path / "once")
    one.add(RowIR(variants=tuple(v for r in rows for v in r.variants),
                  ttgir={h: t for r in rows for h, t in r.ttgir.items()}))
    one.close()
    return folder(tmp_path / "once")


def test_row_by_row_gives_the_folder_naming_everything_at_once_gives(tmp_path: Path) -> None:
    store = IRStore(tmp_path / "rows")
    for r in ROWS:
        store.add(r)
    store.close()
    got = folder(tmp_path / "rows")
    # adding a1 twice (rows merged) at once is the same as one variant seen by both rows
    assert got == written_at_once(tmp_path, ROWS)
    assert got[INDEX] == index_text(sorted(store.variants, key=lambda v: v.compile_hash))
    by_group: dict[str, list[CompiledVariant]] = {}
    for v in store.variants:
        by_group.setdefault(f"{v.case}/{v.kernel}", []).append(v)
    assert got[NAMING] == naming.legend(by_group)
    a1 = next(v for v in read_index(tmp_path / "rows" / TTGIR_DIR / INDEX) if v.compile_hash == "a1")
    assert a1.launches == 20 and a1.rows == ("softmax/float16", "softmax/float32")
    # the second kernel named softmax_kernel moved both out of a plain softmax_kernel/ folder
    assert not any(name.startswith("1024x1024/softmax_kernel/") for name in got)


def test_a_group_is_renamed_only_when_a_row_changes_it(tmp_path: Path, monkeypatch) -> None:
    named: list[tuple[str, str]] = []
    real = naming.assign_names

    def counting(group):
        named.append((group[0].case, group[0].kernel))
        return real(group)

    monkeypatch.setattr(naming, "assign_names", counting)
    store = IRStore(tmp_path)
    store.add(ROWS[0])
    store.add(ROWS[2])  # another case: the first group is left alone
    assert named == [("1024x1024", SOFTMAX), ("4096x4096", SOFTMAX)]
    named.clear()
    store.add(ROWS[1])  # the first group again
    assert named == [("1024x1024", SOFTMAX)]
    named.clear()
    store.add(ROWS[3])  # a kernel new to the case: the case's groups, no other
    assert sorted(named) == sorted([("1024x1024", OTHER_SOFTMAX), ("1024x1024", SOFTMAX)])
    named.clear()
    store.flush()  # nothing new: nothing named, nothing written
    assert named == []


def test_a_row_writes_its_own_files_once_and_reads_none_back(tmp_path: Path, monkeypatch) -> None:
    store = IRStore(tmp_path)
    store.add(ROWS[0])
    store.add(ROWS[2])
    writes: list[str] = []
    real_write = store_mod.write_text_atomic
    monkeypatch.setattr(store_mod, "write_text_atomic", lambda p, t, **kw: (writes.append(Path(p).name), real_write(p, t, **kw)))
    real_read = pathlib.Path.read_text

    def no_ttgir_reads(self, *a, **kw):
        assert self.suffix != ".ttgir", f"{self} read back"
        return real_read(self, *a, **kw)

    monkeypatch.setattr(pathlib.Path, "read_text", no_ttgir_reads)
    store.add(row_ir(cv("e1", case="256x256")))  # a new group: one TTGIR file, the index, the legend unchanged
    assert writes == ["w4s3.ttgir", INDEX]
    writes.clear()
    store.add(ROWS[1])  # renames a1 (a dtype now tells it from b1), adds b1; a2, c1 and e1 untouched
    assert sorted(writes) == sorted(["BLOCK64_w4s3__bf16.ttgir", "BLOCK64_w4s3__fp16.ttgir", INDEX])
    monkeypatch.undo()
    names = set(folder(tmp_path))
    assert "1024x1024/softmax_kernel/BLOCK64_w4s3.ttgir" not in names  # the stale name is gone


def test_a_reopened_folder_continues_as_one_store_would(tmp_path: Path) -> None:
    first = IRStore(tmp_path / "r")
    for r in ROWS[:2]:
        first.add(r)
    first.close()
    again = IRStore(tmp_path / "r")  # a worker that restarts
    for r in ROWS[2:]:
        again.add(r)
    again.close()
    assert folder(tmp_path / "r") == written_at_once(tmp_path, ROWS)


def test_merge_ttgir_joins_folders_as_one_run_names_them(tmp_path: Path) -> None:
    for i, rows in enumerate((ROWS[:2], ROWS[2:])):
        s = IRStore(tmp_path / f"shard{i}")
        for r in rows:
            s.add(r)
        s.close()
    merge_ttgir([tmp_path / "shard0", tmp_path / "shard1"], tmp_path / "merged")
    assert folder(tmp_path / "merged") == written_at_once(tmp_path, ROWS)


@pytest.mark.parametrize("swap", [False, True])
def test_a_path_handed_from_one_variant_to_another_holds_the_new_text(tmp_path: Path, swap: bool) -> None:
    store = IRStore(tmp_path)
    store.add(row_ir(cv("x1", block=64)))  # alone: w4s3.ttgir
    store.add(row_ir(cv("x2", block=128) if swap else cv("x2", block=64, dtype="bf16", row="softmax/bfloat16")))
    store.close()
    assert folder(tmp_path) == written_at_once(tmp_path, [row_ir(cv("x1", block=64)), row_ir(
        cv("x2", block=128) if swap else cv("x2", block=64, dtype="bf16", row="softmax/bfloat16"))])


def test_a_variant_listed_twice_in_the_index_is_damage(tmp_path: Path) -> None:
    """The store keeps one line a variant (its rows joined): a second line for it would count
    its launches twice and could pair it with either line's file."""
    written = written_at_once(tmp_path, ROWS)
    index = tmp_path / "once" / TTGIR_DIR / INDEX
    lines = written[INDEX].splitlines(keepends=True)
    index.write_text("".join(lines + [lines[1]]))
    with pytest.raises(ValueError, match=r"index\.tsv: line \d+: the variant .* is listed twice \(line 2 too\)"):
        read_index(index)


def with_lower(r: RowIR) -> RowIR:
    """``r`` with LLVM IR and PTX kept for each launched variant (what ``tritongate ir`` adds)."""
    return RowIR(variants=r.variants, ttgir=r.ttgir,
                 lower={h: {"llir": f"; llir of {h}\n", "ptx": f"// ptx of {h}\n"} for h in r.ttgir})


def test_lower_levels_sit_beside_the_ttgir_renamed_reopened_and_merged_with_it(tmp_path: Path) -> None:
    rows = [with_lower(r) for r in ROWS]
    store = IRStore(tmp_path / "rows")
    for r in rows:
        store.add(r)
    store.close()
    got = folder(tmp_path / "rows")
    ttgirs = {k: v for k, v in got.items() if k.endswith(".ttgir")}
    assert ttgirs and {k for k in got if not k.endswith((".ttgir", INDEX, NAMING))} == {
        k[: -len("ttgir")] + level for k in ttgirs for level in ("llir", "ptx")}  # no stale file of a renamed one
    for k, text in ttgirs.items():
        h = text.split()[-1]
        assert got[k[:-5] + "llir"] == f"; llir of {h}\n" and got[k[:-5] + "ptx"] == f"// ptx of {h}\n"
    again = IRStore(tmp_path / "r")
    for r in rows[:2]:
        again.add(r)
    again.close()
    again = IRStore(tmp_path / "r")  # reopened: the kept levels follow a rename
    for r in rows[2:]:
        again.add(r)
    again.close()
    assert folder(tmp_path / "r") == got
    merge_ttgir([tmp_path / "r"], tmp_path / "merged")
    assert folder(tmp_path / "merged") == got
