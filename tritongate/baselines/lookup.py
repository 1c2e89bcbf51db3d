"""Find the baseline a PR job should replay: the newest good store entry recorded for its
compiler repository, runner class, suite and GPU (``find``), and what to say when there is none.
"""

from __future__ import annotations

import datetime as dt
import math
import shlex
from collections import Counter
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from tritongate.baselines.manifest import BaselineError, Manifest, check_runner_class, gpu_slug
from tritongate.baselines.repo import Repo, parse_repo
from tritongate.baselines.store import FUTURE_SLACK_DAYS, Entry, scan, verify_entry
from tritongate.errors import GateError, SchemaVersionError

DEFAULT_MAX_AGE_DAYS = 7.0


def refresh_command(store: Path | str, suite: str, runner_class: str, backend: str | None = None,
                    compiler_repo: str | None = None) -> str:
    """The command a nightly (or a person) runs to publish a fresh baseline."""
    cmd = ["python", "ci/record_baseline.py", "--suite", suite, "--out", "runs", "--publish", str(store),
           "--runner-class", runner_class]
    cmd += (["--backend", backend] if backend else []) + (["--compiler-repo", compiler_repo] if compiler_repo else [])
    return shlex.join(cmd)


class State(str, Enum):
    OK = "ok"  # newest good matching entry, young enough
    STALE = "stale"  # newest good matching entry, older than max_age_days (still returned)
    MISMATCHED = "mismatched"  # entries for this runner class and suite, none matching the caller
    MISSING = "missing"  # no readable entry for this runner class and suite at all


@dataclass(frozen=True)
class Lookup:
    state: State
    entry: Entry | None  # ok / stale: the record to replay
    reason: str  # one line
    refresh: str  # the command that publishes a fresh one
    expected: dict[str, Any]
    max_age_days: float
    age_days: float | None = None
    nearest: Entry | None = None  # mismatched: the newest entry that disagrees
    notes: tuple[str, ...] = field(default_factory=tuple)  # skipped (damaged) entries

    @property
    def record(self) -> Path | None:
        return self.entry.path if self.entry else None

    def to_dict(self) -> dict[str, Any]:
        return {"schema_version": 1, "state": self.state.value,
                "record": str(self.record.resolve()) if self.record else None,
                "reason": self.reason, "refresh": self.refresh, "expected": self.expected,
                "max_age_days": self.max_age_days,
                "age_days": round(self.age_days, 3) if self.age_days is not None else None,
                "entry": self.entry.to_dict() if self.entry else None,
                "nearest": self.nearest.to_dict() if self.nearest else None, "notes": list(self.notes)}


def _short(text: str, n: int = 12) -> str:
    return text if len(text) <= n else text[:n] + "…"


def differences(m: Manifest, *, suite: str, gpu: str, suite_digest: str | None = None,
                backend: str | None = None) -> list[str]:
    """How an entry's identity disagrees with what the caller expects (empty: it matches)."""
    out = []
    if m.suite_name != suite:
        out.append(f"suite {m.suite_name!r}, expected {suite!r}")
    if m.gpu_slug != gpu_slug(gpu):
        out.append(f"GPU {m.gpu_slug} ({m.gpu_model}), expected {gpu_slug(gpu)}")
    if suite_digest and m.suite_digest != suite_digest:
        out.append(f"suite digest {_short(m.suite_digest)}, expected {_short(suite_digest)} (the suite or "
                   "its shapes changed since)")
    if backend and m.backend != backend:
        out.append(f"backend {m.backend}, expected {backend}")
    return out


def find(store: Path, runner_class: str, suite: str, gpu: str, *, max_age_days: float = DEFAULT_MAX_AGE_DAYS,
         now: dt.datetime | None = None, suite_digest: str | None = None, backend: str | None = None,
         store_text: str | None = None, compiler_repo: str | None = None) -> Lookup:
    """The baseline a PR job should replay; the states are baselines/README.md's "What find decides".

    Entries read: valid manifests under ``<store>/<runner_class>/<slug(suite)>/*/*`` that sit
    where their ``record_path`` says; with ``compiler_repo``, only those built from that
    repository (another's, or one recording none, is never chosen, nor offered as the nearest).
    Newest = latest (recorded, created, name). Never raises for a damaged entry (skipped with a
    note): ``BaselineError`` only for bad arguments. ``store_text``: how the refresh command
    spells the store (default: ``store``).
    """
    store = Path(store)
    check_runner_class(runner_class)
    gpu_slug(gpu)  # a name with nothing to slug is a usage error, not "missing"
    if not (isinstance(max_age_days, (int, float)) and math.isfinite(max_age_days) and max_age_days >= 0):
        raise BaselineError(f"max age {max_age_days!r} days must be a finite number >= 0")
    if store.exists() and not store.is_dir():
        raise BaselineError(f"baseline store {store} is not a directory")
    now = now or dt.datetime.now(dt.timezone.utc)
    if now.tzinfo is None:
        raise BaselineError("find(now=...) must be timezone-aware")
    repo = parse_repo(compiler_repo) if compiler_repo else None
    repo_name = repo.display if repo else None
    expected = {"runner_class": runner_class, "suite": suite, "gpu": gpu, "gpu_slug": gpu_slug(gpu),
                "suite_digest": suite_digest, "backend": backend, "compiler_repo": repo_name}
    refresh = refresh_command(store_text or str(store), suite, runner_class, backend, repo_name)

    def result(state: State, reason: str, **kw: Any) -> Lookup:
        return Lookup(state=state, reason=reason, refresh=refresh, expected=expected,
                      max_age_days=float(max_age_days), notes=tuple(notes), **kw)

    notes: list[str] = []
    if not store.is_dir():
        return result(State.MISSING, f"the baseline store {store} does not exist (nothing published "
                                     "yet, or the data branch is not checked out there)", entry=None)
    entries = scan(store, runner_class=runner_class, suite=suite, notes=notes)
    entries, others = _by_repo(entries, repo)
    # An entry dated in the future (a runner's clock ahead) would stay "newest" until that date: ranked last.
    future = [e for e in entries if e.age_days(now) < -FUTURE_SLACK_DAYS]
    entries = [e for e in entries if e not in future] + future
    mismatched: list[tuple[Entry, list[str]]] = []
    chosen: Entry | None = None
    for entry in entries:  # newest first
        diffs = differences(entry.manifest, suite=suite, gpu=gpu, suite_digest=suite_digest, backend=backend)
        if diffs:
            mismatched.append((entry, diffs))
        elif chosen is None:
            try:
                verify_entry(entry)
            except SchemaVersionError as exc:  # readable by another tritongate: not damage
                mismatched.append((entry, [f"record unreadable by this tritongate ({exc})"]))
            except (GateError, OSError) as exc:
                notes.append(f"skipped {entry.path}: {exc}")
            else:
                chosen = entry
    skipped = f"; {len(notes)} damaged entr{'y' if len(notes) == 1 else 'ies'} skipped" if notes else ""
    where = (f"{suite} baseline for {repo.display} on runner class {runner_class} ({gpu_slug(gpu)})" if repo
             else f"{suite} baseline for runner class {runner_class} on {gpu_slug(gpu)}")
    if chosen is not None:
        age = chosen.age_days(now)
        if age < 0:
            ranked = "; ranked after every entry dated in the past" if chosen in future else ""
            notes.append(f"{chosen.path} was recorded {-age:.2f} days in the future (clock skew?){ranked}")
            age = 0.0
        m = chosen.manifest
        built = m.compiler_commit or m.compiler_ref or m.triton_version
        if age > max_age_days:
            return result(State.STALE, f"newest {where} is {m.record_path}, {age:.1f} days old (older than "
                                       f"{max_age_days:g}; built from {built}); refresh it, or record with "
                                       f"the base build{skipped}", entry=chosen, age_days=age)
        return result(State.OK, f"newest {where}: {m.record_path}, {age:.1f} days old, built from "
                                f"{built}{skipped}", entry=chosen, age_days=age)
    if mismatched:
        nearest, diffs = max(mismatched, key=lambda pair: pair[0].sort_key())
        return result(State.MISMATCHED, f"no {where} matches: the newest entry {nearest.manifest.record_path} "
                                        f"has {'; '.join(diffs)}{skipped}", entry=None, nearest=nearest)
    return result(State.MISSING, f"no {where} in {store}{_others_text(others)}{skipped}", entry=None)


def _by_repo(entries: list[Entry], repo: Repo | None) -> tuple[list[Entry], list[Repo | None]]:
    """The entries built from ``repo`` (all of them when None), and the repository of each
    other one (None: it records none)."""
    if repo is None:
        return entries, []
    found = [(entry, entry.repo()) for entry in entries]
    return ([e for e, r in found if r is not None and r.key == repo.key],
            [r for _, r in found if r is None or r.key != repo.key])


def _others_text(others: list[Repo | None]) -> str:
    """What the runner class and suite hold instead: "; its 3 entries are for a/b (2), ..."."""
    if not others:
        return ""
    counts = Counter(found.display if found is not None else "no recorded repository" for found in others)
    listed = ", ".join(f"{name} ({n})" for name, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    n = len(others)
    return (f"; its {n} entr{'y' if n == 1 else 'ies'} for this runner class and suite {'is' if n == 1 else 'are'} "
            f"for {listed}, not this repository (publish one with this repository's nightly)")
