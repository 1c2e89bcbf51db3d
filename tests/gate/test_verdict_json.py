"""verdict.json's text: the document, each item of a top-level list of objects on one line."""

from __future__ import annotations

import json

import pytest

from tritongate.gate.output import verdict_json

from tests.report.golden_verdicts import GOLDEN, KINDS


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_text_holds_the_document_and_a_line_per_row(kind):
    doc = json.loads((GOLDEN / f"{kind}.verdict.json").read_text(encoding="utf-8"))
    text = verdict_json(doc)
    assert json.loads(text) == doc
    lines = text.splitlines()
    for row in doc["rows"]:
        assert f"  {json.dumps(row)}" in {ln.rstrip(",") for ln in lines}
    # the rest is indented as json.dumps(indent=1) indents it
    rest = {k: v for k, v in doc.items() if not (isinstance(v, list) and v and all(isinstance(x, dict) for x in v))}
    assert verdict_json(rest) == json.dumps(rest, indent=1) + "\n"


def test_non_finite_numbers_are_refused_as_before():
    with pytest.raises(ValueError):
        verdict_json({"rows": [{"effect": float("nan")}]})
    with pytest.raises(ValueError):
        verdict_json({"geomean_speedup": float("inf"), "rows": []})
