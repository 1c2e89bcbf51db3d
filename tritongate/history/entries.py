"""One store entry's points, read at a fraction of the cost of ``load_run``.

Checking each row's stored summary against its samples one row at a time was most of what
``history`` cost over a year of a deep scan (hundreds of ``results.json`` of a few MB). Here
the file is read once, its sha256 compared with the manifest's, the document validated as
``ResultsDoc`` straight from its bytes, and the stored summaries checked for all the rows of
one sample count at once, with ``tritongate.stats.summarize``'s arithmetic; one row per key
and a complete run are required.

Whatever this reader does not accept (damaged, edited, older or newer, incomplete) is read
again the full way, ``check_files`` and ``load_run``: refused with the same one-line error as
ever or, should that accept it, given the same points. So this reader accepts only less than
the full load, and gives the points it gives (a test holds it to that).
"""

from __future__ import annotations

import hashlib
import json
import math
from math import nan
from typing import Any

import numpy as np

from pydantic import ValidationError

from tritongate import safefs
from tritongate.baselines.store import Entry, check_files
from tritongate.history.points import EntryInfo, Key, Point, config_fingerprint, gap_reason, points_of
from tritongate.rundir import IDENTITY, MAX_JSON_BYTES, RESULTS, load_run
from tritongate.schema import MIN_READABLE_SCHEMA_VERSION, SCHEMA_VERSION, ResultsDoc, Row
from tritongate.validation.runfiles import IdentityDoc

_RESULTS = ResultsDoc.__pydantic_validator__
_REL_TOL, _ABS_TOL = 1e-9, 1e-12  # Row's check of a stored summary against its samples


class _Refused(Exception):
    """This reader does not vouch for the entry; the full load decides."""


def entry_points(entry: Entry, info: EntryInfo) -> dict[Key, Point]:
    """The point of each row of ``entry``, as ``points_of(info, load_run(...).rows)`` gives
    them. Raises what ``check_files`` or ``load_run`` raise for an entry they refuse."""
    try:
        return _points(entry, info)
    except _Refused:
        check_files(entry.path, entry.manifest)
        return points_of(info, load_run(entry.path).rows)


# A night's sample lengths in ms: the run's, and each op the suite gave a longer one (the
# longer of the two is what its rows aimed at).
SampleLengths = tuple[float, tuple[tuple[str, float], ...]]


def _number(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    return float(value) if ok else None


def sample_lengths(entry: Entry) -> SampleLengths | None:
    """The device time a sample aimed at when the entry was recorded (``measure_config``'s
    ``target_sample_s``, and the suite's per-op ``sample_ms``); None where its identity does not
    say (an older or damaged one)."""
    try:
        identity = json.loads(_read(entry, IDENTITY))
        run_ms = _number(identity["measure_config"]["target_sample_s"])
        suite = identity.get("suite")
        per_op = suite.get("sample_ms") if isinstance(suite, dict) else None
    except (_Refused, ValueError, RecursionError, KeyError, TypeError, AttributeError):
        return None
    if run_ms is None:
        return None
    run_ms *= 1e3
    ops = per_op.items() if isinstance(per_op, dict) else ()
    return run_ms, tuple(sorted((str(op), ms) for op, value in ops
                                if (ms := _number(value)) is not None and ms > run_ms))


def _read(entry: Entry, name: str) -> bytes:
    if safefs.kind(entry.path, name) != "file":  # a link or a missing file: the full load says which
        raise _Refused
    try:
        raw = safefs.read_bytes(entry.path, name, limit=MAX_JSON_BYTES)
    except OSError:
        raise _Refused from None
    # the bytes parsed are the bytes hashed: the entry cannot change between check and read
    if len(raw) > MAX_JSON_BYTES or hashlib.sha256(raw).hexdigest() != entry.manifest.files.get(name):
        raise _Refused
    return raw


def _readable(version: Any) -> bool:
    return (isinstance(version, int) and not isinstance(version, bool)
            and MIN_READABLE_SCHEMA_VERSION <= version <= SCHEMA_VERSION)


def _points(entry: Entry, info: EntryInfo) -> dict[Key, Point]:
    raw = _read(entry, RESULTS)
    try:
        identity = json.loads(_read(entry, IDENTITY))
        if not isinstance(identity, dict) or not _readable(identity.get("schema_version")):
            raise _Refused
        IdentityDoc.model_validate(identity)
        doc = _RESULTS.validate_json(raw, strict=True)
    except (ValidationError, ValueError, RecursionError):
        raise _Refused from None
    if not _readable(doc.schema_version) or doc.status != "complete":
        raise _Refused
    recorded, commit, where = info.recorded, info.commit, info.record_path
    out: dict[Key, Point] = {}
    for row, median in zip(doc.rows, _medians(doc.rows)):
        key = (row.op, row.case, row.dtype)
        if key in out:
            raise _Refused
        reason = gap_reason(row)
        out[key] = (Point(recorded, commit, where, median, len(row.samples), None, config_fingerprint(row.autotune))
                    if reason is None
                    else Point(recorded, commit, where, None, 0, reason))
    return out


def _medians(rows: list[Row]) -> list[float | None]:
    """Each row's median (None without samples), after checking its stored summary against
    its samples as ``Row`` does: ``summarize``'s arithmetic, done for the rows of one sample
    count at once (``math.isclose``'s test, elementwise)."""
    medians: list[float | None] = [None] * len(rows)
    by_count: dict[int, list[int]] = {}
    for i, row in enumerate(rows):
        if row.samples:
            by_count.setdefault(len(row.samples), []).append(i)
    try:
        for n, members in by_count.items():
            data = np.sort(np.array([rows[i].samples for i in members], dtype=float), axis=1)
            if n == 1:
                q1 = med = q3 = data[:, 0]
            else:
                q1, med, q3 = (_interpolated(data, q, n - 1) for q in (1, 2, 3))
            actual = {"n": np.full(len(members), float(n)), "median": med, "q1": q1, "q3": q3, "iqr": q3 - q1,
                      "min": data[:, 0], "max": data[:, -1],
                      "mean": np.array([math.fsum(rows[i].samples) / n for i in members])}
            stored_rows = [rows[i].stored_summary for i in members]
            for name, want in actual.items():
                stored = np.array([nan if s is None or (v := getattr(s, name)) is None else v for s in stored_rows],
                                  dtype=float)
                if not np.all(_isclose(stored, want) | np.isnan(stored)):
                    raise _Refused
            for i, m in zip(members, med.tolist()):
                medians[i] = m
    except (OverflowError, TypeError, ValueError):  # a stored value no float holds: the full load says
        raise _Refused from None
    return medians


def _interpolated(data: np.ndarray, i: int, m: int) -> np.ndarray:
    """``_quartiles_of``'s ``i``-th quartile of each sorted row (the same operations)."""
    j, delta = divmod(i * m, 4)
    return (data[:, j] * (4 - delta) + data[:, j + 1] * delta) / 4


def _isclose(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)`` of finite values, elementwise."""
    with np.errstate(over="ignore", invalid="ignore"):
        diff = np.abs(b - a)
        return (a == b) | (diff <= np.abs(_REL_TOL * b)) | (diff <= np.abs(_REL_TOL * a)) | (diff <= _ABS_TOL)
