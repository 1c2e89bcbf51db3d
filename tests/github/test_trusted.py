"""The comment the trusted job renders from verdict.json, against hostile documents."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tritongate.github.comment import STICKY_MARKER
from tritongate.github.trusted import (UntrustedVerdictError, as_its_rows_say, judge, parse_verdict_doc,
                                       render_comment_body)

HOSTILE = ["@everyone", "@acme/compiler-team", "![img](http://x)", "[link](http://phish)", "<details><summary>x",
           "<img src=x onerror=alert(1)>", "</details>\n\n## ✅ passed", "line1\nline2\n| fake | row |",
           "see #1 and https://evil.example/", "\u202eevil", "`code` **bold** <!-- c -->"]


def doc(rows: list[dict[str, Any]], *, passed: bool = False, headline: str = "h", **extra: Any):
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    raw = {"schema_version": 3, "passed": passed, "exit_code": 0 if passed else 1, "headline": headline,
           "counts": counts, "base": {}, "candidate": {}, "rows": rows, **extra}
    return parse_verdict_doc(json.dumps(raw).encode(), "verdict.json")


def row(verdict: str = "UNCHANGED", **extra: Any) -> dict[str, Any]:
    return {"op": "add", "case": "4096", "dtype": "float16", "verdict": verdict, **extra}


def _cells(line: str) -> int:
    return len(re.split(r"(?<!\\)\|", line))


def _tables(body: str) -> list[list[str]]:
    out: list[list[str]] = []
    for line in body.splitlines() + [""]:
        if line.startswith("|"):
            if not out or out[-1] is None:
                out.append([])
            out[-1].append(line)
        elif out and out[-1] is not None:
            out.append(None)  # type: ignore[arg-type]
    return [t for t in out if t]


def _inert(body: str) -> None:
    assert "@everyone" not in body and "@acme" not in body
    assert "![" not in body and "](http" not in body and "http://" not in body and "https://" not in body
    assert "<img" not in body and "<details><summary>x" not in body and "<!-- c" not in body
    assert "#1 " not in body and "\u202e" not in body
    # the only raw HTML is ours: the marker, the fold of the quiet rows and the footer
    tags = re.findall(r"<[^>]*>", body)
    assert set(tags) <= {STICKY_MARKER, "<details>", "</details>", "<summary>", "</summary>", "<sub>", "</sub>",
                         "<code>", "</code>"}, tags
    assert body.count("<details>") == body.count("</details>")


@pytest.mark.parametrize("text", HOSTILE)
def test_every_string_of_the_document_is_escaped(text: str) -> None:
    rows = [row("REGRESSED", op=text, case=text, dtype=text, why=text, base_median_us=1.0, cand_median_us=2.0),
            row("UNCHANGED", op=text, reasons=[text])]
    body = render_comment_body(doc(rows, headline=text, failures=[text], tool_version=text))
    _inert(body)
    # every table keeps its header's cells, and holds the document's rows only: no row injected
    tables = _tables(body)
    assert tables and all(len({_cells(line) for line in t}) == 1 for t in tables), tables
    assert sum(len(t) - 2 for t in tables) == 3  # the regressed row, then both in the full table


def test_newlines_in_an_op_name_cannot_start_a_new_line() -> None:
    body = render_comment_body(doc([row("REGRESSED", op="add\n\n### ✅ tritongate: passed")]))
    assert not any(line.startswith("### ✅") for line in body.splitlines())
    assert body.splitlines()[1].startswith("## ❌")


def test_a_document_claiming_a_pass_over_regressed_rows_is_shown_failing() -> None:
    d = doc([row("REGRESSED", base_median_us=10.0, cand_median_us=13.0), row()], passed=True,
            headline="✅ no regressions", counts={"REGRESSED": 0, "UNCHANGED": 2})
    body = render_comment_body(d)
    assert body.splitlines()[1].startswith("## ❌ 1 regression, worst add · 4096 · float16")
    assert body.splitlines()[3] == ("> [!WARNING]\n> verdict.json says passed, but lists 1 REGRESSED, 0 REJECTED "
                                    "and 0 policy-failing rows (exit code 0): shown as failing").split("\n")[0]
    assert "says passed, but lists 1 REGRESSED" in body and "no regressions" not in body
    assert judge(d).passed is False


def test_a_document_without_a_judged_row_is_blind_never_passing() -> None:
    # the gate's own such file since 2026-12-06: not passed, exit 2, blind; no contradiction
    written = doc([row("REJECTED")], passed=False, exit_code=2, state="blind")
    assert judge(written).passed is False and judge(written).contradiction is None
    assert as_its_rows_say(written) == (written, None)
    # one from before (passed: true, exit 0, blind): not passing, and still blind, not "failed"
    older = doc([row("REJECTED"), row("REJECTED", case="8192")], passed=True, state="blind")
    assert judge(older).passed is False and as_its_rows_say(older) == (older, None)


@pytest.mark.parametrize("rows,policy", [([row("REJECTED")], {"strict": True}),
                                         ([row("UNCHANGED", fails_policy=True)], {}),
                                         ([row("MISSING"), row("MISSING")], {"max_missing": 0})])
def test_a_failing_document_claiming_exit_2_and_blind_is_shown_failing(rows, policy) -> None:
    """Rows that fail the gate without a judged row (strict REJECTED, a policy-failing row, too
    many MISSING): the state comes from them, not from the exit code the file claims."""
    claimed = doc(rows, passed=False, exit_code=2, state="blind", policy=policy)
    shown, problem = as_its_rows_say(claimed)
    assert shown.state == "fail" and problem is not None and "its rows give 'fail'" in problem


def test_policy_rows_fail_whatever_passed_says_and_rejected_ones_as_the_gate_decides() -> None:
    """The comment agrees with the check: a REJECTED row fails the gate only under --strict
    (the comment showed ❌ above a check that had passed)."""
    assert judge(doc([row("UNCHANGED", fails_policy=True), row()], passed=True)).passed is False
    assert judge(doc([row("REJECTED"), row()], passed=True)).passed is True
    strict = judge(doc([row("REJECTED"), row()], passed=True, policy={"strict": True}))
    assert strict.passed is False and "1 unverified (under --strict)" in (strict.contradiction or "")
    missing = doc([row("MISSING"), row("MISSING"), row()], passed=True, policy={"max_missing": 1})
    assert judge(missing).passed is False


def test_a_verdict_the_gate_wrote_with_a_rejected_row_is_not_called_contradictory(tmp_path, capsys) -> None:
    """A row that errors on both sides is REJECTED and the gate passes (not --strict): `show`
    prints it and exits 0, and the comment is the job's own, no warning."""
    from tests.gate.helpers import pair, row as run_row
    from tritongate.cli import main
    from tritongate.gate.pipeline import gate_runs
    from tritongate.gate.policy import GatePolicy
    from tritongate.github.trusted import as_its_rows_say
    from tritongate.model.verdict import Verdict

    broken = dict(case="bf16", status="error", error="RuntimeError: no bfloat16 here")
    base, cand = pair(tmp_path, [run_row(), run_row(**broken)], [run_row(seed=1), run_row(**broken)])
    gated = gate_runs(base, cand, tmp_path / "verdict", GatePolicy())
    assert gated.result.passed and gated.result.by(Verdict.REJECTED)
    raw = (tmp_path / "verdict" / "verdict.json").read_bytes()
    assert as_its_rows_say(parse_verdict_doc(raw, "verdict.json"))[1] is None
    assert main(["show", str(tmp_path / "verdict")]) == 0
    assert "contradicts" not in capsys.readouterr().err


def test_a_doc_that_failed_stays_failing_even_with_clean_rows() -> None:
    body = render_comment_body(doc([row(), row("IDENTICAL_BINARY")], passed=False))
    assert body.splitlines()[1].startswith("## ❌")


def test_a_clean_pass() -> None:
    d = doc([row(), row("IDENTICAL_BINARY"), row("IMPROVED", base_median_us=10.0, cand_median_us=8.0)],
            passed=True, headline="no regressions")
    body = render_comment_body(d)  # a consistent document: the shared renderer's comment
    assert body.startswith(STICKY_MARKER + "\n## ✅ No regression in 3 rows; 1 improved")
    assert "**🟢 Improved (1)**" in body and "| 10.00 µs | 8.000 µs |" in body
    assert "<details><summary>2 unchanged · all 3 rows</summary>" in body
    assert "WARNING" not in body


def test_a_state_the_rows_do_not_give_is_shown_from_the_rows() -> None:
    """A document may not claim ✅ (state pass) over rows that could not resolve their target."""
    blind = row("UNCHANGED", timed=True, reached_target=False, detectable_effect=0.5, min_effect=0.01)
    body = render_comment_body(doc([blind], passed=True, state="pass"))
    assert "but its rows give" in body and "✅" not in body.splitlines()[1]


def test_counts_that_disagree_with_the_rows_are_named() -> None:
    body = render_comment_body(doc([row()], passed=True, counts={"UNCHANGED": 5}))
    assert "counts do not match its rows" in body and "\n1 row · 1 unchanged\n" in body


@pytest.mark.parametrize("raw, needle", [
    (b"\xff", "not UTF-8"), (b"[1]", "not a JSON object"), (b'{"schema_version": 1}', "schema_version 1"),
    (b'{"schema_version": true}', "schema_version"), (b'{"schema_version": 3, "passed": 1}', "verdict.json"),
])
def test_documents_the_model_refuses(raw: bytes, needle: str) -> None:
    with pytest.raises(UntrustedVerdictError, match=needle):
        parse_verdict_doc(raw, "verdict.json")


def test_every_verdict_word_renders_under_a_contradiction() -> None:
    """A contradictory document holding any word of the enum is rendered, never a KeyError (the
    fallback table kept its own list of words, without UNCONFIRMED)."""
    from tritongate.model.verdict import Verdict

    rows = [row(v.value, op=f"op{i}") for i, v in enumerate(Verdict)]
    body = render_comment_body(doc(rows, passed=True))
    assert "[!WARNING]" in body and body.splitlines()[1].startswith("## ❌")


def test_the_planted_golden_with_an_unconfirmed_row_and_a_forged_pass() -> None:
    """The review's reproduction: the planted golden verdict, ``passed`` forged to true, one row
    set to UNCONFIRMED (it raised ``KeyError: 'UNCONFIRMED'``)."""
    from pathlib import Path

    raw = json.loads((Path(__file__).parents[1] / "report" / "golden" / "planted.verdict.json").read_text())
    raw["passed"] = True
    raw["rows"][0]["verdict"] = "UNCONFIRMED"
    body = render_comment_body(parse_verdict_doc(json.dumps(raw).encode(), "verdict.json"))
    assert "> [!WARNING]" in body and "says passed" in body
    assert body.splitlines()[1].startswith("## ❌")


def test_a_row_word_against_the_sign_of_its_change_is_named() -> None:
    """A row edited to IMPROVED while its change is +121 % slower: the comment warns, naming it."""
    body = render_comment_body(doc([row("IMPROVED", effect=1.2144)], passed=True, state="pass"))
    assert "> [!WARNING]" in body and "against the sign of their change (first: add 4096 float16 IMPROVED at +121.44%)" in body


def test_show_flags_a_forged_verdict_and_exits_2(tmp_path, capsys) -> None:
    """`show` validates and prints: a forged pass above a REGRESSED row is printed as the file
    says, flagged on stderr, and not a success."""
    from pathlib import Path

    from tritongate.cli import main

    raw = json.loads((Path(__file__).parents[1] / "report" / "golden" / "planted.verdict.json").read_text())
    folder = tmp_path / "verdict"
    folder.mkdir()
    (folder / "verdict.json").write_text(json.dumps(raw))
    assert main(["show", str(folder)]) == 0
    capsys.readouterr()
    raw["passed"], raw["state"] = True, "pass"
    (folder / "verdict.json").write_text(json.dumps(raw))
    assert main(["show", str(folder)]) == 2
    out, err = capsys.readouterr()
    assert "contradicts itself: verdict.json says passed, but lists" in err
    assert "⚠️ contradicts itself (see stderr)" in out and "REGRESSED" in out
    assert main(["show", str(folder), "--format", "json"]) == 2


# ----------------------------------------------------------------------------- pass blame

def _blame(**line: Any) -> dict[str, Any]:
    return {"folder": "ir-diff", "variants": {"changed": 1},
            "blame": {"file": "ir-diff/blame.json", "kernels": [{"kernel": "m.k", "outcome": "pass", **line}]}}


def test_the_trusted_comment_shows_the_blame_lines_of_the_real_patch() -> None:
    """The golden verdict of a real Triton change (tritongpu-coalesce dropped): the trusted job's
    comment, rendered from the validated verdict.json, is verdict.md, blame lines included."""
    from pathlib import Path

    golden = Path(__file__).parents[1] / "report" / "golden"
    body = render_comment_body(parse_verdict_doc((golden / "blame.verdict.json").read_bytes(), "verdict.json"))
    assert body == (golden / "blame.md").read_text(encoding="utf-8")
    assert ("- <code>softmax_kernel</code> (2 variants): pipeline changed: <code>tritongpu-coalesce</code> removed "
            "(ttgir)") in body
    assert "- <code>matmul_kernel_fixed</code> (8 variants) not blamed: past the first 4 changed variants" in body


@pytest.mark.parametrize("text", HOSTILE)
def test_every_string_of_the_blame_is_escaped(text: str) -> None:
    ir = _blame(kernel=text, pass_name=text, stage=text)
    ir["blame"]["kernels"] += [{"kernel": text, "outcome": "pipeline", "pass_name": text, "next_pass": text},
                               {"kernel": text, "outcome": "below", "level": text},
                               {"kernel": text, "outcome": "not_blamed", "why": text}]
    ir["blame"]["file"] = text
    body = render_comment_body(doc([row()], passed=True, ir=ir))
    assert "Pass blame" in body
    _inert(body)
    noted = {**ir, "blame": {"file": "ir-diff/blame.json", "note": text}}
    _inert(render_comment_body(doc([row()], passed=True, ir=noted)))


@pytest.mark.parametrize("bad", [
    {"outcome": "evil"}, {"pass_name": "x" * 301}, {"kernel": ""}, {"variants": 0}, {"cases": ["c"] * 21},
    {"change": "swapped"}])
def test_a_blame_field_the_model_refuses_refuses_the_document(bad: dict) -> None:
    with pytest.raises(UntrustedVerdictError, match="ir.blame.kernels"):
        doc([row()], passed=True, ir=_blame(**bad))


def test_a_blame_list_longer_than_the_model_allows_is_refused() -> None:
    ir = _blame()
    ir["blame"]["kernels"] *= 201
    with pytest.raises(UntrustedVerdictError, match="ir.blame.kernels"):
        doc([row()], passed=True, ir=ir)


def test_a_blind_document_that_says_it_did_not_pass_is_shown_failing_by_its_own_word() -> None:
    """Its rows alone give 'blind'; the failure is the document's passed: false, and the
    warning says so rather than blaming the rows."""
    blind = row("UNCHANGED", timed=True, reached_target=False, detectable_effect=0.5, min_effect=0.01)
    shown, problem = as_its_rows_say(doc([blind], passed=False, exit_code=1, state="blind"))
    assert shown.state == "fail" and problem is not None
    assert "its rows give" not in problem
    assert "says its state is 'blind', but that it did not pass (passed: false, exit code 1)" in problem
