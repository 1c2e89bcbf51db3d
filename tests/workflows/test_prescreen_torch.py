"""A pre-screen runner whose interpreter has no torch gets PyTorch's CPU build, not PyPI's
Linux torch (a CUDA build of several GB): the docs and the recipes say "a CPU torch is
installed". The GPU job's build keeps PyPI's (it times kernels)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.workflows.payloads import github_context
from tests.workflows.replay import Evaluator, interpolate, load_yaml

REPO = Path(__file__).resolve().parents[2]
BUILD_SH = REPO / ".github" / "actions" / "build-compiler" / "build.sh"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def _install_deps(tmp: Path, index: str) -> list[list[str]]:
    """build.sh's install_deps as written, with a venv interpreter that has no torch and logs
    each pip call."""
    text = BUILD_SH.read_text()
    body = re.search(r"^install_deps\(\) \{.*?^\}\n", text, re.S | re.M)
    assert body, "install_deps not found in build.sh"
    vpy = tmp / "python"
    vpy.write_text(f'#!/bin/bash\nif [[ "$1" == -c ]]; then exit 1; fi\nprintf "%s\\n" "$@" "--" >> {tmp}/pip\n')
    vpy.chmod(0o755)
    script = "set -euo pipefail\nTG_DEPS=(numpy)\n" + body.group(0) + f'install_deps "{vpy}"\n'
    subprocess.run(["bash", "-c", script], env={"PATH": "/usr/bin:/bin", "TG_TORCH_INDEX": index}, check=True,
                   capture_output=True, text=True, timeout=30)
    calls, call = [], []
    for line in (tmp / "pip").read_text().splitlines():
        if line == "--":
            calls.append(call)
            call = []
        else:
            call.append(line)
    return calls


@pytest.mark.parametrize("index", ["", CPU_INDEX])
def test_a_missing_torch_comes_from_the_index_the_step_names(tmp_path: Path, index: str) -> None:
    (torch,) = [c for c in _install_deps(tmp_path, index) if c[-1] == "torch"]
    if index:
        assert torch[torch.index("--index-url") + 1] == CPU_INDEX
    else:
        assert "--index-url" not in torch


@pytest.mark.parametrize("stage, index", [("prescreen-base", CPU_INDEX), ("prescreen-cand", CPU_INDEX),
                                          ("gate", "")])
def test_only_the_pre_screen_s_builds_ask_for_the_cpu_build(stage: str, index: str) -> None:
    steps = load_yaml(REPO / ".github" / "actions" / "pr-gate" / "action.yml")["runs"]["steps"]
    # the base and the PR build (the base half's overlay of the PR installs nothing: it patches
    # the base build, which has its torch)
    builds = [s for s in steps if s.get("run", "").endswith('gate_steps.sh" build') and s["env"].get("TG_ONLY") != "overlay"]
    assert len(builds) == 2
    ctx = Evaluator({"github": github_context("pull_request", "pull_request.synchronize"),
                     "inputs": {"stage": stage}})
    assert {interpolate(s["env"]["TG_TORCH_INDEX"], ctx) for s in builds} == {index}
