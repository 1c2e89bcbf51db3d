"""What a record says of the rows it measured, as options to replay it with: its own
``shapes.yaml`` as the shape file (``pair`` and the pre-screen's captures replay a record's
shapes, a ``--shape-file`` of its own included, not the suite's)."""

from __future__ import annotations

from pathlib import Path

from tritongate.errors import UsageError
from tritongate.rundir import IDENTITY, read_json_object


def recorded_shapes(record: Path) -> str | None:
    """The record's ``shapes.yaml`` (the shapes it measured, a ``--shape-file`` of its own
    included) as the shape file to replay it with; None where it has none, lists an op with
    no shapes (written before such ops were left out: not a valid shape file), or is of a
    provider's suite (its shape file is keyed by the provider's ops, shapes.yaml by rows)."""
    import yaml

    from tritongate.yamlsafe import YamlLimitError, load_bounded

    try:
        suite = read_json_object(record / IDENTITY, IDENTITY, error=UsageError).get("suite")
    except UsageError:
        return None  # the pair's own checks say what is wrong with the record
    if not isinstance(suite, dict) or suite.get("provider"):
        return None
    path = record / "shapes.yaml"
    try:
        doc = load_bounded(path.read_bytes()) if path.is_file() and not path.is_symlink() else None
    except (OSError, YamlLimitError, yaml.YAMLError):
        return None  # the pair's own checks say what is wrong with the record
    entries = doc.values() if isinstance(doc, dict) and doc else [None]
    return str(path) if all(isinstance(e, dict) and e.get("shapes") for e in entries) else None
