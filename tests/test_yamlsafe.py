"""YAML a PR can edit is read within bounds: alias bombs, deep nesting and huge files are
refused with a short message naming the file."""

from __future__ import annotations

import pytest

from tritongate.cli import main
from tritongate.yamlsafe import MAX_BYTES, YamlLimitError, load_bounded

from tests.conftest import write_suite

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(20))


def test_an_alias_bomb_is_refused_quickly():
    with pytest.raises(YamlLimitError, match="aliases"):
        load_bounded(BOMB)


@pytest.mark.parametrize("text,words", [("[" * 100 + "]" * 100, "nested deeper"),
                                        ("x: " + "y" * (MAX_BYTES + 1), "bytes")])
def test_deep_or_huge_documents_are_refused(text, words):
    with pytest.raises(YamlLimitError, match=words):
        load_bounded(text)


def test_a_normal_suite_document_loads():
    assert load_bounded("ops:\n  add: {dtypes: [float16]}\n") == {"ops": {"add": {"dtypes": ["float16"]}}}
    assert load_bounded("base: &b {x: 1}\nother: *b\n") == {"base": {"x": 1}, "other": {"x": 1}}


def test_a_bomb_in_a_shape_file_is_a_short_preflight_error(tmp_path, capsys):
    suite = write_suite(tmp_path, "shapes: shapes.yaml\ndtypes: [float32]\nops:\n  add: {}\n", shapes=BOMB)
    code = main(["run", "--suite", str(suite), "--backend", "cpu", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 3 and "check=shape_file" in err and "alias" in err and len(err) < 600


def test_a_bomb_in_a_policy_is_a_usage_error(tmp_path, capsys):
    policy = tmp_path / "gate.yaml"
    policy.write_text(BOMB)
    from tests.gate.helpers import pair, row

    base, cand = pair(tmp_path, [row()], [row(seed=1)])
    assert main(["gate", str(base.path), str(cand.path), "--out", str(tmp_path / "v"), "--policy", str(policy)]) == 2
    assert "refused" in capsys.readouterr().err


# 33 anchors of three aliases each: under the alias cap, 3**33 leaves once expanded
FEW_ALIAS_BOMB = "\n".join(["a0: &a0 [1, 1, 1]"] + [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 33)])


def test_a_bomb_of_few_aliases_is_refused_by_its_expanded_size_before_anything_walks_it():
    import time

    t0 = time.process_time()
    with pytest.raises(YamlLimitError, match=r"expand to [\d,]+ nodes, more than the 1,000,000 allowed"):
        load_bounded(FEW_ALIAS_BOMB + "\nops:\n  add: {dtypes: [float32], shapes: [*a32]}\n")
    assert time.process_time() - t0 < 2  # CPU seconds: expanding it would take hours


def test_shared_anchors_within_the_bound_still_load():
    doc = load_bounded("\n".join(["a0: &a0 [1, 1]"] + [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}]" for i in range(1, 12)]))
    assert len(doc) == 12 and len(doc["a11"]) == 2 and doc["a11"][0][0][0][0][0][0][0][0][0][0][0] == [1, 1]


@pytest.mark.parametrize("command", ["ops", "run"])
def test_a_few_alias_bomb_in_a_suite_is_a_preflight_error(tmp_path, capsys, command):
    suite = tmp_path / "bomb.yaml"
    suite.write_text(FEW_ALIAS_BOMB + "\nops:\n  add: {dtypes: [float32], shapes: [*a32]}\n")
    extra = ["--backend", "cpu", "--out", str(tmp_path / "o")] if command == "run" else []
    assert main([command, "--suite", str(suite), *extra]) == 3
    err = capsys.readouterr().err
    assert "check=suite_file" in err and str(suite) in err and "alias bomb" in err and len(err) < 600


def test_a_few_alias_bomb_in_a_policy_is_a_usage_error(tmp_path, capsys):
    policy = tmp_path / "gate.yaml"
    policy.write_text(FEW_ALIAS_BOMB + "\nmin_effect: *a32\n")
    from tests.gate.helpers import pair, row

    base, cand = pair(tmp_path, [row()], [row(seed=1)])
    assert main(["gate", str(base.path), str(cand.path), "--out", str(tmp_path / "v"), "--policy", str(policy)]) == 2
    err = capsys.readouterr().err
    assert "alias bomb" in err and str(policy) in err


@pytest.mark.parametrize("text", ["a: &a [*a]\n", "a: &a {x: [1, *a]}\n"])
def test_an_alias_inside_what_it_names_is_refused(text):
    with pytest.raises(YamlLimitError, match="inside the node it names"):
        load_bounded(text)
