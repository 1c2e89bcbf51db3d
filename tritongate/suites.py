"""Suites: which ops, dtypes and shapes a run measures (YAML files in the top-level ``ops/``).

Every problem is a named preflight failure that says which file and key is wrong.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


from tritongate.errors import PreflightError
from tritongate.yamlsafe import YamlLimitError, load_bounded

Shape = tuple[int, ...]


def ops_dir() -> Path:
    """The suite assets: ``$TRITONGATE_OPS_DIR``, else the package's ``assets`` (the top-level
    ``ops/`` of the checkout, linked in; a copy in a wheel)."""
    env = os.environ.get("TRITONGATE_OPS_DIR")
    return Path(env) if env else Path(__file__).resolve().parent / "assets"


def builtin_suites() -> list[str]:
    return sorted(p.stem for p in (ops_dir() / "suites").glob("*.yaml"))


@dataclass(frozen=True)
class SuiteOp:
    name: str
    dtypes: tuple[str, ...]


@dataclass(frozen=True)
class Suite:
    name: str
    path: Path
    description: str
    ops: tuple[SuiteOp, ...]
    shape_file: Path
    shapes: dict[str, tuple[Shape, ...]]
    digest: str  # sha256 of the suite and shape files as read

    def shapes_document(self) -> dict[str, Any]:
        """The shapes actually used, in the shape-file format (for shapes.yaml)."""
        return {op.name: {"shapes": [list(s) for s in self.shapes.get(op.name, ())]} for op in self.ops}


def _read_yaml(path: Path, check: str) -> tuple[Any, bytes]:
    if path.is_dir():
        yamls = ", ".join(sorted(p.name for p in path.glob("*.yaml"))[:8]) or "no .yaml files"
        raise PreflightError(check, f"{path} is a directory, not a YAML file ({yamls}); pass one file")
    if not path.is_file():
        raise PreflightError(check, f"{path} does not exist")
    raw = path.read_bytes()
    try:
        return load_bounded(raw), raw
    except YamlLimitError as exc:
        raise PreflightError(check, f"{path} is refused: {exc}") from exc
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where else ""
        raise PreflightError(check, f"{path} is not valid YAML{at}: {getattr(exc, 'problem', exc)}") from exc


def resolve_suite_path(suite: str) -> Path:
    candidate = Path(suite)
    if candidate.suffix in (".yaml", ".yml") or os.sep in suite or candidate.exists():
        return candidate
    path = ops_dir() / "suites" / f"{suite}.yaml"
    if not path.is_file():
        known = ", ".join(builtin_suites()) or "none"
        raise PreflightError("suite_file", f"no suite named {suite!r} in {ops_dir() / 'suites'} "
                             f"(builtin suites: {known}); pass a name or a path to a suite YAML")
    return path


def _dtype_list(value: Any, where: str, path: Path) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(d, str) for d in value):
        raise PreflightError("suite_file", f"{path}: {where} must be a non-empty list of dtype names, "
                             f"got {value!r}")
    return tuple(value)


def _parse_shapes(doc: Any, path: Path) -> dict[str, tuple[Shape, ...]]:
    if not isinstance(doc, dict):
        raise PreflightError("shape_file", f"{path}: the top level must map op names to "
                             "{shapes: [[...], ...]}, e.g. `softmax: {shapes: [[1024, 1024]]}`")
    out = {}
    for op, entry in doc.items():
        shapes = entry.get("shapes") if isinstance(entry, dict) else None
        if not isinstance(shapes, list) or not all(isinstance(s, list) for s in shapes):
            raise PreflightError("shape_file", f"{path}: {op!r} must be {{shapes: [[d0, d1, ...], ...]}}, "
                                 f"got {entry!r}")
        out[str(op)] = tuple(tuple(s) for s in shapes)
    return out


def load_suite(suite: str, *, shape_file: str | Path | None = None) -> Suite:
    path = resolve_suite_path(suite)
    doc, raw = _read_yaml(path, "suite_file")
    if not isinstance(doc, dict):
        raise PreflightError("suite_file", f"{path}: a suite must be a mapping with 'ops' and 'shapes' "
                             f"(see ops/README.md), got {type(doc).__name__}")
    unknown = set(doc) - {"description", "shapes", "dtypes", "ops"}
    if unknown:
        raise PreflightError("suite_file", f"{path}: unknown keys {sorted(unknown)}; allowed: "
                             "description, shapes, dtypes, ops")
    default_dtypes = _dtype_list(doc["dtypes"], "'dtypes'", path) if "dtypes" in doc else ("float32",)
    ops_doc = doc.get("ops")
    if ops_doc is None or ops_doc == {} or ops_doc == []:
        raise PreflightError("suite_empty", f"{path} lists no ops; add at least one under 'ops:'")
    if not isinstance(ops_doc, dict):
        raise PreflightError("suite_file", f"{path}: 'ops' must map op names to {{dtypes: [...]}}")
    ops = []
    for name, entry in ops_doc.items():
        entry = entry or {}
        if not isinstance(entry, dict) or set(entry) - {"dtypes"}:
            raise PreflightError("suite_file", f"{path}: ops.{name} must be {{}} or {{dtypes: [...]}}, "
                                 f"got {entry!r}")
        dtypes = _dtype_list(entry["dtypes"], f"ops.{name}.dtypes", path) if "dtypes" in entry \
            else default_dtypes
        ops.append(SuiteOp(str(name), dtypes))
    if shape_file is not None:
        shapes_path = Path(shape_file)
    elif "shapes" in doc and isinstance(doc["shapes"], str):
        shapes_path = (path.parent / doc["shapes"]).resolve()
    else:
        raise PreflightError("suite_file", f"{path}: 'shapes' must name a shape file "
                             "(relative to the suite), or pass --shape-file")
    shapes_doc, shapes_raw = _read_yaml(shapes_path, "shape_file")
    shapes = _parse_shapes(shapes_doc, shapes_path)
    digest = hashlib.sha256(raw + b"\0" + shapes_raw).hexdigest()
    return Suite(name=path.stem, path=path, description=str(doc.get("description", "")),
                 ops=tuple(ops), shape_file=shapes_path, shapes=shapes, digest=digest)
