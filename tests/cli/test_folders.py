"""`show` reads run, pair and verdict folders and exports a verdict; a record's suite is read
from the record; given the wrong kind of folder, a command names the one the user has."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from tests.gate.helpers import pair, row
from tritongate.cli import main
from tritongate.cli.folders import Kind, kind_of, record_suite, suite_for_record
from tritongate.errors import PreflightError, UsageError


@pytest.fixture
def pair_dir(tmp_path, capsys) -> Path:
    """A pair directory as `pair` writes it: base/, candidate/ and verdict/ (a regression)."""
    base, cand = pair(tmp_path / "runs", [row(), row(op="add", case="n=16", seed=3)],
                      [row(median=25, seed=1), row(op="add", case="n=16", seed=4)])
    folder = tmp_path / "pair-pr_20261129T120000Z"
    folder.mkdir()
    shutil.copytree(base.path, folder / "base")
    shutil.copytree(cand.path, folder / "candidate")
    assert main(["gate", str(folder / "base"), str(folder / "candidate"), "--out", str(folder / "verdict")]) == 1
    capsys.readouterr()
    return folder


def test_the_kinds_of_folder_are_told_apart(pair_dir, tmp_path):
    assert kind_of(pair_dir) is Kind.PAIR
    assert kind_of(pair_dir / "base") is Kind.RUN
    assert kind_of(pair_dir / "verdict") is Kind.VERDICT
    assert kind_of(tmp_path) is Kind.RUNS
    assert kind_of(tmp_path / "nope") is Kind.MISSING


def test_show_a_verdict_folder_as_a_table_and_as_data(pair_dir, capsys):
    verdict = pair_dir / "verdict"
    assert main(["show", str(verdict)]) == 0
    out = capsys.readouterr().out
    assert "REGRESSED" in out and "+25.00%" in out and out.rstrip().endswith("2 rows")
    # the least change each row could call, beside its change (a new user saw only "IQRs overlap")
    doc = json.loads((verdict / "verdict.json").read_text())
    header, *lines = out.splitlines()[1:]
    assert header.split()[4:7] == ["change", "resolves", "why"]
    for r in doc["rows"]:
        (line,) = [x for x in lines if x.startswith(r["op"] + " ")]
        assert f"±{r['detectable_effect']:.2%}" in line
    assert main(["show", str(verdict), "--format", "csv"]) == 0
    recs = {r["op"]: r for r in csv.DictReader(io.StringIO(capsys.readouterr().out))}
    assert recs["softmax"]["verdict"] == "REGRESSED" and abs(float(recs["softmax"]["effect"]) - 0.25) < 0.01
    assert recs["add"]["verdict"] == "UNCHANGED"
    assert main(["show", str(verdict), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)  # nothing but the document
    assert doc["passed"] is False and {r["verdict"] for r in doc["rows"]} == {"REGRESSED", "UNCHANGED"}
    assert main(["show", str(verdict), "--format", "md"]) == 0
    assert capsys.readouterr().out == (verdict / "verdict.md").read_text(encoding="utf-8")


def test_show_as_markdown_renders_verdict_json_not_the_stored_verdict_md(pair_dir, capsys):
    """verdict.md is not validated by anything: one edited to say ✅ over a regression is not
    what `show --format md` prints; a verdict.json that contradicts itself is shown as its rows
    say, under the warning, and exits 2."""
    verdict = pair_dir / "verdict"
    shipped = (verdict / "verdict.md").read_text(encoding="utf-8")
    (verdict / "verdict.md").write_text("<!-- tritongate-verdict -->\n## ✅ No regression\n", encoding="utf-8")
    assert main(["show", str(verdict), "--format", "md"]) == 0
    assert capsys.readouterr().out == shipped
    (verdict / "verdict.md").unlink()  # not needed either
    doc = json.loads((verdict / "verdict.json").read_text())
    doc["passed"], doc["exit_code"] = True, 0
    (verdict / "verdict.json").write_text(json.dumps(doc))
    assert main(["show", str(verdict), "--format", "md"]) == 2
    out, err = capsys.readouterr()
    assert "contradicts itself" in err and "[!WARNING]" in out and "verdict.json says passed" in out
    assert "✅" not in out.splitlines()[1]


def test_show_words_the_headline_as_the_renderers_do_now(pair_dir, capsys):
    """A verdict.json written before a wording changed keeps its stored headline; `show` words it
    from the rows, as the comment and the terminal do (two builds on the interpreter: the
    headline says so)."""
    path = pair_dir / "verdict" / "verdict.json"
    doc = json.loads(path.read_text())
    doc["base"] |= {"backend": "cpu", "triton_version": "3.6.0"}
    doc["candidate"] |= {"backend": "cpu", "triton_version": "3.7.1"}
    path.write_text(json.dumps(doc))
    assert main(["show", str(pair_dir / "verdict")]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.endswith(f"{doc['headline']} (interpreter times, not the code a GPU would run)"), first


def test_show_a_pair_directory_prints_both_runs_and_the_verdict(pair_dir, capsys):
    assert main(["show", str(pair_dir), "--color", "never"]) == 0
    out = capsys.readouterr().out
    assert out.index(str(pair_dir / "base")) < out.index(str(pair_dir / "candidate")) < out.index("REGRESSED  ")
    assert main(["show", str(pair_dir), "--format", "csv"]) == 0  # a pair's data is its verdict
    assert "REGRESSED" in capsys.readouterr().out
    shutil.rmtree(pair_dir / "verdict")
    assert main(["show", str(pair_dir), "--format", "json"]) == 2
    err = capsys.readouterr().err
    assert "pair directory without a verdict" in err and str(pair_dir / "base") in err


def test_a_run_command_given_a_pair_or_verdict_folder_names_what_it_has(pair_dir, tmp_path, capsys):
    assert main(["gate", str(pair_dir), str(pair_dir / "candidate"), "--out", str(tmp_path / "v")]) == 2
    err = capsys.readouterr().err
    assert "is a pair directory" in err and f"{pair_dir / 'base'} and {pair_dir / 'candidate'}" in err
    assert "`tritongate run` printed" not in err
    assert main(["gate", str(pair_dir / "base"), str(pair_dir / "verdict"), "--out", str(tmp_path / "v")]) == 2
    assert "CAND_RUN: a run directory: " in (err := capsys.readouterr().err) and "is a verdict folder" in err
    assert main(["show", str(pair_dir.parent)]) == 2  # the --out folder: the runs in it are named
    err = capsys.readouterr().err
    assert "is a folder of runs (an --out): pass one of" in err and str(pair_dir) in err


def _record(folder: Path, suite: dict) -> Path:
    folder.mkdir(parents=True)
    (folder / "run_identity.json").write_text(json.dumps({"schema_version": 1, "suite": suite}))
    return folder


def test_a_records_suite_is_its_builtin_name_or_its_file(tmp_path):
    from tritongate.suites import ops_dir

    builtin = _record(tmp_path / "a", {"name": "smoke", "path": str(ops_dir() / "suites" / "smoke.yaml")})
    assert record_suite(builtin) == "smoke"
    moved = _record(tmp_path / "b", {"name": "smoke", "path": "/elsewhere/ops/suites/smoke.yaml"})
    assert record_suite(moved) == "smoke"  # recorded in another checkout
    own = tmp_path / "mine.yaml"
    own.write_text("ops: {add: {dtypes: [float32], shapes: [[16]]}}\n")
    assert record_suite(_record(tmp_path / "c", {"name": "mine", "path": str(own)})) == str(own)
    with pytest.raises(UsageError, match="from /gone/x.yaml, which is not there any more.*pass --suite PATH"):
        record_suite(_record(tmp_path / "d", {"name": "x", "path": "/gone/x.yaml"}))
    with pytest.raises(UsageError, match="names no suite; pass --suite"):
        record_suite(_record(tmp_path / "e", {}))


def test_an_explicit_suite_must_agree_with_the_record(tmp_path):
    record = _record(tmp_path / "r", {"name": "smoke"})
    assert suite_for_record(record, None) == "smoke"
    assert suite_for_record(record, "smoke") == "smoke"
    with pytest.raises(UsageError, match=r"--suite pr is suite 'pr', but BASELINE_RECORD .* was recorded with "
                                         r"suite 'smoke'; leave --suite out"):
        suite_for_record(record, "pr")
    with pytest.raises(UsageError, match=r"--baseline .* recorded with suite 'smoke'"):
        suite_for_record(record, "pr", option="--baseline")


def test_a_folder_that_is_no_record_is_a_named_preflight_failure(tmp_path, capsys):
    runs = tmp_path / "runs"
    (runs / "pair-smoke_1" / "base").mkdir(parents=True)
    (runs / "pair-smoke_1" / "candidate").mkdir()
    with pytest.raises(PreflightError, match="is a pair directory .* its run directories are"):
        suite_for_record(runs / "pair-smoke_1", None)
    assert main(["pair", str(runs / "pair-smoke_1"), "--backend", "cpu", "--out", str(tmp_path / "o")]) == 3
    err = capsys.readouterr().err
    assert "PREFLIGHT_FAILED check=replay_from" in err and "is a pair directory" in err


def test_calibrate_refuses_a_suite_its_baseline_was_not_recorded_with(tmp_path, capsys, monkeypatch):
    """Checked before anything is made or measured (the record is validated first)."""
    import tritongate.cli.calibrate as cal

    record = _record(tmp_path / "r", {"name": "smoke"})
    monkeypatch.setattr(cal, "_check_record", lambda path, option: None)
    assert main(["calibrate", "--baseline", str(record), "--suite", "pr", "--out", str(tmp_path / "o")]) == 2
    assert "--suite pr is suite 'pr', but --baseline" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_calibrate_and_ir_given_a_pair_directory_name_its_runs(pair_dir, tmp_path, capsys):
    assert main(["calibrate", "--baseline", str(pair_dir), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"--baseline {pair_dir}: expected a record run: {pair_dir} is a pair directory" in err
    assert main(["ir", "--from", str(pair_dir), "--out", str(tmp_path / "ir")]) == 2
    assert "--from: a run directory: " in (err := capsys.readouterr().err) and str(pair_dir / "base") in err
    assert not (tmp_path / "o").exists() and not (tmp_path / "ir").exists()
