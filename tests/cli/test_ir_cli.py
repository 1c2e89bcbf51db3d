"""`tritongate ir` and `ir-diff` given what a newcomer gives them: an interrupted run, a run whose
index holds launches without IR, one side of each kind, a path that does not exist."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.gate.helpers import row
from tritongate.cli import main
from tritongate.ir.capture import RowIR
from tritongate.ir.index import CompiledVariant
from tritongate.ir.store import IRStore
from tritongate.rundir import RunWriter


def _indexed_run(path: Path, *, finish: bool = True) -> Path:
    """A cpu run: one row, and an index of one launch without its TTGIR (nothing compiled)."""
    w = RunWriter(path, {"backend": "cpu", "device": "host", "timer": "host"})
    w.add(row(op="add", case="4096", dtype="float32"))
    store = IRStore(path)
    store.add(RowIR(variants=(CompiledVariant(case="4096", kernel="m.add_kernel", signature={}, constexprs={},
                                              specialization={}, options={"num_warps": 4}, compile_hash="h",
                                              rows=("add/float32",), launches=1),)))
    store.close()
    if finish:
        w.finish()
    return path


def test_a_path_that_does_not_exist_is_named_as_missing(tmp_path, capsys) -> None:
    run = _indexed_run(tmp_path / "a")
    assert main(["ir-diff", str(run), str(tmp_path / "nope"), "--out", str(tmp_path / "d")]) == 2
    assert f"CAND {tmp_path / 'nope'}: no such folder" in capsys.readouterr().err


def test_runs_whose_index_holds_launches_without_ir_say_how_to_get_it(tmp_path, capsys) -> None:
    a, b = _indexed_run(tmp_path / "a"), _indexed_run(tmp_path / "b")
    assert main(["ir-diff", str(a), str(b), "--out", str(tmp_path / "d")]) == 0
    out = capsys.readouterr().out
    assert "no TTGIR on either side: the indexes list 1 and 1 launched variants without their IR" in out
    assert f"tritongate ir --from {a} --out DIR" in out


def test_one_ir_folder_and_one_run_is_refused_as_unlike(tmp_path, capsys) -> None:
    from tritongate.ir.provenance import write_aot

    run = _indexed_run(tmp_path / "run")
    ir = tmp_path / "ir" / "ttgir"
    write_aot(ir, run, target="cuda:90", compiled=0, failed=[])
    assert main(["ir-diff", str(tmp_path / "ir"), str(run), "--out", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert f"{run} is a run's own capture and the other side is `tritongate ir` output" in err
    assert f"tritongate ir --from {run} --out DIR" in err


def test_the_ir_of_an_interrupted_run_says_it_is_partial_and_so_does_its_diff(tmp_path, capsys) -> None:
    """`ir` reads a crashed run on purpose (its IR is evidence), but says so and records it; a
    diff of it says that rows the run did not reach are in neither tree."""
    run = _indexed_run(tmp_path / "run", finish=False)
    done = _indexed_run(tmp_path / "done")
    # the index's kernel module does not exist here: nothing compiles (exit 2), the provenance is written
    assert main(["ir", "--from", str(run), "--out", str(tmp_path / "ir1"), "--no-sass"]) == 2
    assert f"note: {run} is incomplete (running, 1 row): its IR covers only" in capsys.readouterr().err
    assert json.loads((tmp_path / "ir1" / "ttgir" / "aot.json").read_text())["record_status"] == "running"
    assert main(["ir", "--from", str(done), "--out", str(tmp_path / "ir2"), "--no-sass"]) == 2
    assert "is incomplete" not in capsys.readouterr().err
    assert json.loads((tmp_path / "ir2" / "ttgir" / "aot.json").read_text())["record_status"] == "complete"
    capsys.readouterr()
    # the two folders came from different records: the diff refuses them, so diff one with itself
    assert main(["ir-diff", str(tmp_path / "ir1"), str(tmp_path / "ir1"), "--out", str(tmp_path / "d")]) == 0
    assert "note: the base side was compiled from an incomplete run (running)" in capsys.readouterr().err


def test_a_replay_run_without_an_index_points_to_its_record(tmp_path, capsys) -> None:
    """A pair's side is a replay of the record: the fix is the record, not recording again."""
    w = RunWriter(tmp_path / "base", {"backend": "cuda", "replay_from": "/runs/pr_20261206T000000Z"}, mode="replay")
    w.add(row())
    w.finish()
    assert main(["ir", "--from", str(tmp_path / "base"), "--out", str(tmp_path / "ir")]) == 2
    err = capsys.readouterr().err
    assert "is a replay run and keeps no ttgir/index.tsv of its own" in err
    assert "give the record it replayed instead (/runs/pr_20261206T000000Z)" in err


def test_an_ir_diff_into_an_earlier_one_drops_its_blame(tmp_path, capsys) -> None:
    """--out is replaced: an earlier diff's blame.json and blame/ would name other variants."""
    a, b = _indexed_run(tmp_path / "a"), _indexed_run(tmp_path / "b")
    out = tmp_path / "d"
    (out / "blame" / "000").mkdir(parents=True)
    (out / "blame.json").write_text('{"schema_version": 1, "variants": [{"kernel": "old"}]}')
    assert main(["ir-diff", str(a), str(b), "--out", str(out)]) == 0
    assert not (out / "blame.json").exists() and not (out / "blame").exists()


@pytest.mark.parametrize("gone", ["base", "cand"])
def test_blame_names_the_side_whose_interpreter_is_not_here(tmp_path, monkeypatch, gone: str) -> None:
    """aot.json names each build's interpreter; blaming needs both, and a missing one is named
    by its side (it failed as a bare 'No such file' from the compile)."""
    from types import SimpleNamespace

    from tritongate.cli import inspect
    from tritongate.errors import UsageError
    from tritongate.ir import index, provenance

    pythons = {"base": sys.executable, "cand": sys.executable, gone: str(tmp_path / "gone" / "python")}
    aot = {"base": {"python": pythons["base"], "target": "cuda:90"},
           "cand": {"python": pythons["cand"], "target": "cuda:90"}}
    monkeypatch.setattr(provenance, "read_aot", lambda root: aot[root.name])
    monkeypatch.setattr(index, "read_index", lambda path: [])
    changed = [SimpleNamespace(status="changed", case="4096", kernel="k", name="v")]
    with pytest.raises(UsageError, match=f"the {gone} folder's interpreter .*gone/python.* is not on this machine"):
        inspect._blame(changed, tmp_path / "base", tmp_path / "cand", tmp_path / "out", 4)
    # nothing changed: nothing to compile, nothing asked of the interpreters
    (tmp_path / "out").mkdir()
    inspect._blame([], tmp_path / "base", tmp_path / "cand", tmp_path / "out", 4)
    assert json.loads((tmp_path / "out" / "blame.json").read_text())["variants"] == []


def test_each_blame_is_announced_before_its_compiles(tmp_path, monkeypatch, capsys) -> None:
    """A blame takes seconds to a minute a kernel: a line says which one starts, before it does."""
    from types import SimpleNamespace

    from tritongate.cli import inspect
    from tritongate.ir import index, passblame, provenance

    aot = {"python": sys.executable, "target": "cuda:90", "codegen_env": {}}
    monkeypatch.setattr(provenance, "read_aot", lambda root: aot)
    names = ("w4", "w8", "w16")
    monkeypatch.setattr(index, "read_index", lambda path: [
        CompiledVariant(case="4096", kernel="m.k", signature={}, constexprs={}, specialization={}, options={},
                        compile_hash=name, name=name) for name in names])

    def fake_blame(base_python, cand_python, variant, target, out, **kw):
        print(f"<compiling {variant.name}>", file=sys.stderr)
        return passblame.Blame(passblame.NONE)

    monkeypatch.setattr(passblame, "blame_variant", fake_blame)
    changed = [SimpleNamespace(status="changed", case="4096", kernel="m.k", name=name) for name in names]
    (tmp_path / "out").mkdir()
    inspect._blame(changed, tmp_path / "base", tmp_path / "cand", tmp_path / "out", 2)
    out, err = capsys.readouterr()
    # progress on stderr, each line before its compiles; the results on stdout
    assert err.splitlines() == ["  blaming 1 of 2: 4096  m.k  w4 ...", "<compiling w4>",
                                "  blaming 2 of 2: 4096  m.k  w8 ...", "<compiling w8>"]
    assert out.splitlines() == ["  blame    4096  m.k  w4: no difference", "  blame    4096  m.k  w8: no difference",
                                "  (1 more changed variants not blamed: --blame N for more)"]
