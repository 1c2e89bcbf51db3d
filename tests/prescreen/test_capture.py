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
