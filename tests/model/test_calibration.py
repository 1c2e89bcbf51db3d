"""The calibration's figures, its JSON and the summary a verdict cites."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from tritongate.model.calibration import (Calibration, CalibrationSummary, PlantedOutcome, Rate, RowCalibration,
                                        load_summary, size_class)
from tritongate.errors import SchemaVersionError, UsageError


def row(op: str, us: float, caught: dict[str, bool], aa=("UNCHANGED",)) -> RowCalibration:
    # each plant measured at its size (the gate's estimate equals the fraction planted)
    planted = {k: PlantedOutcome(10, "REGRESSED" if v else "UNCHANGED", float(k)) for k, v in caught.items()}
    return RowCalibration(op=op, case="8", dtype="float16", kernel_us=us, zero_us=us, aa_verdicts=aa,
                          aa_effects=(0.0,) * len(aa), detectable=0.01, planted=planted)


def cal(rows) -> Calibration:
    return Calibration(created_utc="2026-11-30T05:00:00+00:00", suite="pr", runner={"device": "NVIDIA H200"},
                       fractions=(0.01, 0.02, 0.05), rows=tuple(rows), steps=())


@pytest.mark.parametrize("us,name", [(0.5, "< 3 µs"), (2.999, "< 3 µs"), (3.0, "3–10 µs"), (10.0, "10–100 µs"),
                                     (99.9, "10–100 µs"), (100.0, "≥ 100 µs"), (5000.0, "≥ 100 µs")])
def test_size_classes_have_their_lower_bound_inclusive(us, name):
    assert size_class(us) == name


def test_rates_by_class_goals_and_the_smallest_catch():
    rows = [row("small", 1.0, {"0.01": False, "0.02": False, "0.05": True}),
            row("mid", 20.0, {"0.01": True, "0.02": True, "0.05": True}),
            row("big", 200.0, {"0.01": False, "0.02": True, "0.05": True}, aa=("UNCHANGED", "REGRESSED"))]
    c = cal(rows)
    assert [r.smallest_caught for r in rows] == [0.05, 0.01, 0.02]
    assert (c.rate(0.02).caught, c.rate(0.02).rows) == (2, 3)
    assert (c.rate(0.02, size="< 3 µs").caught, c.rate(0.02, size="< 3 µs").rows) == (0, 1)
    assert c.rate(0.02, min_kernel_us=10).rate == 1.0
    assert [(g.fraction, g.met) for g in c.goals()] == [(0.02, True), (0.05, True)]
    assert (c.aa_rows, c.aa_false) == (4, 1)
    doc = c.to_dict()
    assert doc["aa"] == {"rows": 4, "false_verdicts": 1}
    assert [k["rows"] for k in doc["classes"]] == [1, 0, 1, 1]
    assert doc["summary"] == {"created_utc": "2026-11-30T05:00:00+00:00", "device": "NVIDIA H200", "aa_rows": 4,
                              "aa_false": 1, "fraction": 0.02, "caught": 2, "planted_rows": 3, "unplanted": 0}


def test_a_size_the_aim_could_not_plant_is_left_out_of_the_rate_and_a_miss_for_the_goal():
    unplantable = RowCalibration(op="add", case="4096", dtype="float16", kernel_us=12.0, zero_us=12.0,
                                 aa_verdicts=("UNCHANGED",), aa_effects=(0.0,), detectable=0.01,
                                 planted={"0.05": PlantedOutcome(40, "REGRESSED", 0.05, 0.049)},
                                 aim={"missed": {"0.02": "no spin lands within ±25% of 2%"}})
    c = cal([row("mid", 20.0, {"0.02": True, "0.05": True}), unplantable])
    assert c.rate(0.02) == Rate(rows=1, caught=1, unplanted=1, fraction=0.02, measured=0.02)
    assert c.rate(0.05) == Rate(rows=2, caught=2, unplanted=0, fraction=0.05, measured=0.05)
    assert c.goals()[0].text() == ("2% caught on ≥ 95% of rows ≥ 10 µs: 1 of 2 (50%), counting 1 that could not "
                                   "be planted at 2% as missed")
    assert [g.met for g in c.goals()] == [False, True]
    assert c.to_dict()["catch"]["0.02"] == {"rows": 1, "caught": 1, "rate": 1.0, "unplanted": 1, "measured": 0.02,
                                            "on_size": True}


def test_a_row_without_a_positive_time_is_refused():
    with pytest.raises(ValueError, match="kernel time 0.0 µs"):
        row("x", 0.0, {})


def test_the_summary_line_names_a_calibration_from_another_gpu():
    s = CalibrationSummary("2026-11-30T05:00:00+00:00", "NVIDIA H200", 102, 0, 0.02, 33, 34)
    assert s.line("NVIDIA H200") == ("Calibrated on this runner 2026-11-30 (`tritongate calibrate`): 0 false "
                                     "verdicts in 102 A/A rows; a 2% slowdown caught on 33 of 34 rows.")
    assert s.line("NVIDIA A100").startswith("⚠️ Calibrated on NVIDIA H200, not this GPU (NVIDIA A100), 2026-11-30")
    some_not_planted = CalibrationSummary("2026-11-30T05:00:00+00:00", "NVIDIA H200", 102, 0, 0.02, 28, 30, 4)
    assert some_not_planted.line("NVIDIA H200").endswith(
        "a 2% slowdown caught on 28 of 30 rows (4 more could not be planted).")
    one_false = CalibrationSummary("2026-11-30T05:00:00+00:00", "NVIDIA H200", 102, 1, 0.02, 31, 31, 3)
    assert "): 1 false verdict in 102 A/A rows; a 2% slowdown caught on 31 of 31 rows" in one_false.line("NVIDIA H200")


def test_a_calibration_whose_steps_ran_on_several_gpus_says_it_calibrated_the_runner_class(tmp_path):
    from tritongate.calibrate.report import render

    c = cal([row("mid", 20.0, {"0.02": True})])
    several = replace(c, runner={**c.runner, "gpus": ["GPU-a", "GPU-b"], "scope": "runner class (2 GPUs)"})
    assert several.summary().line("NVIDIA H200").startswith(
        "Calibrated on this runner class (2 GPUs) 2026-11-30 (`tritongate calibrate`): ")
    assert "on 2 physical GPUs (GPU-a, GPU-b): a calibration of the runner class" in render(several)
    one = replace(c, runner={**c.runner, "gpus": ["GPU-a"], "scope": "one GPU"})
    assert one.summary().line("NVIDIA H200").startswith("Calibrated on this runner 2026-11-30")
    assert "Every step on one GPU (GPU-a)." in render(one)
    several.write(tmp_path / "calibration.json")  # the scope is kept in the summary a verdict cites
    assert load_summary(tmp_path).scope == "runner class (2 GPUs)"
    assert "scope" not in c.to_dict()["summary"]  # unknown (a calibration before it was kept): not written
    doc = json.loads((tmp_path / "calibration.json").read_text())  # a file from before: its runner has it
    del doc["summary"]["scope"]
    (tmp_path / "calibration.json").write_text(json.dumps(doc))
    assert load_summary(tmp_path).scope == "runner class (2 GPUs)"


def test_a_written_calibration_reads_back_as_its_summary(tmp_path):
    c = cal([row("mid", 20.0, {"0.02": True})])
    c.write(tmp_path / "calibration.json")
    assert load_summary(tmp_path) == c.summary() == load_summary(tmp_path / "calibration.json")


@pytest.mark.parametrize("body,error,fragment", [
    (None, UsageError, "cannot read the calibration"),
    ("{", UsageError, "not JSON"),
    (json.dumps({"schema": 1}), UsageError, "not a tritongate calibration"),
    ('{"summary": ' + "[" * 100_000 + "]" * 100_000 + "}", UsageError, "not JSON"),  # was RecursionError, exit 4
    (json.dumps({"schema": 0, "kind": "tritongate-calibration"}), SchemaVersionError, "calibrate again"),
    (json.dumps({"schema": 3, "kind": "tritongate-calibration"}), SchemaVersionError, "upgrade tritongate"),
    (json.dumps({"schema": 1, "kind": "tritongate-calibration"}), UsageError, "summary"),
    (json.dumps({"schema": 2, "kind": "tritongate-calibration", "summary": {"created_utc": "x"}}), UsageError,
     "summary"),
    (json.dumps({"schema": 2, "kind": "tritongate-calibration", "summary": {
        "created_utc": "x", "device": "d", "aa_rows": "102", "aa_false": 0, "fraction": 0.02, "caught": 1,
        "planted_rows": 1}}), UsageError, "aa_rows"),
])
def test_a_bad_calibration_file_is_one_line_naming_it(tmp_path, body, error, fragment):
    path = tmp_path / "calibration.json"
    if body is not None:
        path.write_text(body)
    with pytest.raises(error) as err:
        load_summary(path)
    assert str(path) in str(err.value) and fragment in str(err.value)


def test_a_calibration_with_a_bad_row_is_one_line_not_a_crash(tmp_path):
    from tritongate.model.calibration import load_calibration

    c = cal([row("mid", 20.0, {"0.02": True})])
    doc = c.to_dict()
    doc["rows"][0]["aa_effects"] = ["x"]
    (tmp_path / "calibration.json").write_text(json.dumps(doc))
    with pytest.raises(UsageError, match=r"calibration.json: rows\[0\].aa_effects\[0\]: expected a number, got the text "
                                         r"'x'; not a complete calibration: calibrate again"):
        load_calibration(tmp_path)
    doc["summary"]["caught"] = 10
    (tmp_path / "calibration.json").write_text(json.dumps(doc))
    with pytest.raises(UsageError, match="more false verdicts or catches than rows"):
        load_summary(tmp_path)


def test_a_row_without_its_kernel_time_is_refused_when_read_back(tmp_path):
    """A null kernel_us was read as a row of no size class (a crash later, in the report)."""
    from tritongate.model.calibration import load_calibration

    doc = cal([row("mid", 20.0, {"0.02": True})]).to_dict()
    doc["rows"][0]["kernel_us"] = None
    (tmp_path / "calibration.json").write_text(json.dumps(doc))
    with pytest.raises(UsageError, match=r"rows\[0\].kernel_us: expected a number, got null; not a complete calibration"):
        load_calibration(tmp_path)


def test_a_schema_1_calibration_is_still_cited(tmp_path):
    """Its summary has the fields a verdict cites: an upgrade does not stop every gate run."""
    summary = {"created_utc": "2026-11-30T05:00:00+00:00", "device": "NVIDIA H200", "aa_rows": 102, "aa_false": 0,
               "fraction": 0.02, "caught": 33, "planted_rows": 34}
    (tmp_path / "calibration.json").write_text(json.dumps({"schema": 1, "kind": "tritongate-calibration",
                                                            "summary": summary}))
    assert load_summary(tmp_path) == CalibrationSummary(**summary, unplanted=0)


def test_a_size_whose_plants_measured_off_it_is_not_judged_at_that_size():
    """The H200's "2 %" plants on rows < 10 µs measured 2.67 % (the aim ran in the other launch
    state): such catches were shown at that size, not at 2 %."""
    def measured(us, effect):
        return RowCalibration(op="add", case="8", dtype="float16", kernel_us=us, zero_us=us, aa_verdicts=("UNCHANGED",),
                              aa_effects=(0.0,), detectable=0.01,
                              planted={"0.02": PlantedOutcome(10, "REGRESSED", effect), "0.05": PlantedOutcome(
                                  20, "REGRESSED", 0.05)})
    c = cal([measured(20.0, 0.0267), measured(30.0, 0.0260), measured(40.0, 0.0290)])
    rate = c.rate(0.02)
    assert rate.measured == pytest.approx(0.0267) and rate.on_size is False
    goal = c.goals()[0]
    assert goal.met is None and goal.text().endswith("not judged: the plants measured 2.67% (median), outside "
                                                     "±25 % of 2%")
    assert c.to_dict()["catch"]["0.02"]["on_size"] is False and c.goals()[1].met is True
    assert cal([measured(20.0, 0.024)]).rate(0.02).on_size is True  # within ±25 %


@pytest.mark.parametrize("field, value, fragment", [
    ("kernel_us", True, "rows[0].kernel_us: expected a number, got true"),
    ("aa_verdicts", "REGRESSED", "rows[0].aa_verdicts: expected a list"),
    ("aim", {"missed": 3}, "its aim's missed sizes are not an object"),
])
def test_a_calibration_read_back_is_strict(tmp_path, field, value, fragment):
    """The dataclasses are the file's model: a boolean is not a time, text is not a list."""
    from tritongate.model.calibration import load_calibration

    c = cal([row("mid", 20.0, {"0.02": True})])
    assert load_calibration(c.write(tmp_path / "calibration.json")) == c  # the derived keys are not read back
    doc = c.to_dict()
    doc["rows"][0][field] = value
    (tmp_path / "calibration.json").write_text(json.dumps(doc))
    with pytest.raises(UsageError) as err:
        load_calibration(tmp_path)
    assert fragment in str(err.value) and "calibrate again" in str(err.value)


def test_a_calibration_its_readers_would_refuse_is_never_written(tmp_path):
    """The writer checks the file with the model load_calibration reads it with."""
    import dataclasses

    good = row("mid", 20.0, {"0.02": True})
    bad = cal([dataclasses.replace(good, aa_verdicts=(1,))])  # a verdict that is not a word
    with pytest.raises(ValueError, match=r"rows\[0\]\.aa_verdicts"):
        bad.write(tmp_path / "calibration.json")
    assert not (tmp_path / "calibration.json").exists()
