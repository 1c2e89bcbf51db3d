"""The baseline store: nightly record runs published as entries, found by PR jobs.

See ``store`` for the layout, ``lookup`` for how a PR job's baseline is chosen and
``baselines/README.md`` for how CI uses it.
"""

from tritongate.baselines.manifest import BaselineError, Manifest, gpu_slug, read_manifest
from tritongate.baselines.lookup import DEFAULT_MAX_AGE_DAYS, Lookup, State, find, refresh_command
from tritongate.baselines.repo import Repo, parse_repo
from tritongate.baselines.publishing import publish
from tritongate.baselines.store import Entry, default_store, list_entries, verify_entry

__all__ = ["BaselineError", "DEFAULT_MAX_AGE_DAYS", "Entry", "Lookup", "Manifest", "Repo", "State",
           "default_store", "find", "gpu_slug", "list_entries", "parse_repo", "publish", "read_manifest",
           "refresh_command", "verify_entry"]
