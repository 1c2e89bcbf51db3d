"""The capture's CPU tensors seen as the record's GPU tensors, and host reads refused.

A capture builds a row's inputs on the CPU (torch has no CUDA here) and launches nothing.
Two things would then make what the op's Python code decides differ from the GPU run, and
both are closed here:

- the tensor's device: code outside torch that asks (``x.device``, ``x.is_cuda``,
  ``x.get_device()``) gets the GPU's answer (``cuda:0``), and a ``cuda`` device handed back
  to torch (``torch.empty(..., device=x.device)``, ``x.to(...)``) allocates on the CPU;
- the tensor's values: no kernel ran, and the inputs were drawn by another generator, so any
  read of values on the host (``.item()``, ``bool(t)``, ``nonzero``, ``tolist`` ...) raises
  ``NotCapturable``: the row's launches may depend on data, so they are not known.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any, Callable, Iterator

from tritongate.ir.launchless import NotCapturable, attributes_set

GPU = "cuda:0"
# aten ops whose result depends on tensor values read on the host (a GPU would synchronize)
HOST_READS = frozenset({
    "_local_scalar_dense", "nonzero", "masked_select", "unique", "_unique", "_unique2", "unique_dim",
    "unique_consecutive", "equal", "is_nonzero", "bincount", "histc", "repeat_interleave", "_assert_async",
    "item",
})


def _from_torch(depth: int = 2) -> bool:
    """Whether the attribute is read by torch's own Python code (it sees the truth)."""
    name = sys._getframe(depth).f_globals.get("__name__", "")
    return bool(name == "torch" or name.startswith("torch."))


def _lens(torch: Any) -> dict[str, Any]:
    base = torch._C.TensorBase
    real_device, real_cuda, real_cpu, real_get_device = base.device, base.is_cuda, base.is_cpu, base.get_device

    def device(self: Any) -> Any:
        real = real_device.__get__(self)
        return real if _from_torch() or real.type != "cpu" else torch.device(GPU)

    def is_cuda(self: Any) -> bool:
        return bool(real_cuda.__get__(self)) or (not _from_torch() and real_device.__get__(self).type == "cpu")

    def is_cpu(self: Any) -> bool:
        return bool(real_cpu.__get__(self)) and _from_torch()

    def get_device(self: Any) -> int:
        real = real_get_device(self)
        return real if _from_torch() or real_device.__get__(self).type != "cpu" else 0

    return {"device": property(device), "is_cuda": property(is_cuda), "is_cpu": property(is_cpu),
            "get_device": get_device}


def _to_host(value: Any) -> Any:
    text = str(value) if value is not None else ""
    if text in ("cuda", GPU):
        return "cpu"
    if text.startswith("cuda"):
        raise NotCapturable(f"a tensor is put on {text}, not the stand-in GPU")
    return value


def _refuse(what: str) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise NotCapturable(f"{what} reads tensor values on the host: no kernel ran, so they are not the GPU's")
    return refuse


@contextlib.contextmanager
def gpu_lens() -> Iterator[None]:
    """Inside the block, CPU tensors answer as ``cuda:0`` tensors to code outside torch, and
    host reads of values raise ``NotCapturable``."""
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    class Allocate(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = dict(kwargs or {})
            if "device" in kwargs:
                kwargs["device"] = _to_host(kwargs["device"])
            name = getattr(func, "__name__", "")
            if name == "cuda" and args:  # Tensor.cuda(): already where the capture keeps it
                return args[0]
            if name == "to":
                args = tuple(_to_host(a) if isinstance(a, (str, torch.device)) else a for a in args)
            return func(*args, **kwargs)

    class HostReads(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            op = func.overloadpacket.__name__ if hasattr(func, "overloadpacket") else str(func)
            if op in HOST_READS:
                _refuse(f"aten.{op}")()
            return func(*args, **(kwargs or {}))

    values = {**_lens(torch), **{name: _refuse(f"Tensor.{name}") for name in ("tolist", "numpy", "__array__")}}
    with attributes_set(torch.Tensor, values), Allocate(), HostReads():
        yield
