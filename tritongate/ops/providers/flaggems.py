"""The FlagGems provider: ops taken from the ``flag_gems`` package by name, as ``OpSpec``s.

A suite with ``provider: flaggems`` loads through ``tritongate.suites``, which resolves its
ops against the inventory (``ops/inventory_<backend>.csv``) and adds this module to the
suite's ``modules``; the registry then reads ``TRITONGATE_OPS`` here, which imports
flag_gems (so a missing or broken install is a ``PreflightError`` with check ``flaggems``,
one line, when the suite is planned) and turns every recipe of ``flaggems_recipes`` into an
``OpSpec`` named ``flag_gems.<op>`` (a prefix, so FlagGems' ``add`` is never the builtin one).

Each spec's ``build`` makes the op's arguments from the row's seeded generator (drawn in
float32 and cast, so every dtype sees the same values), its ``launch`` calls
``flag_gems.<op>`` — the top-level name, which flag_gems rebinds to the arch-specific
implementation (Hopper's ``mm``, ``mul``, ...) — and its ``reference`` calls the torch op
on the same arguments. FlagGems ops are functional: they allocate their result, inside the
timed launch, exactly as FlagGems' own benchmarks time them.

``GEMS_VENDOR`` is set from the backend before flag_gems is imported (flag_gems otherwise
probes the machine with vendor tools, which can hang), unless the user set it.
FlagGems' ``LibTuner`` needs nothing here: ``tritongate.autotune.session`` patches it once
flag_gems is importable.
"""

from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType
from typing import Any, Callable

from tritongate.errors import PreflightError
from tritongate.ops.providers.flaggems_recipes import (
    RECIPES, ROW_DEVICE, ROW_DTYPE, Recipe, S, Seq, T, shape_problem,
)
from tritongate.ops.registry import DEFAULT_TOLERANCE, Case, OpSpec
from tritongate.ops.user import describe_import_error

CHECK = "flaggems"
PACKAGE = "flag_gems"
PREFIX = "flag_gems."  # row names: flag_gems.<op>
PIN = "flag_gems==5.0.2"
# FlagGems' own vendor names (flag_gems/runtime/backend/_<vendor>) for tritongate's backends.
VENDORS = {"cuda": "nvidia", "rocm": "amd", "musa": "mthreads", "ascend": "ascend"}
# Variables flag_gems reads for its vendor (5.0.2 reads the first; later releases all four):
# a user who set any of them chose the vendor.
VENDOR_VARS = ("GEMS_VENDOR", "FLAGGEMS_VENDOR", "GEMS_BACKEND", "FLAGGEMS_BACKEND")
BACKEND_ENV = "TRITONGATE_BACKEND"  # the backend, when the runner says so (else inferred)

_specs_cache: tuple[int, list[OpSpec]] | None = None  # (id of the flag_gems module, its specs)
_vendor_note: dict[str, Any] = {}


def row_name(op: str) -> str:
    return PREFIX + op


def vendor_for_backend(backend: str) -> str | None:
    return VENDORS.get(backend)


def current_backend() -> str:
    """The backend this process measures on: ``$TRITONGATE_BACKEND`` when set, else what the
    environment shows (the interpreter, a ROCm torch, a CUDA device)."""
    named = os.environ.get(BACKEND_ENV, "").strip().lower()
    if named:
        return named
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        return "cpu"
    import torch

    if getattr(torch.version, "hip", None):
        return "rocm"
    if hasattr(torch, "musa"):
        return "musa"
    if hasattr(torch, "npu"):
        return "ascend"
    return "cuda"


def ensure_vendor(backend: str | None = None) -> dict[str, Any]:
    """Set ``GEMS_VENDOR`` from the backend unless the user set a vendor; say what is in
    effect and where it came from (for the run identity)."""
    backend = backend or current_backend()
    chosen = {var: os.environ[var] for var in VENDOR_VARS if os.environ.get(var)}
    if chosen:
        note = {"backend": backend, "vendor": next(iter(chosen.values())), "source": "user",
                "variables": chosen}
    else:
        vendor = vendor_for_backend(backend)
        if vendor is not None:
            os.environ["GEMS_VENDOR"] = vendor
        note = {"backend": backend, "vendor": vendor, "source": "backend" if vendor else "unset"}
    _vendor_note.clear()
    _vendor_note.update(note)
    return dict(note)


def identity() -> dict[str, Any]:
    """What a run should record about flag_gems: version, where it was imported from, vendor."""
    module = sys.modules.get(PACKAGE)
    return {"version": getattr(module, "__version__", None), "file": getattr(module, "__file__", None),
            "vendor_name": getattr(module, "vendor_name", None), **_vendor_note}


def import_flag_gems(backend: str | None = None) -> ModuleType:
    """flag_gems, imported after ``GEMS_VENDOR`` is set; any failure is one preflight line."""
    ensure_vendor(backend)
    try:
        return importlib.import_module(PACKAGE)
    except ModuleNotFoundError as exc:
        if exc.name in (PACKAGE, None) or (exc.name or "").startswith(PACKAGE + "."):
            raise PreflightError(CHECK, f"this suite takes its ops from flag_gems, which is not installed "
                                 f"({describe_import_error(exc)}); install it with `pip install {PIN}` (on the GPU "
                                 "machine: it needs one), or run a builtin suite (pr, smoke, deep)") from None
        raise PreflightError(CHECK, f"importing flag_gems failed: a module it needs is missing "
                             f"({describe_import_error(exc)}); install it, or reinstall with `pip install {PIN}`") from None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - flag_gems needs a device at import
        vendor = os.environ.get("GEMS_VENDOR", "<unset>")
        raise PreflightError(CHECK, f"importing flag_gems failed ({describe_import_error(exc)}) with GEMS_VENDOR={vendor}; "
                             "flag_gems needs its vendor's GPU and driver at import: run on the GPU machine "
                             f"(`pip install {PIN}` there), or run a builtin suite (pr, smoke, deep)") from None


def op_specs(backend: str | None = None) -> list[OpSpec]:
    """One ``OpSpec`` per recipe, against the flag_gems this process imports (cached per
    import of flag_gems)."""
    global _specs_cache
    module = import_flag_gems(backend)
    if _specs_cache is not None and _specs_cache[0] == id(module):
        return _specs_cache[1]
    specs = [_spec(module, rec) for rec in RECIPES.values()]
    _specs_cache = (id(module), specs)
    return specs


def __getattr__(name: str) -> Any:
    # The registry reads TRITONGATE_OPS (tritongate.ops.user) after the backend's environment
    # is set; importing flag_gems here, not at module import, keeps its failure a
    # check=flaggems preflight line rather than a user-module import error.
    if name == "TRITONGATE_OPS":
        return op_specs()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- specs -----------------------------------------------------------------------------------------

def resolve_callable(module: ModuleType, op: str) -> Callable[..., Any] | None:
    fn = getattr(module, op, None)
    return fn if callable(fn) else None


def _spec(module: ModuleType, rec: Recipe) -> OpSpec:
    fam = rec.family
    tolerance = {**DEFAULT_TOLERANCE, **rec.tolerances()}
    return OpSpec(
        name=row_name(rec.op),
        description=f"flag_gems.{rec.op} vs {rec.ref.removeprefix('torch.')}"
                    + (f" ({rec.note})" if rec.note else ""),
        shape_doc=fam.shape_doc, ranks=fam.ranks, dtypes=rec.all_dtypes,
        build=_builder(module, rec), bytes=fam.bytes, flops=fam.flops, tolerance=tolerance)


def _builder(module: ModuleType, rec: Recipe) -> Callable[..., Case]:
    def build(shape: tuple[int, ...], dtype: Any, device: Any, gen: Any) -> Case:
        problem = shape_problem(rec, shape)
        if problem:
            raise ValueError(f"{row_name(rec.op)}: {problem}")
        fn = resolve_callable(module, rec.op)
        if fn is None:
            version = getattr(module, "__version__", "?")
            raise LookupError(f"flag_gems {version} has no callable flag_gems.{rec.op}; regenerate the "
                              "inventory on this machine (scripts/collect_flaggems_inventory.py)")
        ref = _reference(rec.ref)
        maker = _Maker(shape, dtype, device, gen)
        args = [maker.make(a) for a in rec.args]
        kwargs = {k: maker.make(v) for k, v in rec.kwargs.items()}
        result: dict[str, Any] = {}

        def launch() -> None:
            result["out"] = fn(*args, **kwargs)

        def output() -> Any:
            return _pick(result["out"], rec.out)

        def reference() -> Any:
            if rec.ref_upcast:
                return _pick(ref(*_float32(args), **dict(zip(kwargs, _float32(kwargs.values())))), rec.ref_out)
            return _pick(ref(*args, **kwargs), rec.ref_out)

        return Case(launch, output, reference, tuple(maker.tensors))
    return build


def _float32(values: Any) -> list[Any]:
    return [v.float() if hasattr(v, "is_floating_point") and v.is_floating_point() else v for v in values]


def _pick(value: Any, index: int | None) -> Any:
    return value[index] if index is not None else value


class _Maker:
    """Arguments for one build: tensors drawn from the row's generator, in argument order."""

    def __init__(self, shape: tuple[int, ...], dtype: Any, device: Any, gen: Any) -> None:
        self.shape, self.dtype, self.device, self.gen = shape, dtype, device, gen
        self.tensors: list[Any] = []

    def make(self, arg: Any) -> Any:
        if isinstance(arg, T):
            tensor = self._tensor(arg)
            self.tensors.append(tensor)
            return tensor
        if isinstance(arg, Seq):
            return [self.make(item) for item in arg.items]
        if isinstance(arg, S):
            return arg.fn(self.shape)
        if arg == ROW_DTYPE:
            return self.dtype
        if arg == ROW_DEVICE:
            return self.device
        return arg

    def _tensor(self, arg: T) -> Any:
        import torch

        shape = tuple(arg.shape(self.shape))
        dtype = getattr(torch, arg.dtype) if arg.dtype else self.dtype
        kw = {"device": self.device, "generator": self.gen}
        domain = arg.domain
        if domain == "index":
            high = arg.high(self.shape) if arg.high else 2
            return torch.randint(0, max(1, high), shape, dtype=dtype, **kw)
        if domain == "int":
            return torch.randint(-1000, 1000, shape, dtype=torch.int32, **kw).to(dtype)
        if domain == "bool":
            return (torch.rand(shape, **kw) > 0.5).to(dtype)
        # Every float draw is made in float32 and cast: the same values for every dtype.
        u = torch.rand if domain in ("unit", "positive", "prob", "nonzero", "small_positive") else torch.randn
        x = u(shape, dtype=torch.float32, **kw)
        if domain == "wide":
            x = x * 4
        elif domain == "unit":
            x = (x * 2 - 1) * 0.9
        elif domain == "positive":
            x = x * 2 + 0.1
        elif domain == "prob":
            x = x * 0.9 + 0.05
        elif domain == "nonzero":
            x = torch.where(torch.randn(shape, dtype=torch.float32, **kw) > 0, 1.0, -1.0) * (0.5 + x)
        elif domain == "small_positive":
            x = x * 0.1
        elif domain == "near_one":
            x = 1 + 0.01 * x
        elif domain == "sparse":
            x = x * (torch.rand(shape, dtype=torch.float32, **kw) > 0.5)
        elif domain == "sign":
            x = torch.where(x > 0, 1.0, -1.0)
        elif domain == "low":
            x = x * 0.5 - 0.5
        elif domain == "high":
            x = x * 0.5 + 0.5
        elif domain.startswith("scaled:"):
            # matmul operands: each ~K^-1/4, so a K-long dot product is ~N(0, 1)
            x = x * float(self.shape[int(domain.split(":", 1)[1])]) ** -0.25
        elif domain != "real":
            raise ValueError(f"unknown input domain {domain!r}")
        return x.to(dtype)


# -- references that are not a single torch function -------------------------------------------------

def _custom_references() -> dict[str, Callable[..., Any]]:
    import torch.nn.functional as F

    def halves(x: Any) -> tuple[Any, Any]:
        h = x.shape[-1] // 2
        return x[..., :h], x[..., h:]

    def swiglu(x: Any) -> Any:
        a, b = halves(x)
        return F.silu(a) * b

    def geglu(x: Any) -> Any:
        a, b = halves(x)
        return F.gelu(a, approximate="tanh") * b

    def reglu(x: Any) -> Any:
        a, b = halves(x)
        return F.relu(a) * b

    return {
        "silu_and_mul": lambda x, y: F.silu(x) * y,
        "gelu_and_mul": lambda x, y: F.gelu(x) * y,
        "skip_layer_norm": lambda x, r, shape, w, b, eps: F.layer_norm(x + r, shape, w, b, eps),
        "group_norm": lambda x, w, b, n, c, hw, groups, eps: F.group_norm(x, groups, w, b, eps),
        "batch_norm": lambda x, w, b, **kw: F.batch_norm(x, None, None, w, b, training=True,
                                                         momentum=kw.get("momentum", 0.1),
                                                         eps=kw.get("eps", 1e-5)),
        "repeat": lambda x, sizes: x.repeat(sizes),
        "embedding": lambda weight, indices: F.embedding(indices, weight),
        "swiglu": swiglu, "geglu": geglu, "reglu": reglu,
    }


def _reference(path: str) -> Callable[..., Any]:
    if path.startswith("torch."):
        obj: Any = importlib.import_module("torch")
        for part in path.split(".")[1:]:
            obj = getattr(obj, part)
        return obj
    return _custom_references()[path]
