import json

from tritongate.cli import main

from tests.gate.helpers import pair, row


def test_gate_pass_is_exit_0_and_prints_where_the_verdict_is(tmp_path, capsys):
    base, cand = pair(tmp_path, [row()], [row(seed=1)])
    assert main(["gate", str(base.path), str(cand.path), "--out", str(tmp_path / "v")]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[0].startswith("✅ no regressions (1 rows: 1 compared, 0 missing, 0 new)")
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


def test_the_whole_loop_on_the_cpu(tmp_path, capsys):
    """loop = record, then the paired check of this build against itself, then the gate."""
    from tritongate.rundir import load_run

    assert main(["loop", "--suite", "smoke", "--backend", "cpu", "--out", str(tmp_path), "--color", "never"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    paths = {line.split(":", 1)[0]: line.split(":", 1)[1].strip() for line in out
             if line.split(":", 1)[0] in ("record", "base", "candidate", "verdict")}
    assert any(line.startswith("✅ no regressions (8 rows: 8 compared, 0 missing, 0 new)") for line in out)
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
