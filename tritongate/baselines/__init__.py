"""The baseline store: nightly record runs published as entries, found by PR jobs.

See ``store`` for the layout and ``baselines/README.md`` for how CI uses it.
"""

from tritongate.baselines.manifest import BaselineError, Manifest, gpu_slug, read_manifest
from tritongate.baselines.store import (DEFAULT_MAX_AGE_DAYS, Entry, Lookup, State, default_store, find,
                                        list_entries, publish, refresh_command, verify_entry)

__all__ = ["BaselineError", "DEFAULT_MAX_AGE_DAYS", "Entry", "Lookup", "Manifest", "State", "default_store",
           "find", "gpu_slug", "list_entries", "publish", "read_manifest", "refresh_command", "verify_entry"]
