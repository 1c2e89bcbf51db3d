"""Publishing a record run into the baseline store: the entry is built in a hidden folder
beside its final place, checked against what was read, and renamed in (``store`` reads it)."""

from __future__ import annotations

import datetime as dt
import errno
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Mapping

from tritongate import __version__
from tritongate import safefs
from tritongate.atomicio import write_json_atomic, write_text_atomic
from tritongate.autotune.records import RECORDS_DIR, load_records
from tritongate.baselines.ir_files import ir_files
from tritongate.baselines.manifest import (MANIFEST, BaselineError, build_manifest,
                                           check_runner_class, gpu_slug, slug)
from tritongate.baselines.repo import parse_repo, repo_of_ref
from tritongate.errors import GateError
from tritongate.rundir import IDENTITY, RESULTS, Run, load_run, utc_stamp
from tritongate.schema import RowStatus, RunStatus

from tritongate.baselines.store import DIR_MODE, INCOMING, SHAPES, SUMMARY, Entry, sha256_of

_RECORD = "record one: python ci/record_baseline.py --suite SUITE --out runs --publish STORE --runner-class RC"
_FIX = f"publish a finished record run, or {_RECORD}"


def _refusal(run_dir: Path, why: object) -> BaselineError:
    return BaselineError(f"refusing to publish {run_dir}: {why}")


def _load_publishable(run_dir: Path) -> Run:
    if not run_dir.is_dir():
        raise _refusal(run_dir, "not a directory; pass the run directory that `tritongate run` printed")
    try:
        run = load_run(run_dir, allow_incomplete=True)
    except GateError as exc:
        raise _refusal(run_dir, exc) from None
    if run.mode == "replay":
        original = run.identity.get("replay_from") or "unknown"
        raise _refusal(run_dir, f"it is a replay run (of {original}) and holds no autotune records of its own; "
                                f"publish the record it replayed, or {_RECORD}")
    from tritongate.backends import is_capture_only_run

    if is_capture_only_run(run.identity):
        raise _refusal(run_dir, "it is an IR index capture (TRITONGATE_CAPTURE_ONLY=1: nothing was executed, every "
                                f"row is CORRECTNESS_MISMATCH), never a baseline; {_RECORD} on a GPU runner")
    if run.status is not RunStatus.COMPLETE:
        raise _refusal(run_dir, f"the run is incomplete ({run.status.value}, {len(run.rows)} rows); {_FIX}")
    if not run.rows:
        raise _refusal(run_dir, f"it has no rows; {_FIX}")
    if not any(r.status is RowStatus.OK and r.samples for r in run.rows):  # a baseline nothing can replay against
        raise _refusal(run_dir, f"none of its {len(run.rows)} rows was measured (every row errored or timed out); "
                                f"{_FIX}")
    from tritongate.gate.comparability import planted_knobs

    planted = planted_knobs(run.identity)
    if planted:
        raise _refusal(run_dir, f"it is a planted run ({planted}), its kernels slowed on purpose; unset the "
                                f"variable and {_RECORD}")
    selection = run.identity.get("selection")
    if selection:  # a PR replaying it would find the suite's other rows missing and tune them live
        part = ", ".join(f"--{k} {','.join(v)}" for k, v in selection.items() if k in ("ops", "dtypes") and v)
        suite = (run.identity.get("suite") or {}).get("name", "?")
        raise _refusal(run_dir, f"it measured part of suite {suite!r} ({part or 'a subset of its rows'}, "
                                f"{len(run.rows)} rows); record the whole suite, or write a suite YAML of just "
                                "those ops and record that")
    backend = run.identity.get("backend")
    if not isinstance(backend, str) or not backend:
        raise _refusal(run_dir, f"{IDENTITY} names no backend; {_FIX}")
    try:
        load_records(run_dir, backend=backend, run=run)
    except GateError as exc:
        raise _refusal(run_dir, exc) from None
    return run


def _digests(run_dir: Path) -> dict[str, str]:
    """sha256 of the files ``load_run`` reads (``""``: not a readable plain file, which the
    load itself then refuses with its own words)."""
    out = {}
    for rel in (RESULTS, IDENTITY):
        try:
            out[rel] = sha256_of(safefs.read_bytes(run_dir, rel)) if safefs.kind(run_dir, rel) == "file" else ""
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
        raise _refusal(run_dir, f"{', '.join(changed)} changed while it was published; publish it again once "
                                "its writer has finished")
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
    try:
        when = dt.datetime.fromisoformat(value) if value else None
    except ValueError:
        return None
    return when.astimezone(dt.timezone.utc).isoformat() if when is not None and when.tzinfo is not None else None


def _identity_fields(run: Run) -> dict[str, Any]:
    ident = run.identity
    need = {"suite_name": ("suite", "name"), "suite_digest": ("suite", "digest"), "gpu_model": ("device",),
            "backend": ("backend",), "triton_version": ("software", "triton", "version")}
    fields: dict[str, Any] = {}
    for name, keys in need.items():
        value = _text_at(ident, *keys)
        if value is None:
            raise _refusal(run.path, f"{IDENTITY} has no {'.'.join(keys)}, so a lookup could not match it; {_FIX}")
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
    try:
        names += ir_files(src)
    except ValueError as exc:  # a damaged index is refused, not silently dropped
        raise _refusal(src, exc) from None
    (dst / RECORDS_DIR).mkdir()
    files = {}
    for rel in names:
        data = safefs.read_bytes(src, rel)  # a link in the run is refused, never copied as its target
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        _write_durable(dst / rel, data)
        files[rel] = sha256_of(data)
    return files


def _published_as(parent: Path, loaded: Mapping[str, str]) -> Path | None:
    """An entry beside which holds this run's ``results.json`` and ``run_identity.json`` (None:
    none, or unreadable ones)."""
    if not all(loaded.get(rel) for rel in (RESULTS, IDENTITY)) or not parent.is_dir():
        return None
    for entry in sorted(parent.iterdir()):
        if entry.name.startswith(INCOMING) or entry.is_symlink() or not entry.is_dir():
            continue
        try:
            doc = json.loads(safefs.read_bytes(entry, MANIFEST))
        except (OSError, ValueError, GateError):
            continue
        files = doc.get("files") if isinstance(doc, dict) else None
        if isinstance(files, dict) and all(files.get(rel) == loaded[rel] for rel in (RESULTS, IDENTITY)):
            return entry
    return None


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
    """Copy a finished record run into the store as a new entry and return it; a replay run, an
    incomplete or invalid one, or one whose identity lacks what a lookup matches on is refused
    (``BaselineError``, one line naming the path and the fix)."""
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
        raise _refusal(run_dir, exc) from None
    commit = compiler_commit or _text_at(run.identity, "commit")
    created = now.astimezone(dt.timezone.utc).isoformat()
    recorded = _utc_text(_text_at(run.identity, "started_utc")) or created
    fields.update(tritongate_version=__version__, created_utc=created, recorded_utc=recorded, runner_class=runner_class,
                  compiler_repo=repo.display if repo else None, compiler_commit=commit, source_run=run_dir.name,
                  rows=len(run.rows), rows_ok=sum(1 for r in run.rows if r.status.value == "ok"))
    suite_dir = slug(fields["suite_name"])
    source = f"{run_dir}: its baseline manifest"
    try:  # refuse a value the manifest cannot hold before copying anything
        build_manifest({**fields, "files": {}, "record_path": "check"}, source=source)
    except BaselineError as exc:
        raise BaselineError(f"refusing to publish {exc}") from None
    parent = store / runner_class / suite_dir / fields["gpu_slug"]
    twin = _published_as(parent, loaded)
    if twin is not None:  # two entries of one measurement would be two nights in the history
        raise _refusal(run_dir, f"it is already published as {twin} (the same {RESULTS} and {IDENTITY})")
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=INCOMING, dir=parent))  # same filesystem: rename is atomic
    try:
        os.chmod(tmp, DIR_MODE)
        files = _copy_record(run_dir, tmp)
        summary = summary_tsv(run)
        write_text_atomic(tmp / SUMMARY, summary)
        files[SUMMARY] = sha256_of(summary.encode("utf-8"))
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
