"""ci/store.sh push racing another publish of the same entry path (file:// remote, no network)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BRANCH = "tritongate-baselines"
ENTRY = "h200/pr/nvidia-h200/20261207T000000Z-0123456789ab"


def _git(*args: str, cwd: Path | None = None) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                   capture_output=True)


def _push(job: Path, src: Path, server: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GITHUB_SERVER_URL=server.as_uri(), TG_STORE_REPO="acme/triton", TG_STORE_BRANCH=BRANCH,
               TG_STORE_PRESENT="present", TG_ENTRY=ENTRY, TG_ENTRY_SRC=str(src), TG_RETRY_SECONDS="0")
    env.pop("GITHUB_OUTPUT", None)
    return subprocess.run(["bash", str(ROOT / "ci" / "store.sh"), "push"], cwd=job, env=env, text=True,
                          capture_output=True)


def test_a_push_that_loses_a_race_for_its_entry_path_fails_instead_of_saying_pushed(tmp_path: Path) -> None:
    server = tmp_path / "server"
    origin = server / "acme" / "triton.git"
    origin.parent.mkdir(parents=True)
    _git("init", "-q", "--bare", "-b", BRANCH, str(origin))
    seed = tmp_path / "seed"
    _git("init", "-q", "-b", BRANCH, str(seed))
    (seed / "README").write_text("store\n")
    _git("add", "README", cwd=seed)
    _git("commit", "-qm", "init", cwd=seed)
    _git("push", "-q", str(origin), f"HEAD:refs/heads/{BRANCH}", cwd=seed)
    jobs = {}
    for name in ("a", "b"):  # two nightlies, each with the store as it was when they started
        job = tmp_path / name
        job.mkdir()
        _git("clone", "-q", "-b", BRANCH, str(origin), str(job / "baseline-store"))
        src = tmp_path / f"entry-{name}"
        src.mkdir()
        (src / "manifest.json").write_text(f'{{"job": "{name}"}}\n')
        jobs[name] = (job, src)
    first = _push(*jobs["a"], server)
    assert first.returncode == 0, first.stderr
    second = _push(*jobs["b"], server)
    assert second.returncode == 2 and "pushed" not in second.stdout
    assert f"{ENTRY} is on {BRANCH} already" in second.stderr
    check = tmp_path / "check"
    _git("clone", "-q", "-b", BRANCH, str(origin), str(check))
    assert (check / ENTRY / "manifest.json").read_text() == '{"job": "a"}\n'  # the first publish, untouched


def test_an_entry_path_that_is_not_four_plain_names_is_refused_before_any_git(tmp_path: Path) -> None:
    """TG_ENTRY comes from the record job's output: `..`, a leading `-` or a fifth level is exit 2,
    one ::error line that is the message alone (not the exit code appended to it)."""
    src = tmp_path / "entry"
    src.mkdir()
    for entry in ("../../etc/x", "h200/pr/gpu/-rf", "a/b/c/d/e", "h200/pr/gpu/$(touch pwned)"):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "GITHUB_"))}
        env.update(TG_STORE_REPO="acme/triton", TG_ENTRY=entry, TG_ENTRY_SRC=str(src))
        proc = subprocess.run(["bash", str(ROOT / "ci" / "store.sh"), "push"], cwd=tmp_path, env=env, text=True,
                              capture_output=True)
        assert proc.returncode == 2, (entry, proc.stderr)
        assert proc.stderr == "::error title=baseline store::unexpected entry path\n", proc.stderr
        assert not (tmp_path / "baseline-store").exists() and not (tmp_path / "pwned").exists()
