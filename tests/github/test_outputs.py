"""$GITHUB_OUTPUT as GitHub reads it: every value read back by the runner's own parsing rules
(tests/workflows/replay.parse_output_text) as it was given, or refused before anything is written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tritongate.github import outputs
from tritongate.github.outputs import OutputError

from tests.workflows.replay import OutputFormatError, parse_output_text

ROOT = Path(__file__).resolve().parents[2]

HOSTILE_MULTILINE = [
    "",
    "one line",
    "a\nb",
    "trailing newline\n",
    "\n\n",
    "EOF\nstate=ok\nEOF",
    "key<<EOF\nvalue\nEOF",
    f"{outputs.DELIMITER_PREFIX}0123456789abcdef0123456789abcdef\nrecord=/tmp/evil",
    "x=y=z\r\nwindows line",
    "ünïcödé ✅ \u2028 line separator",
]


@pytest.mark.parametrize("value", HOSTILE_MULTILINE)
def test_a_multiline_value_reads_back_exactly(value):
    text = outputs.render([("before", "1"), ("body", value), ("after", "2")], multiline={"body"})
    assert parse_output_text(text) == {"before": "1", "body": value, "after": "2"}


def test_the_delimiter_is_random_and_never_in_the_value(monkeypatch):
    first, second = outputs.block("body", "x"), outputs.block("body", "x")
    d1 = first.splitlines()[0].split("<<", 1)[1]
    assert d1.startswith(outputs.DELIMITER_PREFIX) and d1 != second.splitlines()[0].split("<<", 1)[1]
    # a value quoting the next delimiter: another is drawn
    hexes = iter(["a" * 32, "b" * 32])
    monkeypatch.setattr(outputs.uuid, "uuid4", lambda: type("U", (), {"hex": next(hexes)})())
    value = f"{outputs.DELIMITER_PREFIX}{'a' * 32}"
    text = outputs.block("body", value)
    assert text.startswith(f"body<<{outputs.DELIMITER_PREFIX}{'b' * 32}\n")
    assert parse_output_text(text) == {"body": value}


def test_an_explicit_delimiter_inside_the_value_is_refused():
    with pytest.raises(OutputError, match="holds its delimiter"):
        outputs.block("body", "text\nEOF\nmore", delimiter="EOF")
    for bad in ("", "E\nOF"):
        with pytest.raises(OutputError, match="delimiter"):
            outputs.block("body", "text", delimiter=bad)
    assert parse_output_text(outputs.block("body", "text", delimiter="END")) == {"body": "text"}


@pytest.mark.parametrize("value", ["a\nstate=ok", "a\rb", "a\r\nb", "\n"])
def test_a_line_break_in_a_single_line_value_is_refused(value):
    with pytest.raises(OutputError, match="line break"):
        outputs.line("reason", value)


@pytest.mark.parametrize("value, read", [
    ("a=b=c", "a=b=c"), ("x<<EOF", "x<<EOF"), ("", ""), ("  spaced  ", "  spaced  "),
    ("\u2028 and \x85 are not line ends to the runner", "\u2028 and \x85 are not line ends to the runner"),
    (True, "true"), (False, "false"), (3, "3"), (0.25, "0.25"), (None, ""),
])
def test_single_line_values_read_back(value, read):
    assert parse_output_text(outputs.line("v", value)) == {"v": read}


@pytest.mark.parametrize("name", ["", "a=b", "a<<b", "a\nb", "a b", "1st", "na.me", "état"])
def test_a_bad_name_is_refused(name):
    for write in (outputs.line, outputs.block):
        with pytest.raises(OutputError, match="output name"):
            write(name, "v")


def test_a_value_that_is_not_text_or_utf8_is_refused():
    with pytest.raises(OutputError, match="list"):
        outputs.line("v", ["a"])  # type: ignore[arg-type]
    with pytest.raises(OutputError, match="UTF-8"):
        outputs.line("v", "\udcff")


def test_append_writes_all_or_nothing(tmp_path):
    path = tmp_path / "github_output"
    path.write_text("earlier=kept\n", encoding="utf-8")
    with pytest.raises(OutputError):
        outputs.append(path, [("state", "ok"), ("reason", "x\nstate=evil")])
    assert path.read_text(encoding="utf-8") == "earlier=kept\n"
    written = outputs.append(path, {"state": "ok", "body": "l1\nl2"}, multiline={"body"})
    assert path.read_text(encoding="utf-8") == "earlier=kept\n" + written
    assert parse_output_text(path.read_text(encoding="utf-8")) == {"earlier": "kept", "state": "ok", "body": "l1\nl2"}


def test_the_reference_parser_fails_like_the_runner():
    # the parser the tests trust is itself strict: a missing delimiter or a bare line is an error
    with pytest.raises(OutputFormatError, match="delimiter"):
        parse_output_text("body<<EOF\nno end\n")
    with pytest.raises(OutputFormatError, match="invalid format"):
        parse_output_text("no separator\n")


def test_output_path_reads_the_environment():
    assert outputs.output_path({}) is None and outputs.output_path({"GITHUB_OUTPUT": ""}) is None
    assert outputs.output_path({"GITHUB_OUTPUT": "/tmp/o"}) == Path("/tmp/o")


# -- the CI scripts that write outputs -----------------------------------------------------------

def _ci(script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-I", str(ROOT / "ci" / script), *args], capture_output=True, text=True)


def test_resolve_refs_refuses_a_ref_input_with_a_line_break(tmp_path):
    out = tmp_path / "o"
    out.write_text("")
    proc = _ci("resolve_refs.py", "--event-name", "workflow_dispatch", "--base-ref", "main\nbase=" + "0" * 40,
               "--sha", "1" * 40, "--github-output", str(out))
    assert proc.returncode == 2 and "line break" in proc.stderr and proc.stderr.count("\n") == 1
    assert out.read_text() == ""
    ok = _ci("resolve_refs.py", "--event-name", "workflow_dispatch", "--base-ref", "a=b", "--sha", "1" * 40,
             "--github-output", str(out))
    assert ok.returncode == 0, ok.stderr
    assert parse_output_text(out.read_text()) == {"base": "a=b", "cand": "1" * 40, "how": "base-ref input"}
    assert ok.stdout == out.read_text()


def test_opt_in_writes_through_the_helper(tmp_path):
    out = tmp_path / "o"
    proc = _ci("opt_in.py", "--event-name", "push", "--repo", "acme/triton", "--github-output", str(out))
    assert proc.returncode == 0, proc.stderr
    assert parse_output_text(out.read_text()) == {"run": "true", "full": "false",
                                                  "reason": "not an opt-in pull_request run"}
    bad = _ci("opt_in.py", "--event-name", "push", "--repo", "acme/triton", "--github-output", str(tmp_path))
    assert bad.returncode == 2 and bad.stderr.startswith("error: opt_in.py:")
