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
from tritongate.validation import validate
from tritongate.validation.inputfiles import ShapeFileDoc, SuiteDoc
from tritongate.yamlsafe import YamlLimitError, describe_yaml_error, load_bounded

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
    shape_file: Path | None  # None: every op's shapes are written in the suite
    shapes: dict[str, tuple[Shape, ...]]
    digest: str  # sha256 of the suite and shape files as read
    modules: tuple[str, ...] = ()  # importable modules adding ops (see tritongate.ops.user)

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
        raise PreflightError(check, f"{path} is {describe_yaml_error(exc)}") from exc


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


def _suite_error(message: str) -> PreflightError:
    return PreflightError("suite_file", message)


def _shape_error(message: str) -> PreflightError:
    return PreflightError("shape_file", message)


def load_suite(suite: str, *, shape_file: str | Path | None = None) -> Suite:
    """A suite and its shapes, validated: every problem names the file, the key and the fix."""
    path = resolve_suite_path(suite)
    raw_doc, raw = _read_yaml(path, "suite_file")
    if raw_doc is None or (isinstance(raw_doc, dict) and not raw_doc.get("ops")):
        raise PreflightError("suite_empty", f"{path} lists no ops; add at least one under 'ops:'")
    if not isinstance(raw_doc, dict):
        raise _suite_error(f"{path}: a suite must be a mapping with 'ops' and 'shapes' "
                           f"(see ops/README.md), got {type(raw_doc).__name__}")
    doc = validate(SuiteDoc, raw_doc, source=path, error=_suite_error)
    default_dtypes = tuple(doc.dtypes) if doc.dtypes else ("float32",)
    ops = tuple(SuiteOp(name, tuple(entry.dtypes) if entry and entry.dtypes else default_dtypes)
                for name, entry in doc.ops.items())
    inline = {name: tuple(tuple(s) for s in entry.shapes) for name, entry in doc.ops.items()
              if entry and entry.shapes}
    shapes: dict[str, tuple[Shape, ...]] = {}
    shapes_path: Path | None = None
    shapes_raw = b""
    if shape_file is not None:
        shapes_path = Path(shape_file)
    elif doc.shapes is not None:
        shapes_path = (path.parent / doc.shapes).resolve()
    elif len(inline) < len(ops):
        missing = ", ".join(op.name for op in ops if op.name not in inline)
        raise _suite_error(f"{path}: 'shapes' must name a shape file (relative to the suite), or pass "
                           f"--shape-file, or give these ops inline shapes: {missing}")
    if shapes_path is not None:
        shapes_doc, shapes_raw = _read_yaml(shapes_path, "shape_file")
        if not isinstance(shapes_doc, dict):
            raise _shape_error(f"{shapes_path}: the top level must map op names to "
                               "{shapes: [[...], ...]}, e.g. `softmax: {shapes: [[1024, 1024]]}`")
        parsed = validate(ShapeFileDoc, shapes_doc, source=shapes_path, error=lambda m: _shape_error(
            f"{m} (a shape file maps op names to {{shapes: [[d0, d1, ...], ...]}})"))
        shapes = {op: tuple(tuple(s) for s in entry.shapes) for op, entry in parsed.root.items()}
    shapes.update(inline)  # a suite's own shapes win over the shape file's
    digest = hashlib.sha256(raw + b"\0" + shapes_raw).hexdigest()
    return Suite(name=path.stem, path=path, description=doc.description, ops=ops,
                 shape_file=shapes_path, shapes=shapes, digest=digest, modules=tuple(doc.modules))
