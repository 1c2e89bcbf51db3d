"""The baseline store: publish a record run, find the newest good one, list them.

```
<store>/<runner_class>/<suite>/<gpu_slug>/<recorded UTC>-<short commit>[-N]/
  manifest.json          what, where, which builds; sha256 of every other file
  results.json           the record's rows, byte for byte (raw samples kept)
  run_identity.json      the record's identity, byte for byte
  shapes.yaml            the shapes it used (when the run has one)
  autotune_records/      <op>.json + meta.json: the configs replay injects
  summary.tsv            op, case, dtype, status, median, IQR, n, markers (for people and diffs)
  ttgir/                 index.tsv + naming.md (and the launched TTGIR when small): what
                         `tritongate ir --from ENTRY` recompiles (baselines/ir_files.py)
```

An entry folder *is* a record run directory: pass it to ``tritongate pair`` or
``tritongate run --replay-from``. Nothing in the store is ever rewritten: a publish builds the
entry in a hidden temp folder beside its final place and renames it in, so concurrent
publishers end in distinct entries and a reader never sees half of one; "latest" is computed
by reading manifests, never stored.
"""

from __future__ import annotations

import datetime as dt
import errno
import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

from tritongate import __version__
from tritongate import safefs
from tritongate.atomicio import write_json_atomic, write_text_atomic
from tritongate.autotune.records import META, RECORDS_DIR, load_records
from tritongate.baselines.ir_files import copy_ir
from tritongate.baselines.manifest import (MANIFEST, BaselineError, Manifest, build_manifest,
                                           check_runner_class, gpu_slug, read_manifest, slug)
from tritongate.baselines.repo import Repo, parse_repo, repo_of_ref
from tritongate.errors import GateError
from tritongate.rundir import IDENTITY, RESULTS, Run, load_run, utc_stamp
from tritongate.schema import RowStatus, RunStatus

ENV_STORE = "TRITONGATE_BASELINE_STORE"
SHAPES = "shapes.yaml"
SUMMARY = "summary.tsv"
INCOMING = ".incoming-"  # a publish in flight (or one that died): never read as an entry
REQUIRED_FILES = (RESULTS, IDENTITY, f"{RECORDS_DIR}/{META}")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_DIR_MODE = 0o777 & ~_umask()  # mkdtemp makes 0700: entries must be readable like any folder


def default_store(environ: Mapping[str, str] | None = None) -> Path:
    """``$TRITONGATE_BASELINE_STORE``, else the repo's top-level ``baselines/`` (a source
    checkout), else ``./baselines``."""
    env = (os.environ if environ is None else environ).get(ENV_STORE)
    if env:
        return Path(env)
    root = Path(__file__).resolve().parents[2]
    return root / "baselines" if (root / "pyproject.toml").is_file() else Path.cwd() / "baselines"


# -- entries -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Entry:
    path: Path  # the entry folder: a record run directory
    manifest: Manifest

    def age_days(self, now: dt.datetime) -> float:
        return (now - self.manifest.recorded).total_seconds() / 86400.0

    def repo(self) -> Repo | None:
        """The compiler repository it was built from: the manifest's, else the one its
        compiler_ref names (``REPO@commit``); None when neither says."""
        if self.manifest.compiler_repo:
            try:
                return parse_repo(self.manifest.compiler_repo)
            except BaselineError:
                return None  # an odd spelling from an older writer: unknown, never a match
        return repo_of_ref(self.manifest.compiler_ref)

    def sort_key(self) -> tuple[dt.datetime, dt.datetime, str]:
        return (self.manifest.recorded, self.manifest.created, self.path.name)

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), **self.manifest.model_dump(mode="json")}


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check_files(path: Path, manifest: Manifest) -> None:
    """Every file the manifest lists is there, a plain file, with its recorded sha256."""
    missing = [f for f in REQUIRED_FILES if f not in manifest.files]
    if missing:
        raise BaselineError(f"{path / MANIFEST}: files lists no {', '.join(missing)}; not a record entry")
    for rel, digest in sorted(manifest.files.items()):
        file = path / rel
        found = safefs.kind(path, rel)
        if found == "link":  # the file, or a folder on its way: never followed out of the entry
            raise BaselineError(f"{file} is a symbolic link or under one (listed in {MANIFEST}); a store entry "
                                "holds plain files only: publish it again")
        if found != "file":
            raise BaselineError(f"{file} is missing (listed in {MANIFEST})")
        if _sha256(safefs.read_bytes(path, rel)) != digest:
            raise BaselineError(f"{file} does not match its sha256 in {MANIFEST}: edited or damaged")


def check_record(path: Path, backend: str) -> Run:
    """The folder loads as replay will load it: a complete record run with its records.
    ``SchemaVersionError`` passes through (a record this tritongate cannot read is not damage)."""
    run = load_run(path)
    if run.mode != "record":
        raise BaselineError(f"{path} is a {run.mode} run, not a record")
    try:
        load_records(path, backend=backend)
    except GateError as exc:
        raise BaselineError(str(exc)) from None
    return run


def verify_entry(entry: Entry) -> Run:
    """Files intact and the record loadable: what "good" means for a lookup."""
    check_files(entry.path, entry.manifest)
    return check_record(entry.path, entry.manifest.backend)


def _dirs(folder: Path, notes: list[str]) -> Iterator[Path]:
    """Sub-folders in name order; hidden ones (publishes in flight) and files are not entries,
    a symlink is skipped with a note (an entry is never a link)."""
    try:
        children = sorted(folder.iterdir())
    except OSError:
        return
    for child in children:
        if child.name.startswith("."):
            continue
        if child.is_symlink():
            notes.append(f"skipped {child}: a symlink, not a baseline entry")
        elif child.is_dir():
            yield child


def scan(store: Path, *, runner_class: str | None = None, suite: str | None = None,
         notes: list[str] | None = None) -> list[Entry]:
    """Entries with a valid manifest that sits where it says, newest first. Damaged ones are
    skipped with a note in ``notes``; nothing here raises for a bad entry."""
    notes = [] if notes is None else notes
    store = Path(store)
    rc_dirs = [store / runner_class] if runner_class else list(_dirs(store, notes))
    entries = []
    for rc_dir in rc_dirs:
        suite_dirs = [rc_dir / slug(suite)] if suite else list(_dirs(rc_dir, notes))
        for suite_dir in suite_dirs:
            if not suite_dir.is_dir():
                continue
            for gpu_dir in _dirs(suite_dir, notes):
                for entry_dir in _dirs(gpu_dir, notes):
                    where = f"{rc_dir.name}/{suite_dir.name}/{gpu_dir.name}/{entry_dir.name}"
                    try:
                        manifest = read_manifest(entry_dir / MANIFEST)
                        placed = manifest.record_path == where and manifest.location() == tuple(where.split("/")[:3])
                    except (GateError, OSError) as exc:  # unreadable is damage too, never a crash
                        notes.append(f"skipped {entry_dir}: {exc}")
                        continue
                    if not placed:
                        notes.append(f"skipped {entry_dir}: its manifest says {manifest.record_path} "
                                     "(moved or copied by hand); publish it again")
                        continue
                    entries.append(Entry(entry_dir, manifest))
    return sorted(entries, key=Entry.sort_key, reverse=True)


def list_entries(store: Path, *, runner_class: str | None = None, suite: str | None = None,
                 gpu: str | None = None, compiler_repo: str | None = None) -> tuple[list[Entry], list[str]]:
    """Entries (newest first) and notes on what was skipped. Manifests only: files are
    checked by ``find`` for the entry it chooses."""
    if runner_class:
        check_runner_class(runner_class)
    repo_key = parse_repo(compiler_repo).key if compiler_repo else None
    notes: list[str] = []
    entries = scan(Path(store), runner_class=runner_class, suite=suite, notes=notes)
    if suite:
        entries = [e for e in entries if e.manifest.suite_name == suite]
    if gpu:
        entries = [e for e in entries if e.manifest.gpu_slug == gpu_slug(gpu)]
    if repo_key:
        entries = [e for e in entries if (r := e.repo()) is not None and r.key == repo_key]
    for e in entries:  # listed as found, but a damaged one says so: find would skip it
        try:
            check_files(e.path, e.manifest)
        except (GateError, OSError) as exc:
            notes.append(f"damaged {e.path}: {exc}; find skips it")
    return entries, notes


# -- publish -------------------------------------------------------------------------------

FUTURE_SLACK_DAYS = 1 / 24  # an hour of clock difference between runners is not "the future"
_RECORD = "record one: python ci/record_baseline.py --suite SUITE --out runs --publish STORE --runner-class RC"
_FIX = f"publish a finished record run, or {_RECORD}"


def _load_publishable(run_dir: Path) -> Run:
    if not run_dir.is_dir():
        raise BaselineError(f"refusing to publish {run_dir}: not a directory; pass the run directory "
                            "that `tritongate run` printed")
    try:
        run = load_run(run_dir, allow_incomplete=True)
    except GateError as exc:
        raise BaselineError(f"refusing to publish {run_dir}: {exc}") from None
    if run.mode == "replay":
        original = run.identity.get("replay_from") or "unknown"
        raise BaselineError(f"refusing to publish {run_dir}: it is a replay run (of {original}) and holds "
                            f"no autotune records of its own; publish the record it replayed, or {_RECORD}")
    if run.status is not RunStatus.COMPLETE:
        raise BaselineError(f"refusing to publish {run_dir}: the run is incomplete ({run.status.value}, "
                            f"{len(run.rows)} rows); {_FIX}")
    if not run.rows:
        raise BaselineError(f"refusing to publish {run_dir}: it has no rows; {_FIX}")
    if not any(r.status is RowStatus.OK and r.samples for r in run.rows):  # a baseline nothing can replay against
        raise BaselineError(f"refusing to publish {run_dir}: none of its {len(run.rows)} rows was measured (every "
                            f"row errored or timed out); {_FIX}")
    from tritongate.gate.comparability import planted_knobs

    planted = planted_knobs(run.identity)
    if planted:
        raise BaselineError(f"refusing to publish {run_dir}: it is a planted run ({planted}), its kernels slowed "
                            f"on purpose; unset the variable and {_RECORD}")
    backend = run.identity.get("backend")
    if not isinstance(backend, str) or not backend:
        raise BaselineError(f"refusing to publish {run_dir}: {IDENTITY} names no backend; {_FIX}")
    try:
        load_records(run_dir, backend=backend, run=run)
    except GateError as exc:
        raise BaselineError(f"refusing to publish {run_dir}: {exc}") from None
    return run


def _digests(run_dir: Path) -> dict[str, str]:
    """sha256 of the files ``load_run`` reads (``""``: not a readable plain file, which the
    load itself then refuses with its own words)."""
    out = {}
    for rel in (RESULTS, IDENTITY):
        try:
            out[rel] = _sha256(safefs.read_bytes(run_dir, rel)) if safefs.kind(run_dir, rel) == "file" else ""
        except OSError:
            out[rel] = ""
    return out


def _check_copy(run_dir: Path, tmp: Path, run: Run, loaded: Mapping[str, str], files: Mapping[str, str],
                backend: str) -> None:
    """The copy holds the run that was loaded: the files ``load_run`` read are the bytes it
    read (a run rewritten meanwhile is refused; the run is not parsed a second time), and the
    copied records load, for the run that was loaded."""
    changed = [rel for rel in (RESULTS, IDENTITY) if files.get(rel) != loaded[rel]]
    if changed:
        raise BaselineError(f"refusing to publish {run_dir}: {', '.join(changed)} changed while it was published; "
                            "publish it again once its writer has finished")
    try:
        load_records(tmp, backend=backend, run=run)
    except GateError as exc:
        raise BaselineError(str(exc)) from None


def _text_at(ident: Mapping[str, Any], *keys: str) -> str | None:
    value: Any = ident
    for key in keys:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value if isinstance(value, str) and value else None


def _utc_text(value: str | None) -> str | None:
    if not value:
        return None
    try:
        when = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    return when.astimezone(dt.timezone.utc).isoformat()


def _identity_fields(run: Run) -> dict[str, Any]:
    ident = run.identity
    need = {"suite_name": ("suite", "name"), "suite_digest": ("suite", "digest"), "gpu_model": ("device",),
            "backend": ("backend",), "triton_version": ("software", "triton", "version")}
    fields: dict[str, Any] = {}
    for name, keys in need.items():
        value = _text_at(ident, *keys)
        if value is None:
            raise BaselineError(f"refusing to publish {run.path}: {IDENTITY} has no {'.'.join(keys)}, so "
                                f"a lookup could not match it; {_FIX}")
        fields[name] = value
    fields["triton_build_hash"] = _text_at(ident, "software", "triton", "build_hash")
    fields["compiler_ref"] = _text_at(ident, "compiler_ref")
    fields["gpu_slug"] = gpu_slug(fields["gpu_model"])
    return fields


def summary_tsv(run: Run) -> str:
    """One line per row: what a person (or a diff between two entries) wants at a glance."""
    def cell(value: Any) -> str:
        return "".join(c if c.isprintable() and c != "\t" else " " for c in str(value))

    lines = ["op\tcase\tdtype\tstatus\tmedian_us\tiqr_us\tn\tmarkers"]
    for row in run.rows:
        s = row.summary
        nums = (f"{s.median:.6g}", f"{s.iqr:.6g}", str(s.n)) if s else ("", "", "0")
        markers = ",".join(m.split()[0] for m in row.markers if m.split())
        lines.append("\t".join(cell(v) for v in (row.op, row.case, row.dtype, row.status.value, *nums, markers)))
    return "\n".join(lines) + "\n"


def _write_durable(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _copy_record(src: Path, dst: Path) -> dict[str, str]:
    """The files replay needs, byte for byte, and the IR index the pre-screen recompiles
    (``ir_files``: with the TTGIR when small); run.log stays a CI artifact."""
    names = [RESULTS, IDENTITY] + ([SHAPES] if (src / SHAPES).is_file() else [])
    names += [f"{RECORDS_DIR}/{p.name}" for p in sorted((src / RECORDS_DIR).glob("*.json")) if p.is_file()]
    (dst / RECORDS_DIR).mkdir()
    files = {}
    for rel in names:
        data = safefs.read_bytes(src, rel)  # a link in the run is refused, never copied as its target
        _write_durable(dst / rel, data)
        files[rel] = _sha256(data)
    try:
        kept = copy_ir(src, dst, _write_durable)
    except ValueError as exc:  # a damaged index is refused, not silently dropped
        raise BaselineError(f"refusing to publish {src}: {exc}") from None
    files.update({rel: _sha256(data) for rel, data in kept.items()})
    return files


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # not every filesystem syncs directories; the rename itself is what is atomic
    finally:
        os.close(fd)


def _short_commit(commit: str | None) -> str:
    text = "".join(c for c in (commit or "") if c.isascii() and c.isalnum()).lower()[:12]
    return text or "nocommit"


def publish(store: Path, run_dir: Path, *, runner_class: str, compiler_repo: str | None = None,
            compiler_commit: str | None = None, now: dt.datetime | None = None) -> Entry:
    """Copy a finished record run into the store as a new entry and return it.

    Refuses (``BaselineError``, one line naming the path and the fix) a replay run, an
    incomplete or invalid run, and one whose identity lacks what a lookup matches on.
    """
    store, run_dir = Path(store), Path(run_dir)
    check_runner_class(runner_class)
    now = now or dt.datetime.now(dt.timezone.utc)
    if now.tzinfo is None:
        raise BaselineError("publish(now=...) must be timezone-aware")
    loaded = _digests(run_dir)  # of the files as they were when loaded: the copy must hold the same
    run = _load_publishable(run_dir)
    fields = _identity_fields(run)
    try:  # stored credential-free (a clone URL may carry a token); matched by its key
        repo = parse_repo(compiler_repo) if compiler_repo else repo_of_ref(fields["compiler_ref"])
    except BaselineError as exc:
        raise BaselineError(f"refusing to publish {run_dir}: {exc}") from None
    commit = compiler_commit or _text_at(run.identity, "commit")
    created = now.astimezone(dt.timezone.utc).isoformat()
    recorded = _utc_text(_text_at(run.identity, "started_utc")) or created
    fields.update(tritongate_version=__version__, created_utc=created, recorded_utc=recorded,
                  runner_class=runner_class, compiler_repo=repo.display if repo else None, compiler_commit=commit,
                  source_run=run_dir.name, rows=len(run.rows),
                  rows_ok=sum(1 for r in run.rows if r.status.value == "ok"))
    suite_dir = slug(fields["suite_name"])
    source = f"{run_dir}: its baseline manifest"
    try:  # refuse a value the manifest cannot hold before copying anything
        build_manifest({**fields, "files": {}, "record_path": "check"}, source=source)
    except BaselineError as exc:
        raise BaselineError(f"refusing to publish {exc}") from None
    parent = store / runner_class / suite_dir / fields["gpu_slug"]
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=INCOMING, dir=parent))  # same filesystem: rename is atomic
    try:
        os.chmod(tmp, _DIR_MODE)
        files = _copy_record(run_dir, tmp)
        summary = summary_tsv(run)
        write_text_atomic(tmp / SUMMARY, summary)
        files[SUMMARY] = _sha256(summary.encode("utf-8"))
        fields["files"] = files
        _check_copy(run_dir, tmp, run, loaded, files, fields["backend"])
        name = f"{utc_stamp(dt.datetime.fromisoformat(recorded))}-{_short_commit(commit)}"
        for i in range(1, 1000):
            final = name if i == 1 else f"{name}-{i}"
            where = f"{runner_class}/{suite_dir}/{fields['gpu_slug']}/{final}"
            manifest = build_manifest({**fields, "record_path": where}, source=source)
            write_json_atomic(tmp / MANIFEST, manifest.model_dump(mode="json"))
            try:
                os.rename(tmp, parent / final)  # fails on a non-empty folder: another publisher won
            except OSError as exc:
                if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
                    continue
                raise
            _fsync_dir(parent)
            return Entry(parent / final, manifest)
        raise BaselineError(f"could not find a free entry name for {name} under {parent}")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
