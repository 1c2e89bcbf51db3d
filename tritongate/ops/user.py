"""Ops from the user's own Python modules, named by a suite's ``modules:`` key.

The contract (``TRITONGATE_OPS``, a list of ``OpSpec``) is in ``ops/README.md``, "Your own ops".
Every problem is a ``PreflightError`` with check ``user_ops`` that names the module and the fix.
A module that ends the interpreter while it is imported (``os._exit``) cannot be caught in the
process that imports it, so the modules are first imported in a child interpreter (``probe_imports``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import importlib
import json
import math
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator, NoReturn, Sequence

from tritongate.errors import PreflightError
from tritongate.ops.registry import Case, OpSpec, Registry

CHECK = "user_ops"
ATTRIBUTE = "TRITONGATE_OPS"
# Op names end up in row keys, file names, command lines and logs: not "." or ".." (batch's
# ops/<op>/ was the batch folder itself), nor a leading "-" (batch's `--ops -x` read it as an option).
_OP_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_MODULE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def registry_for(modules: Sequence[str], *, search_dir: Path | None, probe: bool = True) -> Registry:
    """The builtin ops plus every op of ``modules`` (imported with ``search_dir`` first on
    ``sys.path``). With no modules this is the builtin registry itself. ``probe=False`` skips
    the child import (a worker process whose parent already checks that it came back)."""
    from tritongate.ops.builtin import DEFINED, REGISTRY  # the kernels: after the backend's environment is set

    names = _module_names(modules)
    if not names:
        return REGISTRY
    if probe:
        probe_imports(names, search_dir)
    with _on_path(search_dir) as entry:
        importlib.invalidate_caches()  # a file written since the directory was last listed
        loaded = [(name, _import(name, entry)) for name in names]
    changed = sorted(set(REGISTRY.names()) ^ set(DEFINED) | {n for n in DEFINED if n in REGISTRY
                                                              and REGISTRY.get(n) is not DEFINED[n]})
    if changed:  # such an op passed none of the checks below, and stayed "builtin" for the process
        _fail(f"importing modules {names!r} changed tritongate's builtin ops ({', '.join(map(repr, changed))}); "
              f"list your ops in the module's {ATTRIBUTE} instead of registering them")
    registry = Registry()
    for name in REGISTRY.names():
        registry.register(REGISTRY.get(name))
    origin: dict[str, str] = {}  # op name -> module that defined it
    for module_name, module in loaded:
        for spec in _specs_of(module_name, module):
            if spec.name in REGISTRY:
                _fail(f"op {spec.name!r} of module {module_name!r} clashes with the builtin op of that name; "
                      f"rename it (e.g. '{module_name}.{spec.name}')")
            if spec.name in origin:
                where = "twice in that module" if origin[spec.name] == module_name \
                    else f"by module {origin[spec.name]!r} too"
                _fail(f"op {spec.name!r} of module {module_name!r} is defined {where}; give each op its own name")
            origin[spec.name] = module_name
            registry.register(_counted(spec, module_name))
    return registry


def autotuners(modules: Sequence[str]) -> list[Any]:
    """Every ``triton.autotune`` tuner defined at the top level of the (imported) modules."""
    from triton.runtime.autotuner import Autotuner

    found = (sys.modules.get(name) for name in modules)
    return [obj for mod in found if mod is not None for obj in vars(mod).values() if isinstance(obj, Autotuner)]


def provenance(modules: Sequence[str]) -> list[dict[str, Any]]:
    """Which file each (imported) module came from and a hash of its bytes: the suite's digest
    covers the YAML files only, and the op's code matters as much."""
    out = []
    for name in modules:
        file = getattr(sys.modules.get(name), "__file__", None)
        sha = ""
        if file:
            with contextlib.suppress(OSError):
                sha = hashlib.sha256(Path(file).read_bytes()).hexdigest()[:16]
        out.append({"name": name, "file": file, "sha256": sha})
    return out


# -- helpers -----------------------------------------------------------------------------------

def _fail(message: str) -> NoReturn:
    raise PreflightError(CHECK, message)


def _module_names(modules: Sequence[str]) -> list[str]:
    names: list[str] = []
    for name in modules:
        # 'x.py' would parse as module 'py' of package 'x': it is always a file name meant as a module
        if not isinstance(name, str) or not _MODULE_NAME.fullmatch(name) or name.endswith(".py"):
            text = name if isinstance(name, str) else ""
            hint = (f"; write {Path(text).stem!r}, without '.py'" if text.endswith(".py") else
                    "; put the file next to the suite and write its module name" if "/" in text or "\\" in text
                    else "")
            _fail(f"modules: {name!r} is not a Python module name (like 'my_ops' or 'pkg.my_ops'){hint}")
        if name not in names:  # listed twice: imported once
            names.append(name)
    return names


@contextlib.contextmanager
def _on_path(search_dir: Path | None) -> Iterator[str | None]:
    if search_dir is None:
        yield None
        return
    entry = str(Path(search_dir).resolve())
    before = sys.path.count(entry)
    sys.path.insert(0, entry)
    try:
        yield entry
    finally:
        # Take off as many copies as were added (by us or the module), never one the caller had.
        while sys.path.count(entry) > before:
            sys.path.remove(entry)


def _import(name: str, entry: str | None) -> ModuleType:
    where = f"{entry} (the suite's directory) and sys.path" if entry else "sys.path"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing == name or name.startswith(f"{missing}."):
            _fail(f"module {name!r} (suite modules:) not found; searched {where}: put "
                  f"{name.replace('.', '/')}.py next to the suite, or install it")
        _fail(f"importing module {name!r} raised {describe_import_error(exc)}; install what it imports or fix the module")
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a user's module; Ctrl-C still stops us
        _fail(f"importing module {name!r} raised {describe_import_error(exc)}; fix the module "
              f"(try `python -c 'import {name}'` in its directory)")


def describe_import_error(exc: BaseException) -> str:
    """An exception raised while importing a module as one bounded line: its type and first line."""
    first = (str(exc).strip().splitlines() or [""])[0].strip()
    if len(first) > 200:
        first = first[:197] + "..."
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _specs_of(module_name: str, module: ModuleType) -> list[OpSpec]:
    where = f"module {module_name!r} ({getattr(module, '__file__', None) or 'no file'})"
    if not hasattr(module, ATTRIBUTE):
        _fail(f"{where} has no {ATTRIBUTE}; define `{ATTRIBUTE} = [OpSpec(...), ...]` in it "
              "(see ops/examples/scale_shift.py)")
    specs = getattr(module, ATTRIBUTE)
    if not isinstance(specs, list):
        _fail(f"{where}: {ATTRIBUTE} must be a list of OpSpec, got {type(specs).__name__}")
    for i, spec in enumerate(specs):
        if not isinstance(spec, OpSpec):
            _fail(f"{where}: {ATTRIBUTE}[{i}] is a {type(spec).__name__}, not an OpSpec; build each entry "
                  "with tritongate.ops.registry.OpSpec(...)")
        _check_spec(spec, module_name)
    return specs


PROBE_TIMEOUT_S = 300.0  # importing torch and triton cold takes seconds; a hang is refused, not waited on
# Correctness tolerances: far above what any dtype needs (the loosest default is bfloat16's
# 2e-2, FlagGems' 0.2 absolute), far below "anything passes".
MAX_ATOL = 1.0
MAX_RTOL = 0.1

_PROBE = """
import importlib, json, sys
token, path, names = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3:]
sys.path[:] = path
out = sys.__stdout__
for name in names:
    out.write(f"{token} importing {name}\\n"); out.flush()
    try:
        importlib.import_module(name)
    except BaseException:  # left to the in-process import, which names it
        break
out.write(f"{token} done\\n"); out.flush()
"""


def probe_imports(names: Sequence[str], search_dir: Path | None, *, timeout_s: float = PROBE_TIMEOUT_S,
                  python: str | None = None) -> None:
    """Import ``names`` in a child interpreter with this process's ``sys.path`` (``search_dir``
    first); ``PreflightError`` naming the module the child never came back from (``os._exit``, a
    signal) or that did not finish in ``timeout_s``. One that raises is left to the in-process import."""
    token = f"tritongate-probe-{uuid.uuid4().hex}"
    path = ([str(Path(search_dir).resolve())] if search_dir is not None else []) + list(sys.path)
    argv = [python or sys.executable, "-c", _PROBE, token, json.dumps(path), *names]
    try:
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              timeout=timeout_s, env=os.environ.copy(), check=False)
    except subprocess.TimeoutExpired:
        _fail(f"importing modules {list(names)!r} did not finish within {timeout_s:g} s (in a probe interpreter); "
              "a module must only define its ops at import, not wait or run work")
    except OSError as exc:
        _fail(f"could not start a probe interpreter to import the suite's modules ({exc.strerror or exc})")
    events = [line.split(" ", 2)[1:] for line in proc.stdout.decode("utf-8", "replace").splitlines()
              if line.startswith(token + " ")]
    if ["done"] in events:
        return
    started = [e[1] for e in events if len(e) == 2 and e[0] == "importing"]
    name = started[-1] if started else names[0]
    how = f"exit code {proc.returncode}" if proc.returncode >= 0 else f"signal {-proc.returncode}"
    _fail(f"module {name!r} ended the interpreter while it was imported ({how}: os._exit, a signal or a crash), "
          "so nothing would be measured; a module must only define its ops at import (see ops/README.md)")


def _finite(value: Any) -> bool:
    """A finite number >= 0 (not a bool)."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) and value >= 0


def _counted(spec: OpSpec, module_name: str) -> OpSpec:
    """``spec`` whose ``bytes``/``flops`` results are checked when a row calls them (a NaN or
    negative count would be written into the run as a throughput), and whose ``build`` must give a
    ``Case`` whose ``output`` and ``reference`` give tensors."""
    label = f"op {spec.name!r} of module {module_name!r}"

    def checked(fn: Any, what: str) -> Any:
        def call(*args: Any) -> float:
            try:
                value = fn(*args)
            except SystemExit as exc:  # the interpreter's slow-row estimate calls it outside any row:
                # left to rise, `run` ended with the code the op chose (0) and a run folder left "running"
                raise ValueError(f"{label}: {what}{tuple(args)!r} called sys.exit({exc.code!r}); it must return "
                                 "a number (see ops/README.md, 'Your own ops')") from None
            if not _finite(value):
                raise ValueError(f"{label}: {what}{tuple(args)!r} returned {value!r}; it must return a finite "
                                 "number >= 0 (see ops/README.md, 'Your own ops')")
            return float(value)
        return call

    def built(*args: Any) -> Case:
        # what build returns is read far from the op (the row's correctness check, the timer):
        # a wrong type there was an AttributeError naming neither the op nor the fix
        case = spec.build(*args)
        if not isinstance(case, Case):
            raise TypeError(f"{label}: build returned {type(case).__name__}, not a Case; return "
                            "Case(launch=..., output=..., reference=..., tensors=...) (see ops/README.md, 'Your own ops')")
        for name in ("launch", "output", "reference"):
            if not callable(getattr(case, name)):
                raise TypeError(f"{label}: the Case's {name} is a {type(getattr(case, name)).__name__}, not a "
                                "function of no arguments (see ops/README.md, 'Your own ops')")
        if not isinstance(case.tensors, (tuple, list)):  # tensors=x: tuple(x) is x's rows, views launch never reads
            raise TypeError(f"{label}: the Case's tensors must be a tuple of the tensors launch uses, e.g. "
                            f"tensors=(x, y), got {type(case.tensors).__name__} (see ops/README.md, 'Your own ops')")
        return dataclasses.replace(case, output=_tensor_of(case.output, label, "output"),
                                   reference=_tensor_of(case.reference, label, "reference"))

    # still the op's own function to whoever reads it (`tritongate ops --suite` names its module)
    functools.update_wrapper(built, spec.build, updated=())
    return dataclasses.replace(spec, build=built, bytes=checked(spec.bytes, "bytes"),
                               flops=checked(spec.flops, "flops") if spec.flops is not None else None)


def _tensor_of(fn: Any, label: str, what: str) -> Any:
    """``fn`` (a Case's ``output`` or ``reference``) checked when called: it must give a tensor.
    A reference with NaN or inf fails the row's check (``rowcase.check_output``, for every op):
    not scanned here too, a second pass over the whole tensor on every row."""
    import torch

    def call() -> Any:
        value = fn()
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{label}: the Case's {what}() returned {type(value).__name__}, not a torch.Tensor "
                            "(see ops/README.md, 'Your own ops')")
        return value
    return call


def _check_spec(spec: OpSpec, module_name: str) -> None:
    import torch

    label = f"op {spec.name!r} of module {module_name!r}"
    if not isinstance(spec.name, str) or not _OP_NAME.fullmatch(spec.name):
        _fail(f"{label}: an op name may use only letters, digits, '_', '.' and '-', and starts with a letter, "
              "digit or '_' (it names rows, files and command-line values)")
    for field_name, example in (("description", "'what it computes'"), ("shape_doc", "'[rows, cols]'")):
        if not isinstance(getattr(spec, field_name), str):
            _fail(f"{label}: {field_name} must be text, e.g. {field_name}={example}, got "
                  f"{type(getattr(spec, field_name)).__name__}")
    for field_name, example in (("dtypes", "('float32', 'float16')"), ("ranks", "(1, 2)")):
        if not isinstance(getattr(spec, field_name), (tuple, list)):  # 'float32' would read as 7 dtypes
            _fail(f"{label}: {field_name} must be a tuple, e.g. {field_name}={example}, got "
                  f"{type(getattr(spec, field_name)).__name__} {getattr(spec, field_name)!r}")
    if not spec.dtypes:
        _fail(f"{label} has empty dtypes; list the dtypes it runs, e.g. dtypes=('float32', 'float16')")
    bad = [d for d in spec.dtypes if not isinstance(d, str) or not isinstance(getattr(torch, d, None), torch.dtype)]
    if bad:
        _fail(f"{label}: dtypes {bad!r} are not torch dtype names (like 'float32', 'float16', 'bfloat16')")
    if not spec.ranks:
        _fail(f"{label} has empty ranks; list the shape lengths it takes, e.g. ranks=(1, 2)")
    if any(not isinstance(r, int) or isinstance(r, bool) or r < 1 for r in spec.ranks):
        _fail(f"{label}: ranks must be positive whole numbers (shape lengths), got {list(spec.ranks)!r}")
    for field_name in ("build", "bytes"):
        if not callable(getattr(spec, field_name)):
            _fail(f"{label}: {field_name} must be a function (see ops/README.md, 'Your own ops')")
    if spec.flops is not None and not callable(spec.flops):
        _fail(f"{label}: flops must be a function of the shape, or None")
    if not isinstance(spec.tolerance, dict):
        _fail(f"{label}: tolerance must be a dict of dtype -> (atol, rtol), got {type(spec.tolerance).__name__}")
    for dtype, pair in spec.tolerance.items():
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and all(map(_finite, pair))):
            _fail(f"{label}: tolerance[{dtype!r}] must be (atol, rtol), two finite numbers >= 0, got {pair!r}")
        if pair[0] > MAX_ATOL or pair[1] > MAX_RTOL:
            _fail(f"{label}: tolerance[{dtype!r}] = {tuple(pair)!r} is too loose for a correctness check (any wrong "
                  f"result would pass); atol <= {MAX_ATOL:g} and rtol <= {MAX_RTOL:g} are allowed")
