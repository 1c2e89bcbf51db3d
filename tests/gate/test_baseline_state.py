"""The baseline lookup in the verdict: a healthy baseline is one quiet line; a stale,
mismatched or missing one is a warning with the command that refreshes it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.gate.helpers import pair, row
from tritongate.cli import main


def state_file(tmp_path: Path, **fields) -> Path:
    doc = {"schema_version": 1, "state": "ok", "reason": "newest good entry", "refresh":
           "python ci/record_baseline.py --suite pr --out runs --publish baselines --runner-class h200",
           "record": "/store/h200/pr/nvidia-h200/20261129T0200Z-abc", "age_days": 1.25,
           "entry": {"record_path": "h200/pr/nvidia-h200/20261129T0200Z-abc"}, **fields}
    path = tmp_path / "lookup.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("state, expect", [
    ("ok", "Baseline: h200/pr/nvidia-h200/20261129T0200Z-abc, 1.2 days old"),
    ("stale", "⚠️ Baseline stale: newest good entry. Refresh it: python ci/record&#95;baseline.py"),
    ("missing", "⚠️ Baseline missing: newest good entry. Refresh it:"),
])
def test_the_lookup_is_shown_at_the_top_of_the_verdict(tmp_path: Path, capsys, state: str, expect: str) -> None:
    base, cand = pair(tmp_path, [row(seed=1)], [row(seed=2)])
    out = tmp_path / "v"
    assert main(["gate", str(base.path), str(cand.path), "--out", str(out),
                 "--baseline-state", str(state_file(tmp_path, state=state, record=str(base.path)))]) == 0
    md = (out / "verdict.md").read_text()
    head = md.split("###")[0]
    assert expect.replace("record&#95;baseline", "record_baseline") in head
    assert json.loads((out / "verdict.json").read_text())["baseline"]["state"] == state
    capsys.readouterr()


@pytest.mark.parametrize("content, match", [
    (None, "is missing"),
    ('{"state": "fine"}', "state"),
    ("[1]", "JSON object"),
])
def test_a_bad_state_file_is_a_usage_error_naming_it(tmp_path: Path, capsys, content, match) -> None:
    base, cand = pair(tmp_path, [row(seed=1)], [row(seed=2)])
    path = tmp_path / "lookup.json"
    if content is not None:
        path.write_text(content)
    code = main(["gate", str(base.path), str(cand.path), "--out", str(tmp_path / "v"), "--baseline-state", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and match in err and "lookup.json" in err
    assert not (tmp_path / "v" / "verdict.md").exists()


def test_a_fallback_record_is_named_in_the_verdict(tmp_path: Path, capsys) -> None:
    base, cand = pair(tmp_path, [row(seed=1)], [row(seed=2)])  # the candidate replays base.path
    out = tmp_path / "v"
    assert main(["gate", str(base.path), str(cand.path), "--out", str(out), "--baseline-state",
                 str(state_file(tmp_path, state="missing", record=None, reason="no entry for pr on h200."))]) == 0
    head = (out / "verdict.md").read_text().split("###")[0]
    assert ("⚠️ Baseline missing: no entry for pr on h200. This check replayed a baseline recorded with the "
            f"base build in this job ({base.path.name}).") in head.replace("&#95;", "_")
    capsys.readouterr()
