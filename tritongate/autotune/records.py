"""``autotune_records/``: which config every autotuned kernel chose, per op, plus meta.

```
autotune_records/<op>.json   {"schema_version", "op", "entries": [{kernel, tuner, key, config, cases}]}
autotune_records/meta.json   {"schema_version", backend, device, triton version + build hash, run}
```
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from tritongate import safefs
from tritongate.atomicio import write_json_atomic
from tritongate.autotune.configs import key_text
from tritongate.errors import GateError, PreflightError
from tritongate.validation import validate
from tritongate.validation.core import short
from tritongate.validation.runfiles import RecordFileDoc, RecordsMetaDoc
from tritongate.schema import SCHEMA_VERSION

if TYPE_CHECKING:
    from tritongate.rundir import Run

RECORDS_DIR = "autotune_records"
META = "meta.json"


@dataclass(frozen=True)
class Record:
    op: str
    kernel: str  # module.qualname of the tuned function
    tuner: str  # Autotuner class name (Autotuner, LibTuner, ...)
    key: Any  # the autotune key, as JSON
    config: dict[str, Any]  # every Config field, explicitly
    cases: tuple[str, ...] = ()  # rows (case/dtype) that used it

    @property
    def match_key(self) -> tuple[str, str]:
        return (self.kernel, key_text(self.key))

    def to_dict(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "tuner": self.tuner, "key": self.key, "config": self.config,
                "cases": list(self.cases)}


def write_records(run_dir: Path, records: Iterable[Record], meta: dict[str, Any]) -> None:
    folder = Path(run_dir) / RECORDS_DIR
    folder.mkdir(exist_ok=True)
    by_op: dict[str, list[Record]] = {}
    for rec in records:
        by_op.setdefault(rec.op, []).append(rec)
    for op, recs in sorted(by_op.items()):
        write_json_atomic(folder / f"{op}.json", {
            "schema_version": SCHEMA_VERSION, "op": op,
            "entries": [r.to_dict() for r in sorted(recs, key=lambda r: r.match_key)]})
    write_json_atomic(folder / META, {"schema_version": SCHEMA_VERSION, **meta})


@dataclass(frozen=True)
class RecordSet:
    run_dir: Path
    meta: dict[str, Any]
    records: dict[tuple[str, str], Record]
    # launches per sample of each recorded row: the replay side measures with the same k
    launches: dict[tuple[str, str, str], int] = field(default_factory=dict)

    def lookup(self, kernel: str, key: Any) -> Record | None:
        return self.records.get((kernel, key_text(key)))


def _fail(message: str) -> PreflightError:
    return PreflightError("replay_from", message)


def load_records(run_dir: Path, *, backend: str, run: Run | None = None, replaying: bool = True) -> RecordSet:
    """A record run's autotune records for replay on ``backend`` (``run``: the run directory
    already loaded, not loaded again). Anything else is refused at preflight, in one line:
    ``replay_from`` (not a record run, a replay run, a damaged record), ``replay_backend``."""
    from tritongate.rundir import check_version, load_run, read_json_object

    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise _fail(f"the record to replay, {run_dir}, is not a directory; pass the run directory a record run "
                    "printed (`tritongate run`: run --replay-from, pair's BASELINE_RECORD)")
    try:
        run = run if run is not None else load_run(run_dir)
    except GateError as exc:
        raise _fail(f"the record to replay: {exc}") from exc
    if run.mode == "replay":
        original = run.identity.get("replay_from") or "<unknown>"
        raise _fail(f"{run_dir} is a replay run and has no autotune records of its own; give the record it "
                    f"replayed instead ({original}), to `run --replay-from` or as `pair`'s BASELINE_RECORD")
    from tritongate.backends import capture_only_requested, is_capture_only_run

    # ``replaying=False``: read to be merged (a batch's shards), not to launch its configs
    if replaying and is_capture_only_run(run.identity) and not capture_only_requested(backend):
        raise _fail(f"{run_dir} is an IR index capture (TRITONGATE_CAPTURE_ONLY=1: nothing was executed, its "
                    "autotune choices are not timings), never a baseline to replay or pair against; record one "
                    "with `tritongate run` without TRITONGATE_CAPTURE_ONLY")
    folder = run_dir / RECORDS_DIR
    if safefs.kind(run_dir, RECORDS_DIR) == "link":  # records are read inside the run, never through a link
        raise _fail(f"{folder} is a symbolic link, not followed: a record run holds its records itself")
    meta_path = folder / META
    if not meta_path.is_file():
        raise _fail(f"{run_dir} has no {RECORDS_DIR}/{META}: it is not a record run (or its writer "
                    "died before saving records); record a baseline with `tritongate run` first")
    meta_raw = read_json_object(meta_path, META, error=_fail)
    check_version(meta_path, meta_raw, error=_fail)
    meta = validate(RecordsMetaDoc, meta_raw, source=meta_path, error=_fail)
    records: dict[tuple[str, str], Record] = {}
    for path in sorted(p for p in folder.glob("*.json") if p.name != META):
        raw = read_json_object(path, path.name, error=_fail)
        check_version(path, raw, error=_fail)
        doc = validate(RecordFileDoc, raw, source=path, error=_fail)
        for e in doc.entries:
            config = e.config.model_dump(exclude_unset=True)  # absent stays absent: not compared
            rec = Record(op=doc.op, kernel=e.kernel, tuner=e.tuner, key=e.key, config=config,
                         cases=tuple(e.cases))
            records[rec.match_key] = rec
    said = run.identity.get("backend")
    if isinstance(said, str) and said != meta.backend:  # two files of one record disagree: neither is trusted
        raise _fail(f"{run_dir} is damaged: run_identity.json says backend {short(said)}, {RECORDS_DIR}/{META} "
                    f"says {short(meta.backend)}; record the baseline again")
    if meta.backend != backend and not capture_only_requested(backend):  # an index capture times nothing
        raise PreflightError("replay_backend", f"{run_dir} was recorded on backend "
                             f"{short(meta.backend)}, this run is {backend!r}: autotune configs do not "
                             "carry across backends; record a baseline on this backend")
    launches = {r.key: r.measurement.launches_per_sample for r in run.rows if r.measurement}
    return RecordSet(run_dir=run_dir, meta=meta_raw, records=records, launches=launches)
