"""The run directory: layout, incremental atomic writes, and a validating loader.

```
<out>/<suite>_<UTC>/
  results.json        {"schema_version", "status", "rows": [...]}  (rewritten atomically per add)
  run_identity.json   {"schema_version", backend, device, versions, timer, GPU state ...}
  run.log             plain text, every marker line
```

A run that died keeps ``status: running`` (or ``failed``) and loads as *incomplete*,
never as complete: only ``RunWriter.finish()`` writes ``complete``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import gc
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping

from tritongate import __version__
from tritongate import safefs
from tritongate.atomicio import write_json_atomic, write_text_atomic
from tritongate.errors import IncompleteRunError, RunDirError, SchemaVersionError, UsageError
from tritongate.schema import MIN_READABLE_SCHEMA_VERSION, SCHEMA_VERSION, ResultsDoc, Row, RunStatus
from tritongate.validation import describe, validate
from tritongate.validation.runfiles import IdentityDoc
from tritongate.workdir import still_there

if TYPE_CHECKING:
    import pandas

RESULTS = "results.json"
IDENTITY = "run_identity.json"
LOG = "run.log"


def utc_stamp(now: dt.datetime | None = None) -> str:
    now = now or dt.datetime.now(dt.timezone.utc)
    return now.strftime("%Y%m%dT%H%M%SZ")


def new_run_dir(out: Path, name: str, now: dt.datetime | None = None) -> Path:
    """Create ``out/<name>_<UTC>/``; a second run in the same second gets a suffix."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    base = f"{name}_{utc_stamp(now)}"
    for i in range(1000):
        path = out / (base if i == 0 else f"{base}-{i}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise UsageError(f"could not create a fresh run directory under {out}")


class RunWriter:
    """Writes one run directory. Rows are appended and ``results.json`` rewritten
    atomically after each ``add``, so a crash loses at most the row in flight. Rows that
    arrive together (a merge copying finished runs) go in with ``extend``: one rewrite for
    all of them, so joining n rows costs O(n), not the O(n²) of a rewrite per row. Each
    row is serialised once, when added."""

    def __init__(self, path: Path, identity: Mapping[str, Any], *, mode: str = "record") -> None:
        self.path = Path(path)
        if (self.path / RESULTS).exists():
            raise UsageError(f"{self.path} already holds a run; refusing to overwrite it")
        self.path.mkdir(parents=True, exist_ok=True)
        # the folder this run writes, held open (its inode cannot be reused): one removed mid-run is an error
        self._dir_fd: int | None = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY)
        self._rows: list[Row] = []
        self._row_json: list[str] = []  # serialised once: a rewrite per row must stay cheap
        self._keys: set[tuple[str, str, str]] = set()
        self._started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        self._mode = mode
        self._identity = {"schema_version": SCHEMA_VERSION, "tool_version": __version__,
                          "mode": mode, **identity}
        self._write_identity()
        self._flush(RunStatus.RUNNING)

    def set_identity_extra(self, extra: Mapping[str, Any]) -> None:
        """Add what is known only at the end (GPU state after, wall time)."""
        self._identity = {**self._identity, **extra}
        self._write_identity()

    def _write_identity(self) -> None:
        """run_identity.json, checked by the model every reader checks it with (``IdentityDoc``)
        before it is written: an identity the tool's own readers would refuse is a bug here,
        not an unreadable run later."""
        validate(IdentityDoc, self._identity, source=self.path / IDENTITY, error=ValueError)
        self._check_dir()
        write_json_atomic(self.path / IDENTITY, self._identity)

    @property
    def rows(self) -> tuple[Row, ...]:
        return tuple(self._rows)

    def add(self, row: Row) -> None:
        self.extend((row,))

    def extend(self, rows: Iterable[Row]) -> None:
        """Add ``rows`` and rewrite ``results.json`` once; a duplicate key adds none of them."""
        rows = list(rows)
        new: set[tuple[str, str, str]] = set()
        for row in rows:
            if row.key in self._keys or row.key in new:
                raise ValueError(f"duplicate row key {row.key}; give true duplicates an ordinal case")
            new.add(row.key)
        texts = [json.dumps(r.to_dict(), allow_nan=False) for r in rows]
        self._rows.extend(rows)
        self._row_json.extend(texts)
        self._keys |= new
        self._flush(RunStatus.RUNNING)

    def finish(self) -> None:
        self._flush(RunStatus.COMPLETE)
        self._close()

    def fail(self, reason: str) -> None:
        try:
            self._flush(RunStatus.FAILED, reason)
        finally:
            self._close()

    def _close(self) -> None:
        fd, self._dir_fd = getattr(self, "_dir_fd", None), None  # None: __init__ stopped before opening it
        if fd is not None:
            os.close(fd)

    def __del__(self) -> None:
        self._close()

    def _check_dir(self) -> None:
        """The run's folder, removed (or removed and made again: by a write of its IR) while the
        run wrote it, has lost run.log and what else was written once; never finish it as a run."""
        if self._dir_fd is None:
            return
        if not still_there(self._dir_fd, self.path):
            raise FileNotFoundError(errno.ENOENT, "the run directory was removed or replaced while the run was "
                                    "writing it (its run.log and files written earlier are gone); measure again "
                                    "into a folder nothing else removes", str(self.path))

    def _flush(self, status: RunStatus, reason: str = "") -> None:
        self._check_dir()
        doc: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "tool_version": __version__,
            "status": status.value,
            "mode": self._mode,
            "unit": "us",
            "started_utc": self._started,
            "updated_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        }
        if reason:
            doc["failure"] = reason
        head = json.dumps(doc, indent=1)
        rows = ",\n  ".join(self._row_json)
        write_text_atomic(self.path / RESULTS, f'{head[:-2]},\n "rows": [\n  {rows}\n ]\n}}\n'
                          if rows else f'{head[:-2]},\n "rows": []\n}}\n')


@dataclass(frozen=True)
class Run:
    path: Path
    status: RunStatus
    identity: Mapping[str, Any]
    rows: tuple[Row, ...]
    mode: str

    @property
    def name(self) -> str:
        """How people and verdicts name the run: its directory, or, for a side of a paired run
        (whose directories are just base/ and candidate/), pair id/side."""
        pair = self.identity.get("pair") or {}  # validated: a mapping or absent
        if pair.get("pair_id") and pair.get("side"):
            return f"{pair['pair_id']}/{pair['side']}"
        return Path(self.path).name

    @property
    def complete(self) -> bool:
        return self.status is RunStatus.COMPLETE

    def row_map(self) -> dict[tuple[str, str, str], Row]:
        return {r.key: r for r in self.rows}

    def to_pandas(self) -> "pandas.DataFrame":
        """One row per (op, case, dtype): status, timings in µs, markers, pairing, and the raw
        samples (``samples_us``); see ``tritongate.report.export.run_frame``."""
        from tritongate.report.export import run_frame

        return run_frame(self)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside: loading or judging a run allocates millions of
    objects that hold no reference cycles, and each collection the allocations trigger walks
    every object alive (a third of a 10,000-row gate's time). Nested uses and a caller that
    disabled the collector itself are left as they were."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


MAX_JSON_BYTES = 512 * 2**20  # a deep scan's results.json is tens of MB


def read_json_object(path: Path, what: str, *, error: Callable[[str], Exception] = RunDirError,
                     missing: str | None = None) -> dict[str, Any]:
    """A JSON object from a file of a run directory (or, with ``missing`` saying what the folder
    should be instead, of another tritongate folder), or ``error`` with one line."""
    found = safefs.kind(path.parent, path.name)
    if found == "link":  # a run directory holds plain files: a link's target is never read as its own
        raise error(f"{path} is a symbolic link, not followed: a run directory holds plain files; copy the "
                    "file in, or pass the directory the link points into")
    if found != "file":
        what_is = "is missing" if found == "missing" else f"is a {'folder' if found == 'dir' else 'special file'}"
        raise error(missing or f"{path} {what_is}: {path.parent} is not a tritongate run directory; pass a run "
                               "directory (what `tritongate run` printed, or the base/ or candidate/ of a pair "
                               "directory)")
    raw = _read_bytes(path, error)
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise error(f"{path} is not valid JSON ({exc}); the file is damaged, re-run "
                          "the measurement") from exc
    if not isinstance(data, dict):
        raise error(f"{path} must hold a JSON object")
    return data


def _read_bytes(path: Path, error: Callable[[str], Exception]) -> bytes:
    """A plain file's bytes, at most ``MAX_JSON_BYTES``, or ``error`` with one line."""
    try:
        raw = safefs.read_bytes(path.parent, path.name, limit=MAX_JSON_BYTES)
    except OSError as exc:
        raise error(f"{path} cannot be read ({exc.strerror or exc})") from None
    if len(raw) > MAX_JSON_BYTES:
        raise error(f"{path} is larger than {MAX_JSON_BYTES // 2**20} MiB; it was not written by "
                    "tritongate (or is damaged)")
    return raw


def check_version(path: Path, data: Mapping[str, Any], *, error: type[Exception] = SchemaVersionError) -> None:
    """Refuse a file of a schema this tritongate cannot read, before reading its fields (a
    newer schema's fields may not fit this version's models)."""
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise error(f"{path} has no integer schema_version; it was not written by tritongate")
    writer = terminal_safe(data.get("tool_version", "unknown"))
    # a writer of this very version cannot have written another schema: the file was edited
    other_writer = writer != __version__
    if version < MIN_READABLE_SCHEMA_VERSION:
        raise error(
            f"{path} uses schema {version} (tritongate {writer}); this tritongate "
            f"{__version__} reads schemas {MIN_READABLE_SCHEMA_VERSION}-{SCHEMA_VERSION}. Re-record the run with this "
            + (f"version, or read it with tritongate {writer}" if other_writer else
               "version (no tritongate writes that schema: the file was changed after it was written)"))
    if version > SCHEMA_VERSION:
        raise error(
            f"{path} uses schema {version} (tritongate {writer}), newer than this tritongate "
            f"{__version__} (schema {SCHEMA_VERSION}); "
            + ("upgrade tritongate to read it" if other_writer else
               "this version never writes it: the file was changed after it was written; re-record the run"))


def terminal_safe(value: Any) -> str:
    """A value from a file quoted in a message: one line, bounded."""
    from tritongate.validation.core import short

    return value if isinstance(value, str) and len(value) < 40 and value.isprintable() else short(value)


def _load_docs(path: Path, *, allow_incomplete: bool) -> tuple[ResultsDoc, dict[str, Any]]:
    if not path.is_dir():
        raise RunDirError(f"{path} is not a directory; pass a run directory printed by "
                          "`tritongate run`")
    results = _results_from_bytes(path)
    if results is None:  # parsed first, versions checked, then the models' message naming the row and field
        results_raw, identity = _read_docs(path)
        results = _results_of(path, json.dumps(results_raw))
    else:
        identity = read_json_object(path / IDENTITY, IDENTITY)
        check_version(path / IDENTITY, identity)
    validate(IdentityDoc, identity, source=path / IDENTITY, error=RunDirError)
    _check_rows(path, results, [row.key for row in results.rows], allow_incomplete=allow_incomplete)
    return results, identity


def _results_of(path: Path, raw: str | bytes) -> ResultsDoc:
    """results.json's text as its one type, strictly (a boolean is not a number); a
    ``RunDirError`` naming the row and field otherwise."""
    from pydantic import ValidationError

    try:
        return ResultsDoc.model_validate_json(raw, strict=True)
    except ValidationError as exc:
        raise RunDirError(describe(exc, path / RESULTS, ResultsDoc)) from None


def _read_docs(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """results.json and run_identity.json as parsed, of schemas this version reads."""
    results_raw = read_json_object(path / RESULTS, RESULTS)
    check_version(path / RESULTS, results_raw)
    identity = read_json_object(path / IDENTITY, IDENTITY)
    check_version(path / IDENTITY, identity)
    return results_raw, identity


def _check_rows(path: Path, results: ResultsDoc, keys: list[tuple[str, str, str]], *,
                allow_incomplete: bool) -> None:
    """One row per key, and a complete run unless ``allow_incomplete``; ``keys``: the rows'."""
    seen: set[tuple[str, str, str]] = set()
    for i, key in enumerate(keys):
        if key in seen:
            raise RunDirError(f"{path / RESULTS}: rows[{i}]: a second row for {key}; each "
                              "(op, case, dtype) appears once")
        seen.add(key)
    status = RunStatus(results.status)
    if status is not RunStatus.COMPLETE and not allow_incomplete:
        why = results.failure or "its writer did not finish (crashed, killed, or still running)"
        raise IncompleteRunError(
            f"{path} is incomplete ({status.value}, {len(keys)} rows): {why}. Re-run the "
            "measurement; partial results are never read as complete")


def load_run(path: Path, *, allow_incomplete: bool = False) -> Run:
    """Load and validate a run directory.

    Raises ``RunDirError`` (missing/damaged/invalid: one line naming the file and the field),
    ``SchemaVersionError`` (older or newer writer) or ``IncompleteRunError`` (the writer did
    not finish) unless ``allow_incomplete``.
    """
    path = Path(path)
    with gc_paused():
        results, identity = _load_docs(path, allow_incomplete=allow_incomplete)
        rows = checked_rows(path, results.rows)
    return Run(path=path, status=RunStatus(results.status), identity=identity, rows=rows, mode=results.mode)


def _results_from_bytes(path: Path) -> ResultsDoc | None:
    """results.json validated straight from its bytes (pydantic parses and checks in one pass,
    the way to read a large run), of a schema this version reads; None when the model refuses
    it, for the caller to read it again the slow way, whose errors say what is wrong."""
    file = path / RESULTS
    if safefs.kind(path, RESULTS) != "file":
        return None
    raw = _read_bytes(file, RunDirError)
    try:
        results = _results_of(path, raw)
    except RunDirError:
        return None
    check_version(file, {"schema_version": results.schema_version, "tool_version": results.tool_version})
    return results


def checked_rows(path: Path, rows: Iterable[Row]) -> tuple[Row, ...]:
    """``rows`` of ``path``'s results.json, each stored summary checked against its samples."""
    out = tuple(rows)
    for i, row in enumerate(out):
        try:
            row.check_stored_summary()
        except ValueError as exc:
            raise RunDirError(f"{path / RESULTS}: rows[{i}]: {exc}") from exc
    return out
