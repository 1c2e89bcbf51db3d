"""The one choke point for untrusted text: Markdown cells, terminal text, invisible controls."""

from __future__ import annotations

import re

import pytest

from hypothesis import given, strategies as st

from tritongate.report.table import render_rows
from tritongate.report.untrusted import markdown_cell, neutralize, safe_url, terminal_text

from tests.conftest import make_row


def test_underscores_inside_words_stay_literal_so_names_can_be_grepped():
    assert markdown_cell("attention_causal") == "attention_causal"
    assert markdown_cell("_em_ x_") == "&#95;em&#95; x&#95;"
    assert markdown_cell("a__b") == "a&#95;&#95;b"  # "__" is emphasis material: escaped


def test_bidi_and_zero_width_controls_become_visible_escapes():
    evil = "add\u202eevil\u200b\u2066x"
    assert neutralize(evil) == "add\\u202eevil\\u200b\\u2066x"
    assert "\u202e" not in markdown_cell(evil) and "\u200b" not in markdown_cell(evil)


def test_terminal_tables_never_read_markup_from_data():
    row = make_row(op="[bold red]add[/]", case="[/x]")
    text = render_rows([row], color=True)
    assert "[bold red]add[/]" in re.sub(r"\x1b\[[0-9;]*m", "", text)
    assert terminal_text("[/x]").plain == "[/x]"


@given(st.text(max_size=200))
def test_any_string_is_inert_in_a_markdown_cell(text):
    out = markdown_cell(text)
    assert "\n" not in out and "|" not in out and "<" not in out and "](" not in out
    assert "@" not in out and "`" not in out and "*" not in out
    assert not any(ch in out for ch in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200b\u200e\u200f")


def test_mentions_issue_references_and_bare_urls_are_broken_after_decoding():
    # GitHub links these in the rendered text, where entities are decoded: an escaped
    # zero-width space must sit right after the sign
    assert markdown_cell("@team") == "&#64;&#8203;team"
    assert markdown_cell("#12") == "&#35;&#8203;12"
    assert markdown_cell("https://x.example") == "https&#58;&#8203;//x.example"
    assert markdown_cell("see www.x.example") == "see www&#8203;&#46;x.example"
    assert markdown_cell("a:b 12:30") == "a:b 12:30"  # a colon alone is left alone


def test_a_long_cell_is_cut_before_escaping_so_no_entity_is_split():
    out = markdown_cell("<" * 1000)
    assert out == "&lt;" * 499 + "…"


@pytest.mark.parametrize("url", ["https://github.com/o/r/actions/runs/1/artifacts/2",
                                 "https://ci.example:8443/a?x=1&y=2"])
def test_an_artifact_url_is_kept_as_written(url):
    assert safe_url(url) == url


@pytest.mark.parametrize("url", ["http://github.com/x", "javascript:alert(1)", "https://x.example/a)b",
                                 "https://x.example/a b", "https://x.example/\"", "https://x.example/<a>",
                                 "https://x.example/" + "a" * 3000, ""])
def test_an_artifact_url_that_could_break_its_link_is_refused(url):
    with pytest.raises(ValueError, match="not an https:// URL"):
        safe_url(url)
