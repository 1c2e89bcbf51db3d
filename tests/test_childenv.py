"""A compiler build's own code never gets the runner's file commands or tokens."""

from __future__ import annotations

from pathlib import Path

from tritongate.childenv import FILE_COMMANDS, RUNNER_TOKENS, build_env
from tritongate.pair.build import CompilerBuild

RUNNER = {name: f"/home/runner/_work/_temp/_runner_file_commands/{name.lower()}" for name in FILE_COMMANDS} | {
    name: "secret" for name in RUNNER_TOKENS} | {"PATH": "/usr/bin", "HOME": "/home/runner", "CUDA_VISIBLE_DEVICES": "0"}


def test_the_file_commands_and_tokens_are_dropped_and_the_rest_kept() -> None:
    assert build_env(RUNNER) == {"PATH": "/usr/bin", "HOME": "/home/runner", "CUDA_VISIBLE_DEVICES": "0"}


def test_a_pair_worker_of_either_build_gets_none_of_them(tmp_path: Path) -> None:
    for side in ("base", "candidate"):
        env = CompilerBuild(side, env={"TRITON_X": "1"}).environment(RUNNER, pythonpath=tmp_path, cache_dir=tmp_path)
        assert not set(env) & {*FILE_COMMANDS, *RUNNER_TOKENS} and env["TRITON_X"] == "1"


def test_the_pre_screen_s_recompile_and_capture_get_none_of_them(tmp_path: Path, monkeypatch) -> None:
    from tritongate import prescreen
    from tritongate.prescreen.respecialize import capture_cmd

    for name, value in RUNNER.items():
        monkeypatch.setenv(name, value)
    _, aot_env = prescreen.side._aot_cmd("python", tmp_path, tmp_path / "ir-cand", "cuda:90")
    _, capture_env = capture_cmd("python", tmp_path, "smoke", [], tmp_path / "capture-cand", "cuda:90", "")
    for env in (aot_env, capture_env):
        assert not set(env) & {*FILE_COMMANDS, *RUNNER_TOKENS}
