"""A build's capture that stops with exit 2: before its run directory exists the suite or
record was refused (bad input, exit 2 naming --suite); after, no row ran under that build
(an older Triton's interpreter, say), so the capture failed and its rows are timed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tritongate.errors import UsageError
from tritongate.prescreen import respecialize


def _capture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, started: bool):
    def run_both(commands, logs, timeout_s):
        if started:  # the candidate's run began (its identity written), then measured nothing
            run = tmp_path / "capture-cand" / "smoke_1"
            run.mkdir(parents=True)
            (run / "run_identity.json").write_text("{}")
        return {"base": 0, "cand": 2}, {}

    monkeypatch.setattr(respecialize, "run_both", run_both)
    return respecialize.capture_both({"base": "py", "cand": "py"}, tmp_path, "smoke", [], tmp_path, "cuda:90", str(tmp_path / "lead"))


def test_exit_2_before_the_run_started_is_a_refused_suite(tmp_path, monkeypatch) -> None:
    with pytest.raises(UsageError, match="name the baseline's suite with --suite"):
        _capture(tmp_path, monkeypatch, started=False)


def test_exit_2_after_the_run_started_is_a_failed_capture(tmp_path, monkeypatch) -> None:
    runs, _ = _capture(tmp_path, monkeypatch, started=True)
    assert runs["cand"] is None


def test_a_record_of_its_own_shape_file_is_captured_on_its_own_shapes(tmp_path: Path) -> None:
    """A record made with ``--shape-file`` holds rows its suite lacks: the capture replays the
    record's shapes.yaml, as ``pair`` does, so its rows are screened (with the suite's shapes its
    ``--only-rows`` named rows the suite lacks, and that build's whole capture failed)."""
    import json
    import os
    import subprocess
    import sys

    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("add:\n  shapes: [[2048]]\n")
    rec = subprocess.run([sys.executable, "-m", "tritongate", "run", "--suite", "smoke", "--backend", "cpu",
                          "--ops", "add", "--dtypes", "float32", "--shape-file", str(shapes),
                          "--out", str(tmp_path / "rec"), "--color", "never"],
                         capture_output=True, text=True, timeout=300)
    assert rec.returncode == 0, rec.stderr
    record = Path(rec.stdout.strip().splitlines()[-1])
    rows = [("add", "2048", "float32")]  # not a shape of the smoke suite's add
    cmd, env = respecialize.capture_cmd(sys.executable, record, "smoke", rows, tmp_path / "capture-cand",
                                        "cuda:90", os.getcwd())
    assert cmd[cmd.index("--shape-file") + 1] == str(record / "shapes.yaml")
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    captured = Path(run.stdout.strip().splitlines()[-1])
    doc = json.loads((captured / "results.json").read_text())
    assert [(r["op"], r["case"], r["dtype"]) for r in doc["rows"]] == rows
