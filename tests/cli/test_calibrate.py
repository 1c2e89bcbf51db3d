"""``tritongate calibrate --resume``: bad folders and conflicting options are usage errors
naming the folder, before anything is measured."""

from __future__ import annotations

import json

import pytest

from tritongate.calibrate.resume import SETTINGS, Settings
from tritongate.cli import main


def _settings(folder, **fields):
    folder.mkdir(parents=True, exist_ok=True)
    return Settings(**{"suite": "smoke", "fractions": (0.02, 0.05), "aa_runs": 3,
                       "record": str(folder / "no-record"), **fields}).write(folder)


@pytest.mark.parametrize("extra,fragment", [
    (["--suite", "pr"], "started with suite 'smoke', not 'pr'"),
    (["--aa-runs", "1"], "started with aa_runs 3, not 1"),
    (["--planted", "0.01,0.02"], "started with fractions (0.02, 0.05), not (0.01, 0.02)"),
    (["--ops", "add"], "started with only_ops (), not ('add',)"),
    (["--baseline", "x"], "drop --baseline"),
    (["--out", "elsewhere"], "--resume goes on in its own folder"),
    (["--backend", "cuda"], "started with backend 'auto', not 'cuda'"),
    (["--shape-file", "shapes.yaml"], "started with shape_file None, not '"),
    (["--python", "/usr/bin/python3"], "started with python None, not '/usr/bin/python3'"),
    (["--from", "x", "--write-thresholds", "y"], "does not go with --resume"),
    (["--sample-ms", "2"], "with --baseline or --resume the record's own launches per sample are measured"),
])
def test_resume_refuses_options_other_than_the_calibrations_own(tmp_path, capsys, extra, fragment):
    cal = tmp_path / "calibrate-smoke_20261130T000000Z"
    _settings(cal)
    assert main(["calibrate", "--resume", str(cal), "--color", "never", *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and fragment in err
    assert sorted(p.name for p in cal.iterdir()) == [SETTINGS]  # nothing measured or written


def test_resume_of_a_folder_calibrate_did_not_make_names_it(tmp_path, capsys):
    assert main(["calibrate", "--resume", str(tmp_path / "elsewhere"), "--color", "never"]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "elsewhere") in err and "cannot read settings.json" in err
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / SETTINGS).write_text(json.dumps({"kind": "other"}))
    assert main(["calibrate", "--resume", str(tmp_path / "bad"), "--color", "never"]) == 2
    assert "settings.json is damaged" in capsys.readouterr().err
    _settings(tmp_path / "bad")
    doc = json.loads((tmp_path / "bad" / SETTINGS).read_text())
    for field, value, fragment in (("fractions", [5], "fractions[0]"), ("only_ops", "add", "only_ops"),
                                   ("aa_runs", 0, "aa_runs")):
        (tmp_path / "bad" / SETTINGS).write_text(json.dumps({**doc, field: value}))
        assert main(["calibrate", "--resume", str(tmp_path / "bad"), "--color", "never"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and fragment in err and str(tmp_path / "bad" / SETTINGS) in err


def test_resume_goes_on_with_the_calibrations_own_settings(tmp_path, capsys):
    """Given only the folder, it takes suite, sizes and record from it: here the record is
    gone, which it says before measuring anything (the settings were used, not the defaults)."""
    cal = tmp_path / "calibrate-smoke_20261130T000000Z"
    _settings(cal)
    code = main(["calibrate", "--resume", str(cal), "--color", "never"])
    err = capsys.readouterr().err
    assert code == 2 and f"--resume {cal}: its record {cal / 'no-record'}" in err and "not a directory" in err
    assert sorted(p.name for p in cal.iterdir()) == [SETTINGS]


@pytest.mark.slow
def test_a_real_calibration_on_the_interpreter_then_resumed(tmp_path, capsys):
    """The real executor end to end (the aim's worker switching the planted spin with set_plant,
    the paired checks, the planted run) on one row under the interpreter; then a resume of the
    finished folder reads every step back and measures nothing."""
    argv = ["calibrate", "--suite", "smoke", "--ops", "add", "--dtypes", "float16", "--planted", "0.05",
            "--backend", "cpu", "--max-rounds", "6", "--color", "never"]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    cal = next(tmp_path.glob("calibrate-smoke_*"))
    doc = json.loads((cal / "calibration.json").read_text())
    assert doc["schema"] == 2 and doc["aa"]["rows"] == 1  # the one row, timed in its A/A run
    (row,) = doc["rows"]
    assert row["op"] == "add" and len(row["aim"]["points"]) >= 3 and row["aim"]["zero_us"] > 0
    names = [s["name"] for s in doc["steps"]]
    assert names[:2] == ["aa-1", "aim"]
    # planted where the aim (or its paired check) landed the size; otherwise said, and a miss
    assert ("planted-0.05" in names) == ("0.05" in row["planted"])
    assert ("0.05" in row["planted"]) != ("0.05" in row["aim"]["missed"])
    # the spin the worker switched to (set_plant) changed the row's time: the ladder rose
    effects = [e for _spin, e, _n in row["aim"]["points"]]
    assert max(effects) >= 0.05 and min(effects) < max(effects)
    assert f"calibration: {cal / 'calibration.json'}" in out
    assert "note: on the Triton interpreter: the plant is a host busy-wait after each launch" in out
    assert main(["calibrate", "--resume", str(cal), "--backend", "cpu", "--max-rounds", "6", "--color", "never"]) == 0
    err = capsys.readouterr().err
    assert "aa-1: finished before, read back from" in err and "aim: finished before, read back from aim.json" in err
    assert "pairing" not in err  # nothing measured again
    assert json.loads((cal / "calibration.json").read_text())["rows"][0]["aa_verdicts"] == row["aa_verdicts"]


def test_an_interrupted_calibration_says_how_to_go_on(tmp_path, capsys, monkeypatch):
    """Ctrl-C printed only "interrupted": the finished steps are kept, and the line says how to resume."""
    import tritongate.calibrate.run as calibrate_run

    rec = tmp_path / "rec"
    assert main(["run", "--suite", "smoke", "--backend", "cpu", "--ops", "add", "--dtypes", "float32", "--rounds", "2",
                 "--out", str(rec), "--color", "never"]) == 0
    (record,) = rec.glob("smoke_*")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(calibrate_run, "run_calibration", interrupted)
    capsys.readouterr()
    code = main(["calibrate", "--baseline", str(record), "--suite", "smoke", "--backend", "cpu",
                 "--out", str(tmp_path / "cals"), "--color", "never"])
    err = capsys.readouterr().err.splitlines()
    (cal,) = (tmp_path / "cals").glob("calibrate-smoke_*")
    assert code == 130 and err[-2:] == ["interrupted", f"the steps finished so far are kept in {cal}; go on with "
                                                       f"`tritongate calibrate --resume {cal}`, adding the measurement options it "
                                                       f"was started with, if any ({cal / 'measure.json'} keeps them)"]
