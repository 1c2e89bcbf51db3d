"""The baseline store: its layout, and its entries listed, read and verified (``publishing`` writes them).

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

An entry folder *is* a record run directory (``tritongate pair``, ``run --replay-from``).
Nothing in the store is ever rewritten, and "latest" is computed from the manifests, never stored.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

from tritongate import safefs
from tritongate.autotune.records import META, RECORDS_DIR, load_records
from tritongate.baselines.manifest import (MANIFEST, BaselineError, Manifest, check_runner_class, gpu_slug, read_manifest, slug)
from tritongate.baselines.repo import Repo, parse_repo, repo_of_ref
from tritongate.errors import GateError
from tritongate.rundir import IDENTITY, RESULTS, Run, load_run

ENV_STORE = "TRITONGATE_BASELINE_STORE"
SHAPES = "shapes.yaml"
SUMMARY = "summary.tsv"
INCOMING = ".incoming-"  # a publish in flight (or one that died): never read as an entry
REQUIRED_FILES = (RESULTS, IDENTITY, f"{RECORDS_DIR}/{META}")
FUTURE_SLACK_DAYS = 1 / 24  # an hour of clock difference between runners is not "the future"


_UMASK = os.umask(0)
os.umask(_UMASK)
DIR_MODE = 0o777 & ~_UMASK  # mkdtemp makes 0700: entries must be readable like any folder


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


def sha256_of(data: bytes) -> str:
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
        if sha256_of(safefs.read_bytes(path, rel)) != digest:
            raise BaselineError(f"{file} does not match its sha256 in {MANIFEST}: edited or damaged")


def verify_entry(entry: Entry) -> Run:
    """Files intact and the folder loading as replay will load it (a complete record run with
    its records): what "good" means for a lookup. ``SchemaVersionError`` passes through (a
    record this tritongate cannot read is not damage)."""
    check_files(entry.path, entry.manifest)
    run = load_run(entry.path)
    if run.mode != "record":
        raise BaselineError(f"{entry.path} is a {run.mode} run, not a record")
    try:
        load_records(entry.path, backend=entry.manifest.backend)
    except GateError as exc:
        raise BaselineError(str(exc)) from None
    return run


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
         notes: list[str] | None = None, damaged: list[Path] | None = None) -> list[Entry]:
    """Entries with a valid manifest that sits where it says, newest first. Damaged ones are
    skipped with a note in ``notes`` and their folders listed in ``damaged``; nothing here
    raises for a bad entry."""
    notes = [] if notes is None else notes
    damaged = [] if damaged is None else damaged
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
                        damaged.append(entry_dir)
                        continue
                    if not placed:
                        notes.append(f"skipped {entry_dir}: its manifest says {manifest.record_path} "
                                     "(moved or copied by hand); publish it again")
                        damaged.append(entry_dir)
                        continue
                    entries.append(Entry(entry_dir, manifest))
    return sorted(entries, key=Entry.sort_key, reverse=True)


NO_REPO = "none"  # --compiler-repo's word for the entries that record no repository


def repo_wanted(compiler_repo: str | None) -> Repo | str | None:
    """``--compiler-repo`` read: a repository, ``NO_REPO`` (entries recording none) or None (any).
    Raises ``BaselineError`` for a spelling ``parse_repo`` cannot read."""
    if not compiler_repo:
        return None
    if compiler_repo.strip().lower() == NO_REPO:
        return NO_REPO
    return parse_repo(compiler_repo)


def select(entries: list[Entry], *, suite: str | None = None, gpu: str | None = None,
           repo: Repo | str | None = None) -> list[Entry]:
    """The entries of ``suite``, measured on ``gpu``, of ``repo`` (as ``repo_wanted`` reads it)."""
    if suite:
        entries = [e for e in entries if e.manifest.suite_name == suite]
    if gpu:
        entries = [e for e in entries if e.manifest.gpu_slug == gpu_slug(gpu)]
    if repo == NO_REPO:  # not one whose repository is spelt so that it cannot be read: that is unknown
        entries = [e for e in entries if not e.manifest.compiler_repo and e.repo() is None]
    elif isinstance(repo, Repo):
        entries = [e for e in entries if (r := e.repo()) is not None and r.key == repo.key]
    return entries


def list_entries(store: Path, *, runner_class: str | None = None, suite: str | None = None,
                 gpu: str | None = None, compiler_repo: str | None = None) -> tuple[list[Entry], list[str]]:
    """Entries (newest first) and notes on what was skipped. Manifests only: files are
    checked by ``find`` for the entry it chooses."""
    if runner_class:
        check_runner_class(runner_class)
    wanted_repo = repo_wanted(compiler_repo)
    notes: list[str] = []
    entries = select(scan(Path(store), runner_class=runner_class, suite=suite, notes=notes),
                     suite=suite, gpu=gpu, repo=wanted_repo)
    for e in entries:  # listed as found, but a damaged one says so: find would skip it
        try:
            check_files(e.path, e.manifest)
        except (GateError, OSError) as exc:
            notes.append(f"damaged {e.path}: {exc}; find skips it")
    return entries, notes
