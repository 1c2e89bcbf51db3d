"""A PR's baseline comes from its own compiler repository: FlagTree's entries are never
Triton's, a fork's never upstream's, whatever way the repository is spelled."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tritongate.baselines import BaselineError, State, find, list_entries, parse_repo, publish
from tritongate.cli.baseline import main

from tests.baselines.test_store import DAY, T0, lookup, make_record

ROOT = Path(__file__).resolve().parents[2]
HOUR = DAY / 24


@pytest.mark.parametrize("spelling", [
    "flagos-ai/FlagTree", "flagos-ai/flagtree", "FLAGOS-AI/FLAGTREE", " flagos-ai/FlagTree ",
    "flagos-ai/FlagTree.git", "https://github.com/flagos-ai/FlagTree", "https://github.com/flagos-ai/FlagTree.git",
    "https://github.com/flagos-ai/FlagTree/", "HTTPS://GitHub.com/flagos-ai/FlagTree.git",
    "https://x-access-token:ghs_secret@github.com/flagos-ai/FlagTree.git", "http://www.github.com/flagos-ai/FlagTree",
    "git@github.com:flagos-ai/FlagTree.git", "git@github.com:flagos-ai/flagtree", "ssh://git@github.com/flagos-ai/FlagTree",
    "ssh://git@ssh.github.com:443/flagos-ai/FlagTree.git", "git://github.com/flagos-ai/FlagTree.git",
    "github.com/flagos-ai/FlagTree",
])
def test_every_spelling_of_one_repository_has_one_key(spelling):
    repo = parse_repo(spelling)
    assert repo.key == "flagos-ai/flagtree"
    assert repo.display.lower() == "flagos-ai/flagtree" and "ghs_secret" not in repo.display


def test_other_hosts_and_other_repositories_keep_apart():
    keys = {parse_repo(s).key for s in ("triton-lang/triton", "flagos-ai/FlagTree", "acme/FlagTree",
                                         "https://gitlab.com/flagos-ai/FlagTree.git", "git@ghe.acme.com:flagos-ai/FlagTree")}
    assert keys == {"triton-lang/triton", "flagos-ai/flagtree", "acme/flagtree", "gitlab.com/flagos-ai/flagtree",
                    "ghe.acme.com/flagos-ai/flagtree"}
    assert parse_repo("https://gitlab.com/group/sub/triton").display == "gitlab.com/group/sub/triton"


@pytest.mark.parametrize("bad", ["", "flagtree", "a b/c", "owner/", "/owner/name/x", "owner//name", "o/../n",
                                 "file:///srv/git/triton.git", "https://github.com/a/b/tree/main",
                                 "https://github.com/a/b?x=1", "a/b\nstate=ok", "triton 3.6.0"])
def test_what_names_no_repository_is_a_usage_error(bad):
    with pytest.raises(BaselineError, match="compiler repository"):
        parse_repo(bad)


# -- find -------------------------------------------------------------------------------------------

def _store(tmp_path: Path) -> Path:
    """Real-looking nights under one runner class: Triton's newest, FlagTree's an hour older,
    a fork of FlagTree's older still, and one entry from before repositories were recorded."""
    store = tmp_path / "store"
    for n, (repo, ref, commit) in enumerate([
            ("triton-lang/triton", "triton-lang/triton@4c1f2a3b5d6e", "4c1f2a3b5d6e7f8091a2b3c4d5e6f708192a3b4c"),
            ("flagos-ai/FlagTree", "flagos-ai/FlagTree@9e8d7c6b5a49", "9e8d7c6b5a49382716059f8e7d6c5b4a39281706"),
            ("someone/FlagTree", "someone/FlagTree@1a2b3c4d5e6f", "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d"),
            (None, "triton 3.6.0", "0123456789abcdef0123456789abcdef01234567")]):
        started = T0 - n * HOUR
        run = make_record(tmp_path / "runs" / f"pr_{n}", started=started, commit=commit,
                          identity={"compiler_ref": ref} if repo else None)
        publish(store, run, runner_class="h200", compiler_repo=repo, now=started + HOUR)
    return store


def test_find_takes_the_newest_entry_of_the_prs_own_repository(tmp_path):
    store = _store(tmp_path)
    assert lookup(store).entry.manifest.compiler_repo == "triton-lang/triton"  # no repository asked: the newest
    for spelling in ("flagos-ai/flagtree", "git@github.com:flagos-ai/FlagTree.git"):
        got = lookup(store, compiler_repo=spelling)
        assert got.state is State.OK and got.entry.manifest.compiler_repo == "flagos-ai/FlagTree"
        assert "baseline for flagos-ai/flagtree on runner class h200 (nvidia-h200): " in got.reason.lower()
        assert got.expected["compiler_repo"] == parse_repo(spelling).display  # as asked, credential-free
    fork = lookup(store, compiler_repo="https://github.com/someone/flagtree")
    assert fork.state is State.OK and fork.entry.manifest.compiler_repo == "someone/FlagTree"
    assert lookup(store, compiler_repo="triton-lang/triton").entry.manifest.compiler_repo == "triton-lang/triton"


def test_no_entry_of_the_repository_is_missing_and_names_what_is_there(tmp_path):
    store = _store(tmp_path)
    got = lookup(store, compiler_repo="acme/triton")
    assert got.state is State.MISSING and got.entry is None and got.nearest is None
    assert got.reason.startswith("no pr baseline for acme/triton on runner class h200 (nvidia-h200) in ")
    assert ("its 4 entries for this runner class and suite are for flagos-ai/FlagTree (1), no recorded repository "
            "(1), someone/FlagTree (1), triton-lang/triton (1), not this repository") in got.reason
    assert got.refresh.endswith("--runner-class h200 --compiler-repo acme/triton")


def test_an_entry_that_records_no_repository_is_never_a_repositorys_baseline(tmp_path):
    store = tmp_path / "store"
    publish(store, make_record(tmp_path / "r"), runner_class="h200")  # compiler_ref "triton 3.6.0": no repository
    assert lookup(store).state is State.OK
    got = lookup(store, compiler_repo="triton-lang/triton")
    assert got.state is State.MISSING and "no recorded repository (1)" in got.reason


def test_a_mismatch_within_the_repository_is_named_not_another_repositorys_entry(tmp_path):
    store = _store(tmp_path)
    got = lookup(store, "NVIDIA H100", compiler_repo="flagos-ai/FlagTree")
    assert got.state is State.MISMATCHED and got.nearest.manifest.compiler_repo == "flagos-ai/FlagTree"
    assert "expected nvidia-h100" in got.reason


def test_publish_keeps_the_repository_credential_free_and_reads_it_from_the_compiler_ref(tmp_path):
    store = tmp_path / "store"
    token = publish(store, make_record(tmp_path / "a"), runner_class="h200",
                    compiler_repo="https://x-access-token:ghs_secret@github.com/flagos-ai/FlagTree.git")
    assert token.manifest.compiler_repo == "flagos-ai/FlagTree"
    assert "ghs_secret" not in (token.path / "manifest.json").read_text()
    ref = make_record(tmp_path / "b", started=T0 + HOUR, identity={"compiler_ref": "flagos-ai/FlagTree@9e8d7c6b5a49"})
    assert publish(store, ref, runner_class="h200").manifest.compiler_repo == "flagos-ai/FlagTree"
    with pytest.raises(BaselineError, match="refusing to publish .*compiler repository"):
        publish(store, make_record(tmp_path / "c"), runner_class="h200", compiler_repo="flagtree")


def test_list_filters_by_repository(tmp_path):
    store = _store(tmp_path)
    entries, _ = list_entries(store, compiler_repo="FLAGOS-AI/flagtree.git")
    assert [e.manifest.compiler_repo for e in entries] == ["flagos-ai/FlagTree"]
    assert len(list_entries(store)[0]) == 4


def test_find_refuses_a_repository_it_cannot_read(tmp_path):
    with pytest.raises(BaselineError, match="compiler repository"):
        find(tmp_path, "h200", "pr", "NVIDIA H200", compiler_repo="not a repo")


# -- the commands ---------------------------------------------------------------------------------

def _lines(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines())


def test_baseline_find_matches_the_repository_and_exits_0_when_there_is_none(tmp_path, capsys):
    store = _store(tmp_path)
    args = ["find", "--store", str(store), "--suite", "pr", "--runner-class", "h200", "--gpu", "NVIDIA H200",
            "--suite-digest", "d1", "--max-age-days", "100000"]
    assert main([*args, "--compiler-repo", "https://github.com/flagos-ai/FlagTree.git"]) == 0
    lines = _lines(capsys.readouterr().out)
    assert lines["state"] == "ok" and lines["record"].endswith("/20261120T020000Z-9e8d7c6b5a49")  # FlagTree's night
    assert main([*args, "--compiler-repo", "acme/triton"]) == 0
    lines = _lines(capsys.readouterr().out)
    assert lines["state"] == "missing" and lines["record"] == ""
    assert "no pr baseline for acme/triton on runner class h200" in lines["reason"]
    assert main([*args, "--compiler-repo", "flagtree"]) == 2
    assert "compiler repository 'flagtree'" in capsys.readouterr().err
    assert main(["list", "--store", str(store), "--compiler-repo", "someone/flagtree"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert len(listed) == 1 and " rows someone/FlagTree 1a2b3c4d5e6f" in listed[0]


def _find_baseline(store: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "TG_", "TRITONGATE_"))}
    return subprocess.run([sys.executable, str(ROOT / "ci" / "find_baseline.py"), "--store", str(store), "--suite",
                           "pr", "--runner-class", "h200", "--gpu", "NVIDIA H200", "--suite-digest", "d1",
                           "--max-age-days", "100000", "--state-out", str(store.parent / "state.json"), *extra],
                          capture_output=True, text=True, env={**base, **env})


def test_ci_find_baseline_takes_the_repository_from_the_step(tmp_path):
    store = _store(tmp_path)
    # on GitHub with no compiler-repo input: the repository the workflow runs in
    proc = _find_baseline(store, {"GITHUB_REPOSITORY": "flagos-ai/FlagTree"})
    assert proc.returncode == 0, proc.stderr
    assert "compiler repository: flagos-ai/FlagTree (from $GITHUB_REPOSITORY)" in proc.stderr
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["entry"]["compiler_repo"] == "flagos-ai/FlagTree"
    # the compiler-repo input wins over the repository the workflow runs in; the flag over both
    proc = _find_baseline(store, {"GITHUB_REPOSITORY": "flagos-ai/FlagTree", "TG_COMPILER_REPO": "someone/FlagTree"})
    assert json.loads((tmp_path / "state.json").read_text())["entry"]["compiler_repo"] == "someone/FlagTree"
    proc = _find_baseline(store, {"TG_COMPILER_REPO": "someone/FlagTree"}, "--compiler-repo", "triton-lang/triton")
    assert json.loads((tmp_path / "state.json").read_text())["entry"]["compiler_repo"] == "triton-lang/triton"
    # a fork's PR job (its own repository) never takes upstream's entry
    proc = _find_baseline(store, {"GITHUB_REPOSITORY": "acme/FlagTree"})
    assert proc.returncode == 0 and _lines(proc.stdout)["state"] == "missing"
    assert "no pr baseline for acme/FlagTree on runner class h200" in _lines(proc.stdout)["reason"]


def test_ci_find_baseline_refuses_without_a_repository(tmp_path):
    proc = _find_baseline(_store(tmp_path), {})
    assert proc.returncode == 2 and proc.stderr.startswith("error: find_baseline.py: no compiler repository")
    assert not (tmp_path / "state.json").exists()
