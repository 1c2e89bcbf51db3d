"""`tritongate pair` end to end on the CPU backend: real builtin kernels under the Triton
interpreter, two real worker processes, the smoke suite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tritongate.cli import main
from tritongate.rundir import load_run


@pytest.fixture(scope="module")
def record(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("record")
    assert main(["run", "--suite", "smoke", "--backend", "cpu", "--out", str(out), "--color", "never"]) == 0
    (path,) = out.glob("smoke_*")
    return path


def _pair(record: Path, out: Path, capsys, *extra: str) -> tuple[int, dict]:
    """A pair of ``record`` without --suite: the record says it was the smoke suite."""
    code = main(["pair", str(record), "--backend", "cpu", "--out", str(out), "--color", "never", *extra])
    lines = capsys.readouterr().out.splitlines()
    paths = {line.split(":", 1)[0]: line.split(":", 1)[1].strip() for line in lines
             if line.split(":", 1)[0] in ("base", "candidate", "verdict")}
    return code, paths


@pytest.mark.slow
def test_pair_of_a_build_with_itself_passes(record, tmp_path, capsys):
    from tests.gate.helpers import CALIBRATION, calibration_file

    cal = calibration_file(tmp_path / "cal")  # an H200's calibration: this pair runs on the cpu
    code, paths = _pair(record, tmp_path / "out", capsys, "--calibration", str(cal.parent))
    assert code == 0
    verdict = json.loads(Path(paths["verdict"]).with_name("verdict.json").read_text())
    assert verdict["calibration"] == CALIBRATION
    assert "<sub>⚠️ Calibrated on NVIDIA H200, not this GPU (" in Path(paths["verdict"]).read_text()
    assert {r["verdict"] for r in verdict["rows"]} == {"UNCHANGED"}
    assert all(r["paired"] and r["pairs"] >= 4 for r in verdict["rows"])
    base, cand = load_run(paths["base"]), load_run(paths["candidate"])
    assert base.identity["replay_from"] == str(record.resolve()) == cand.identity["replay_from"]
    assert len(base.rows) == len(cand.rows) == 8


@pytest.mark.slow
def test_a_candidate_doing_double_work_is_never_called_faster(record, tmp_path, capsys):
    """End to end on the real interpreter: the knob reaches the candidate only, and the verdict
    says so in the direction that holds on a loaded machine (host timings there move by more
    than 2x: whether each row is called is tested on a scripted device, tests/pair)."""
    code, paths = _pair(record, tmp_path, capsys, "--cand-env", "TRITONGATE_PLANTED_WORK=2")
    assert code in (0, 1)
    verdict = json.loads(Path(paths["verdict"]).with_name("verdict.json").read_text())
    assert verdict["state"] in ("fail", "blind", "pass") and (code == 1) == (verdict["state"] == "fail")
    for r in verdict["rows"]:
        assert r["verdict"] in ("REGRESSED", "UNCONFIRMED", "UNCHANGED"), r
        assert r["verdict"] != "REGRESSED" or r["effect"] > 0
    cand = load_run(paths["candidate"])
    assert all(r.params["planted_work"] == 2 for r in cand.rows)
    assert all("planted_work" not in r.params for r in load_run(paths["base"]).rows)


def test_bad_overlays_and_interpreters_are_usage_errors(record, tmp_path, capsys):
    assert main(["pair", str(record), "--suite", "smoke", "--backend", "cpu", "--out", str(tmp_path),
                 "--cand-env", "NOEQUALS"]) == 2
    assert "expected NAME=VALUE" in capsys.readouterr().err
    assert main(["pair", str(record), "--suite", "smoke", "--backend", "cpu", "--out", str(tmp_path),
                 "--cand-python", str(tmp_path / "nope" / "python")]) == 2
    assert "not an executable file" in capsys.readouterr().err


@pytest.mark.slow
def test_a_cross_backend_baseline_is_refused_by_the_workers(record, tmp_path, capsys):
    fake = tmp_path / "other"
    fake.mkdir()
    for item in record.iterdir():
        target = fake / item.name
        if item.is_dir():
            target.mkdir()
            for f in item.iterdir():
                (target / f.name).write_text(f.read_text())
        else:
            target.write_text(item.read_text())
    for name in ("autotune_records/meta.json", "run_identity.json"):  # a record made on cuda says so in both
        path = fake / name
        doc = json.loads(path.read_text())
        doc["backend"] = "cuda"
        path.write_text(json.dumps(doc))
    assert main(["pair", str(fake), "--suite", "smoke", "--backend", "cpu", "--out", str(tmp_path / "o")]) == 3
    err = capsys.readouterr().err
    assert "PREFLIGHT_FAILED check=replay_backend" in err and "base build" in err
    # refused before anything was measured: no folder left that reads as a (broken) pair directory
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


@pytest.mark.parametrize("extra,code,words", [
    (["--suite", "nosuchsuite"], 3, "check=suite_file"),
    (["--suite", "smoke", "--ops", "nosuchop"], 3, "check=unknown_op"),
    (["--suite", "smoke", "--rounds", "1"], 2, "bad pairing schedule"),
    (["--rounds", "1"], 2, "bad pairing schedule"),  # the suite read from the record, as given
    (["--suite", "pr"], 2, "--suite pr is suite 'pr', but BASELINE_RECORD"),
])
@pytest.mark.slow
def test_bad_suites_and_options_are_named_errors(record, tmp_path, capsys, extra, code, words):
    assert main(["pair", str(record), "--backend", "cpu", "--out", str(tmp_path), *extra]) == code
    assert words in capsys.readouterr().err
    if "pr" in extra:  # a suite the record disagrees with is refused before anything is made
        assert not any(tmp_path.glob("pair-*"))


@pytest.mark.slow
def test_a_candidate_with_a_planted_delay_says_so(record, tmp_path, capsys):
    """The calibration knob end to end: a plan of per-row delays (here 90 % of each row's
    recorded median) reaches exactly the candidate, in its params and its identity."""
    from tritongate.ops.planting import row_key, write_plan

    rows = load_run(record).rows
    delays = {row_key(r.op, r.case, r.dtype): int(0.9 * sorted(r.samples)[len(r.samples) // 2] * 1000)
              for r in rows}
    plan = write_plan(tmp_path / "plan.json", 0.9, delays)
    code, paths = _pair(record, tmp_path / "pair", capsys, "--cand-env", f"TRITONGATE_PLANTED_DELAY={plan}")
    assert code in (0, 1)  # whether each row is called: tests/pair, on a scripted device
    verdict = json.loads(Path(paths["verdict"]).with_name("verdict.json").read_text())
    assert {r["verdict"] for r in verdict["rows"]} <= {"REGRESSED", "UNCONFIRMED", "UNCHANGED"}
    base, cand = load_run(paths["base"]), load_run(paths["candidate"])
    assert [r.params["planted_delay_ns"] for r in cand.rows] == [delays[row_key(r.op, r.case, r.dtype)]
                                                                for r in cand.rows]
    assert all("planted_delay_ns" not in r.params for r in base.rows)
    assert cand.identity["planted_delay"]["fraction"] == 0.9 and base.identity["planted_delay"] is None


def test_sample_ms_is_refused_saying_a_pair_uses_its_record_s_k(record, tmp_path, capsys):
    assert main(["pair", str(record), "--backend", "cpu", "--out", str(tmp_path), "--sample-ms", "2"]) == 2
    err = capsys.readouterr().err
    assert "--sample-ms: a pair measures each row with its record's launches per sample" in err
    assert "unrecognized arguments" not in err


@pytest.mark.slow
def test_a_record_of_part_of_its_suite_is_paired_on_its_own_rows(tmp_path, capsys):
    """A record of `--ops add --dtypes float32` used to be paired on the whole smoke suite: 6
    rows timed, then REJECTED (no record to replay), under a ⚠️ pass."""
    rec = tmp_path / "rec"
    assert main(["run", "--suite", "smoke", "--backend", "cpu", "--ops", "add", "--dtypes", "float32", "--rounds", "2",
                 "--out", str(rec), "--color", "never"]) == 0
    (path,) = rec.glob("smoke_*")
    capsys.readouterr()
    main(["pair", str(path), "--backend", "cpu", "--out", str(tmp_path / "p"), "--color", "never", "--rounds", "2"])
    assert "records only part of its suite (ops add; dtypes float32): pairing those rows" in capsys.readouterr().err
    (verdict,) = (tmp_path / "p").glob("pair-*/verdict/verdict.json")
    assert [(r["op"], r["dtype"]) for r in json.loads(verdict.read_text())["rows"]] == [("add", "float32")]


@pytest.mark.slow
def test_a_record_is_paired_on_its_own_shapes_and_dtypes(tmp_path, capsys):
    """A record made with its own --shape-file was paired on the suite's shapes (its 65536 row left
    out without a word), and `--ops` given alone dropped the record's dtypes (rows it never
    measured, NOT JUDGED)."""
    (tmp_path / "deep.yaml").write_text("add: {shapes: [[4096], [65536]]}\n")
    rec = tmp_path / "rec"
    assert main(["run", "--suite", "smoke", "--backend", "cpu", "--ops", "add", "--dtypes", "float32", "--rounds", "2",
                 "--shape-file", str(tmp_path / "deep.yaml"), "--out", str(rec), "--color", "never"]) == 0
    (path,) = rec.glob("smoke_*")
    capsys.readouterr()
    main(["pair", str(path), "--backend", "cpu", "--ops", "add", "--out", str(tmp_path / "p"), "--color", "never",
          "--rounds", "2"])
    assert "records only part of its suite (dtypes float32)" in capsys.readouterr().err
    (verdict,) = (tmp_path / "p").glob("pair-*/verdict/verdict.json")
    rows = json.loads(verdict.read_text())["rows"]
    assert sorted((r["case"], r["dtype"]) for r in rows) == [("4096", "float32"), ("65536", "float32")]
    assert all(r["verdict"] != "REJECTED" for r in rows)


def test_a_record_s_shapes_are_its_shape_file_unless_it_lists_an_op_without_shapes(tmp_path):
    from tritongate.recorded import recorded_shapes

    (tmp_path / "run_identity.json").write_text(json.dumps({"suite": {"name": "smoke"}}))
    (tmp_path / "shapes.yaml").write_text("add: {shapes: [[16]]}\n")
    assert recorded_shapes(tmp_path) == str(tmp_path / "shapes.yaml")
    # a provider's suite keys its shape file by the provider's ops: its suite's own is used
    (tmp_path / "run_identity.json").write_text(json.dumps({"suite": {"name": "fg", "provider": "flaggems"}}))
    assert recorded_shapes(tmp_path) is None
    (tmp_path / "run_identity.json").write_text(json.dumps({"suite": {"name": "smoke"}}))
    (tmp_path / "shapes.yaml").write_text("add: {shapes: [[16]]}\nsoftmax: {shapes: []}\n")  # written before 2026-12-07
    assert recorded_shapes(tmp_path) is None
    (tmp_path / "shapes.yaml").write_text("[unclosed\n")
    assert recorded_shapes(tmp_path) is None
    assert recorded_shapes(tmp_path / "none") is None
