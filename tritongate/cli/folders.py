"""The folders tritongate writes, told apart: a run directory, a pair directory (``pair``,
``loop``, ``merge``: base/, candidate/, verdict/), a verdict folder (``gate``), a calibration
folder and a parent folder of runs (``--out``). Given the wrong one, a command names the one
the user has and the folder inside it to pass. Also the suite a record was measured with."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Any

from tritongate.errors import PreflightError, RunDirError, UsageError

RESULTS = "results.json"
IDENTITY = "run_identity.json"
VERDICT_JSON = "verdict.json"
CALIBRATION_SETTINGS = "settings.json"
MAX_LISTED = 5  # folders named in a message; the rest are counted


class Kind(str, Enum):
    RUN = "run directory"
    PAIR = "pair directory"
    VERDICT = "verdict folder"
    CALIBRATION = "calibration folder"
    RUNS = "folder of runs"
    MISSING = "missing"
    OTHER = "other"


def kind_of(path: Path) -> Kind:
    """What ``path`` is, from the files in it (nothing is validated here)."""
    if not path.exists():
        return Kind.MISSING
    if not path.is_dir():
        return Kind.OTHER
    if (path / RESULTS).is_file() or (path / IDENTITY).is_file():
        return Kind.RUN
    if (path / "base").is_dir() and (path / "candidate").is_dir():
        return Kind.PAIR
    if (path / VERDICT_JSON).is_file():
        return Kind.VERDICT
    if (path / CALIBRATION_SETTINGS).is_file() and path.name.startswith("calibrate-"):
        return Kind.CALIBRATION
    if _children(path):
        return Kind.RUNS
    return Kind.OTHER


def _children(path: Path) -> list[Path]:
    """The run, pair and calibration folders directly in ``path``, newest name last."""
    try:
        entries = sorted(path.iterdir())
    except OSError:
        return []
    return [c for c in entries if c.is_dir() and not c.name.startswith(".") and (
        (c / "base").is_dir() or any((c / name).is_file() for name in (RESULTS, VERDICT_JSON, CALIBRATION_SETTINGS)))]


def _listed(paths: list[Path]) -> str:
    shown = ", ".join(str(p) for p in paths[-MAX_LISTED:])
    more = len(paths) - MAX_LISTED
    return f"{shown} (and {more} older)" if more > 0 else shown


def what_it_is(path: Path) -> str:
    """One clause naming what ``path`` holds and the folders inside it a command takes."""
    kind = kind_of(path)
    if kind is Kind.PAIR:
        return (f"{path} is a pair directory (of `tritongate pair` or `loop`): its run directories are "
                f"{path / 'base'} and {path / 'candidate'}, its verdict {path / 'verdict'}")
    if kind is Kind.VERDICT:
        return f"{path} is a verdict folder (of `tritongate gate`), not a run directory"
    if kind is Kind.CALIBRATION:
        steps = _children(path)
        return (f"{path} is a calibration folder: its steps are pair directories"
                + (f" ({_listed(steps)})" if steps else "") + "; calibration.md says what it found")
    if kind is Kind.RUNS:
        return f"{path} is a folder of runs (an --out): pass one of {_listed(_children(path))}"
    if kind is Kind.MISSING:
        return f"{path} does not exist"
    if kind is Kind.RUN:
        return f"{path} is a run directory"
    return f"{path} is not a folder tritongate wrote"


def load_run_dir(path: Path, *, what: str = "a run directory", allow_incomplete: bool = False) -> Any:
    """``load_run``; given another folder tritongate writes, a ``UsageError`` naming the run directories in it."""
    from tritongate.rundir import load_run

    kind = kind_of(path)
    if kind not in (Kind.RUN, Kind.OTHER, Kind.MISSING):
        raise UsageError(f"expected {what}: {what_it_is(path)}")
    try:
        return load_run(path, allow_incomplete=allow_incomplete)
    except RunDirError as exc:
        if kind is Kind.RUN:
            raise
        raise UsageError(f"expected {what}: {exc}") from None  # it names the folder and what it lacks


def record_suite(record: Path) -> str:
    """The suite ``record`` was measured with (run_identity.json), as a command takes it: the
    builtin suite of its name, else the suite file it names if that file is still there."""
    from tritongate.suites import builtin_suites, ops_dir

    name, path = _recorded_suite(record)
    if name is None:
        raise UsageError(f"{record / IDENTITY} names no suite; pass --suite NAME|PATH")
    builtin = ops_dir() / "suites" / f"{name}.yaml"
    if path and Path(path).is_file():
        same = name in builtin_suites() and Path(path).resolve() == builtin.resolve()
        return name if same else path
    if name in builtin_suites():  # recorded from another checkout: the builtin of that name
        return name
    where = f"from {path}, which is not there any more" if path else "(the record does not say from which file)"
    raise UsageError(f"{record} was recorded with suite {name!r} {where}, and no builtin suite has that name; "
                     "pass --suite PATH")


def _recorded_suite(record: Path) -> tuple[str | None, str | None]:
    """The suite name and file run_identity.json gives (None where it gives none)."""
    from tritongate.rundir import read_json_object

    identity = read_json_object(record / IDENTITY, IDENTITY, error=UsageError)
    suite = identity.get("suite") if isinstance(identity.get("suite"), dict) else {}
    name, path = suite.get("name"), suite.get("path")
    return (name if isinstance(name, str) and name else None), (path if isinstance(path, str) and path else None)


def recorded_selection(record: Path) -> tuple[list[str], list[str]]:
    """The ops and dtypes a record of part of its suite was limited to (``--ops``/``--dtypes``
    when it was made); empty lists for a record of the whole suite, or one that does not say."""
    from tritongate.rundir import read_json_object

    try:
        identity = read_json_object(record / IDENTITY, IDENTITY, error=UsageError)
    except UsageError:
        return [], []  # the pair's own checks say what is wrong with it
    sel = identity.get("selection")
    if not isinstance(sel, dict):
        return [], []

    def names(key: str) -> list[str]:
        value = sel.get(key)
        return [v for v in value if isinstance(v, str) and v] if isinstance(value, list) else []

    return names("ops"), names("dtypes")


def suite_for_record(record: Path, explicit: str | None, *, option: str = "BASELINE_RECORD") -> str:
    """The suite to replay ``record`` with: its own, or ``explicit`` naming the same one (another suite's
    rows would not be in the record, and would tune live instead of replaying)."""
    if record.is_symlink() and not record.exists():  # resolved for the workers, a loop would be a crash
        raise PreflightError("replay_from", f"{option} {record}: a symbolic link to nothing (or a link loop); pass a "
                                            "record run (the directory `tritongate run` printed)")
    if record.exists() and not record.is_dir():
        raise PreflightError("replay_from", f"{option} {record}: not a directory; pass a record run (the directory "
                                            "`tritongate run` printed)")
    if not (record / IDENTITY).is_file():  # a record that is not there is a preflight failure, as before
        if explicit is not None and kind_of(record) in (Kind.MISSING, Kind.OTHER):
            return explicit  # the workers' own check says what is wrong with it
        raise PreflightError("replay_from", f"{option}: {what_it_is(record)}; pass a record run (the "
                                            "directory `tritongate run` printed)")
    if explicit is None:
        return record_suite(record)
    from tritongate.suites import load_suite

    recorded, path = _recorded_suite(record)
    given = load_suite(explicit).name
    if recorded is not None and given != recorded:
        source = f" (from {path})" if path else ""
        raise UsageError(f"--suite {explicit} is suite {given!r}, but {option} {record} was recorded with "
                         f"suite {recorded!r}{source}; leave --suite out to replay the record's own suite, or "
                         "pass a record of the suite you mean")
    return explicit
