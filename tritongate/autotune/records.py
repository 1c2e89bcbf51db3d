"""``autotune_records/``: which config every autotuned kernel chose, per op, plus meta.

```
autotune_records/<op>.json   {"schema_version", "op", "entries": [{kernel, tuner, key, config, cases}]}
autotune_records/meta.json   {"schema_version", backend, device, triton version + build hash, run}
```
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from tritongate.atomicio import write_json_atomic
from tritongate.autotune.configs import key_text
from tritongate.errors import PreflightError
from tritongate.schema import MIN_READABLE_SCHEMA_VERSION, SCHEMA_VERSION

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


def load_records(run_dir: Path, *, backend: str) -> RecordSet:
    """Load a record run's autotune records for replay on ``backend``.

    Refuses (preflight ``replay_from``/``replay_backend``) a directory that is not a record
    run, a replay run (naming the original record to use instead), a damaged record, and a
    record made on another backend.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise _fail(f"--replay-from {run_dir} is not a directory; pass the run directory of a record run")
    identity_path = run_dir / "run_identity.json"
    identity = json.loads(identity_path.read_text()) if identity_path.is_file() else {}
    if identity.get("mode") == "replay":
        original = identity.get("replay_from", "<unknown>")
        raise _fail(f"{run_dir} is a replay run and has no autotune records of its own; replay from "
                    f"the original record instead: --replay-from {original}")
    folder = run_dir / RECORDS_DIR
    meta_path = folder / META
    if not meta_path.is_file():
        raise _fail(f"{run_dir} has no {RECORDS_DIR}/{META}: it is not a record run (or its writer "
                    "died before saving records); record a baseline with `tritongate run` first")
    try:
        meta = json.loads(meta_path.read_text())
        records: dict[tuple[str, str], Record] = {}
        for path in sorted(folder.glob("*.json")):
            if path.name == META:
                continue
            doc = json.loads(path.read_text())
            for e in doc["entries"]:
                rec = Record(op=doc["op"], kernel=e["kernel"], tuner=e.get("tuner", "Autotuner"),
                             key=e["key"], config=e["config"], cases=tuple(e.get("cases", ())))
                records[rec.match_key] = rec
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise _fail(f"{folder} is damaged ({type(exc).__name__}: {exc}); re-record the baseline") from exc
    version = meta.get("schema_version")
    if not isinstance(version, int) or not MIN_READABLE_SCHEMA_VERSION <= version <= SCHEMA_VERSION:
        raise _fail(f"{meta_path} uses schema {version}, this tritongate reads "
                    f"{MIN_READABLE_SCHEMA_VERSION}-{SCHEMA_VERSION}; re-record the baseline with this version")
    if meta.get("backend") != backend:
        raise PreflightError("replay_backend", f"{run_dir} was recorded on backend "
                             f"{meta.get('backend')!r}, this run is {backend!r}: autotune configs do not "
                             "carry across backends; record a baseline on this backend")
    return RecordSet(run_dir=run_dir, meta=meta, records=records, launches=_recorded_launches(run_dir))


def _recorded_launches(run_dir: Path) -> dict[tuple[str, str, str], int]:
    try:
        rows = json.loads((run_dir / "results.json").read_text())["rows"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return {(r["op"], r["case"], r["dtype"]): int(r["measurement"]["launches_per_sample"])
            for r in rows if isinstance(r, dict) and r.get("measurement")}
