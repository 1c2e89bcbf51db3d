"""A stand-in for a flag_gems op in the lane tests: ``python tuner_op.py [--isolate-tuner-cache]``.

As ``tritongate run`` does, it opens the tuner cache first; then, as flag_gems does, it reads
``FLAGGEMS_DB_URL`` once per process (a module kept in ``sys.modules``) and writes a tuned
config to that SQLite DB. It prints one JSON line: its pid, the URL it wrote to, the URL the
run recorded, and the cache's notes. Exit 1 when the DB cannot be written (as flag_gems'
``OperationalError``).
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import types

from tritongate.autotune.tuner_cache import isolation_requested, open_tuner_cache


def _db_module() -> types.ModuleType:
    """The process's one 'flag_gems': the DB URL as read when it was first imported."""
    mod = sys.modules.get("fake_flag_gems_db")
    if mod is None:
        mod = types.ModuleType("fake_flag_gems_db")
        mod.URL = os.environ.get("FLAGGEMS_DB_URL", "sqlite:///" + os.path.expanduser("~/.fake_flag_gems.db"))
        sys.modules[mod.__name__] = mod
    return mod


def main() -> int:
    cache = open_tuner_cache(isolation_requested("--isolate-tuner-cache" in sys.argv))
    try:
        url = _db_module().URL
        try:
            with sqlite3.connect(url[len("sqlite:///"):]) as db:
                db.execute("CREATE TABLE IF NOT EXISTS tuned (op TEXT)")
                db.execute("INSERT INTO tuned VALUES ('bmm')")
        except sqlite3.OperationalError as exc:
            print(f"OperationalError: {exc}", file=sys.stderr)
            return 1
        print(json.dumps({"pid": os.getpid(), "wrote": url, "recorded": cache.db_url, "notes": cache.notes}))
        return 0
    finally:
        cache.close()


if __name__ == "__main__":
    sys.exit(main())
