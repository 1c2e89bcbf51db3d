"""The GPU-turn partner: its protocol, its failures and its environment, driven with real
partner processes (the shipped program on torch's CPU device, and small stand-ins)."""

from __future__ import annotations

import sys
import time

import pytest

from tritongate.harness import gpu_turns
from tritongate.harness.gpu_turns import GpuTurns, turns_requested


def _partner(body: str) -> list[str]:
    return [sys.executable, "-c", "import os, sys\n" + body]


ANSWERS = "print('ready', flush=True)\nfor _ in sys.stdin:\n    print('ok', flush=True)\n"


def test_the_shipped_partner_program_takes_turns_on_a_torch_device() -> None:
    pytest.importorskip("torch")
    turns = GpuTurns("cpu", 0)  # the real program; torch.cpu has the synchronize it calls
    try:
        assert [turns.take_turn() for _ in range(3)] == [True, True, True]
        assert turns.state() == {"partner": True, "turns": 3, "failure": None}
    finally:
        turns.close()
    assert turns.take_turn() is False  # closed: no partner, no turn, no error


def test_close_ends_the_partner_process() -> None:
    turns = GpuTurns("cuda", 0, argv=_partner(ANSWERS))
    assert turns.take_turn()
    proc = turns._proc
    assert proc is not None
    turns.close()
    assert proc.poll() == 0  # its loop ended at the end of its input


def test_a_partner_that_never_starts_is_given_up_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu_turns, "START_TIMEOUT_S", 0.3)
    turns = GpuTurns("cuda", 0, argv=_partner("import time\ntime.sleep(30)\n"))
    t0 = time.monotonic()
    assert turns.take_turn() is False
    assert time.monotonic() - t0 < 10
    assert turns.failure is not None and "did not start within" in turns.failure
    assert turns.take_turn() is False and turns.state()["partner"] is False  # and no second wait
    turns.close()


def test_a_partner_that_dies_mid_run_names_the_turn_and_its_last_error() -> None:
    body = ("print('ready', flush=True)\nfor i, _ in enumerate(sys.stdin):\n"
            "    if i == 2:\n        sys.stderr.write('CUDA error: an illegal memory access\\n'); sys.exit(3)\n"
            "    print('ok', flush=True)\n")
    turns = GpuTurns("cuda", 0, argv=_partner(body))
    assert [turns.take_turn() for _ in range(4)] == [True, True, False, False]
    assert turns.failure == "the partner stopped answering after 2 turns (CUDA error: an illegal memory access)"
    assert turns.state() == {"partner": False, "turns": 2, "failure": turns.failure}
    turns.close()


def test_a_partner_that_cannot_be_started_says_so() -> None:
    turns = GpuTurns("cuda", 0, argv=["/nonexistent/python-for-turns"])
    assert turns.take_turn() is False
    assert turns.failure is not None and turns.failure.startswith("the partner could not start")
    turns.close()


def test_the_partner_gets_no_runner_file_commands_or_tokens(tmp_path) -> None:
    env = {"PATH": "/usr/bin:/bin", "GITHUB_ENV": str(tmp_path / "env"), "GITHUB_TOKEN": "secret", "KEEP": "1"}
    body = ("bad = [k for k in ('GITHUB_ENV', 'GITHUB_TOKEN') if k in os.environ]\n"
            "print('ready' if not bad and os.environ.get('KEEP') == '1' else 'leaked ' + ','.join(bad), flush=True)\n"
            "for _ in sys.stdin:\n    print('ok', flush=True)\n")
    turns = GpuTurns("cuda", 0, argv=_partner(body), env=env)
    assert turns.take_turn(), turns.failure
    turns.close()


@pytest.mark.parametrize("value, on", [(None, True), ("1", True), ("0", False), ("", True)])
def test_turns_are_on_unless_switched_off(value: str | None, on: bool) -> None:
    assert turns_requested({} if value is None else {gpu_turns.TURNS_ENV: value}) is on
