"""What a batch runs: the request, the ops of this shard with the dtypes each asks for, the
command line of one op's subprocess, and ``batch.json`` (the plan, kept for ``--resume`` and
``batch-merge``). The parent reads the suite YAML only: a crash in an op must never take the
batch down with it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from tritongate import __version__
from tritongate.argtypes import shard_spec
from tritongate.atomicio import write_json_atomic
from tritongate.errors import UsageError
from tritongate.suites import Suite, load_suite

MANIFEST = "batch.json"
MANIFEST_KIND = "tritongate-batch"
MANIFEST_VERSION = 1
PLAN_DIGEST = "plan_sha256"  # of the plan, written with it: a plan changed afterwards is refused
OPS_DIR = "ops"
RUN_DIR = "run"  # the merged, ordinary run directory
WORKER_ATTEMPTS = 32  # attempts a lane's worker runs before it is replaced (batch.lane)


@dataclass(frozen=True)
class RunOptions:
    """Options every op's ``tritongate run`` gets; part of the plan (a resume keeps them)."""

    backend: str = "auto"
    shape_file: str | None = None
    rounds: int | None = None
    samples_per_round: int | None = None
    l2: str | None = None
    isolate_tuner_cache: bool = False
    allow_busy_gpu: bool = False
    sample_ms: float | None = None  # a record's device time per sample (its rows' k)

    def args(self) -> list[str]:
        out = ["--backend", self.backend]
        for flag, value in (("--shape-file", self.shape_file), ("--rounds", self.rounds),
                            ("--samples-per-round", self.samples_per_round), ("--l2", self.l2),
                            ("--sample-ms", self.sample_ms)):
            if value is not None:
                out += [flag, str(value)]
        return out + (["--isolate-tuner-cache"] if self.isolate_tuner_cache else []) + \
            (["--allow-busy-gpu"] if self.allow_busy_gpu else [])


@dataclass(frozen=True)
class OpInvocation:
    """One subprocess: ``op`` of ``suite`` into ``out``, the dtypes it asks for (None: the
    suite's), and the record it replays."""

    op: str
    suite: str
    dtypes: tuple[str, ...] | None
    out: Path
    replay_from: Path | None
    options: RunOptions


CommandFactory = Callable[[OpInvocation], Sequence[str]]


def tritongate_run(python: str = sys.executable) -> CommandFactory:
    """The real per-op command: ``python -m tritongate run ... --out BATCH/ops/OP``."""

    def command(inv: OpInvocation) -> list[str]:
        argv = [python, "-m", "tritongate", "run", "--suite", inv.suite, "--ops", inv.op,
                "--out", str(inv.out), "--color", "never", *inv.options.args()]
        if inv.dtypes is not None:
            argv += ["--dtypes", ",".join(inv.dtypes)]
        if inv.replay_from is not None:
            argv += ["--replay-from", str(inv.replay_from)]
        return argv

    return command


@dataclass(frozen=True)
class BatchRequest:
    suite: str
    out: Path | None = None  # parent of a new batch directory
    resume: Path | None = None  # an existing batch directory to continue
    ops: tuple[str, ...] = ()  # empty: every op of the suite
    dtypes: tuple[str, ...] = ()  # empty: each op's suite dtypes
    options: RunOptions = field(default_factory=RunOptions)
    replay_root: Path | None = None
    shard: tuple[int, int] = (1, 1)
    devices: tuple[str, ...] = ()  # one op at a time per device; empty: one at a time, device untouched
    op_timeout_s: float | None = 3600.0  # per subprocess; None: no limit
    kill_grace_s: float = 10.0  # SIGTERM, then SIGKILL this much later
    retries: int = 2
    python: str = sys.executable
    env: Mapping[str, str] = field(default_factory=dict)  # added to every op's environment
    command: CommandFactory | None = None  # None: tritongate_run(python)
    # per worker process before it is replaced; 0: a fresh process per attempt. Both measure
    # alike since every CUDA process settles its graph state first (harness.device)
    worker_attempts: int = WORKER_ATTEMPTS

    def __post_init__(self) -> None:
        if (self.out is None) == (self.resume is None):
            raise UsageError("a batch needs either an output folder (new batch) or a batch directory to resume")
        index, count = self.shard
        if not 1 <= index <= count:
            raise UsageError(f"shard {index}/{count}: expected I/N with 1 <= I <= N")
        if self.retries < 0:
            raise UsageError(f"--retries {self.retries}: expected a whole number >= 0")
        if self.op_timeout_s is not None and not self.op_timeout_s > 0:
            raise UsageError(f"--op-timeout {self.op_timeout_s}: expected seconds > 0 "
                             "(0 on the command line: no limit)")
        if not self.kill_grace_s >= 0:
            raise UsageError(f"--kill-grace {self.kill_grace_s}: expected seconds >= 0")
        if len(set(self.devices)) != len(self.devices):
            raise UsageError(f"--devices {','.join(self.devices)}: a device is named twice")
        if self.worker_attempts < 0:
            raise UsageError(f"--worker-attempts {self.worker_attempts}: expected a whole number >= 0 "
                             "(0: a fresh process per attempt)")


@dataclass(frozen=True)
class OpPlan:
    op: str
    suite_dtypes: tuple[str, ...]  # what the suite lists for the op
    dtypes: tuple[str, ...]  # what the first attempt measures
    restricted: bool  # dtypes narrowed by --dtypes (passed on as --dtypes)
    notes: tuple[str, ...] = ()

    @property
    def ask(self) -> tuple[str, ...] | None:
        return self.dtypes if self.restricted else None


@dataclass(frozen=True)
class Plan:
    suite: Suite
    planned: tuple[str, ...]  # every selected op of the suite, in suite order (all shards)
    ops: tuple[OpPlan, ...]  # this shard's


def plan_batch(request: BatchRequest) -> Plan:
    """The suite's ops (``--ops`` keeps suite order), this shard's share (every N-th from the I-th:
    round robin, so shards of a suite sorted by cost get similar loads) and the dtypes each asks
    for; ``--dtypes`` naming none of an op's falls back to its own (note ``dtype_fallback``)."""
    suite = load_suite(request.suite, shape_file=request.options.shape_file)
    names = [op.name for op in suite.ops]
    unknown = [o for o in request.ops if o not in names]
    if unknown:
        raise UsageError(f"--ops names {', '.join(unknown)}, which suite {suite.name} does not list "
                         f"({', '.join(names)})")
    listed = {d for op in suite.ops for d in op.dtypes}
    if request.dtypes and not listed & set(request.dtypes):
        raise UsageError(f"--dtypes {','.join(request.dtypes)}: no op of suite {suite.name} lists any of "
                         f"them (it lists {', '.join(sorted(listed))}); check the spelling")
    planned = tuple(n for n in names if not request.ops or n in request.ops)
    index, count = request.shard
    mine = set(planned[index - 1::count])
    ops = []
    for op in [o for o in suite.ops if o.name in mine]:
        chosen = tuple(d for d in op.dtypes if d in request.dtypes) if request.dtypes else op.dtypes
        fallback = (f"dtype_fallback: --dtypes {','.join(request.dtypes)} names none of the op's dtypes; "
                    f"measured {','.join(op.dtypes)}",) if request.dtypes and not chosen else ()
        ops.append(OpPlan(op.name, op.dtypes, chosen or op.dtypes, restricted=chosen not in ((), op.dtypes),
                          notes=fallback))
    root = request.replay_root
    if root is not None and not ((root / MANIFEST).is_file() or (root / "results.json").is_file()):
        raise UsageError(f"--replay-root {root} is neither a batch directory (no {MANIFEST}) nor a run "
                         "directory (no results.json); pass a record batch or a record run")
    return Plan(suite=suite, planned=planned, ops=tuple(ops))


def replay_source(root: Path, op: str) -> Path | None:
    """The record an op replays: the op's own record run in a batch (the original record,
    never a copy), else the batch's merged run, else ``root`` itself when it is a run."""
    from tritongate.batch.status import read_op_result

    if (root / MANIFEST).is_file():
        done = read_op_result(root / OPS_DIR / op, complete_only=True)
        if done is not None and len(done.runs) == 1 and (root / done.runs[0]).is_dir():
            return root / done.runs[0]
        merged = root / RUN_DIR
        return merged if (merged / "results.json").is_file() else None
    return root if (root / "results.json").is_file() else None


def visibility_var(backend: str) -> str:
    """The variable that picks a device for ``backend`` (auto: CUDA's), without importing torch."""
    from tritongate.backends import BACKENDS

    key = backend.strip().lower()
    if key == "auto":
        return "CUDA_VISIBLE_DEVICES"
    # an unknown backend: "" (the op's own preflight names it)
    return next((b.visibility_var for b in BACKENDS.values() if key == b.name or key in b.aliases), "")


def parse_devices(text: str) -> tuple[str, ...]:
    devices = tuple(d.strip() for d in text.split(","))
    if not devices or any(not d or any(c.isspace() for c in d) for d in devices):
        raise UsageError(f"--devices {text!r}: expected device ids separated by commas, e.g. 0,1,2,3")
    if len(set(devices)) != len(devices):
        raise UsageError(f"--devices {text!r}: a device is named twice")
    return devices


def parse_shard(text: str) -> tuple[int, int]:
    try:
        return shard_spec(text)
    except ValueError:
        raise UsageError(f"--shard {text!r}: expected I/N with 1 <= I <= N (e.g. 2/4)") from None


def op_environment(request: BatchRequest, device: str, pythonpath: Path | None) -> dict[str, str]:
    """The op's environment: the parent's, this tritongate importable first (another
    ``--python`` imports the same package), the overlay, and its device."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1"}
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(pythonpath), os.environ.get("PYTHONPATH")]))
    env.update(request.env)
    var = visibility_var(request.options.backend)
    if device and var:
        env[var] = device
    return env


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def plan_doc(request: BatchRequest, plan: Plan) -> dict[str, Any]:
    """What fixes the batch's rows: a resume must match it, shards being merged must share it
    (all but the shard index and the ops that follow from it)."""
    return {"suite": {"name": plan.suite.name, "path": str(plan.suite.path), "digest": plan.suite.digest},
            "planned_ops": list(plan.planned), "dtypes": list(request.dtypes),
            "options": asdict(request.options),
            "replay_root": str(request.replay_root.resolve()) if request.replay_root else None,
            "shard": {"index": request.shard[0], "count": request.shard[1]},
            "ops": [p.op for p in plan.ops]}


def plan_digest(plan: Mapping[str, Any]) -> str:
    """sha256 of the plan's canonical JSON (sorted keys, no spaces): what the ops were measured under."""
    text = json.dumps(plan, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def write_manifest(path: Path, doc: Mapping[str, Any]) -> None:
    write_json_atomic(path / MANIFEST, {"schema_version": MANIFEST_VERSION, "kind": MANIFEST_KIND,
                                        "tool_version": __version__, **doc, PLAN_DIGEST: plan_digest(doc["plan"]),
                                        "updated_utc": utc_now()})


def read_manifest(path: Path) -> dict[str, Any]:
    """``batch.json``, checked: its plan must be the one the batch wrote (its sha256), since a
    resume or a merge that trusted an edited plan would mix ops measured under two plans."""
    from tritongate.rundir import read_json_object

    if not path.is_dir():
        raise UsageError(f"{path} is not a directory; pass a batch directory printed by `tritongate batch`")
    run_dir = (path / "results.json").is_file() or (path / "run_identity.json").is_file()
    file = path / MANIFEST
    doc = read_json_object(file, MANIFEST, error=UsageError, missing=(
        f"{path} is a run directory, not a batch directory (no {MANIFEST}); pass the directory that "
        "`tritongate batch` printed (the one holding batch.json and ops/)" if run_dir else
        f"{file} is missing: {path} is not a batch directory; pass the directory that `tritongate batch` printed"))
    if doc.get("kind") != MANIFEST_KIND or doc.get("schema_version") != MANIFEST_VERSION:
        raise UsageError(f"{file} is not a tritongate batch manifest (schema {MANIFEST_VERSION}); "
                         "pass a directory printed by `tritongate batch`")
    for key in ("plan", "execution"):
        if not isinstance(doc.get(key), dict):
            raise UsageError(f"{file}: {key!r} is missing or not an object; the file is damaged")
    recorded, version = doc.get(PLAN_DIGEST), doc.get("tool_version")
    fix = ("put the file back as the batch wrote it, or start a new batch with the plan you want "
           "(tritongate batch --suite ... --out DIR)")
    if not isinstance(recorded, str):
        raise UsageError(f"{file} records no {PLAN_DIGEST} (written by tritongate {version!r} or "
                         f"edited), so its plan cannot be checked against what its ops were measured under; {fix}")
    try:
        actual = plan_digest(doc["plan"])
    except ValueError:  # NaN or Infinity in the plan: not what a batch writes
        actual = "not canonical JSON"
    if actual != recorded:
        raise UsageError(f"{file}: its plan was changed after the batch planned it (plan sha256 {actual[:12]}, "
                         f"recorded {recorded[:12]}): edited by hand or rewritten by another tritongate (this file "
                         f"says {version!r}); its ops were measured under the recorded plan; {fix}")
    return doc


def request_from_manifest(path: Path, **overrides: Any) -> BatchRequest:
    """The request that started the batch at ``path`` (to resume it), with execution
    settings (devices, timeouts, retries, python, env, command, worker) optionally replaced."""
    doc = read_manifest(path)
    if doc.get("merged_from"):
        raise UsageError(f"{path} was made by batch-merge; resume the shard batches it came from instead")
    plan, ex = doc["plan"], doc["execution"]
    try:
        base: dict[str, Any] = dict(
            suite=plan["suite"]["path"], resume=Path(path), ops=tuple(plan["planned_ops"]),
            dtypes=tuple(plan["dtypes"]), options=RunOptions(**plan["options"]),
            replay_root=Path(plan["replay_root"]) if plan.get("replay_root") else None,
            shard=(plan["shard"]["index"], plan["shard"]["count"]), devices=tuple(ex["devices"]),
            op_timeout_s=ex["op_timeout_s"], kill_grace_s=ex["kill_grace_s"], retries=ex["retries"],
            python=ex["python"], env=dict(ex["env"]), worker_attempts=int(ex.get("worker_attempts", 0)))
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"{path / MANIFEST}: the plan is damaged ({type(exc).__name__}: {exc})") from exc
    return BatchRequest(**{**base, **{k: v for k, v in overrides.items() if v is not None}})


def check_resume(path: Path, request: BatchRequest, plan: Plan) -> dict[str, Any]:
    """The saved manifest, when it planned what ``request`` plans; else a UsageError naming
    what differs (a resumed batch must add rows measured alike)."""
    doc = read_manifest(path)
    if doc.get("merged_from"):
        raise UsageError(f"{path} was made by batch-merge and cannot be resumed")
    saved, now = doc["plan"], plan_doc(request, plan)
    differ = _differences(saved, now)
    if differ:
        what = "; ".join(f"{k}: batch {a!r}, now {b!r}" for k, a, b in differ[:8])
        if len(differ) > 8:
            what += f"; and {len(differ) - 8} more"
        raise UsageError(f"{path} was planned differently ({what}); resume with the batch's own settings "
                         "(`tritongate batch --resume DIR` alone), or start a new batch")
    return doc


def _differences(saved: Any, now: Any, at: str = "") -> list[tuple[str, Any, Any]]:
    """(dotted key, saved, now) of each leaf that differs: a changed option is named as
    ``options.rounds``, not as two whole dictionaries."""
    if isinstance(saved, dict) and isinstance(now, dict):
        out: list[tuple[str, Any, Any]] = []
        for k in list(now) + [k for k in saved if k not in now]:
            out += _differences(saved.get(k), now.get(k), f"{at}.{k}" if at else str(k))
        return out
    return [] if saved == now else [(at, saved, now)]
