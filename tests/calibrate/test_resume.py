"""Resuming a calibration: the remaining steps are measured as the finished ones were."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tritongate.calibrate.resume import MEASURE, keep_measurement
from tritongate.calibrate.run import run_calibration
from tritongate.errors import UsageError
from tritongate.gate.policy import GatePolicy
from tritongate.pair.orchestrator import PairRequest


def _template(tmp_path: Path, **kw) -> PairRequest:
    return PairRequest(baseline=tmp_path / "baseline", suite="scripted", out=tmp_path / "unused", **kw)


def _stopped(tmp_path: Path, out: Path, template: PairRequest) -> list[str]:
    """run_calibration stopped (Ctrl-C) in its first step; the steps it was asked to run."""
    asked: list[str] = []

    def run(request):
        asked.append(Path(request.out).name)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_calibration(template, suite="scripted", out=out, fractions=(0.05,), aa_runs=1, run=run,
                        log=lambda _: None, plantable=frozenset({"add"}))
    return asked


def test_a_resume_with_other_measurement_options_is_refused_before_any_step_runs(tmp_path):
    """Started with --max-rounds 40 and stopped; a plain --resume (the default schedule) would
    measure the remaining steps on another schedule and mix them in one calibration."""
    out = tmp_path / "cal"
    out.mkdir()
    started = _template(tmp_path, schedule_overrides={"max_rounds": 40}, policy=GatePolicy(min_effect=0.005))
    assert _stopped(tmp_path, out, started) == ["aa-1"]
    assert (out / MEASURE).is_file()
    with pytest.raises(UsageError) as caught:
        _stopped(tmp_path, out, _template(tmp_path))
    message = str(caught.value)
    assert "--max-rounds: 40 then, None now" in message and "--min-effect: 0.005 then, 0.01 now" in message
    assert str(out / MEASURE) in message and "start a new calibration" in message
    assert _stopped(tmp_path, out, started) == ["aa-1"]  # the same options: it goes on


def test_the_measurement_file_reads_back_equal_and_a_damaged_one_is_named(tmp_path):
    template = _template(tmp_path, config_overrides={"rounds": 8, "l2": "flush"}, row_timeout_s=30.0)
    keep_measurement(tmp_path, template)
    keep_measurement(tmp_path, template)  # equal after a JSON round trip
    with pytest.raises(UsageError, match=r"--rounds: 8 then, 9 now"):
        keep_measurement(tmp_path, replace(template, config_overrides={"rounds": 9, "l2": "flush"}))
    (tmp_path / MEASURE).write_text("{", encoding="utf-8")
    with pytest.raises(UsageError, match=r"measure\.json is damaged"):
        keep_measurement(tmp_path, template)


def test_a_second_calibrate_in_the_same_folder_is_refused_while_the_first_works(tmp_path):
    """Two `--resume` of one folder would run the same steps at once, timing each other's rows
    on one device; the second is refused before it measures anything."""
    import fcntl
    import os

    from tritongate.calibrate.resume import LOCK

    out = tmp_path / "cal"
    out.mkdir()
    fd = os.open(out / LOCK, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the first calibrate, still working
        with pytest.raises(UsageError, match="another tritongate calibrate process is working in"):
            _stopped(tmp_path, out, _template(tmp_path))
    finally:
        os.close(fd)
    assert _stopped(tmp_path, out, _template(tmp_path)) == ["aa-1"]  # once it has stopped
