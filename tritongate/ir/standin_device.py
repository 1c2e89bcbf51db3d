"""A stand-in for the record's GPU, for code that asks ``torch.cuda`` about its device.

FlagGems asks ``torch.cuda`` at import (the device's name for its tuning DB, its count for
``LibEntry``'s caches, the capability for its per-architecture ops) and some ops ask again
when called (the SM count sizes ``cumsum``'s grid). On a host without a GPU those answers
come from a ``DeviceProfile``: only what is known of the record's GPU (measured there, listed
in ``PROFILES``) is answered; any other query raises ``NotCapturable``, so a row whose
launches depend on an unknown property is reported instead of guessed. Every answer given is
logged, for the capture's report.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

from tritongate.ir.launchless import NotCapturable, attributes_set


@dataclass(frozen=True)
class DeviceProfile:
    """What is known of one GPU model: ``torch.cuda.get_device_properties`` fields by name."""
    name: str
    capability: tuple[int, int]
    properties: Mapping[str, Any] = field(default_factory=dict)

    @property
    def target(self) -> str:
        return f"cuda:{self.capability[0]}{self.capability[1]}"


# Per compute capability: the CUDA C++ Programming Guide's "Technical Specifications per
# Compute Capability" table (9.0: 228 KiB shared memory per SM, 227 KiB per block opt-in,
# 64 K registers and 2048 threads per SM, warps of 32).
_SM90 = {"major": 9, "minor": 0, "warp_size": 32, "max_shared_memory_per_multiprocessor": 233472,
         "max_shared_memory_per_block_optin": 232448, "regs_per_multiprocessor": 65536,
         "max_threads_per_multi_processor": 2048}
# Per model: the SM count both GPUs run the builtin suites with (bench/loaded_host.py scales the
# H200's planted spins to the H100 on it) and the H200's 60 MiB L2 as NVIDIA lists it; not yet
# read back from torch on each GPU (bench/results/2026-12-05_cpu_flaggems_capture.md says so).
PROFILES: dict[str, DeviceProfile] = {p.name: p for p in (
    DeviceProfile("NVIDIA H200", (9, 0), {**_SM90, "multi_processor_count": 132, "L2_cache_size": 62914560}),
    DeviceProfile("NVIDIA H100 80GB HBM3", (9, 0), {**_SM90, "multi_processor_count": 132}),
)}


def profile_for(device_name: str, target: str) -> DeviceProfile:
    """The profile of the record's GPU (``run_identity.json``'s ``device``) for ``target``;
    ``NotCapturable`` when none is known or it is another architecture."""
    profile = PROFILES.get(device_name)
    if profile is None:
        raise NotCapturable(f"no stand-in profile for the record's GPU {device_name!r} (known: "
                            f"{', '.join(sorted(PROFILES))})")
    if profile.target != target:
        raise NotCapturable(f"the record's GPU {device_name} is {profile.target}, its variants say {target}")
    return profile


class _Properties:
    """``get_device_properties(0)``: the profile's fields; any other is not known here."""

    def __init__(self, profile: DeviceProfile, log: list[str]) -> None:
        self._profile, self._log = profile, log

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name == "name":
            return self._profile.name
        if name not in self._profile.properties:
            raise NotCapturable(f"the device property {name!r} of {self._profile.name} is not known on this host")
        _note(self._log, f"get_device_properties().{name}")
        return self._profile.properties[name]


def _note(log: list[str], query: str) -> None:
    if query not in log:
        log.append(query)


def _index(device: Any) -> int:
    """The device index a query names; only the one stand-in GPU (index 0) exists. A CPU
    tensor's device is taken as it: the capture's tensors stand for the GPU's."""
    if device is None:
        return 0
    if isinstance(device, int):
        index = device
    else:
        text = str(device)
        kind, _, number = text.partition(":")
        if kind not in ("cuda", "cpu") or (number and not number.isdigit()):
            raise NotCapturable(f"a query names device {text!r}, not the stand-in GPU")
        index = int(number) if number and kind == "cuda" else 0
    if index != 0:
        raise NotCapturable(f"a query names GPU {index}; the record was made on one GPU (index 0)")
    return 0


def _answers(profile: DeviceProfile, log: list[str]) -> dict[str, Any]:
    props = _Properties(profile, log)

    def logged(query: str, value: Any) -> Any:
        def answer(*args: Any, **kwargs: Any) -> Any:
            if args:
                _index(args[0])
            _note(log, query)
            return value
        return answer

    @contextlib.contextmanager
    def device(which: Any = None) -> Iterator[None]:
        _index(which)
        yield

    def get_device_properties(which: Any = None) -> Any:
        _index(which)
        return props

    def unknown(name: str) -> Any:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise NotCapturable(f"torch.cuda.{name} has no stand-in answer on this host")
        return refuse

    answers: dict[str, Any] = {
        "is_available": logged("is_available", True), "is_initialized": logged("is_initialized", True),
        "device_count": logged("device_count", 1), "current_device": logged("current_device", 0),
        "set_device": lambda which: _index(which) and None,
        "get_device_name": logged("get_device_name", profile.name),
        "get_device_capability": logged("get_device_capability", profile.capability),
        "get_device_properties": get_device_properties, "device": device,
        "synchronize": lambda *a, **k: None,  # nothing ran: nothing to wait for
        "_lazy_init": lambda: None,
    }
    # what would touch a real device (memory, streams, generators, graphs): not answerable
    return answers | {name: unknown(name) for name in (
        "mem_get_info", "memory_allocated", "current_stream", "default_stream", "Stream", "Event",
        "get_rng_state", "set_rng_state", "manual_seed", "CUDAGraph", "graph", "empty_cache")}


@contextlib.contextmanager
def standin_cuda(profile: DeviceProfile) -> Iterator[list[str]]:
    """``torch.cuda`` answers as the profile's GPU inside the block (module attributes
    patched, so ``torch.cuda`` objects taken earlier see them too); yields the queries answered."""
    import torch

    log: list[str] = []
    answers = {**_answers(profile, log), "default_generators": _Refuse("torch.cuda.default_generators")}
    with attributes_set(torch.cuda, answers):
        yield log


class _Refuse:
    """A device object the capture cannot stand in for: any use is ``NotCapturable``."""

    def __init__(self, what: str) -> None:
        self._what = what

    def __getitem__(self, *key: Any) -> Any:
        raise NotCapturable(f"{self._what} needs the device")

    __len__ = __getitem__

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotCapturable(f"{self._what}.{name} needs the device")
