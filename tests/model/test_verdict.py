"""The one list of verdict words and the verdict.json model built on it."""

from __future__ import annotations

import typing

import pytest

from tritongate.errors import RunDirError
from tritongate.model.verdict import (CALLED, FAILING, NOT_JUDGED, QUIET, Verdict, VerdictName,
                                      VerdictRowDoc)
from tritongate.validation import validate


def test_the_groups_are_words_of_the_enum_and_do_not_overlap() -> None:
    groups = [set(CALLED), set(NOT_JUDGED), set(QUIET)]
    assert all(g <= set(Verdict) for g in groups) and set(FAILING) <= set(Verdict)
    assert sum(len(g) for g in groups) == len(set().union(*groups))


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
