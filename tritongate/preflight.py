"""Checks before anything runs. Each failure names its check (``!!! PREFLIGHT_FAILED
check=<name>``, exit 3): a run that starts on bad input fails later in a misleading way."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from tritongate.backends import Backend, capture_only_requested
from tritongate.errors import PreflightError
from tritongate.ops.registry import Registry, case_id
from tritongate.suites import Shape, Suite, SuiteOp

@dataclass(frozen=True)
class PlannedRow:
    op: str
    shape: Shape
    dtype: str

    @property
    def case(self) -> str:
        return case_id(self.shape)


def plan_rows(suite: Suite, registry: Registry, backend: Backend, *,
              only_ops: Iterable[str] | None = None,
              only_dtypes: Iterable[str] | None = None) -> list[PlannedRow]:
    """Validate the suite against the registry and backend; return the rows to run."""
    wanted_ops = list(only_ops) if only_ops else None
    wanted_dtypes = set(only_dtypes) if only_dtypes else None
    _check_known(suite, registry)
    unknown = [o for o in wanted_ops or () if o not in registry]
    if unknown:  # a typo on the command line, not in the suite
        raise PreflightError("unknown_op", f"--ops names unknown op(s) {sorted(set(unknown))}; suite {suite.name} "
                             f"lists {', '.join(op.name for op in suite.ops)}")
    if wanted_ops:
        absent = [o for o in wanted_ops if o not in {op.name for op in suite.ops}]
        if absent:
            raise PreflightError("unknown_op", f"--ops asks for {absent}, which suite {suite.name} "
                                 f"does not list ({', '.join(op.name for op in suite.ops)})")
    if wanted_dtypes:
        known = {d for name in registry.names() for d in registry.get(name).dtypes}
        unknown_dtypes = sorted(set(wanted_dtypes) - known)
        if unknown_dtypes:
            raise PreflightError("dtype", f"--dtypes names {unknown_dtypes}, which no op supports "
                                 f"(known: {', '.join(sorted(known))})")
    rows: list[PlannedRow] = []
    for op in suite.ops:
        if wanted_ops and op.name not in wanted_ops:
            continue
        shapes = _check_op(suite, op, registry)
        for dtype in op.dtypes:
            if dtype in backend.unsupported_dtypes and (not wanted_dtypes or dtype in wanted_dtypes) \
                    and not capture_only_requested(backend.name):  # an index capture executes no kernel
                raise PreflightError("dtype", f"{suite.path}: backend {backend.name} cannot run {dtype} "
                                     f"({op.name}); drop it from the suite or filter with --dtypes")
        for dtype in op.dtypes:
            if wanted_dtypes and dtype not in wanted_dtypes:
                continue
            rows += [PlannedRow(op.name, shape, dtype) for shape in shapes]
    if not rows:
        raise PreflightError("suite_empty", f"the selection from {suite.path} is empty "
                             "(check --ops / --dtypes)")
    return rows


def check_suite_ops(suite: Suite, registry: Registry) -> None:
    """What a run of any backend checks of a suite's ops (``tritongate ops --suite`` too): each
    op known, with shapes of its arity and dtypes it supports."""
    _check_known(suite, registry)
    for op in suite.ops:
        _check_op(suite, op, registry)


def _check_known(suite: Suite, registry: Registry) -> None:
    unknown = [op.name for op in suite.ops if op.name not in registry]
    if unknown:
        raise PreflightError("unknown_op", f"unknown op(s) {sorted(set(unknown))} in {suite.path}; "
                             f"builtin ops: {', '.join(registry.names())}")


def _check_op(suite: Suite, op: SuiteOp, registry: Registry) -> tuple[Shape, ...]:
    """The op's shapes, once each has the op's arity and each dtype is one the op supports."""
    spec = registry.get(op.name)
    shapes = suite.shapes.get(op.name)
    if not shapes:
        where = suite.shape_file or suite.path  # None: every op's shapes are the suite's own
        raise PreflightError("missing_shapes", f"{where} has no shapes for {op.name!r}; "
                             f"add `{op.name}: {{shapes: [{spec.shape_doc}]}}`")
    for shape in shapes:
        problem = spec.check_shape(shape)
        if problem:
            raise PreflightError("shape_arity", f"{_shapes_from(suite, op.name)}: {problem}")
    for dtype in op.dtypes:
        if dtype not in spec.dtypes:
            raise PreflightError("dtype", f"{suite.path}: {op.name} does not support {dtype!r} "
                                 f"(supported: {', '.join(spec.dtypes)})")
    return shapes


def _shapes_from(suite: Suite, op: str) -> str:
    """Where ``op``'s shapes were written: the suite's own ``ops.<op>.shapes``, or the shape file."""
    source = suite.shape_sources.get(op)  # a provider suite's
    if op in suite.inline_shapes or source == "suite":
        return f"{suite.path} (ops.{op}.shapes)"
    return source or str(suite.shape_file or suite.path)


def check_out_dir(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".tritongate-write-check-"):
            pass
    except OSError as exc:
        raise PreflightError("out_dir", f"cannot write to output directory {out}: {exc.strerror or exc}; "
                             "pass a writable --out") from exc
    if not os.access(out, os.W_OK):
        raise PreflightError("out_dir", f"output directory {out} is not writable; pass a writable --out")
