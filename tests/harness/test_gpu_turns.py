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
    assert turns.failure is not None and "was not ready within" in turns.failure
    assert turns.take_turn() is False and turns.state()["partner"] is False  # and no second wait
    turns.close()


def test_a_partner_that_dies_mid_run_names_the_turn_and_its_last_error() -> None:
    body = ("print('ready', flush=True)\nfor i, _ in enumerate(sys.stdin):\n"
            "    if i == 2:\n        sys.stderr.write('CUDA error: an illegal memory access\\n'); sys.exit(3)\n"
            "    print('ok', flush=True)\n")
    turns = GpuTurns("cuda", 0, argv=_partner(body))
    assert [turns.take_turn() for _ in range(4)] == [True, True, False, False]
    assert turns.failure == "the partner exited after 2 turns (CUDA error: an illegal memory access)"
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


def test_a_half_written_answer_times_out_instead_of_hanging(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu_turns, "TURN_TIMEOUT_S", 0.5)
    body = ("print('ready', flush=True)\nfor _ in sys.stdin:\n"
            "    sys.stdout.write('o'); sys.stdout.flush()\n    import time; time.sleep(30)\n")
    turns = GpuTurns("cuda", 0, argv=_partner(body))
    t0 = time.monotonic()
    assert turns.take_turn() is False
    assert time.monotonic() - t0 < 10
    assert turns.failure == "the partner stopped answering after 0 turns"
    turns.close()


def test_stray_lines_and_answers_written_together_are_read_right() -> None:
    # a library printing at import, then 'ready' and the first answer in one write
    body = ("print('Warning: something at import', flush=True)\n"
            "sys.stdout.write('ready\\n'); sys.stdout.flush()\n"
            "for i, _ in enumerate(sys.stdin):\n"
            "    sys.stdout.write('noise\\nok\\n' if i == 0 else 'ok\\n'); sys.stdout.flush()\n")
    turns = GpuTurns("cuda", 0, argv=_partner(body))
    assert [turns.take_turn() for _ in range(3)] == [True, True, True], turns.failure
    turns.close()


def test_closing_a_partner_that_is_still_starting_kills_it_at_once() -> None:
    turns = GpuTurns("cuda", 0, argv=_partner("import time\ntime.sleep(30)\n"))
    proc = turns._proc
    t0 = time.monotonic()
    turns.close()
    assert time.monotonic() - t0 < 5 and proc is not None and proc.poll() is not None


def test_the_partner_dies_with_the_process_that_started_it(tmp_path) -> None:
    """A parent killed outright (kill -9) takes its partner with it, even one that never
    reached its read loop (PR_SET_PDEATHSIG; the partner is not in a group of its own)."""
    import os
    import signal
    import subprocess

    parent = subprocess.Popen([sys.executable, "-c", (
        "import sys, time\nfrom tritongate.harness.gpu_turns import GpuTurns\n"
        "t = GpuTurns('cuda', 0, argv=[sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "print(t.pid, flush=True)\ntime.sleep(60)\n")], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    partner = int(parent.stdout.readline())
    assert os.getpgid(partner) == os.getpgid(parent.pid)  # a group kill of the worker reaches it
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(partner, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        os.kill(partner, signal.SIGKILL)
        pytest.fail("the partner outlived its parent")


def test_the_partner_is_counted_as_the_run_s_own_process() -> None:
    turns = GpuTurns("cuda", 0, argv=_partner(ANSWERS))
    assert turns.pid is not None and turns.pid != __import__("os").getpid()
    turns.close()
    assert turns.pid is None


@pytest.fixture
def stand_in_partners(monkeypatch: pytest.MonkeyPatch) -> list[GpuTurns]:
    """lease_partner starting stand-in partners (no torch), with an empty process table."""
    started: list[GpuTurns] = []

    def start(api: str, index: int) -> GpuTurns:
        started.append(GpuTurns(api, index, argv=_partner(ANSWERS)))
        return started[-1]

    monkeypatch.setattr(gpu_turns, "GpuTurns", start)
    monkeypatch.setattr(gpu_turns, "_partners", {})
    yield started
    for partner in started:
        partner.close()


def test_runs_in_one_process_share_its_partner_and_count_their_own_turns(stand_in_partners) -> None:
    first = gpu_turns.lease_partner("cuda", 0)
    assert [first.take_turn() for _ in range(3)] == [True] * 3
    second = gpu_turns.lease_partner("cuda", 0)  # the next op of a batch worker
    assert second.take_turn()
    assert len(stand_in_partners) == 1 and first.pid == second.pid
    assert first.state() == {"partner": True, "turns": 3, "failure": None}
    assert second.state() == {"partner": True, "turns": 1, "failure": None}


def test_another_device_or_visibility_gets_a_partner_of_its_own_and_ends_the_earlier(
        stand_in_partners, monkeypatch) -> None:
    gpu_turns.lease_partner("cuda", 0)
    gpu_turns.lease_partner("cuda", 1)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    last = gpu_turns.lease_partner("cuda", 0)
    assert len(stand_in_partners) == 3
    # an earlier run's partner holds no context on a GPU nobody here measures any more
    assert [p.alive for p in stand_in_partners] == [False, False, True]
    assert gpu_turns.partner_pids() == [last.pid]


def test_a_partner_that_died_between_runs_is_replaced_before_the_next_run(stand_in_partners) -> None:
    first = gpu_turns.lease_partner("cuda", 0)
    assert first.take_turn()
    stand_in_partners[0]._proc.kill()  # dies while no run uses it
    stand_in_partners[0]._proc.wait()
    second = gpu_turns.lease_partner("cuda", 0)
    assert second.take_turn() and len(stand_in_partners) == 2
    assert second.state() == {"partner": True, "turns": 1, "failure": None}


def test_partner_pids_lists_only_this_process_s_live_partners(stand_in_partners, monkeypatch) -> None:
    mine = gpu_turns.lease_partner("cuda", 0)
    assert gpu_turns.partner_pids() == [mine.pid]
    monkeypatch.setattr(gpu_turns.os, "getpid", lambda: -7)  # as a forked child sees the table
    assert gpu_turns.partner_pids() == []


def test_a_partner_is_closed_at_exit_not_only_killed(tmp_path) -> None:
    """At exit the process ends its partner's input and waits for it: the partner finishes its
    last turn's work cleanly (here: a pause, then a marker) instead of being killed with it."""
    import subprocess

    marker = tmp_path / "ended"
    program = ("import sys, time\nprint('ready', flush=True)\nfor _ in sys.stdin:\n    print('ok', flush=True)\n"
               f"time.sleep(0.5)\nopen({str(marker)!r}, 'w').write('end of input')\n")
    script = ("from tritongate.harness import gpu_turns\n"
              f"gpu_turns.PARTNER_PROGRAM = {program!r}\n"
              "assert gpu_turns.lease_partner('cuda', 0).take_turn()\n")
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    # no waiting here: a process that exited without waiting would have had its partner killed
    # (die_with_parent) during the pause
    assert marker.exists() and marker.read_text() == "end of input"


def test_a_forked_child_never_uses_its_parent_s_partner(stand_in_partners, monkeypatch) -> None:
    parent = gpu_turns.lease_partner("cuda", 0)
    monkeypatch.setattr(gpu_turns.os, "getpid", lambda: -7)
    child = gpu_turns.lease_partner("cuda", 0)
    assert parent.pid != child.pid


def test_a_failed_partner_is_reported_by_its_run_and_replaced_for_the_next(stand_in_partners) -> None:
    run = gpu_turns.lease_partner("cuda", 0)
    assert run.take_turn()
    stand_in_partners[0]._proc.kill()  # dies mid-run
    stand_in_partners[0]._proc.wait()
    assert run.take_turn() is False
    assert run.state()["partner"] is False and run.state()["turns"] == 1
    assert run.state()["failure"].endswith("(this run: 1 turns)")
    following = gpu_turns.lease_partner("cuda", 0)
    assert following.take_turn() and len(stand_in_partners) == 2
    assert following.state() == {"partner": True, "turns": 1, "failure": None}
