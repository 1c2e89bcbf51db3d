"""The planted-delay knob: its plan file, what a bad one says, the interpreter's host spin."""

from __future__ import annotations

import json
import time

import pytest

from tritongate.errors import UsageError
from tritongate.ops.planting import (PLANTED_DELAY_ENV, Plant, host_delayed, load_plan, planted, active, row_key,
                                 write_plan)


def test_a_plan_round_trips_and_answers_per_row(tmp_path):
    path = write_plan(tmp_path / "plan.json", 0.02, {row_key("add", "4096", "float32"): 40, "matmul/16x8x8/float16": 900})
    plan = load_plan({PLANTED_DELAY_ENV: str(path)})
    assert plan.fraction == 0.02 and plan.delay_for("add", "4096", "float32") == 40
    assert plan.delay_for("add", "4096", "bfloat16") is None
    assert plan.identity() == {"file": str(path), "sha256": plan.sha256, "fraction": 0.02, "rows": 2}
    assert load_plan({}) is None and load_plan({PLANTED_DELAY_ENV: "  "}) is None


@pytest.mark.parametrize("body,fragment", [
    (None, "cannot read it"),
    ("{not json", "not JSON"),
    (json.dumps({"schema": 2, "fraction": 0.02, "delays_ns": {}}), "expected {\"schema\": 1"),
    (json.dumps({"schema": 1, "fraction": True, "delays_ns": {}}), "expected {\"schema\": 1"),
    (json.dumps({"schema": 1, "fraction": 1.5, "delays_ns": {}}), "fraction 1.5 is not in [0, 1)"),
    (json.dumps({"schema": 1, "fraction": 0.02, "delays_ns": {"add/4096/float32": -5}}), "expected whole nanoseconds"),
    (json.dumps({"schema": 1, "fraction": 0.02, "delays_ns": {"add/4096/float32": 2.5}}), "expected whole nanoseconds"),
    (json.dumps({"schema": 1, "fraction": 0.02, "delays_ns": {"add/4096/float32": 10**10}}), "0..1000000000"),
])
def test_a_bad_plan_is_one_usage_error_naming_the_variable(tmp_path, body, fragment):
    path = tmp_path / "plan.json"
    if body is not None:
        path.write_text(body)
    with pytest.raises(UsageError) as err:
        load_plan({PLANTED_DELAY_ENV: str(path)})
    assert str(err.value).startswith(f"{PLANTED_DELAY_ENV}={path}: ") and fragment in str(err.value)


def test_a_bad_plan_stops_a_run_before_its_first_row(tmp_path, monkeypatch, capsys):
    from tritongate.cli import main

    (tmp_path / "plan.json").write_text("[]")
    monkeypatch.setenv(PLANTED_DELAY_ENV, str(tmp_path / "plan.json"))
    assert main(["run", "--suite", "smoke", "--ops", "add", "--backend", "cpu", "--out", str(tmp_path / "runs"),
                 "--color", "never"]) == 2
    assert f"{PLANTED_DELAY_ENV}=" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())  # no run directory left


def test_the_host_spin_follows_each_launch_and_a_device_plant_is_left_to_the_kernel():
    calls = []
    launch = host_delayed(lambda: calls.append(1), Plant(2_000_000))
    t0 = time.perf_counter_ns()
    launch()
    assert calls == [1] and time.perf_counter_ns() - t0 >= 2_000_000
    plain = lambda: None  # noqa: E731
    assert host_delayed(plain, None) is plain and host_delayed(plain, Plant(5, in_kernel=True, cycles=10)) is plain


def test_builders_see_the_plant_only_inside_the_block():
    plant = Plant(7)
    assert active() is None
    with planted(plant):
        assert active() is plant
    assert active() is None


def test_a_plan_naming_a_row_of_an_op_that_cannot_plant_fails_that_row(tmp_path):
    from tritongate.backends import BACKENDS
    from tritongate.ops.registry import Case, OpSpec, Registry
    from tritongate.preflight import PlannedRow
    from tritongate.rowcase import prepare_row

    registry = Registry()
    registry.register(OpSpec("mine", "a user op", "[n]", (1,), ("float32",),
                             lambda s, d, dev, g: Case(lambda: None, lambda: None, lambda: None, ()),
                             bytes=lambda s, e: 0.0))
    plan = load_plan({PLANTED_DELAY_ENV: str(write_plan(tmp_path / "p.json", 0.05, {"mine/8/float32": 100}))})
    with pytest.raises(ValueError, match="mine cannot plant a delay .*only builtin ops can"):
        prepare_row(PlannedRow("mine", (8,), "float32"), BACKENDS["cpu"], None, registry=registry, plan=plan)


@pytest.mark.parametrize("knob,text", [
    ({"planted_delay": {"file": "p.json", "sha256": "x", "fraction": 0.02, "rows": 3}},
     "TRITONGATE_PLANTED_DELAY, fraction 0.02"),
    ({"planted_work": 2}, "TRITONGATE_PLANTED_WORK=2"),
])
def test_a_planted_run_is_never_published_and_a_gate_says_what_it_is(tmp_path, knob, text):
    from tritongate.baselines.manifest import BaselineError
    from tritongate.baselines.publishing import publish
    from tritongate.gate.policy import GatePolicy
    from tritongate.gate.verdict import run_gate
    from tritongate.rundir import load_run

    from tests.baselines.test_store import make_record

    planted = make_record(tmp_path / "planted", identity=knob)
    with pytest.raises(BaselineError, match=rf"planted run \({text}\).*unset the variable"):
        publish(tmp_path / "store", planted, runner_class="h200")
    plain = make_record(tmp_path / "plain")
    result = run_gate(load_run(plain), load_run(planted), GatePolicy())
    assert any(n.startswith(f"the candidate is a planted run ({text})") for n in result.notes), result.notes
    plain2 = make_record(tmp_path / "plain2")
    assert not any("planted" in n for n in run_gate(load_run(plain), load_run(plain2), GatePolicy()).notes)


def test_a_single_run_records_the_whole_launch_knob_in_its_identity(tmp_path, monkeypatch, capsys):
    import json

    from tritongate.cli import main

    monkeypatch.setenv("TRITONGATE_PLANTED_WORK", "2")
    assert main(["run", "--suite", "smoke", "--ops", "add", "--dtypes", "float32", "--backend", "cpu",
                 "--out", str(tmp_path), "--color", "never"]) == 0
    (run,) = tmp_path.glob("smoke_*")
    assert json.loads((run / "run_identity.json").read_text())["planted_work"] == 2
