"""The CI entry points refuse inputs they would otherwise take silently or crash on: exit 2
with one `error:` line naming the input, never a traceback, never a quiet default."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "ci" / script), *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})


@pytest.mark.parametrize("value", ["yes", "on", "ture", "1"])
def test_an_opt_in_value_that_is_not_documented_is_refused(value: str) -> None:
    done = _run("opt_in.py", "--event-name", "push", "--repo", "o/r", "--opt-in", value)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"--opt-in {value!r}: expected true (or label) or false" in done.stderr


@pytest.mark.parametrize("pr", ["²", "-7", "0", "12a", "1" * 12])
def test_a_pr_number_that_is_not_a_plain_positive_integer_is_named(pr: str) -> None:
    done = _run("opt_in.py", "--event-name", "pull_request", "--repo", "o/r", "--pr", pr, "--opt-in", "true")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "a pull_request run needs the PR's number, a positive whole number" in done.stderr


@pytest.mark.parametrize(("ref", "words"), [("-c core.pager=x", "begins with '-'"), ("a" * 100_000, "100000 characters"),
                                           ("main\nx", "contains a line break"), ("main x", "not a ref name git accepts"), ("a..b", "not a ref name")])
def test_a_ref_git_would_misread_is_refused(ref: str, words: str) -> None:
    done = _run("resolve_refs.py", "--event-name", "workflow_dispatch", "--sha", "0" * 40, "--base-ref", ref)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert words in done.stderr and len(done.stderr) < 400


def test_plain_refs_still_resolve() -> None:
    done = _run("resolve_refs.py", "--event-name", "workflow_dispatch", "--sha", "0" * 40,
                "--base-ref", "refs/heads/release/3.6", "--cand-ref", "feature_x-1.2")
    assert done.returncode == 0, done.stderr
    assert "base=refs/heads/release/3.6" in done.stdout and "cand=feature_x-1.2" in done.stdout


def test_a_plain_http_api_url_is_named_and_no_token_goes_there(tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text('{"action": "created", "issue": {"number": 5, "pull_request": {}}, '
                     '"comment": {"body": "/perf", "user": {"login": "a"}}}')
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "GITHUB_TOKEN": "t", "GITHUB_API_URL": "http://api.example"}
    for argv in (["perf_command.py", "--event-path", str(event), "--repo", "o/r"],
                 ["opt_in.py", "--event-name", "pull_request", "--repo", "o/r", "--pr", "5", "--opt-in", "true"]):
        done = subprocess.run([sys.executable, str(ROOT / "ci" / argv[0]), *argv[1:]], capture_output=True, text=True,
                              cwd=ROOT, timeout=60, env=env)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert "GITHUB_API_URL" in done.stderr and "plain http" in done.stderr


def test_a_deeply_nested_event_is_a_named_error(tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text("[" * 100_000 + "]" * 100_000)
    for argv in (["perf_command.py", "--event-path", str(event), "--repo", "o/r"],
                 ["resolve_refs.py", "--event-name", "pull_request", "--event-path", str(event), "--sha", "0" * 40]):
        done = _run(*argv)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert "RecursionError" in done.stderr or "recursion" in done.stderr
