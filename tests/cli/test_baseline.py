"""``tritongate baseline publish|find|list`` and the CI entry points."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tritongate.cli.baseline import add_baseline_parser, main, single_line
from tritongate.baselines.publishing import publish

from tests.baselines.test_store import T0, make_record

ROOT = Path(__file__).resolve().parents[2]
KEYS = ["state", "record", "reason", "refresh", "age_days"]


def _lines(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines())


def _find(store, *extra):
    return main(["find", "--store", str(store), "--suite", "pr", "--runner-class", "h200", "--gpu", "NVIDIA H200",
                 "--suite-digest", "d1", "--max-age-days", "100000", *extra])


def test_publish_then_find_through_the_commands(tmp_path, capsys):
    run = make_record(tmp_path / "pr_20261120T030000Z")
    store = tmp_path / "store"
    assert main(["publish", str(run), "--store", str(store), "--runner-class", "h200",
                 "--compiler-repo", "org/flagtree", "--compiler-commit", "feedbeef"]) == 0
    out = capsys.readouterr().out.splitlines()
    entry = store / "h200" / "pr" / "nvidia-h200" / "20261120T030000Z-feedbeef"
    assert out[-1] == f"baseline: {entry}"
    gh, state = tmp_path / "gh_output", tmp_path / "out" / "lookup.json"
    gh.write_text("earlier=kept\n")
    assert _find(store, "--github-output", str(gh), "--state-out", str(state)) == 0
    printed = capsys.readouterr().out
    lines = _lines(printed)
    assert list(lines) == KEYS and lines["state"] == "ok" and lines["record"] == str(entry.resolve())
    assert gh.read_text() == "earlier=kept\n" + printed  # appended, the same lines
    doc = json.loads(state.read_text())
    assert doc["state"] == "ok" and doc["entry"]["compiler_commit"] == "feedbeef" and doc["store"] == str(store)
    assert doc["expected"] == {"runner_class": "h200", "suite": "pr", "gpu": "NVIDIA H200",
                               "gpu_slug": "nvidia-h200", "suite_digest": "d1", "backend": None,
                               "compiler_repo": None}

    assert main(["list", "--store", str(store)]) == 0
    assert str(entry) in capsys.readouterr().out
    assert main(["list", "--store", str(store), "--json", "--gpu", "NVIDIA H200"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["record_path"] == "h200/pr/nvidia-h200/20261120T030000Z-feedbeef"


def test_find_exits_0_for_every_state_and_names_it(tmp_path, capsys):
    store = tmp_path / "store"
    assert _find(store) == 0
    assert _lines(capsys.readouterr().out)["state"] == "missing"
    publish(store, make_record(tmp_path / "r", device="NVIDIA H100"), runner_class="h200")
    assert _find(store) == 0
    lines = _lines(capsys.readouterr().out)
    assert lines["state"] == "mismatched" and lines["record"] == "" and "expected nvidia-h200" in lines["reason"]
    assert main(["find", "--store", str(store), "--suite", "pr", "--runner-class", "h200", "--gpu", "NVIDIA H100",
                 "--suite-digest", "none", "--max-age-days", "0"]) == 0
    assert _lines(capsys.readouterr().out)["state"] == "stale"


def test_damaged_entries_are_notes_on_stderr(tmp_path, capsys):
    store = tmp_path / "store"
    entry = publish(store, make_record(tmp_path / "r"), runner_class="h200")
    (entry.path / "manifest.json").write_text("{")
    assert _find(store) == 0
    out, err = capsys.readouterr()
    assert _lines(out)["state"] == "missing" and err.startswith(f"note: skipped {entry.path}")


def test_github_output_lines_are_safe_against_newlines(tmp_path, capsys):
    gh = tmp_path / "gh"
    (tmp_path / "store").mkdir()
    evil = "pr\nrecord=evil\r\u2028state=ok"
    assert main(["find", "--store", str(tmp_path / "store"), "--suite", evil, "--runner-class", "h200",
                 "--gpu", "NVIDIA H200", "--suite-digest", "none", "--github-output", str(gh)]) == 0
    written = gh.read_text()
    assert written == capsys.readouterr().out
    lines = written.splitlines()
    assert [line.split("=", 1)[0] for line in lines] == KEYS  # no injected key
    assert _lines(written)["state"] == "missing" and "no pr record=evil state=ok baseline" in _lines(written)["reason"]
    assert single_line("a\n\nb\x00c\td\u2028e") == "a b c d e"
    assert len(single_line("x" * 10_000)) == 2000


@pytest.mark.parametrize("argv", [
    ["find", "--suite", "pr", "--runner-class", "h200"],  # no --gpu
    ["find", "--suite", "pr", "--runner-class", "h200", "--gpu", "x", "--max-age-days", "-1"],
    ["find", "--suite", "pr", "--runner-class", "h200", "--gpu", ""],
    ["find", "--suite", "pr", "--runner-class", "H200", "--gpu", "x", "--suite-digest", "none"],
    ["find", "--suite", "no-such-suite", "--runner-class", "h200", "--gpu", "x"],  # --suite-digest auto
    ["publish", "/nonexistent/run", "--runner-class", "h200"],
    [],
])
def test_usage_errors_exit_2_with_one_line(tmp_path, capsys, argv):
    if argv[:1] == ["publish"]:
        argv = [*argv, "--store", str(tmp_path / "store")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.strip()
    if argv[:1] == ["publish"]:
        assert err.count("\n") == 1 and "refusing to publish /nonexistent/run" in err


def test_find_writes_nothing_when_the_store_is_a_file(tmp_path, capsys):
    (tmp_path / "f").write_text("")
    assert _find(tmp_path / "f", "--state-out", str(tmp_path / "s.json")) == 2
    assert "not a directory" in capsys.readouterr().err and not (tmp_path / "s.json").exists()


def test_the_store_defaults_to_the_environment(tmp_path, capsys, monkeypatch):
    store = tmp_path / "env-store"
    publish(store, make_record(tmp_path / "r"), runner_class="h200")
    monkeypatch.setenv("TRITONGATE_BASELINE_STORE", str(store))
    assert main(["find", "--suite", "pr", "--runner-class", "h200", "--gpu", "NVIDIA H200", "--suite-digest", "d1",
                 "--max-age-days", "100000"]) == 0
    assert _lines(capsys.readouterr().out)["state"] == "ok"


def test_add_baseline_parser_registers_the_subcommands():
    parser = argparse.ArgumentParser(prog="tritongate")
    sub = parser.add_subparsers(dest="command")
    add_baseline_parser(sub)
    args = parser.parse_args(["baseline", "find", "--suite", "pr", "--runner-class", "h200", "--gpu", "NVIDIA H200"])
    assert args.func.__name__ == "cmd_find" and args.max_age_days == 7.0 and args.suite_digest == "auto"
    for action in ("publish", "list"):
        with pytest.raises(SystemExit) as info:
            parser.parse_args(["baseline", action, "--help"])
        assert info.value.code == 0


# -- the CI entry points -------------------------------------------------------------------

def _ci(script, *args, env=None, **kw):
    """A ci/ script with this environment, minus anything GitHub or a workflow step would set
    (the script must not find a repository the test did not give it)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "TG_", "TRITONGATE_"))}
    return subprocess.run([sys.executable, str(ROOT / "ci" / script), *args], capture_output=True, text=True,
                          env={**base, **(env or {})}, **kw)


def test_ci_find_baseline(tmp_path):
    store = tmp_path / "store"
    publish(store, make_record(tmp_path / "r"), runner_class="h200", compiler_repo="acme/triton", now=T0)
    gh = tmp_path / "gh"
    proc = _ci("find_baseline.py", "--store", str(store), "--suite", "pr", "--runner-class", "h200",
               "--gpu", "NVIDIA H200", "--suite-digest", "d1", "--max-age-days", "1", "--github-output", str(gh),
               env={"GITHUB_REPOSITORY": "acme/triton"})
    assert proc.returncode == 0, proc.stderr
    assert _lines(proc.stdout)["state"] == "stale"  # T0 is long ago by the real clock
    assert _lines(gh.read_text())["record"].endswith("20261120T030000Z-0123456789ab")
    usage = _ci("find_baseline.py", "--store", str(store), "--compiler-repo", "acme/triton")
    assert usage.returncode == 2 and "--suite" in usage.stderr


@pytest.mark.slow
def test_ci_record_baseline_publish_end_to_end_on_cpu(tmp_path):
    store = tmp_path / "store"
    rec = _ci("record_baseline.py", "--suite", "smoke", "--backend", "cpu", "--out",
              str(tmp_path / "runs"), "--publish", str(store), "--runner-class", "cpu-ci", "--compiler-commit",
              "abc1234", "--compiler-repo", "https://github.com/Acme/Triton.git", cwd=tmp_path)
    assert rec.returncode == 0, rec.stderr
    last = rec.stdout.strip().splitlines()[-1]
    assert last.startswith("baseline: ")
    entry = Path(last.split(": ", 1)[1])
    assert entry.parent == store / "cpu-ci" / "smoke" / "cpu" and entry.name.endswith("-abc1234")
    assert not (entry / "run.log").exists()
    found = _ci("find_baseline.py", "--store", str(store), "--suite", "smoke", "--runner-class", "cpu-ci",
                "--gpu", "cpu", "--backend", "cpu",  # --suite-digest auto: the builtin smoke suite's
                env={"TG_COMPILER_REPO": "acme/triton", "GITHUB_REPOSITORY": "acme/other"})
    assert found.returncode == 0, found.stderr
    lines = _lines(found.stdout)
    assert lines["state"] == "ok" and lines["record"] == str(entry.resolve())
    assert "--backend cpu" in lines["refresh"] and "--compiler-repo acme/triton" in lines["refresh"]
    assert json.loads((entry / "manifest.json").read_text())["compiler_repo"] == "Acme/Triton"
    # the entry is a record that replay accepts
    rep = subprocess.run([sys.executable, "-m", "tritongate", "run", "--suite", "smoke", "--backend", "cpu",
                          "--ops", "add", "--replay-from", str(entry), "--out", str(tmp_path / "rep")],
                         capture_output=True, text=True, cwd=tmp_path)
    assert rep.returncode == 0, rep.stderr


@pytest.mark.parametrize("args,match", [
    (["--publish", "s"], "--runner-class"),
    (["--runner-class", "h200"], "need --publish"),
    (["--publish", "s", "--runner-class", "H 200"], "runner class"),
    (["--publish", "s", "--runner-class", "h200", "--compiler-repo", "flagtree"], "compiler repository"),
    # publish would refuse these after the whole record: refused before it
    (["--publish", "s", "--runner-class", "h200", "--ops", "add"], "--publish with --ops add: a baseline is a record"),
    (["--publish", "s", "--runner-class", "h200", "--dtypes=float16"], "--publish with --dtypes=float16"),
    (["--publish", "s", "--runner-class", "h200", "PLANTED"], "TRITONGATE_PLANTED_WORK set: a planted run"),
])
def test_ci_record_baseline_usage_errors_before_recording(tmp_path, args, match):
    env = {"TRITONGATE_PLANTED_WORK": "3"} if "PLANTED" in args else None
    args = [a for a in args if a != "PLANTED"]
    proc = _ci("record_baseline.py", "--suite", "smoke", "--backend", "cpu", "--out", str(tmp_path / "runs"), *args,
               env=env)
    assert proc.returncode == 2 and match in proc.stderr
    assert not (tmp_path / "runs").exists()


def test_ci_record_baseline_refuses_to_publish_a_failed_record(tmp_path):
    proc = _ci("record_baseline.py", "--suite", "no-such-suite", "--backend", "cpu", "--out", str(tmp_path / "runs"),
               "--publish", str(tmp_path / "store"), "--runner-class", "h200")
    assert proc.returncode == 3 and not (tmp_path / "store").exists()  # the run's own exit code


@pytest.mark.parametrize("digest", ["latest", "D1", "d1 ", "x" * 65])
def test_a_suite_digest_that_is_not_hex_is_named(tmp_path, capsys, digest):
    """Such a digest matched no entry, and the lookup said only that none was found."""
    assert main(["find", "--suite", "pr", "--runner-class", "h200", "--gpu", "NVIDIA H200", "--store", str(tmp_path),
                 "--suite-digest", digest]) == 2
    assert "expected auto, none or the suite's digest in lower-case hex" in capsys.readouterr().err


def test_list_of_a_store_that_is_not_there_says_so(tmp_path, capsys):
    """A typo in --store read as an empty store ("no baselines in ...")."""
    assert main(["list", "--store", str(tmp_path / "nope")]) == 0
    assert "no such folder: nothing published there yet, or a wrong --store" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["list", "--store", str(tmp_path / "empty")]) == 0
    assert "no such folder" not in capsys.readouterr().err
