"""The FlagGems provider: ops taken from the ``flag_gems`` package by name, as ``OpSpec``s.

A ``provider: flaggems`` suite gets this module in its ``modules``; reading ``TRITONGATE_OPS``
imports flag_gems (a failure is one ``PreflightError`` line, check ``flaggems``) and makes every
recipe an ``OpSpec`` named ``flag_gems.<op>``, whose ``launch`` calls the top-level ``flag_gems.<op>``
(rebound by flag_gems to the arch-specific implementation) and allocates its result inside the timed
launch, as FlagGems' own benchmarks do. ``GEMS_VENDOR`` is set first (else flag_gems probes the
machine with vendor tools, which can hang): ``ops/README.md``, "Vendor". FlagGems' ``LibTuner``
is patched by ``tritongate.autotune.session``.
"""

from __future__ import annotations

import functools
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

def _spec(module: ModuleType, rec: Recipe) -> OpSpec:
    def build(shape: tuple[int, ...], dtype: Any, device: Any, gen: Any) -> Case:
        problem = shape_problem(rec, shape)
        if problem:
            raise ValueError(f"{PREFIX}{rec.op}: {problem}")
        fn = getattr(module, rec.op, None)
        if not callable(fn):
            version = getattr(module, "__version__", "?")
            raise LookupError(f"flag_gems {version} has no callable flag_gems.{rec.op}; regenerate the "
                              "inventory on this machine (scripts/collect_flaggems_inventory.py)")
        ref = _reference(rec.ref)
        tensors: list[Any] = []  # drawn from the row's generator, in argument order

        def make(arg: Any) -> Any:
            if isinstance(arg, T):
                tensors.append(_tensor(arg, shape, dtype, device, gen))
                return tensors[-1]
            if isinstance(arg, Seq):
                return [make(item) for item in arg.items]
            if isinstance(arg, S):
                return arg.fn(shape)
            return {ROW_DTYPE: dtype, ROW_DEVICE: device}.get(arg, arg) if isinstance(arg, str) else arg

        args = [make(a) for a in rec.args]
        kwargs = {k: make(v) for k, v in rec.kwargs.items()}
        result: dict[str, Any] = {}

        def launch() -> None:
            result["out"] = fn(*args, **kwargs)

        def output() -> Any:
            return _pick(result["out"], rec.out)

        def reference() -> Any:
            if rec.ref_upcast:
                return _pick(ref(*_float32(args), **dict(zip(kwargs, _float32(kwargs.values())))), rec.ref_out)
            return _pick(ref(*args, **kwargs), rec.ref_out)

        return Case(launch, output, reference, tuple(tensors))

    fam = rec.family
    return OpSpec(
        name=PREFIX + rec.op,
        description=f"flag_gems.{rec.op} vs {rec.ref.removeprefix('torch.')}" + (f" ({rec.note})" if rec.note else ""),
        shape_doc=fam.shape_doc, ranks=fam.ranks, dtypes=rec.all_dtypes, build=build, bytes=fam.bytes,
        flops=fam.flops, tolerance={**DEFAULT_TOLERANCE, **rec.tolerances()})


def _float32(values: Any) -> list[Any]:
    return [v.float() if hasattr(v, "is_floating_point") and v.is_floating_point() else v for v in values]


def _pick(value: Any, index: int | None) -> Any:
    return value[index] if index is not None else value


# Float inputs are drawn in float32 and cast (the same values for every dtype): uniform in [0, 1)
# for these domains, else normal; then each domain's transform.
_UNIFORM = ("unit", "positive", "prob", "nonzero", "small_positive")
_TRANSFORMS: dict[str, Callable[[Any], Any]] = {
    "real": lambda x: x, "wide": lambda x: x * 4, "unit": lambda x: (x * 2 - 1) * 0.9,
    "positive": lambda x: x * 2 + 0.1, "prob": lambda x: x * 0.9 + 0.05, "small_positive": lambda x: x * 0.1,
    "near_one": lambda x: 1 + 0.01 * x, "low": lambda x: x * 0.5 - 0.5, "high": lambda x: x * 0.5 + 0.5,
}


def _tensor(arg: T, row_shape: tuple[int, ...], row_dtype: Any, device: Any, gen: Any) -> Any:
    import torch

    shape = tuple(arg.shape(row_shape))
    dtype = getattr(torch, arg.dtype) if arg.dtype else row_dtype
    kw = {"device": device, "generator": gen}
    domain = arg.domain
    if domain == "index":
        high = arg.high(row_shape) if arg.high else 2
        return torch.randint(0, max(1, high), shape, dtype=dtype, **kw)
    if domain == "int":
        return torch.randint(-1000, 1000, shape, dtype=torch.int32, **kw).to(dtype)
    if domain == "bool":
        return (torch.rand(shape, **kw) > 0.5).to(dtype)
    x = (torch.rand if domain in _UNIFORM else torch.randn)(shape, dtype=torch.float32, **kw)
    if domain in _TRANSFORMS:
        x = _TRANSFORMS[domain](x)
    elif domain == "nonzero":
        x = torch.where(torch.randn(shape, dtype=torch.float32, **kw) > 0, 1.0, -1.0) * (0.5 + x)
    elif domain == "sparse":
        x = x * (torch.rand(shape, dtype=torch.float32, **kw) > 0.5)
    elif domain == "sign":
        x = torch.where(x > 0, 1.0, -1.0)
    elif domain.startswith("scaled:"):
        # matmul operands: each ~K^-1/4, so a K-long dot product is ~N(0, 1)
        x = x * float(row_shape[int(domain.split(":", 1)[1])]) ** -0.25
    else:
        raise ValueError(f"unknown input domain {domain!r}")
    return x.to(dtype)


# -- references that are not a single torch function -------------------------------------------------

def _custom_references() -> dict[str, Callable[..., Any]]:
    import torch.nn.functional as F

    def gated(act: Callable[[Any], Any]) -> Callable[[Any], Any]:  # act(first half) * second half
        return lambda x: act(x[..., :x.shape[-1] // 2]) * x[..., x.shape[-1] // 2:]

    return {
        "silu_and_mul": lambda x, y: F.silu(x) * y,
        "gelu_and_mul": lambda x, y: F.gelu(x) * y,
        "skip_layer_norm": lambda x, r, shape, w, b, eps: F.layer_norm(x + r, shape, w, b, eps),
        "group_norm": lambda x, w, b, n, c, hw, groups, eps: F.group_norm(x, groups, w, b, eps),
        "batch_norm": lambda x, w, b, **kw: F.batch_norm(x, None, None, w, b, training=True,
                                                         momentum=kw.get("momentum", 0.1), eps=kw.get("eps", 1e-5)),
        "repeat": lambda x, sizes: x.repeat(sizes),
        "embedding": lambda weight, indices: F.embedding(indices, weight),
        "swiglu": gated(F.silu), "geglu": gated(lambda a: F.gelu(a, approximate="tanh")), "reglu": gated(F.relu),
    }


def _reference(path: str) -> Callable[..., Any]:
    if path.startswith("torch."):
        return functools.reduce(getattr, path.split(".")[1:], importlib.import_module("torch"))
    return _custom_references()[path]
