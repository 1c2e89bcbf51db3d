"""A compiler build's own code never gets the runner's file commands or tokens."""

from __future__ import annotations

import os
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


def test_every_process_a_build_runs_puts_an_overlay_path_after_tritongate_s_and_before_the_runner_s(
        tmp_path: Path, monkeypatch) -> None:
    """One rule at every place a build's overlay is applied: `pair --cand-env PYTHONPATH=...`
    used to replace the path that finds tritongate in the worker (it could not start)."""
    from tritongate.ir.passdumps import _package_root, child_env
    from tritongate.prescreen.respecialize import capture_cmd
    from tritongate.prescreen.side import _aot_cmd, package_root

    from tritongate.childenv import with_overlay

    monkeypatch.setenv("PYTHONPATH", "/runner/site")
    overlay = {"PYTHONPATH": "/src/triton/python", "DISABLE_MMA_V3": "1"}
    worker = CompilerBuild("candidate", env=overlay).environment(
        {"PYTHONPATH": "/runner/site"}, pythonpath=tmp_path / "pp", cache_dir=tmp_path)
    _, aot = _aot_cmd("python", tmp_path, tmp_path / "ir-cand", "cuda:90", overlay)
    _, capture = capture_cmd("python", tmp_path, "smoke", [], tmp_path / "cap", "cuda:90", package_root(), overlay)
    dumps = with_overlay(child_env({"PYTHONPATH": "/runner/site"}), overlay, lead=_package_root())
    for env, lead in ((worker, str(tmp_path / "pp")), (aot, package_root()), (capture, package_root()),
                      (dumps, _package_root())):
        assert env["PYTHONPATH"].split(os.pathsep) == [lead, "/src/triton/python", "/runner/site"]
        assert env["DISABLE_MMA_V3"] == "1"


def test_an_overlay_without_a_path_keeps_the_lead_first_once() -> None:
    from tritongate.childenv import with_overlay

    env = with_overlay({"PYTHONPATH": f"/lead{os.pathsep}/a{os.pathsep}/lead"}, {"X": "1"}, lead="/lead")
    assert env == {"PYTHONPATH": f"/lead{os.pathsep}/a", "X": "1"}
    assert with_overlay({}, None, lead="/lead") == {"PYTHONPATH": "/lead"}
