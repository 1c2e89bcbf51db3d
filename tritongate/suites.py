"""Suites: which ops, dtypes and shapes a run measures (YAML files in the top-level ``ops/``).

A plain suite names builtin ops (and its ``modules:``' ops). A provider suite
(``provider: flaggems``) takes its ops from a package by name: they are checked against the
provider's inventory, ``ops: inventory`` means every op of it that is not dismissed, and
each op's shapes come through the fallback chain op name -> class -> default
(``tritongate.ops.providers``). Its ops are named ``flag_gems.<op>`` in rows and the registry.

Every problem is a named preflight failure that says which file and key is wrong.
"""

from __future__ import annotations

import hashlib
import os
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tritongate.errors import PreflightError
from tritongate.validation import validate
from tritongate.validation.inputfiles import ProviderSuiteDoc, ShapeFileDoc, SuiteDoc, SuiteOpDoc
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
    sample_s: float | None = None  # the suite's sample length for this op (None: the run's)


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
    # provider suites only (None / empty for plain suites):
    provider: str | None = None  # e.g. "flaggems": the ops come from that package
    inventory: Path | None = None
    dismiss: Path | None = None
    dismissed: tuple[str, ...] = ()  # inventory ops that `ops: inventory` left out
    shape_sources: dict[str, str] = field(default_factory=dict)  # op -> "<file>:<key>", "suite", "default:<class>"
    inline_shapes: frozenset[str] = frozenset()  # a plain suite's ops whose shapes it writes itself

    def shapes_document(self) -> dict[str, Any]:
        """The shapes actually used, in the shape-file format (for shapes.yaml: a valid shape file,
        which ``pair`` replays a record with); an op a shape file gave none is left out."""
        return {op.name: {"shapes": [list(s) for s in self.shapes[op.name]]} for op in self.ops if self.shapes.get(op.name)}


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


def _builtin_names() -> str:
    names = builtin_suites()
    provided = [n for n in names if _is_provider_suite(ops_dir() / "suites" / f"{n}.yaml")]
    known = ", ".join(n for n in names if n not in provided) or "none"
    return known + (f"; suites of flag_gems ops: {', '.join(provided)}" if provided else "")


def resolve_suite_path(suite: str) -> Path:
    candidate = Path(suite)
    if candidate.suffix in (".yaml", ".yml") or os.sep in suite or candidate.exists():
        if not candidate.exists():  # a path with a typo, or a builtin's name written as a file
            raise PreflightError("suite_file", f"suite file {suite} does not exist; pass the path of a suite YAML, "
                                 f"or a builtin suite by its name ({_builtin_names()})")
        # absolute: the run identity and a batch plan keep it, and a merge or a resume run from another
        # folder reads the suite again (a relative path made a whole merged suite read as part of it)
        return candidate.absolute()
    path = ops_dir() / "suites" / f"{suite}.yaml"
    if not path.is_file():
        env = os.environ.get("TRITONGATE_OPS_DIR")
        origin = ""
        if env:  # the variable chose the folder: say so, and whether it exists
            origin = f" (set by TRITONGATE_OPS_DIR={env!r}{'' if Path(env).is_dir() else ', which is not a directory'})"
        raise PreflightError("suite_file", f"no suite named {suite!r} in {ops_dir() / 'suites'}{origin} "
                             f"(builtin suites: {_builtin_names()}); pass a name or a path to a suite YAML")
    return path


def _is_provider_suite(path: Path) -> bool:
    """Whether a suite file takes its ops from a provider (listed apart: they need its package)."""
    try:
        doc = load_bounded(path.read_bytes())
    except (OSError, YamlLimitError, yaml.YAMLError):
        return False
    return isinstance(doc, dict) and "provider" in doc


def _suite_error(message: str) -> PreflightError:
    return PreflightError("suite_file", message)


def _shape_error(message: str) -> PreflightError:
    return PreflightError("shape_file", message)


# The suite's file name (less .yaml) names every folder made of it, `pair-<name>_<UTC>-N` and
# `batch-<name>-shardIofN_<UTC>-N` the longest: within a file system's 255 bytes with room to spare.
MAX_NAME_BYTES = 200


def load_suite(suite: str, *, shape_file: str | Path | None = None) -> Suite:
    """A suite and its shapes, validated: every problem names the file, the key and the fix."""
    path = resolve_suite_path(suite)
    _check_name(path)
    raw_doc, raw = _read_yaml(path, "suite_file")
    if isinstance(raw_doc, dict) and not raw_doc.get("ops") and "provider" not in raw_doc:
        validate(SuiteDoc, raw_doc, source=path, error=_suite_error)  # `opz:` is named, not "no ops"
    if raw_doc is None or (isinstance(raw_doc, dict) and not raw_doc.get("ops")):
        raise PreflightError("suite_empty", f"{path} lists no ops; add at least one under 'ops:'")
    if not isinstance(raw_doc, dict):
        raise _suite_error(f"{path}: a suite must be a mapping with 'ops' and 'shapes' "
                           f"(see ops/README.md), got {type(raw_doc).__name__}")
    if "provider" in raw_doc:
        return _load_provider_suite(path, raw_doc, raw, shape_file)
    doc = validate(SuiteDoc, raw_doc, source=path, error=_suite_error)
    default_dtypes = tuple(doc.dtypes) if doc.dtypes else ("float32",)
    ops = tuple(SuiteOp(name, tuple(entry.dtypes) if entry and entry.dtypes else default_dtypes,
                        _sample_s(entry)) for name, entry in doc.ops.items())
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
        shapes, shapes_raw = _read_shape_file(shapes_path)
    shapes.update(inline)  # a suite's own shapes win over the shape file's
    digest = hashlib.sha256(raw + b"\0" + shapes_raw).hexdigest()
    return Suite(name=path.stem, path=path, description=doc.description, ops=ops,
                 shape_file=shapes_path, shapes=shapes, digest=digest, modules=tuple(doc.modules),
                 inline_shapes=frozenset(inline))


def _check_name(path: Path) -> None:
    """The suite's name (its file name less .yaml) names its run folders, and ``run`` prints the
    run folder as its last line of stdout: a name too long for them, or with a line break or
    another control character in it, is refused here, where the fix is plain."""
    size = len(path.stem.encode("utf-8", "surrogateescape"))
    if size > MAX_NAME_BYTES:  # a run recorded, its pair refused ("File name too long")
        raise _suite_error(f"{path}: the suite's file name is {size} bytes long; it names the run folders, "
                           f"so it may be at most {MAX_NAME_BYTES}: rename the file")
    controls = sorted({c for c in path.stem if unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")})
    if controls:  # "a\nb.yaml": the path `run` prints last would read as two lines
        raise _suite_error(f"{ascii(str(path))}: the suite's file name holds control characters "
                           f"({', '.join(ascii(c) for c in controls)}); it names the run folders: rename the file")


def _sample_s(entry: SuiteOpDoc | None) -> float | None:
    return entry.sample_ms / 1e3 if entry is not None and entry.sample_ms is not None else None


def _read_shape_file(shapes_path: Path) -> tuple[dict[str, tuple[Shape, ...]], bytes]:
    shapes_doc, shapes_raw = _read_yaml(shapes_path, "shape_file")
    if not isinstance(shapes_doc, dict):
        raise _shape_error(f"{shapes_path}: the top level must map op names to "
                           "{shapes: [[...], ...]}, e.g. `softmax: {shapes: [[1024, 1024]]}`")
    parsed = validate(ShapeFileDoc, shapes_doc, source=shapes_path, error=lambda m: _shape_error(
        f"{m} (a shape file maps op names to {{shapes: [[d0, d1, ...], ...]}})"))
    return {op: tuple(tuple(s) for s in entry.shapes) for op, entry in parsed.root.items()}, shapes_raw


def _load_provider_suite(path: Path, raw_doc: dict[str, Any], raw: bytes,
                         shape_file: str | Path | None) -> Suite:
    """A suite of a provider's ops (``provider: flaggems``): checked against the inventory,
    shapes through the fallback chain, the provider's module added to ``modules``. Reads
    files only: the provider's package is imported when the registry is built."""
    from tritongate.ops import providers

    doc = validate(ProviderSuiteDoc, raw_doc, source=path, error=_suite_error)
    if not doc.ops and not doc.all_inventory:
        raise PreflightError("suite_empty", f"{path} lists no ops; name some under 'ops:', or write "
                             "`ops: inventory` for every op of the inventory that is not dismissed")
    prov = providers.provider(doc.provider)
    inventory = providers.read_inventory((path.parent / doc.inventory).resolve())
    dismiss_path = (path.parent / doc.dismiss).resolve() if doc.dismiss else None
    dismissed, dismiss_raw = providers.read_dismiss(dismiss_path) if dismiss_path else ({}, b"")
    shapes_path: Path | None = Path(shape_file) if shape_file is not None else \
        (path.parent / doc.shapes).resolve() if doc.shapes is not None else None
    by_key: dict[str, tuple[Shape, ...]] = {}
    shapes_raw = b""
    if shapes_path is not None:
        by_key, shapes_raw = _read_shape_file(shapes_path)
    resolved = providers.resolve_ops(
        prov, suite_path=path, ops=doc.ops, all_inventory=doc.all_inventory,
        suite_dtypes=tuple(doc.dtypes) if doc.dtypes else None, inventory=inventory, dismissed=dismissed,
        shapes_by_key=by_key, shape_label=str(shapes_path) if shapes_path else "")
    if not resolved.ops:
        raise PreflightError("suite_empty", f"{path}: every op of {inventory.path} is dismissed or not ok; "
                             "nothing to measure")
    # the op list depends on the inventory and the dismiss list as much as on the suite
    digest = hashlib.sha256(b"\0".join((raw, shapes_raw, inventory.raw, dismiss_raw))).hexdigest()
    return Suite(name=path.stem, path=path, description=doc.description,
                 ops=tuple(SuiteOp(r.row_name, r.dtypes, _sample_s(doc.ops.get(r.op))) for r in resolved.ops),
                 shape_file=shapes_path, shapes={r.row_name: r.shapes for r in resolved.ops}, digest=digest,
                 modules=(prov.module,), provider=prov.name, inventory=inventory.path, dismiss=dismiss_path,
                 dismissed=tuple(resolved.dismissed),
                 shape_sources={r.row_name: r.shape_source for r in resolved.ops})
