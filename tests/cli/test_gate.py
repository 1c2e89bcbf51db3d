import json
import re

import pytest

from tritongate.model.calibration import CALIBRATION_ENV
from tritongate.cli import main

from tests.gate.helpers import CALIBRATION, calibration_file, pair, row


def test_gate_pass_is_exit_0_and_prints_where_the_verdict_is(tmp_path, capsys):
    base, cand = pair(tmp_path, [row()], [row(seed=1)])
    assert main(["gate", str(base.path), str(cand.path), "--out", str(tmp_path / "v")]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    # two stored runs cannot resolve 1 %: no regression, but not a plain ✅ (unpaired timing)
    assert out[0].startswith("⚠️ No regression found; 1 row could not resolve")
    assert out[-2] == str(tmp_path / "v" / "verdict.md") and out[-1] == str(tmp_path / "v" / "verdict.json")


def test_regression_is_exit_1(tmp_path, capsys):
    base, cand = pair(tmp_path, [row()], [row(median=23, seed=1)])
    assert main(["gate", str(base.path), str(cand.path), "--out", str(tmp_path / "v")]) == 1
    out = capsys.readouterr().out
    assert "REGRESSED" in out and "+15." in out
    assert json.loads((tmp_path / "v" / "verdict.json").read_text())["exit_code"] == 1


def test_min_effect_flag_and_policy_file(tmp_path, capsys):
    base, cand = pair(tmp_path, [row()], [row(median=21, seed=1)])  # +5%
    assert main(["gate", str(base.path), str(cand.path), "--out", str(tmp_path / "a"), "--min-effect", "0.1"]) == 0
    policy = tmp_path / "gate.yaml"
    policy.write_text("min_effect: 0.01\nops: {softmax: {min_effect: 0.2}}\n")
    assert main(["gate", str(base.path), str(cand.path), "--out", str(tmp_path / "b"), "--policy", str(policy)]) == 0
    policy.write_text("ops: [softmax]\n")
    assert main(["gate", str(base.path), str(cand.path), "--out", str(tmp_path / "c"), "--policy", str(policy)]) == 2
    assert "gate.yaml: ops: expected a mapping, got a list ['softmax'] (a policy holds" in capsys.readouterr().err


def test_incomparable_runs_are_exit_2_with_the_fix(tmp_path, capsys):
    base, cand = pair(tmp_path, [row()], [row(seed=1)], cand_identity={"device": "NVIDIA H100"})
    assert main(["gate", str(base.path), str(cand.path), "--out", str(tmp_path / "v")]) == 2
    err = capsys.readouterr().err
    assert "GPU model: base 'NVIDIA H200', candidate 'NVIDIA H100'" in err and "--allow-mismatch" in err
    assert main(["gate", str(base.path), str(cand.path), "--out", str(tmp_path / "v"), "--allow-mismatch",
                 "--strict"]) == 1


def test_missing_or_incomplete_run_is_exit_2(tmp_path, capsys):
    base, _ = pair(tmp_path, [row()], [row(seed=1)])
    assert main(["gate", str(base.path), str(tmp_path / "nope"), "--out", str(tmp_path / "v")]) == 2
    assert "not a directory" in capsys.readouterr().err
    results = base.path / "results.json"
    doc = json.loads(results.read_text())
    doc["status"] = "running"
    results.write_text(json.dumps(doc))
    assert main(["gate", str(base.path), str(base.path), "--out", str(tmp_path / "v")]) == 2
    assert "incomplete" in capsys.readouterr().err


@pytest.mark.slow
def test_the_whole_loop_on_the_cpu(tmp_path, capsys):
    """loop = record, then the paired check of this build against itself, then the gate."""
    from tritongate.rundir import load_run

    assert main(["loop", "--suite", "smoke", "--backend", "cpu", "--out", str(tmp_path), "--color", "never"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    paths = {line.split(":", 1)[0]: line.split(":", 1)[1].strip() for line in out
             if line.split(":", 1)[0] in ("record", "base", "candidate", "verdict")}
    # an A/A check: no regression. The interpreter's noise is far above 1 %, so most rows could
    # not resolve it; how many did depends on the host's timing, which a test must not pin
    headline = re.compile(r"(⚠️ No regression found; [1-8] rows? could not resolve 1 %|✅ No regression in 8 rows)$")
    assert sum(bool(headline.match(line)) for line in out) == 1, out
    # the summary first, then the folders it wrote: the record with the pair's run directories
    order = [next(i for i, line in enumerate(out) if line.startswith(key) or (key == "headline" and headline.match(line)))
             for key in ("8 rows (", "headline", "record:", "base:", "candidate:", "verdict:")]
    assert order == sorted(order) and order[-1] == len(out) - 1
    record, base, cand = load_run(paths["record"]), load_run(paths["base"]), load_run(paths["candidate"])
    assert record.mode == "record" and base.mode == cand.mode == "replay"
    assert base.identity["replay_from"] == str(record.path.resolve())
    # the cpu default gives each side at least the gate's minimum sample count, paired
    for b, c in zip(base.rows, cand.rows):
        assert len(b.samples) >= 10 and len(c.samples) >= 10
        assert b.measurement.pairing.pair_id == c.measurement.pairing.pair_id
    text = open(paths["verdict"]).read()
    assert text.startswith("<!-- tritongate-verdict -->") and "paired" in text


def test_a_run_gated_against_itself_is_refused(tmp_path, capsys):
    from tests.gate.helpers import write_run, row

    run = write_run(tmp_path / "pr_20261129T120000Z", [row()])
    assert main(["gate", str(run.path), str(run.path) + "/", "--out", str(tmp_path / "v")]) == 2
    assert "both the base and the candidate" in capsys.readouterr().err


def test_a_moved_base_run_is_still_recognised_as_the_replayed_one(tmp_path):
    import shutil

    from tritongate.gate.policy import GatePolicy
    from tritongate.gate.verdict import run_gate
    from tritongate.rundir import load_run
    from tests.gate.helpers import pair, row

    base, cand = pair(tmp_path / "ci", [row()], [row(seed=1)])
    moved = shutil.move(str(base.path), str(tmp_path / base.path.name))  # an artifact, downloaded
    result = run_gate(load_run(moved), cand, GatePolicy())
    assert not any("not this base run" in n for n in result.notes)


CALIBRATED = ("<sub>Calibrated on this runner 2026-11-30 (`tritongate calibrate`): 0 false verdicts in 102 A/A "
              "rows; a 2% slowdown caught on 33 of 34 rows.</sub>")


@pytest.fixture
def no_calibration_env(monkeypatch):
    monkeypatch.delenv(CALIBRATION_ENV, raising=False)


def test_gate_cites_the_calibration_in_the_footer(tmp_path, capsys, no_calibration_env):
    base, cand = pair(tmp_path, [row()], [row(seed=1)])
    cal = calibration_file(tmp_path / "cal")
    for name, given in (("file", cal), ("folder", cal.parent)):
        out = tmp_path / name
        assert main(["gate", str(base.path), str(cand.path), "--out", str(out), "--calibration", str(given)]) == 0
        assert CALIBRATED in (out / "verdict.md").read_text()
        assert json.loads((out / "verdict.json").read_text())["calibration"] == CALIBRATION
    assert main(["gate", str(base.path), str(cand.path), "--out", str(tmp_path / "none")]) == 0
    assert "Calibrated" not in (tmp_path / "none" / "verdict.md").read_text()
    assert json.loads((tmp_path / "none" / "verdict.json").read_text())["calibration"] is None
    capsys.readouterr()


def test_the_calibration_env_var_is_used_when_the_option_is_absent(tmp_path, capsys, monkeypatch):
    base, cand = pair(tmp_path, [row()], [row(seed=1)])
    monkeypatch.setenv(CALIBRATION_ENV, str(calibration_file(tmp_path / "cal").parent))
    assert main(["gate", str(base.path), str(cand.path), "--out", str(tmp_path / "env")]) == 0
    assert CALIBRATED in (tmp_path / "env" / "verdict.md").read_text()
    # the option wins over the variable
    other = calibration_file(tmp_path / "other", device="NVIDIA H100")
    assert main(["gate", str(base.path), str(cand.path), "--out", str(tmp_path / "opt"), "--calibration",
                 str(other)]) == 0
    assert "⚠️ Calibrated on NVIDIA H100, not this GPU (NVIDIA H200)," in (tmp_path / "opt" / "verdict.md").read_text()
    monkeypatch.setenv(CALIBRATION_ENV, "")  # empty: none
    assert main(["gate", str(base.path), str(cand.path), "--out", str(tmp_path / "empty")]) == 0
    assert json.loads((tmp_path / "empty" / "verdict.json").read_text())["calibration"] is None
    capsys.readouterr()


@pytest.mark.parametrize("content, words", [
    (None, "cannot read the calibration"),
    ("{", "not JSON"),
    ('{"schema": 1, "kind": "something-else"}', "not a tritongate calibration"),
    ('{"schema": 2, "kind": "tritongate-calibration", "summary": {"device": "x"}}', "summary"),
])
def test_a_bad_calibration_file_is_exit_2_naming_it(tmp_path, capsys, no_calibration_env, content, words):
    base, cand = pair(tmp_path, [row()], [row(seed=1)])
    path = tmp_path / "missing.json"
    if content is not None:
        path.write_text(content)
    code = main(["gate", str(base.path), str(cand.path), "--out", str(tmp_path / "v"), "--calibration", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and len(err.strip().splitlines()) == 1
    assert str(path) in err and words in err
    assert not (tmp_path / "v").exists()


@pytest.mark.parametrize("command", [
    ["pair", "{tmp}/record", "--suite", "smoke", "--backend", "cpu", "--out", "{tmp}/out"],
    ["loop", "--suite", "smoke", "--backend", "cpu", "--out", "{tmp}/out"],
    ["merge", "{tmp}/shard", "--out", "{tmp}/out"],
], ids=["pair", "loop", "merge"])
@pytest.mark.parametrize("how", ["option", "env"])
def test_a_bad_calibration_stops_every_verdict_before_anything_runs(tmp_path, capsys, monkeypatch, command, how):
    missing = tmp_path / "nowhere" / "calibration.json"
    argv = [a.format(tmp=tmp_path) for a in command]
    if how == "option":
        monkeypatch.delenv(CALIBRATION_ENV, raising=False)
        argv += ["--calibration", str(missing)]
    else:
        monkeypatch.setenv(CALIBRATION_ENV, str(missing))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and str(missing) in err and "tritongate calibrate" in err
    assert not (tmp_path / "out").exists()  # nothing recorded, measured or merged


def test_calibrate_takes_no_calibration(tmp_path, capsys, monkeypatch):
    """Its own verdicts are the calibration: no option, and the variable (which may name the
    file this very run is about to write) is not read."""
    assert main(["calibrate", "--help"]) == 0
    assert "--calibration" not in capsys.readouterr().out
    missing = tmp_path / "nowhere" / "calibration.json"
    monkeypatch.setenv(CALIBRATION_ENV, str(missing))
    code = main(["calibrate", "--baseline", str(tmp_path / "no-record"), "--suite", "smoke", "--backend", "cpu",
                 "--out", str(tmp_path / "out"), "--color", "never"])
    err = capsys.readouterr().err
    # it got as far as checking --baseline (a usage error naming it), never reading the variable
    assert code == 2 and "--baseline" in err and "no-record" in err and str(missing) not in err
    assert not (tmp_path / "out").exists()
