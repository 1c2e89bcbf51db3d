"""Fake ops for the batch tests: a suite of misbehaving op names and the command that runs
``fake_run.py`` (a stand-in for ``tritongate run``) in place of the real one."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Mapping, Sequence

import yaml

from tritongate.batch.plan import CommandFactory, OpInvocation

FAKE_RUN = Path(__file__).with_name("fake_run.py")
DRIVE = Path(__file__).with_name("drive.py")


def fake_command(state: Path) -> CommandFactory:
    def command(inv: OpInvocation) -> list[str]:
        argv = [sys.executable, str(FAKE_RUN), "--state", str(state), "run", "--suite", inv.suite,
                "--ops", inv.op, "--out", str(inv.out), *inv.options.args()]
        if inv.dtypes is not None:
            argv += ["--dtypes", ",".join(inv.dtypes)]
        if inv.replay_from is not None:
            argv += ["--replay-from", str(inv.replay_from)]
        return argv
    return command


def write_suite(path: Path, ops: Mapping[str, Sequence[str]]) -> Path:
    """A suite of ``ops`` (name -> dtypes), each with two inline shapes."""
    doc = {"description": "fake ops for the batch tests",
           "ops": {op: {"dtypes": list(dtypes), "shapes": [[64], [128]]} for op, dtypes in ops.items()}}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def calls(state: Path) -> list[dict]:
    path = state / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def call_count(state: Path, op: str) -> int:
    return sum(c["op"] == op for c in calls(state))
