"""The one list of verdict words and the verdict.json model built on it."""

from __future__ import annotations

import typing

import pytest

from tritongate.errors import RunDirError
from tritongate.model.verdict import (CALLED, FAILING, JUDGED, KINDS, NOT_JUDGED, QUIET, UNVERIFIED, Verdict,
                                      VerdictName, VerdictRowDoc)
from tritongate.validation import validate


def test_the_groups_are_words_of_the_enum_and_do_not_overlap() -> None:
    groups = [set(CALLED), set(NOT_JUDGED), set(QUIET)]
    assert all(g <= set(Verdict) for g in groups) and set(FAILING) <= set(Verdict)
    assert sum(len(g) for g in groups) == len(set().union(*groups))


def test_every_group_follows_from_each_words_kind() -> None:
    """The gate's exit, the not-judged check and the renderers read these groups: a word's
    kind is the one place its handling is decided."""
    assert set(KINDS) == set(Verdict)
    assert set(JUDGED) | set(NOT_JUDGED) == set(Verdict) and not set(JUDGED) & set(NOT_JUDGED)
    assert set(CALLED) == {Verdict.REGRESSED, Verdict.IMPROVED} and set(FAILING) == {Verdict.REGRESSED}
    assert set(UNVERIFIED) == {Verdict.REJECTED, Verdict.NOT_COMPARABLE}
    assert set(QUIET) == {Verdict.UNCHANGED, Verdict.IDENTICAL_BINARY}
    assert set(JUDGED) == {*CALLED, Verdict.UNCONFIRMED, *QUIET}


def test_a_word_without_a_kind_stops_the_package_loading(tmp_path, monkeypatch) -> None:
    """A new word with no kind would be in no section, no count and no exit rule (the trusted
    comment once raised on UNCONFIRMED for that): the module refuses to load, naming it."""
    import importlib.util
    from pathlib import Path

    import tritongate.model.verdict as real

    source = Path(real.__file__).read_text(encoding="utf-8")
    assert '    NEW = "NEW"\n' in source
    copy = tmp_path / "verdict_copy.py"
    copy.write_text(source.replace('    NEW = "NEW"\n', '    NEW = "NEW"\n    FLAKY = "FLAKY"\n'), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("verdict_copy", copy)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(__import__("sys").modules, "verdict_copy", module)  # dataclasses look it up
    with pytest.raises(ImportError, match=r"give \['FLAKY'\] a Kind in KINDS"):
        spec.loader.exec_module(module)  # type: ignore[union-attr]


def test_the_document_accepts_exactly_the_enum_words() -> None:
    assert typing.get_args(VerdictName)[0] is Verdict
    for v in Verdict:
        assert validate(VerdictRowDoc, {"op": "a", "case": "b", "dtype": "c", "verdict": v.value},
                        source="verdict.json", error=RunDirError).verdict == v
    for bad, got in (("SLOWER", "the text 'SLOWER'"), (1, ""), (None, "null")):
        with pytest.raises(RunDirError, match=rf"verdict: expected .*'UNCONFIRMED'.*, got {got}"):
            validate(VerdictRowDoc, {"op": "a", "case": "b", "dtype": "c", "verdict": bad},
                     source="verdict.json", error=RunDirError)


def test_each_row_field_is_declared_once() -> None:
    """A field declared twice in a class body silently keeps the second declaration."""
    import ast
    import inspect

    import tritongate.model.verdict as module

    tree = ast.parse(inspect.getsource(module))
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        names = [s.target.id for s in cls.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
        assert len(names) == len(set(names)), (cls.name, sorted({n for n in names if names.count(n) > 1}))


def test_a_stop_reason_outside_the_documented_words_is_refused() -> None:
    with pytest.raises(RunDirError, match="stopped_by"):
        validate(VerdictRowDoc, {"op": "a", "case": "b", "dtype": "c", "verdict": "UNCHANGED", "stopped_by": "tired"},
                 source="verdict.json", error=RunDirError)


def test_the_gate_command_s_help_names_every_word(capsys) -> None:
    """The help spells the words out (the CLI builds its parser without the document layer)."""
    from tritongate.cli import main

    assert main(["gate", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert all(v.value in text for v in Verdict), [v.value for v in Verdict if v.value not in text]
