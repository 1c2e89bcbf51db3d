"""The paired run's two run directories (``base/`` and ``candidate/`` of the pair directory):
each side's identity (its build, worker, device and the run's pairing settings), its writer
and run log, its rows as they come, and how the directory ends (complete or failed).

Kept apart from the driver so that what a pair run records about itself is in one place:
``tritongate.gate`` and ``pair.merge`` read these identities back.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterable

import yaml

from tritongate.atomicio import write_text_atomic
from tritongate.ops.registry import case_id
from tritongate.pair.pool import Side
from tritongate.pair.request import PairRequest
from tritongate.pair.schedule import PairSchedule
from tritongate.progress import row_line
from tritongate.rundir import LOG, RunWriter
from tritongate.runlog import RunLog
from tritongate.schema import Row, RowStatus


def plan_keys(plan: dict[str, Any]) -> list[list[str]]:
    """The plan's rows as [op, case, dtype], in the order shards are cut from."""
    return [[r["op"], case_id(tuple(r["shape"])), r["dtype"]] for r in plan["rows"]]


def run_identity(request: PairRequest, side: Side, plan: dict[str, Any], gpu_before: Any, schedule: PairSchedule,
                 *, pair_id: str, worker_pool: int) -> dict[str, Any]:
    """Side ``side``'s identity.json; ``worker_pool``: the worker pairs that measure."""
    h = side.hello
    other = "candidate" if side.name == "base" else "base"
    return {
        "suite": plan["suite"], "backend": h.get("backend"), "device": h.get("device"),
        "timer": h.get("timer"), "measure_config": h.get("measure_config", {}),
        "compiler_ref": h.get("compiler_ref"), "commit": h.get("commit"), "software": h.get("software"),
        "host": h.get("host"), "codegen_env": h.get("codegen_env"), "gpu_state_before": gpu_before,
        "started_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "replay_from": h.get("replay_from"), "replay_record": h.get("replay_record"),
        "tuner_cache": h.get("tuner_cache"), "planted_work": h.get("planted_work", 1),
        "planted_delay": h.get("planted_delay"),
        "cpu_affinity": h.get("cpu_affinity"),
        "pair": {"pair_id": pair_id, "side": side.name, "other_run": f"../{other}",
                 "build": side.build.to_dict(), "device_uuid": h.get("device_uuid"),
                 "worker_python": h.get("python"), "worker_pid": h.get("pid"), "time_identical": request.time_identical,
                 # asked for and possible (CUDA); rows that could not say so in run.log (INPUTS_OWN)
                 "share_inputs": request.share_inputs and h.get("backend") == "cuda",
                 "changed_from": request.changed_from.to_dict() if request.changed_from else None,
                 # the whole plan, so a merge missing a shard can name the rows it took with it
                 "shard": {"index": request.shard[0], "count": request.shard[1],
                           "planned_rows": len(plan["rows"]), "plan": plan_keys(plan)} if request.shard else None,
                 "only_rows": sorted("/".join(k) for k in request.only_rows)
                 if request.only_rows is not None else None,
                 "schedule": {"min_rounds": schedule.min_rounds, "max_rounds": schedule.max_rounds,
                              "confirm_rounds": schedule.confirm_rounds,
                              "row_budget_s": schedule.row_budget_s, "run_budget_s": schedule.run_budget_s,
                              "max_worker_pairs": schedule.max_worker_pairs, "worker_pool": worker_pool,
                              "confirm_calls": schedule.confirm_calls}},
    }


def open_sides(request: PairRequest, sides: Iterable[Side], pair_dir: Path, plan: dict[str, Any], rows: int,
               gpu_before: Any, schedule: PairSchedule, *, pair_id: str, worker_pool: int) -> None:
    """Start each side's run directory: identity, the suite's shapes, the run log's header."""
    shapes_text = yaml.safe_dump(plan["shapes"], sort_keys=False)
    for side in sides:
        path = pair_dir / side.name
        side.opened_writer = RunWriter(path, run_identity(request, side, plan, gpu_before, schedule, pair_id=pair_id,
                                                   worker_pool=worker_pool), mode="replay")
        write_text_atomic(path / "shapes.yaml", shapes_text)
        side.opened_log = RunLog(path / LOG)
        side.log.write(f"tritongate pair  side={side.name}  suite={plan['suite']['name']}  "
                       f"backend={side.hello.get('backend')}  device={side.hello.get('device')}  "
                       f"rows={rows}  compiler={side.hello.get('compiler_ref')}  "
                       f"python={side.build.python}  replay_from={side.hello.get('replay_from')}")


def write_row(side: Side, row: Row, extra_markers: tuple[str, ...]) -> None:
    """Add ``row`` to the side's run and log; a measured row carries ``extra_markers`` too
    (the device's state before the run)."""
    if extra_markers and row.status is RowStatus.OK:
        row = replace(row, markers=row.markers + extra_markers)
    side.writer.add(row)
    side.log.write(row_line(row))
    for m in row.markers:
        side.log.write(m)


def finish_sides(sides: Iterable[Side], *, rows: int, gpu_after: Any, clock: Callable[[], float], t0: float,
                 timed_s: float, sharing_off: str) -> None:
    """Complete each side's run: what the run learnt on the way goes into its identity (its
    wall time on ``clock``, from ``t0``)."""
    for side in sides:
        side.writer.set_identity_extra({"gpu_state_after": gpu_after,
                                        "wall_s": round(clock() - t0, 3),
                                        "timed_s": round(timed_s, 3), "restarts": side.restarts,
                                        "shared_inputs_failed": sharing_off or None})
        side.writer.finish()
        side.log.write(f"RUN_COMPLETE rows={rows} restarts={side.restarts}")


def fail_sides(sides: Iterable[Side], why: str) -> bool:
    """Mark each side's run failed (``why``) and close its log; whether any run had begun."""
    begun = False
    for side in sides:
        if side.opened_writer is not None:
            side.opened_writer.fail(why)
            begun = True
        if side.opened_log is not None:
            side.opened_log.write(f"RUN_FAILED {why}")
            side.log.close()
    return begun


def close_logs(sides: Iterable[Side]) -> None:
    for side in sides:
        if side.log is not None:
            side.log.close()
