"""A compiler build's own code never gets the runner's file commands or tokens."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tritongate.childenv import FILE_COMMANDS, RUNNER_TOKENS, build_env
from tritongate.ir.index import CompiledVariant
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
    _, capture_env = capture_cmd("python", tmp_path, "smoke", [], tmp_path / "capture-cand", "cuda:90",
                                 str(tmp_path / "lead"))
    for env in (aot_env, capture_env):
        assert not set(env) & {*FILE_COMMANDS, *RUNNER_TOKENS}


VARIANT = CompiledVariant(case="4096", kernel="m.k", signature={}, constexprs={}, specialization={},
                          options={"num_warps": 4}, compile_hash="h")


def test_every_process_a_build_runs_puts_an_overlay_path_after_tritongate_s_and_before_the_runner_s(
        tmp_path: Path, monkeypatch) -> None:
    """One rule at every place a build's overlay is applied: `pair --cand-env PYTHONPATH=...`
    used to replace the path that finds tritongate in the worker (it could not start). The
    lead is a folder holding only a link to the package, never the package's parent folder
    (which may be the runner's site-packages, shadowing the build's triton and torch)."""
    import tritongate
    from tritongate.childenv import package_link_dir
    from tritongate.ir import passdumps
    from tritongate.prescreen.respecialize import capture_cmd
    from tritongate.prescreen.side import _aot_cmd, package_lead

    monkeypatch.setenv("PYTHONPATH", "/runner/site")
    overlay = {"PYTHONPATH": "/src/triton/python", "DISABLE_MMA_V3": "1"}
    worker = CompilerBuild("candidate", env=overlay).environment(
        {"PYTHONPATH": "/runner/site"}, pythonpath=package_link_dir(tmp_path / "pp"), cache_dir=tmp_path)
    _, aot = _aot_cmd("python", tmp_path, tmp_path / "ps" / "ir-cand", "cuda:90", overlay)
    _, capture = capture_cmd("python", tmp_path, "smoke", [], tmp_path / "ps" / "cap", "cuda:90",
                             package_lead(tmp_path / "ps"), overlay)
    seen: dict[str, str] = {}

    def fake_run(cmd, **kw):  # the pass dumps' child: its environment, and nothing compiled
        seen.update(kw["env"])
        raise RuntimeError("stop here")

    monkeypatch.setattr(passdumps.subprocess, "run", fake_run)
    with pytest.raises(RuntimeError, match="stop here"):
        passdumps.compile_with_dumps("python", VARIANT, "cuda:90", tmp_path / "dumps", env=overlay)
    assert not (tmp_path / "dumps" / passdumps.PATH_DIR).exists()  # removed though the child raised
    seen_lead = seen["PYTHONPATH"].split(os.pathsep)[0]
    seen["PYTHONPATH"] = os.pathsep.join([str(package_link_dir(tmp_path / "check")), *seen["PYTHONPATH"].split(
        os.pathsep)[1:]])
    assert seen_lead == str(tmp_path / "dumps" / passdumps.PATH_DIR)
    package = Path(tritongate.__file__).resolve().parent
    for env in (worker, aot, capture, seen):
        lead, *rest = env["PYTHONPATH"].split(os.pathsep)
        assert rest == ["/src/triton/python", "/runner/site"] and env["DISABLE_MMA_V3"] == "1"
        assert os.listdir(lead) == ["tritongate"] and (Path(lead) / "tritongate").resolve() == package


def test_an_overlay_without_a_path_keeps_the_lead_first_once() -> None:
    from tritongate.childenv import with_overlay

    env = with_overlay({"PYTHONPATH": f"/lead{os.pathsep}/a{os.pathsep}/lead"}, {"X": "1"}, lead="/lead")
    assert env == {"PYTHONPATH": f"/lead{os.pathsep}/a", "X": "1"}
    assert with_overlay({}, None, lead="/lead") == {"PYTHONPATH": "/lead"}
    with pytest.raises(ValueError, match="needs the folder"):
        with_overlay({}, None, lead="")  # an empty entry is the working folder


def test_loop_s_record_process_gets_the_same_rule(tmp_path: Path, monkeypatch) -> None:
    """`loop --base-env PYTHONPATH=...` records with the base build: its process had the runner's
    environment with the overlay's PYTHONPATH replacing the runner's, file commands included."""
    import argparse
    import subprocess

    from tritongate.cli import pair as cli_pair

    for name, value in RUNNER.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PYTHONPATH", "/runner/site")
    seen: dict[str, str] = {}

    def fake_run(cmd, **kw):
        seen.update(kw["env"])
        seen["lead holds"] = " ".join(os.listdir(kw["env"]["PYTHONPATH"].split(os.pathsep)[0]))
        return subprocess.CompletedProcess(cmd, 2, stdout="")

    monkeypatch.setattr(subprocess, "run", fake_run)
    args = argparse.Namespace(base_python=None, base_env=["PYTHONPATH=/src/triton/python", "DISABLE_MMA_V3=1"],
                              suite="smoke", backend="cpu", color="never", isolate_tuner_cache=False,
                              shape_file=None, rounds=None, samples_per_round=None, l2=None, ops=None, dtypes=None,
                              allow_busy_gpu=False, sample_ms=None)
    cli_pair.record_suite(args, tmp_path)
    _, *rest = seen["PYTHONPATH"].split(os.pathsep)
    assert rest == ["/src/triton/python", "/runner/site"] and seen["lead holds"] == "tritongate"
    assert not any(tmp_path.iterdir())  # --out is left to the run to check and make
    assert not set(seen) & {*FILE_COMMANDS, *RUNNER_TOKENS} and seen["DISABLE_MMA_V3"] == "1"
