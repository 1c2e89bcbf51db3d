"""Record-mode autotune sweeps spread over several GPUs; measurement stays serial on one.

``run --sweep-gpus N`` deals the rows to N shard processes (``tritongate run --only-rows``,
one short round: only their autotune winners count), merges the winners and measures every
row itself with them in the tuners' caches (docs/record-replay.md). Parallel processes heat
and throttle each other, so shards can pick different winners for one key: each conflict is
counted (the first shard's winner kept). A failed shard discards the whole sweep: a merged
set with holes would tune the missing keys live while claiming a parallel sweep.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from tritongate.autotune.records import Record, RecordSet, load_records
from tritongate.autotune.configs import key_text
from tritongate.errors import UsageError

ENV = "PARALLEL_WARMUP_GPUS"
DEVICES_ENV = "TRITONGATE_SWEEP_DEVICES"
_DEVICE = re.compile(r"[0-9]{1,3}|(GPU|MIG)-[0-9A-Za-z/-]{1,80}")  # which devices the shards use (default: all visible)

RowKey = tuple[str, str, str]


@dataclass
class SweepOutcome:
    """What the parallel sweep did, for the run identity and the log."""

    status: str  # used | refused | discarded | off
    reason: str = ""
    devices: tuple[str, ...] = ()
    conflicts: int = 0
    conflict_keys: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    records: RecordSet | None = None
    work_dir: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "reason": self.reason or None, "devices": list(self.devices),
                "conflicts": self.conflicts, "conflict_keys": self.conflict_keys[:20],
                "wall_s": round(self.wall_s, 3), "work_dir": self.work_dir or None}

    def log_line(self) -> str:
        if self.status == "used":
            text = (f"PARALLEL_SWEEP used devices={','.join(self.devices)} wall_s={self.wall_s:.1f} "
                    f"conflicts={self.conflicts}")
            if self.conflicts:
                text += (f"  WARNING {self.conflicts} config key(s) got different winners across shards — "
                         "parallel interference reached the sweep")
            return text
        return f"PARALLEL_SWEEP {self.status}: {self.reason}"


def requested_gpus(option: int | None, env: dict[str, str] | None = None) -> int:
    """``--sweep-gpus`` wins; else ``PARALLEL_WARMUP_GPUS``; unset, empty or < 2 is off."""
    if option is not None:
        return option
    text = (env if env is not None else os.environ).get(ENV, "").strip()
    if not text:
        return 0
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"{ENV}={text!r}: expected a whole number of GPUs (2 or more), or unset it") from None


def visible_devices(backend_name: str, env: dict[str, str] | None = None) -> list[str]:
    """The devices shards may use: ``TRITONGATE_SWEEP_DEVICES`` if set, else every device the
    backend's visibility variable (or the driver) shows."""
    env = env if env is not None else dict(os.environ)
    chosen = env.get(DEVICES_ENV, "").strip()
    if chosen:
        devices = [d.strip() for d in chosen.split(",")]
        bad = [d for d in devices if not _DEVICE.fullmatch(d)]
        if bad or len(set(devices)) != len(devices):
            why = f"{bad[0][:40]!r} is not a device index or GPU UUID" if bad else "a device is listed twice"
            raise UsageError(f"{DEVICES_ENV}={chosen[:80]!r}: {why}; expected indices like 0,1 (or GPU-/MIG- "
                             "UUIDs, as CUDA_VISIBLE_DEVICES takes them), or unset it")
        return devices
    if backend_name != "cuda":
        return []
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [d.strip() for d in visible.split(",") if d.strip()]
    try:
        import torch

        return [str(i) for i in range(torch.cuda.device_count())]
    except Exception:  # noqa: BLE001 - no driver: no devices
        return []


def refusal(gpus: int, *, replaying: bool, backend_name: str, devices: Sequence[str]) -> str:
    """Why the sweep cannot be spread (empty: it can)."""
    if replaying:
        return "a record is being replayed (--replay-from): there is nothing to sweep"
    if backend_name == "cpu" and not os.environ.get(DEVICES_ENV):
        return "the cpu backend has no GPUs to spread a sweep over"
    if len(devices) < 2:
        return f"{len(devices)} device(s) visible; a parallel sweep needs 2 or more"
    if gpus < 2:
        return f"{gpus} GPU(s) requested; a parallel sweep needs 2 or more"
    return ""


def shard_rows(rows: Sequence[RowKey], count: int) -> list[list[RowKey]]:
    """Round robin (not blocks): each shard gets every op's mix of sizes, so no shard gets
    all the big matmuls."""
    return [list(rows[i::count]) for i in range(count)]


def merge_records(shards: Sequence[RecordSet]) -> tuple[RecordSet, list[str]]:
    """One record set from the shards'; a key whose winners differ keeps the first shard's
    and is listed as a conflict."""
    merged: dict[tuple[str, str], Record] = {}
    launches: dict[RowKey, int] = {}
    conflicts: list[str] = []
    for rs in shards:
        launches.update(rs.launches)
        for match, rec in rs.records.items():
            if merged.setdefault(match, rec).config != rec.config:
                label = f"{rec.kernel} {key_text(rec.key)}"
                if label not in conflicts:
                    conflicts.append(label)
    first = shards[0]
    return RecordSet(run_dir=first.run_dir, meta=first.meta, records=merged, launches=launches), conflicts


Spawn = Callable[[list[str], dict[str, str], Path], subprocess.Popen]


def _spawn(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with open(log, "w") as f:  # the child keeps its own descriptor
        return subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def run_sweep(*, suite: str, backend_name: str, shape_file: Path | None, rows: Sequence[RowKey],
              devices: Sequence[str], gpus: int, work_dir: Path, spawn: Spawn = _spawn,
              timeout_s: float = 6 * 3600.0) -> SweepOutcome:
    """Sweep ``rows`` in ``min(gpus, len(devices))`` shard processes and merge their winners."""
    count = min(gpus, len(devices))
    used = tuple(devices[:count])
    work_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    procs: list[tuple[int, subprocess.Popen, Path]] = []
    for i, part in enumerate(shard_rows(list(rows), count)):
        if not part:
            continue
        rows_file = work_dir / f"shard-{i + 1}.rows.json"
        rows_file.write_text(json.dumps([list(k) for k in part]))
        out = work_dir / f"shard-{i + 1}"
        cmd = [sys.executable, "-m", "tritongate", "run", "--suite", suite, "--backend", backend_name,
               "--out", str(out), "--only-rows", str(rows_file), "--rounds", "1", "--samples-per-round", "1",
               "--allow-busy-gpu", "--color", "never"]  # busy: the parent holds a context on device 0
        if shape_file is not None:
            cmd += ["--shape-file", str(shape_file)]
        env = {k: v for k, v in os.environ.items() if k not in (ENV, DEVICES_ENV)}  # a shard sweeps serially
        env.update(CUDA_VISIBLE_DEVICES=used[i], NO_COLOR="1")
        procs.append((i + 1, spawn(cmd, env, work_dir / f"shard-{i + 1}.log"), out))
    failed = []
    for index, proc, _ in procs:
        try:
            rc = proc.wait(timeout=max(timeout_s - (time.perf_counter() - t0), 1.0))
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = -9
        if rc != 0:
            failed.append(f"shard {index} exit {rc}")
    wall = time.perf_counter() - t0

    def discarded(reason: str) -> SweepOutcome:
        return SweepOutcome("discarded", reason, used, wall_s=wall, work_dir=str(work_dir))

    if failed:
        return discarded(f"{', '.join(failed)} (logs in {work_dir}): the merged winners would have holes; "
                         "sweeping serially instead")
    sets = []
    for index, _, out in procs:
        runs = [p for p in out.iterdir() if p.is_dir()] if out.is_dir() else []
        if len(runs) != 1:
            return discarded(f"shard {index} left no run directory in {out}; sweeping serially")
        sets.append(load_records(runs[0], backend=backend_name))
    merged, conflicts = merge_records(sets)
    shutil.rmtree(work_dir, ignore_errors=True)  # the shards' runs are scratch
    return SweepOutcome("used", "", used, conflicts=len(conflicts), conflict_keys=conflicts, wall_s=wall,
                        records=merged)
