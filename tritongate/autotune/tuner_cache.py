"""FlagGems' persistent tuner cache (LibTuner winners in an SQLite DB that outlives runs).

Shared, the side that runs first writes winners the other side silently reuses; so a run can
ask for a private DB (the ``ZL_ISOLATE_TUNER_CACHE`` semantics), deleted after it (the chosen
configs are in ``autotune_records/`` anyway). flag_gems reads ``FLAGGEMS_DB_URL`` on import, so
this runs before that; ``run_identity.json`` says which was used (``tuner_cache``). A batch's
reused worker keeps flag_gems imported from op to op, so a per-run DB cannot work there: the
lane gives the worker a private DB of its own (``WORKER_DB_ENV``), deleted when it ends.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any, Mapping

from tritongate.errors import UsageError

ISOLATE_ENV = ("TRITONGATE_ISOLATE_TUNER_CACHE", "ZL_ISOLATE_TUNER_CACHE")
WORKER_DB_ENV = "TRITONGATE_WORKER_TUNER_DB"  # set by a batch lane for its worker: the worker's private DB URL
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}


def isolation_requested(flag: bool, environ: Mapping[str, str] | None = None) -> bool:
    """``--isolate-tuner-cache`` or a true ISOLATE variable (of ``environ``, by default this
    process's); a value that is neither true nor false is an error (``false`` must not mean on)."""
    environ = os.environ if environ is None else environ
    for name in ISOLATE_ENV:
        value = environ.get(name, "").strip().lower()
        if value not in _TRUE | _FALSE:
            raise UsageError(f"{name}={environ[name][:40]!r} is not a yes/no value; use 1 or 0 "
                             "(true/false, yes/no, on/off)")
        flag = flag or value in _TRUE
    return flag


@dataclass
class TunerCache:
    isolated: bool
    db_url: str | None
    flag_gems: str | None  # installed version, if any
    notes: list[str] = field(default_factory=list)
    _tmp: str | None = None
    _previous: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"mode": "isolated" if self.isolated else "shared", "db_url": self.db_url,
                "flag_gems": self.flag_gems, "notes": list(self.notes)}

    def close(self) -> None:
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)
            if self._previous is None:
                os.environ.pop("FLAGGEMS_DB_URL", None)
            else:
                os.environ["FLAGGEMS_DB_URL"] = self._previous
            self._tmp = None


def _flag_gems_version() -> str | None:
    for dist in ("flag_gems", "flag-gems", "flaggems_vllm"):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "unknown" if importlib.util.find_spec("flag_gems") else None


def open_tuner_cache(isolate: bool) -> TunerCache:
    cache = TunerCache(isolated=isolate, db_url=os.environ.get("FLAGGEMS_DB_URL"),
                       flag_gems=_flag_gems_version())
    if not isolate:
        if cache.db_url is None:
            cache.notes.append("flag_gems default: $FLAGGEMS_CACHE_DIR/config_cache (persists across runs)")
        return cache
    worker_db = os.environ.get(WORKER_DB_ENV, "")
    if worker_db.startswith("sqlite:///"):
        # the lane made it for this worker and deletes it when the worker ends
        cache.db_url = os.environ["FLAGGEMS_DB_URL"] = worker_db
        cache.notes.append("private to the batch worker that ran this op: shared with the ops it ran "
                           "before, with no other run")
        return cache
    cache._previous = cache.db_url
    cache._tmp = tempfile.mkdtemp(prefix="tritongate-tuner-cache-")
    cache.db_url = os.environ["FLAGGEMS_DB_URL"] = f"sqlite:///{cache._tmp}/TunedConfig.db"
    if "flag_gems" in sys.modules:
        cache.notes.append("flag_gems was imported before isolation: its DB URL was already read")
    return cache
