"""verdict.md's layout as a jinja2 template: the shipped one, and one of the adopter's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tritongate.errors import UsageError
from tritongate.report.verdict_markdown import TEMPLATE, load_template, render_verdict

from tests.report.golden_verdicts import GOLDEN

HOSTILE_OP = "@everyone <img src=x> | fake |"


def golden(kind: str = "planted") -> dict:
    return json.loads((GOLDEN / f"{kind}.verdict.json").read_text(encoding="utf-8"))


def write(tmp_path: Path, text: str, name: str = "mine.md.j2") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_shipped_template_is_a_file_of_the_package() -> None:
    assert TEMPLATE.is_file() and TEMPLATE.suffix == ".j2"
    assert render_verdict(golden()) == render_verdict(golden(), template=TEMPLATE)


def test_an_adopters_template_gets_the_escaped_pieces_and_escapes_raw_strings_with_cell(tmp_path: Path) -> None:
    doc = golden()
    doc["rows"][0]["op"] = HOSTILE_OP
    path = write(tmp_path, "{{ marker }}\nOURS {{ headline }}\n{% for s in sections %}{{ s.title }}: {{ s.n }}\n"
                           "{% endfor %}{% for r in view.regressed %}- {{ r.doc.op | cell }}\n{% endfor %}")
    text = render_verdict(doc, template=path)
    assert text.splitlines()[1].startswith("OURS ## ❌")
    assert "🔴 Regressed: " in text and "<img" not in text and "@everyone" not in text


def test_a_template_that_does_not_parse_is_one_line_naming_the_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "{{ marker }}\n{% for x in %}\n")
    with pytest.raises(UsageError, match=rf"{path.name}: line 2: .*fix it"):
        load_template(path)
    with pytest.raises(UsageError, match="cannot be read"):
        load_template(tmp_path / "missing.j2")


@pytest.mark.parametrize("body, why", [
    ("{{ doc.__class__.__mro__ }}", "SecurityError"),  # the sandbox: no reaching into Python objects
    ("{{ no_such_name }}", "UndefinedError"),
])
def test_a_template_failing_while_rendering_loses_nothing(tmp_path: Path, body: str, why: str) -> None:
    text = render_verdict(golden(), template=write(tmp_path, body))
    shipped = render_verdict(golden())
    assert text.splitlines()[:2] == shipped.splitlines()[:2]
    assert text.splitlines()[3].startswith("> [!WARNING]") and why in text and "shipped layout" in text
    assert text.replace("\n".join(text.splitlines()[3:6]) + "\n", "") == shipped


def test_gate_takes_the_template_for_verdict_md_only_and_refuses_a_bad_one_before_judging(tmp_path, capsys):
    from tritongate.cli import main
    from tests.gate.helpers import pair, row

    base, cand = pair(tmp_path, [row()], [row(median=23, seed=1)])
    args = ["gate", str(base.path), str(cand.path), "--out"]
    assert main(args + [str(tmp_path / "shipped")]) == 1
    mine = write(tmp_path, "{{ headline }}\n")
    assert main(args + [str(tmp_path / "mine"), "--verdict-template", str(mine)]) == 1
    assert (tmp_path / "mine" / "verdict.md").read_text().startswith("## ❌ 1 regression")
    docs = [json.loads((tmp_path / d / "verdict.json").read_text()) for d in ("shipped", "mine")]
    for d in docs:
        d.pop("created_utc")
    assert docs[0] == docs[1]
    bad = write(tmp_path, "{% if %}", "bad.md.j2")
    capsys.readouterr()
    assert main(args + [str(tmp_path / "bad"), "--verdict-template", str(bad)]) == 2
    assert "bad.md.j2: line 1" in capsys.readouterr().err and not (tmp_path / "bad").exists()


def test_a_bad_template_from_the_environment_names_the_variable(tmp_path, capsys, monkeypatch):
    from tritongate.cli import main
    from tests.gate.helpers import pair, row

    base, cand = pair(tmp_path, [row()], [row(seed=1)])
    monkeypatch.setenv("TRITONGATE_VERDICT_TEMPLATE", str(tmp_path / "gone.md.j2"))
    assert main(["gate", str(base.path), str(cand.path), "--out", str(tmp_path / "v")]) == 2
    err = capsys.readouterr().err
    assert "TRITONGATE_VERDICT_TEMPLATE=" in err and "gone.md.j2" in err and "cannot be read" in err
    assert not (tmp_path / "v").exists()
