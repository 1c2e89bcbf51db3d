"""Per-op minimum effects from a calibration: derived from the A/A noise, never raised
silently, written into the policy file's ops: block with every other line kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from tritongate.model.calibration import Calibration, RowCalibration, load_calibration
from tritongate.calibrate.thresholds import derive, rewrite_ops_block, write_thresholds
from tritongate.cli import main
from tritongate.errors import UsageError
from tritongate.gate.policy import default_policy_file, load_policy


def row(op: str, effects: tuple[float, ...], case: str = "4096") -> RowCalibration:
    return RowCalibration(op=op, case=case, dtype="float16", kernel_us=2.0, zero_us=2.0,
                          aa_verdicts=("UNCHANGED",) * len(effects), aa_effects=effects, detectable=0.01)


CAL = Calibration(created_utc="2026-11-30T05:00:00+00:00", suite="pr",
                  runner={"device": "NVIDIA H200", "backend": "cuda"},
                  fractions=(0.02,), steps=(),
                  rows=(row("add", (0.001, -0.013)), row("add", (0.004,), case="1048576"),
                        row("matmul", (0.003, 0.006)), row("softmax", (0.0,))))


def test_an_ops_threshold_is_its_largest_aa_effect_with_margin_rounded_up():
    # add: 1.3 % x 1.5 = 1.95 % -> 2 %; matmul: 0.6 % x 1.5 = 0.9 % -> 1 %, the default is enough
    assert derive(CAL, 0.01) == {"add": (0.02, "A/A -1.30% on 4096 float16"),
                                 "matmul": (0.01, "A/A +0.60% on 4096 float16 (the default is enough)"),
                                 "softmax": (0.01, "no A/A effect (the default is enough)")}
    assert derive(CAL, 0.005)["matmul"] == (0.01, "A/A +0.60% on 4096 float16")


def _policy(tmp_path: Path) -> Path:
    path = tmp_path / "gate.yaml"
    path.write_text(default_policy_file().read_text())
    return path


def test_a_raise_is_refused_and_listed_unless_allowed(tmp_path):
    path = _policy(tmp_path)
    before = path.read_text()
    with pytest.raises(UsageError, match=r"would raise 1 minimum effect.*add: 1.0% -> 2.0% raised .*--allow-loosen"):
        write_thresholds(CAL, path, allow_loosen=False)
    assert path.read_text() == before
    changes = write_thresholds(CAL, path, allow_loosen=True)
    assert [(c.op, c.old, c.new) for c in changes] == [("add", 0.01, 0.02)]
    after = path.read_text()
    # the file keeps its text; only the ops block changed, the entry says where it came from
    assert after.replace("ops:\n  add: {min_effect: 0.02}  # calibration 2026-11-30 on NVIDIA H200 (cuda): A/A -1.30% on 4096 float16",
                         "ops: {}") == before
    assert load_policy(path).op_min_effect == {"add": 0.02}
    assert write_thresholds(CAL, path, allow_loosen=False) == []  # nothing left to change


def test_other_entries_and_their_comments_are_kept_and_a_lowering_needs_no_flag(tmp_path):
    path = tmp_path / "gate.yaml"
    path.write_text("min_effect: 0.01\nops:\n  # launch-bound\n  add:\n    min_effect: 0.05\n"
                    "  attention: {min_effect: 0.03}  # chosen by hand\n# tail comment\n")
    changes = write_thresholds(CAL, path, allow_loosen=False)  # add 5 % -> 2 % is a lowering
    assert [(c.op, c.loosens) for c in changes] == [("add", False)]
    assert path.read_text() == ("min_effect: 0.01\nops:\n  # launch-bound\n"
                                "  add: {min_effect: 0.02}  # calibration 2026-11-30 on NVIDIA H200 (cuda): A/A -1.30% on "
                                "4096 float16\n"
                                "  attention: {min_effect: 0.03}  # chosen by hand\n# tail comment\n")
    assert load_policy(path).op_min_effect == {"add": 0.02, "attention": 0.03}


def test_a_flow_mapping_ops_line_and_an_op_name_that_needs_quoting():
    text = rewrite_ops_block("min_effect: 0.01\nops: {add: {min_effect: 0.02}}\n", {"add": 0.02},
                             {"my: op": (0.03, "c")})
    assert text == "min_effect: 0.01\nops:\n  add: {min_effect: 0.02}\n  'my: op': {min_effect: 0.03}  # c\n"


def test_thresholds_from_an_earlier_calibration_without_measuring(tmp_path, capsys):
    CAL.write(tmp_path / "calibration.json")
    assert load_calibration(tmp_path).rows == CAL.rows
    path = _policy(tmp_path)
    assert main(["calibrate", "--from", str(tmp_path), "--write-thresholds", str(path)]) == 2
    assert "--allow-loosen" in capsys.readouterr().err
    assert main(["calibrate", "--from", str(tmp_path), "--write-thresholds", str(path), "--allow-loosen"]) == 0
    out = capsys.readouterr().out
    assert "threshold add: 1.0% -> 2.0% raised (less sensitive)" in out and "1 per-op minimum effect changed" in out
    assert main(["calibrate", "--from", str(tmp_path)]) == 2
    assert "--from needs --write-thresholds" in capsys.readouterr().err


def test_an_entry_above_what_the_noise_needs_is_lowered_to_the_default(tmp_path):
    path = tmp_path / "gate.yaml"
    path.write_text("min_effect: 0.01\nops:\n  matmul: {min_effect: 0.05}\n")
    changes = write_thresholds(CAL, path, allow_loosen=True)
    assert [(c.op, c.old, c.new, c.loosens) for c in changes] == [("add", 0.01, 0.02, True),
                                                                  ("matmul", 0.05, 0.01, False)]
    assert load_policy(path).op_min_effect == {"add": 0.02, "matmul": 0.01}


@pytest.mark.parametrize("device", ["host\nnoise_z: 99.0  #", "host\rnoise_z: 99.0", "host\u2028noise_z: 99.0",
                                    "host\x85min_effect: 0.5", "a\n\nops:\n  add: {min_effect: 0.9}"])
@pytest.mark.parametrize("short", [True, False], ids=["minimal-policy", "default-policy"])
def test_a_string_from_the_calibration_cannot_add_a_policy_key(tmp_path, device, short):
    cal = Calibration(created_utc=CAL.created_utc, suite="pr", runner={"device": device, "backend": "cuda"},
                      fractions=CAL.fractions, steps=(), rows=CAL.rows)
    path = _policy(tmp_path)
    if short:  # no noise_z of its own: an injected one would not even be a repeated key
        path.write_text("min_effect: 0.01\nops: {}\n")
    before = load_policy(path)
    write_thresholds(cal, path, allow_loosen=True)
    after = load_policy(path)
    assert (after.noise_z, after.min_effect, after.min_samples) == (before.noise_z, before.min_effect, before.min_samples)
    assert after.op_min_effect == {"add": 0.02}
    assert "noise_z: 99" not in path.read_text().replace("#", "\n#").split("\n#")[0]


def test_a_rewrite_that_changes_anything_but_the_ops_entries_is_refused(tmp_path, monkeypatch):
    import tritongate.calibrate.thresholds as th

    path = tmp_path / "gate.yaml"
    path.write_text("min_effect: 0.01\nops: {}\n")
    before = path.read_text()
    real = th.rewrite_ops_block
    monkeypatch.setattr(th, "rewrite_ops_block", lambda *a: real(*a) + "noise_z: 99.0\n")
    with pytest.raises(UsageError, match=r"did not read back as written.*noise_z"):
        write_thresholds(CAL, path, allow_loosen=True)
    assert path.read_text() == before


def test_an_aa_effect_no_threshold_can_hold_is_refused_naming_the_row_not_a_crash(tmp_path):
    # a hand-edited or damaged calibration.json: 1e306 * MARGIN / STEP overflowed in math.ceil
    # (OverflowError, exit 4, `calibrate --from`)
    wild = Calibration(created_utc=CAL.created_utc, suite="pr", runner=CAL.runner, fractions=(0.02,), steps=(),
                       rows=(row("add", (1e306,)),))
    with pytest.raises(UsageError, match=r"add 4096 float16.*A/A effect"):
        derive(wild, 0.01)
    # a policy holds fractions below 1: an op noisier than that (the interpreter's ±100 %) is named, not
    # written as a policy no gate can read back
    for effect, refused in ((0.66, False), (0.667, True), (1.5, True)):
        noisy = Calibration(created_utc=CAL.created_utc, suite="pr", runner=CAL.runner, fractions=(0.02,), steps=(),
                            rows=(row("add", (effect,)),))
        if refused:
            with pytest.raises(UsageError, match=r"add 4096 float16: A/A effect .* 100 % or more"):
                derive(noisy, 0.01)
        else:
            assert derive(noisy, 0.01)["add"][0] == 0.99
    path = _policy(tmp_path)
    wild.write(tmp_path / "calibration.json")
    assert main(["calibrate", "--from", str(tmp_path), "--write-thresholds", str(path), "--allow-loosen"]) == 2
