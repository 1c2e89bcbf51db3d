"""One op's subprocess: its own process group, logs to files, a deadline, and a clean kill.

The child runs in a new session (``start_new_session``): a terminal's Ctrl-C reaches the
batch, not the op, and the batch can kill the op with everything it started (compiler
workers, a hung grandchild) as one process group: SIGTERM, a grace period, then SIGKILL
(as asv does). While a child runs, ``.running`` in its op folder names its group, so a batch
killed with ``kill -9`` leaves enough behind for ``--resume`` to end an orphan still
holding the device before the op runs again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

RUNNING = ".running"
POLL_S = 0.05


@dataclass(frozen=True)
class ProcResult:
    rc: int  # negative: killed by that signal
    wall_s: float
    timed_out: bool
    interrupted: bool
    pgid: int


def _start_ticks(pid: int) -> str | None:
    """The process's start time in clock ticks (Linux): tells a live orphan from a new
    process that reused its pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _has_live_member(pgid)


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of the group, from /proc (empty where there is none)."""
    found = []
    try:
        entries = list(Path("/proc").iterdir())
    except OSError:
        return found
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def _has_live_member(pgid: int) -> bool:
    """A group of zombies only (reaped by nobody in some containers) counts as gone."""
    if not Path("/proc").is_dir():
        return True
    return bool(group_members(pgid))


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def kill_group(proc: subprocess.Popen[bytes], pgid: int, grace_s: float) -> int:
    """SIGTERM to the group, up to ``grace_s`` for the leader to exit, then SIGKILL to the
    group (stragglers included); returns the leader's exit status."""
    _signal_group(pgid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        pass
    _signal_group(pgid, signal.SIGKILL)
    rc = proc.wait()
    deadline = time.monotonic() + 5.0
    while _group_alive(pgid) and time.monotonic() < deadline:  # members exit asynchronously
        time.sleep(POLL_S)
    return rc


def reason_to_end(stop: threading.Event, t0: float, timeout_s: float | None) -> str | None:
    """``interrupted`` once ``stop`` is set, ``timed_out`` past the deadline, else None."""
    if stop.is_set():
        return "interrupted"
    if timeout_s is not None and time.monotonic() - t0 >= timeout_s:
        return "timed_out"
    return None


def kill_leftovers(pgid: int) -> None:
    """SIGKILL to what is left of a group whose leader ended."""
    if _group_alive(pgid):
        _signal_group(pgid, signal.SIGKILL)


def run_attempt(argv: Sequence[str], *, env: Mapping[str, str], stdout: Path, stderr: Path,
                timeout_s: float | None, grace_s: float, stop: threading.Event,
                running_file: Path | None = None) -> ProcResult:
    """Run ``argv`` to its end, its deadline (``timed_out``) or ``stop`` (``interrupted``)."""
    t0 = time.monotonic()
    with open(stdout, "wb") as out, open(stderr, "wb") as err:
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                env=dict(env), start_new_session=True)
    pgid = proc.pid  # a new session's leader leads its group
    if running_file is not None:
        _write_running(running_file, proc.pid, argv)
    timed_out = interrupted = False
    try:
        while True:
            try:
                rc = proc.wait(timeout=POLL_S)
                break
            except subprocess.TimeoutExpired:
                pass
            ending = reason_to_end(stop, t0, timeout_s)
            if ending:
                timed_out, interrupted = ending == "timed_out", ending == "interrupted"
                rc = kill_group(proc, pgid, grace_s)
                break
        kill_leftovers(pgid)  # the leader is gone; what it started must not outlive it (a device held by an orphan)
    except BaseException:
        kill_group(proc, pgid, 0.0)
        raise
    finally:
        if running_file is not None:
            running_file.unlink(missing_ok=True)
    return ProcResult(rc=rc, wall_s=time.monotonic() - t0, timed_out=timed_out,
                      interrupted=interrupted, pgid=pgid)


def _write_running(path: Path, pid: int, argv: Sequence[str]) -> None:
    from tritongate.atomicio import write_json_atomic

    write_json_atomic(path, {"pid": pid, "pgid": pid, "start_ticks": _start_ticks(pid), "argv": list(argv)})


def reap_orphan(running_file: Path, grace_s: float) -> str | None:
    """End the process group a dead batch left running for this op (verified by its start
    time, so a reused pid is never hit); a line saying what was done, or None."""
    try:
        doc = json.loads(running_file.read_text(encoding="utf-8"))
        pid, pgid, ticks = int(doc["pid"]), int(doc["pgid"]), doc.get("start_ticks")
    except (OSError, ValueError, KeyError, TypeError):
        running_file.unlink(missing_ok=True)
        return None
    note = None
    leader = _start_ticks(pid)
    # the leader itself, or members of a group whose leader is gone (no new group can take
    # that id while they live)
    if (ticks is not None and leader == ticks) or (leader is None and Path("/proc").is_dir() and _group_alive(pgid)):
        _signal_group(pgid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while _start_ticks(pid) == ticks and time.monotonic() < deadline:
            time.sleep(POLL_S)
        _signal_group(pgid, signal.SIGKILL)
        deadline = time.monotonic() + 5.0
        while _group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(POLL_S)
        note = f"ended process group {pgid} left running by an earlier batch process"
    running_file.unlink(missing_ok=True)
    return note
