"""Fixtures for the build-compiler replays: a local compiler repository whose Python sources
are this machine's installed Triton's, with a PR merged the way GitHub builds `refs/pull/N/merge`,
and a runner for the action (its remote checkout replaced by a real `git clone` of that
repository at the requested depth)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import triton

from tests.workflows.payloads import github_context
from tests.workflows.replay import JobRun

REPO = Path(__file__).resolve().parents[2]
ACTION_DIR = REPO / ".github" / "actions" / "build-compiler"
PATCHES = REPO / "bench" / "patches"
NVIDIA = "third_party/nvidia/backend/compiler.py"


def git(*args: str, cwd: Path) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


@dataclass
class CompilerRepo:
    path: Path
    base: str  # main before the PR merged (the merge commit's first parent)
    merge: str  # the merge commit (github.sha)
    fork_point: str  # where the PR branched off (an older main)


def compiler_repo(tmp: Path, pr_files: dict[str, str | None]) -> CompilerRepo:
    """main: the installed NVIDIA backend compiler.py and a C++ file; main then moves on (a
    C++ change of someone else's); the PR, branched before that, applies ``pr_files``
    (path -> a bench patch name to `git apply`, or None to append a line to that file); the
    merge commit joins them."""
    repo = tmp / "compiler"
    repo.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=repo)
    installed = Path(triton.__file__).parent / "backends" / "nvidia" / "compiler.py"
    (repo / NVIDIA).parent.mkdir(parents=True)
    (repo / NVIDIA).write_bytes(installed.read_bytes())
    (repo / "lib").mkdir()
    (repo / "lib" / "Coalesce.cpp").write_text("// pass\n")
    (repo / "python" / "triton").mkdir(parents=True)
    (repo / "python" / "triton" / "knobs.py").write_text("# knobs\n")
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "base", cwd=repo)
    fork_point = git("rev-parse", "HEAD", cwd=repo)
    git("checkout", "-q", "-b", "pr", cwd=repo)
    for path, patch in pr_files.items():
        if patch is None:
            target = repo / path
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("a") as fh:
                fh.write("// changed by the PR\n")
        else:
            git("apply", str(PATCHES / patch), cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "--allow-empty", "-m", "the PR", cwd=repo)
    git("checkout", "-q", "main", cwd=repo)
    (repo / "lib" / "Other.cpp").write_text("// someone else's change on main\n")
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "main moves on", cwd=repo)
    base = git("rev-parse", "HEAD", cwd=repo)
    git("merge", "-q", "--no-ff", "-m", "Merge pr into main", "pr", cwd=repo)
    return CompilerRepo(repo, base, git("rev-parse", "HEAD", cwd=repo), fork_point)


def action_env(tmp: Path, workspace: Path, runner_temp: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_", "ACTIONS_", "TRITONGATE_"))}
    env.update({"HOME": str(tmp / "home"), "GITHUB_WORKSPACE": str(workspace), "RUNNER_TEMP": str(runner_temp),
                "GITHUB_REPOSITORY": "acme/triton", "GITHUB_REPOSITORY_OWNER": "acme", "CI": "true",
                "GITHUB_ACTIONS": "true", "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"})
    (tmp / "home").mkdir(exist_ok=True)
    return env


def clone_checkout(run: JobRun, source: Path, with_values: dict, seen: list[dict]) -> tuple[str, dict]:
    """actions/checkout as it behaves: a fresh clone of the ref, `fetch-depth` commits deep."""
    seen.append(dict(with_values))
    dest = run.workspace / with_values["path"]
    depth = int(float(with_values.get("fetch-depth", 1)))
    dest.mkdir(parents=True)
    git("init", "-q", cwd=dest)
    git("remote", "add", "origin", source.as_uri(), cwd=dest)
    git("fetch", "-q", "--no-tags", f"--depth={depth}", "origin", with_values["ref"], cwd=dest)
    git("checkout", "-q", "FETCH_HEAD", cwd=dest)
    return "success", {}


def run_build_action(tmp: Path, source: Path, cache_write: str | None = None, extra_env: dict | None = None,
                     **inputs: str):
    """The build-compiler action, replayed: (JobRun, outputs, checkouts seen); ``extra_env``:
    the job's environment beside the runner's (e.g. pr-gate's TG_ONLY)."""
    workspace, runner_temp = tmp / "ws", tmp / "runner" / "temp"
    workspace.mkdir(parents=True)
    runner_temp.mkdir(parents=True)
    seen: list[dict] = []
    github = github_context("pull_request", "pull_request.synchronize")

    def uses(run: JobRun, step: dict, with_values: dict):
        if step["uses"].startswith("actions/checkout@"):
            return clone_checkout(run, source, with_values, seen)
        raise AssertionError(f"unexpected action {step['uses']}")

    env = action_env(tmp, workspace, runner_temp)
    if cache_write is not None:
        env["TG_CACHE_WRITE"] = cache_write
    env.update(extra_env or {})
    run = JobRun(workspace, runner_temp, {"github": github, "runner": {"temp": str(runner_temp)}, "vars": {}},
                 env, uses)
    status, outputs = run.run_composite(ACTION_DIR, {"python": sys.executable, **inputs}, {})
    return run, status, outputs, seen
