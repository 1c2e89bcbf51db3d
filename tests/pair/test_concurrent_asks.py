"""What the paired run asks of several workers at once: every worker's start-up (its imports
and device context take seconds), an op's first row prepared by the whole pool (its code
generation and compiles), and each side's prepare, warm-up with a known k and finish at a
fresh worker pair. Timing never overlaps: a round, and the warm-up that sets k, are asked of
one worker at a time. Each row's seconds per command are written to the run log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tritongate.pair.build import CompilerBuild
from tritongate.pair.orchestrator import PairRequest, run_pair
from tritongate.pair.request import GPU_POOL_PAIRS

from tests.pair.fakes import InProcessWorker, ScriptedExecutor, World


class EventWorker(InProcessWorker):
    """Answers at ``receive`` (not at ``send``), and logs both to a list shared by all workers."""

    events: list[tuple[str, str, str]]
    prepared_into: list[Any]  # every prepare's run_dir

    def send(self, cmd: str, timeout_s: float, **args: Any) -> Any:
        self.events.append(("send", self.side, cmd))
        if cmd == "prepare":
            self.prepared_into.append(args.get("run_dir"))
        return (cmd, timeout_s, args)

    def receive(self, pending: Any) -> dict[str, Any]:
        cmd, timeout_s, args = pending
        self.events.append(("receive", self.side, cmd))
        return self.call(cmd, timeout_s, **args)


def _run(tmp_path: Path, run_dirs: list[Any] | None = None, **kw: Any) -> tuple[list[tuple[str, str, str]], Any]:
    events: list[tuple[str, str, str]] = []

    def spawn(spec):
        worker = EventWorker(spec.side, lambda settings, spec=spec: ScriptedExecutor(
            settings, world=World(), env=spec.env, side=spec.side))
        worker.events = events
        worker.prepared_into = run_dirs if run_dirs is not None else []
        return worker

    req = PairRequest(baseline=tmp_path / "baseline", suite="scripted", out=tmp_path / "out",
                      base=CompilerBuild("base"), cand=CompilerBuild("candidate", env={"TG_BINARY": "new"}),
                      executor="tests.pair.fakes:ScriptedExecutor", **kw)
    return events, run_pair(req, spawn=spawn)


def _batches(events: list[tuple[str, str, str]], cmd: str) -> list[tuple[list[str], list[str]]]:
    """The runs of ``cmd``'s sends, each with the receives that follow it (workers' sides)."""
    out: list[tuple[list[str], list[str]]] = []
    i = 0
    while i < len(events):
        if events[i][0] == "send" and events[i][2] == cmd:
            sends, receives = [], []
            while i < len(events) and events[i][0] == "send" and events[i][2] == cmd:
                sends.append(events[i][1])
                i += 1
            while i < len(events) and events[i][0] == "receive" and events[i][2] == cmd:
                receives.append(events[i][1])
                i += 1
            out.append((sends, receives))
        else:
            i += 1
    return out


def test_every_worker_of_the_pool_is_asked_to_start_before_any_start_up_is_waited_on(tmp_path):
    events, _ = _run(tmp_path)
    inits = _batches(events, "init")
    # the first worker pair together, then the rest of the measuring pool together
    assert [sorted(s) for s, _ in inits] == [["base", "candidate"],
                                            sorted(f"{side}-{j}" for j in range(1, GPU_POOL_PAIRS)
                                                   for side in ("base", "candidate"))]
    assert all(sorted(s) == sorted(r) for s, r in inits)


def test_both_sides_prepare_and_finish_at_once_but_never_time_at_once(tmp_path):
    events, outcome = _run(tmp_path, only_ops=("add",))
    assert outcome.result.rows
    pool = 2 * GPU_POOL_PAIRS - 2  # workers of both sides but the pair in use
    for cmd in ("prepare", "finish"):
        batches = _batches(events, cmd)
        preloads = [b for b in batches if len(b[0]) == pool]
        ops = len({r.op for r in outcome.result.rows})
        assert len(preloads) == (ops if cmd == "prepare" else 0), cmd  # each op preloaded once
        assert all(len(s) == 2 and len(r) == 2 for s, r in batches if len(s) != pool), cmd
        assert len(batches) > len(preloads)
    for cmd in ("round",):  # one worker at a time: each send answered before the next
        sends = [i for i, e in enumerate(events) if e[0] == "send" and e[2] == cmd]
        assert sends and all(events[i + 1] == ("receive", events[i][1], cmd) for i in sends), cmd
    warm = _batches(events, "warm_up")
    # the row's first warm-up sets k on the base alone; fresh worker pairs warm up with it together
    singles = [s[0].split("-")[0] for s, _ in warm if len(s) == 1]
    assert singles == ["base", "candidate"] * len(outcome.result.rows)
    assert all(len(s) in (1, 2) for s, _ in warm) and any(len(s) == 2 for s, _ in warm)


def test_each_row_logs_its_seconds_per_worker_command(tmp_path):
    _, outcome = _run(tmp_path, only_ops=("add",))
    for side in ("base", "candidate"):
        log = (outcome.path / side / "run.log").read_text()
        lines = [line for line in log.splitlines() if line.startswith("ROW_SECONDS")]
        rows = [r for r in outcome.result.rows]
        assert len(lines) == len(rows)
        fields = dict(part.split("=", 1) for part in lines[0].split()[1:])
        assert fields["side"] == side and fields["op"] == "add"
        assert {"prepare", "warm_up", "round", "finish"} <= set(fields)
        assert all(float(fields[c]) >= 0 for c in ("prepare", "warm_up", "round", "finish"))
        assert int(fields["worker_pairs"]) >= 1


def test_the_pool_prepares_each_ops_first_row_all_at_once_without_writing_ir(tmp_path, monkeypatch):
    import tests.pair.fakes as fakes

    monkeypatch.setattr(fakes, "ROWS", [fakes.ROWS[0], (fakes.ROWS[0][0], (8192,), fakes.ROWS[0][2]), *fakes.ROWS[1:]])
    run_dirs: list[Any] = []
    events, outcome = _run(tmp_path, run_dirs)
    ops = list(dict.fromkeys(r.op for r in outcome.result.rows))
    assert len(ops) < len(outcome.result.rows)  # some op has several rows: it is still preloaded once
    pool = 2 * GPU_POOL_PAIRS - 2  # workers of both sides but the pair in use, which prepared the row first
    assert len([s for s, _ in _batches(events, "prepare") if len(s) == pool]) == len(ops)
    assert [len(s) for s, _ in _batches(events, "prepare")][:2] == [2, pool]  # the row's own pair first
    assert run_dirs.count(None) == pool * len(ops)  # a preload writes no IR; the row's own prepares do
    assert {str(outcome.path / "base"), str(outcome.path / "candidate")} == {d for d in run_dirs if d is not None}
    # each preloaded row is dropped again, by every worker at once, before the row is timed
    assert len([s for s, _ in _batches(events, "abort") if len(s) == pool]) == len(ops)
    for side in ("base", "candidate"):
        log = (outcome.path / side / "run.log").read_text()
        lines = [line for line in log.splitlines() if line.startswith("OP_PRELOAD")]
        assert [dict(p.split("=", 1) for p in line.split()[1:])["op"] for line in lines] == ops
        assert all(f"workers={pool} " in line and "failed=0" in line for line in lines)


def test_a_pool_of_one_pair_does_not_preload(tmp_path):
    events, _ = _run(tmp_path, only_ops=("add",), worker_pool=1)
    assert not any(cmd == "abort" for _, _, cmd in events)
    assert all(len(s) <= 2 for s, _ in _batches(events, "prepare"))
