"""``manifest.json`` of a baseline entry: what was recorded, where, by which builds.

The one file a lookup reads per entry: everything a lookup matches on, and the sha256 of every
other file (a damaged or edited record is caught before a PR job replays it). Validated when
built (a publish never writes a manifest it could not read back) and when read.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from pathlib import Path
from typing import Annotated, Any, Optional

from pydantic import AfterValidator, Field, StringConstraints

from tritongate.errors import UsageError
from tritongate.validation import validate
from tritongate.validation.core import StrictDoc

MANIFEST = "manifest.json"
MANIFEST_SCHEMA_VERSION = 1
MAX_MANIFEST_BYTES = 1 * 2**20  # a manifest is a few KB; anything larger is not ours
# Times before the Unix epoch are no runner's clock; year 1 made history's plot axis start before
# what matplotlib draws (an internal error, no history.md)
EARLIEST_YEAR = 1970

# A path component of the store: no separators, no dot names, nothing a shell or a
# GitHub output line could trip on.
SLUG_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}$"
_SLUG_RE = re.compile(SLUG_PATTERN)
# The device name the cpu backend records (tritongate.harness.device): its slug is "cpu".
CPU_DEVICE_NAMES = frozenset({"host", "cpu"})


class BaselineError(UsageError):
    """A baseline store problem (bad entry, refused publish, bad name): exit code 2."""


def slug(text: str) -> str:
    """``"NVIDIA H200"`` -> ``"nvidia-h200"``: lower case, runs of other characters -> ``-``."""
    out = re.sub(r"[^a-z0-9]+", "-", text.strip().lower()).strip("-")[:64].rstrip("-")
    if not out:
        raise BaselineError(f"{text!r} has no letters or digits to name a store folder by")
    return out


def suite_folder(suite: str) -> str:
    """The store folder a ``--suite`` argument names: a builtin name as it is, a suite file
    by its stem (``ops/suites/pr.yaml`` -> ``pr``), as a record names its suite."""
    path = Path(suite)
    return path.stem if path.suffix in (".yaml", ".yml") or "/" in suite or os.sep in suite else suite


def gpu_slug(device: str) -> str:
    """The store folder of a device name; the cpu backend's device (``host``) is ``cpu``."""
    return "cpu" if device.strip().lower() in CPU_DEVICE_NAMES else slug(device)


def check_runner_class(name: str) -> str:
    """A runner class names a store folder: refuse, rather than rewrite, an odd one (a typo
    in a workflow must not silently publish to, or look up, another folder)."""
    if not _SLUG_RE.match(name):
        raise BaselineError(
            f"runner class {name!r} must be lower-case letters, digits, '.', '_' or '-' (at most 64, "
            f"starting with a letter or digit), e.g. h200 or h200-nvl")
    return name


def _utc(value: str) -> str:
    try:
        when = dt.datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"expected an ISO 8601 time, got {value[:40]!r}") from None
    if when.utcoffset() != dt.timedelta(0):
        raise ValueError(f"expected a UTC time (+00:00), got {value[:40]!r}")
    if when.year < EARLIEST_YEAR:  # no runner's clock reads that: a hand edit, or a damaged file
        raise ValueError(f"expected a time after {EARLIEST_YEAR} (when a record was measured), got {value[:40]!r}")
    return value


def _relative(value: str) -> str:
    if value.startswith("/") or any(p in ("", ".", "..") for p in value.split("/")):
        raise ValueError(f"expected a relative path inside the store, got {value[:80]!r}")
    return value


def _one_line(value: str) -> str:
    # quoted in messages, GitHub outputs and the summary: no control characters
    if not value.isprintable():
        raise ValueError(f"expected one line of printable text, got {value[:40]!r}")
    return value


Text = Annotated[str, StringConstraints(min_length=1, max_length=1_000), AfterValidator(_one_line)]
Slug = Annotated[str, StringConstraints(pattern=SLUG_PATTERN)]
UtcTime = Annotated[str, StringConstraints(max_length=64), AfterValidator(_utc)]
Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
RelPath = Annotated[str, StringConstraints(min_length=1, max_length=1_000), AfterValidator(_relative)]


class Manifest(StrictDoc):
    """One baseline entry. Unknown keys are ignored (a newer writer's optional fields)."""

    schema_version: Annotated[int, Field(ge=1)]
    tritongate_version: Text
    created_utc: UtcTime  # when it was published
    recorded_utc: UtcTime  # when the record run started: a baseline's age counts from here
    runner_class: Slug
    suite_name: Text
    suite_digest: Text  # sha256 of the suite and shape files as the record read them
    gpu_model: Text  # the run identity's device name, e.g. "NVIDIA H200"; "host" on cpu
    gpu_slug: Slug
    backend: Text
    triton_version: Text
    triton_build_hash: Optional[Text] = None
    compiler_ref: Optional[Text] = None
    compiler_repo: Optional[Text] = None
    compiler_commit: Optional[Text] = None
    record_path: RelPath  # this entry's folder, relative to the store root (POSIX separators)
    source_run: Text  # the run directory's name where it was recorded
    rows: Annotated[int, Field(ge=0)]
    rows_ok: Annotated[int, Field(ge=0)]
    files: dict[RelPath, Sha256]  # every file of the entry but the manifest

    @property
    def created(self) -> dt.datetime:
        return dt.datetime.fromisoformat(self.created_utc)

    @property
    def recorded(self) -> dt.datetime:
        return dt.datetime.fromisoformat(self.recorded_utc)

    def location(self) -> tuple[str, str, str]:
        """The three folders an entry of this manifest must sit in."""
        return (self.runner_class, slug(self.suite_name), self.gpu_slug)


def build_manifest(fields: dict[str, Any], *, source: str | Path) -> Manifest:
    """A manifest from its fields, validated as a reader would (``BaselineError`` if not)."""
    return validate(Manifest, {"schema_version": MANIFEST_SCHEMA_VERSION, **fields},
                    source=source, error=BaselineError)


def read_manifest(path: Path) -> Manifest:
    """The manifest at ``path``, or ``BaselineError`` with one line naming the file."""
    path = Path(path)
    if not path.is_file():
        raise BaselineError(f"{path} is missing (a publish that died, or not a baseline entry)")
    if path.stat().st_size > MAX_MANIFEST_BYTES:
        raise BaselineError(f"{path} is larger than {MAX_MANIFEST_BYTES // 2**20} MiB; not a manifest")
    try:
        data = json.loads(path.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise BaselineError(f"{path} is not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise BaselineError(f"{path} must hold a JSON object")
    version = data.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > MANIFEST_SCHEMA_VERSION:
        raise BaselineError(f"{path} uses manifest schema {version}, newer than this tritongate reads "
                            f"({MANIFEST_SCHEMA_VERSION}); upgrade tritongate")
    return validate(Manifest, data, source=path, error=BaselineError)
