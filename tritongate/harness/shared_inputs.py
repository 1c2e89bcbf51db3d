"""One side of a paired round reads the other side's inputs: the same physical memory.

A round's inputs land on new pages every round (see ``measure``); for a kernel whose time
depends on where its data sits (a skinny matmul streaming 32 MB of weights through a warm
L2 moves 2-3 % a round on the H200), each side's own placement then differs within a pair,
and the pair's log ratio carries both. When the side measured second reads the inputs the
first side built, through CUDA IPC, both see the same placement and it cancels in the pair
(``bench/results/2026-11-30_h200_shared_inputs.md``: the paired SD fell 3.5-4.5x).

``export_inputs`` turns a round's input tensors into a JSON-able payload (IPC handles and
each tensor's view); ``adopt_inputs`` makes the other worker's freshly built tensors read
that memory instead of their own: their storages are copied over it first (both sides build
from the same seed, so the values are the same; an op that writes its inputs thus starts
each side's round from fresh ones), then each tensor is pointed at the shared storage in
place, so the op's launch closure, which holds the tensor objects, reads it.

Lifetime: exporting a storage gives the reader a hold on it (a counter torch keeps in shared
memory); the exporter's memory is freed only once every hold is given back. A reader gives
back the storages it opened when its tensors are freed, and ``adopt_inputs`` gives back the
ones it never opened (a payload it refused); a reader that fails before it reaches
``adopt_inputs`` gives the whole payload back itself; ``release`` gives back all of a payload's holds
from the exporting side, for a payload that never reached a reader (or whose reader died).
A hold never given back keeps that memory until the worker exits.

torch's CUDA IPC entry points (``UntypedStorage._share_cuda_`` / ``_new_shared_cuda``, what
``torch.multiprocessing`` uses) are private: they are used here only, and any failure is a
``SharingError`` naming them, so a torch that changed them fails loudly, not silently.
"""

from __future__ import annotations

import base64
from typing import Any, Sequence

PAYLOAD_VERSION = 1


class SharingError(RuntimeError):
    """The inputs could not be exported or adopted."""


def unshareable(tensors: Sequence[Any]) -> str:
    """Why these inputs cannot be shared through CUDA IPC ("" when they can)."""
    import torch

    if not tensors:
        return "the op's builder lists no tensors (Case.tensors)"
    for i, t in enumerate(tensors):
        if not isinstance(t, torch.Tensor):
            return f"Case.tensors[{i}] is not a tensor ({type(t).__name__})"
        if t.is_inference():
            return f"Case.tensors[{i}] is an inference-mode tensor (cannot be pointed at other memory)"
        if t.device.type != "cuda":
            return f"Case.tensors[{i}] is on {t.device}, not a CUDA device"
        if t.layout is not torch.strided:
            return f"Case.tensors[{i}] has layout {t.layout}"
        if t.untyped_storage().nbytes() == 0:
            return f"Case.tensors[{i}] is empty"
    return ""


def _b64(value: bytes | None) -> str | None:
    return None if value is None else base64.b64encode(bytes(value)).decode()


def _unb64(value: Any, what: str) -> bytes | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise SharingError(f"shared inputs: {what} must be a base64 string, got {type(value).__name__}")
    try:
        return base64.b64decode(value.encode(), validate=True)
    except ValueError as exc:  # binascii.Error
        raise SharingError(f"shared inputs: {what} is not base64 ({exc})") from None


def describe_tensor(t: Any) -> dict[str, Any]:
    """What both sides' tensors must agree on: dtype, size, stride, where the view starts in
    its storage and how large that storage is."""
    return {"dtype": str(t.dtype).removeprefix("torch."), "size": list(t.size()), "stride": list(t.stride()),
            "offset": int(t.storage_offset()), "storage_bytes": int(t.untyped_storage().nbytes())}


def export_inputs(tensors: Sequence[Any]) -> dict[str, Any]:
    """The payload another process passes to ``adopt_inputs``. The caller keeps ``tensors``
    alive until that process has let go of them, and ``release``s the payload if it never
    reaches that process."""
    why = unshareable(tensors)
    if why:
        raise SharingError(f"cannot share these inputs: {why}")
    storages: list[dict[str, Any]] = []
    index: dict[int, int] = {}
    views = []
    for t in tensors:
        storage = t.untyped_storage()
        key = storage.data_ptr()
        if key not in index:
            try:
                (device, handle, size, offset, ref_handle, ref_offset, event_handle,
                 event_sync) = storage._share_cuda_()
            except Exception as exc:  # named below
                release({"storages": storages})  # the holds taken so far: no reader will see them
                raise SharingError(f"UntypedStorage._share_cuda_ failed: {type(exc).__name__}: {exc}") from exc
            index[key] = len(storages)
            storages.append({"device": int(device), "handle": _b64(handle), "size": int(size), "offset": int(offset),
                             "ref_counter_handle": _b64(ref_handle), "ref_counter_offset": int(ref_offset),
                             "event_handle": _b64(event_handle), "event_sync_required": bool(event_sync)})
        views.append({"storage": index[key], **describe_tensor(t)})
    return {"version": PAYLOAD_VERSION, "storages": storages, "tensors": views}


def release(payload: Any) -> int:
    """Give back the holds of ``payload``'s storages that no reader will give back (see the
    module's docstring). Best effort; returns how many were given back."""
    entries = payload.get("storages") if isinstance(payload, dict) else None
    return sum(_release(entry) for entry in entries) if isinstance(entries, list) else 0


def _release(entry: Any) -> bool:
    import torch

    try:
        torch.UntypedStorage._release_ipc_counter(_unb64(entry["ref_counter_handle"], "ref_counter_handle"),
                                                 int(entry["ref_counter_offset"]), device=int(entry["device"]))
        return True
    except Exception:  # noqa: BLE001 - nothing more can be done: the memory stays held until exit
        return False


def _open(entry: Any, device: int) -> Any:
    import torch

    if not isinstance(entry, dict):
        raise SharingError("shared inputs: a storage entry must be an object")
    try:
        return torch.UntypedStorage._new_shared_cuda(
            device, _unb64(entry["handle"], "handle"), int(entry["size"]), int(entry["offset"]),
            _unb64(entry["ref_counter_handle"], "ref_counter_handle"), int(entry["ref_counter_offset"]),
            _unb64(entry["event_handle"], "event_handle"), bool(entry["event_sync_required"]))
    except SharingError:
        raise
    except Exception as exc:  # named below
        raise SharingError(f"UntypedStorage._new_shared_cuda failed: {type(exc).__name__}: {exc}") from exc


MATCHED = ("dtype", "size", "stride", "offset", "storage_bytes")


def check_payload(mine: Sequence[dict[str, Any]], payload: Any) -> list[dict[str, Any]]:
    """The payload's tensor views, checked against this side's (``describe_tensor`` of each):
    the same count, and each the same dtype, size, stride, offset and storage size."""
    if not isinstance(payload, dict) or payload.get("version") != PAYLOAD_VERSION:
        raise SharingError(f"shared inputs: not a version-{PAYLOAD_VERSION} payload")
    views, entries = payload.get("tensors"), payload.get("storages")
    if not isinstance(views, list) or not isinstance(entries, list):
        raise SharingError("shared inputs: the payload needs 'tensors' and 'storages' lists")
    if len(views) != len(mine):
        raise SharingError(f"shared inputs: the other side built {len(views)} tensors, this side {len(mine)}")
    for i, (own, view) in enumerate(zip(mine, views)):
        ok = isinstance(view, dict) and all(view.get(k) == own[k] for k in MATCHED) \
            and type(view.get("storage")) is int and 0 <= view["storage"] < len(entries)
        if not ok:
            theirs = {k: view.get(k) for k in ("storage", *MATCHED)} if isinstance(view, dict) else view
            raise SharingError(f"shared inputs: tensor {i} differs between the sides (this side "
                               f"{ {k: own[k] for k in MATCHED} }, the other {theirs})")
    return views


def storage_map(storage_keys: Sequence[int], views: Sequence[dict[str, Any]], storages: int) -> list[int]:
    """For each of the payload's storages, the index of this side's first tensor on it; both
    sides must group their tensors into storages alike (``storage_keys``: this side's storage
    of each tensor, e.g. its data pointer)."""
    first: dict[int, int] = {}
    for i, (key, view) in enumerate(zip(storage_keys, views)):
        j = first.setdefault(view["storage"], i)
        if storage_keys[j] != key:
            raise SharingError(f"shared inputs: tensors {j} and {i} share a storage on the other side, not on this one")
    for i, key in enumerate(storage_keys):
        for j, other in enumerate(storage_keys[:i]):
            if key == other and views[i]["storage"] != views[j]["storage"]:
                raise SharingError(f"shared inputs: tensors {j} and {i} share a storage on this side, not on the other")
    if len(first) != storages:
        raise SharingError(f"shared inputs: the payload has {storages} storages, its tensors use {len(first)}")
    return [first[j] for j in range(storages)]


def adopt_inputs(tensors: Sequence[Any], payload: Any) -> None:
    """Point ``tensors`` (this process's freshly built inputs of the same row) at the memory
    ``payload`` exports, after copying their storages over it. They must match it one to one
    (``check_payload``); the adopted memory is given back when they are freed, and every hold
    of the payload this does not open is given back before it returns or raises."""
    import torch

    opened: list[Any] = []
    try:
        why = unshareable(tensors)
        if why:
            raise SharingError(f"cannot adopt shared inputs: {why}")
        views = check_payload([describe_tensor(t) for t in tensors], payload)
        entries = payload["storages"]
        first = storage_map([t.untyped_storage().data_ptr() for t in tensors], views, len(entries))
        for entry, i in zip(entries, first):
            opened.append(_open(entry, tensors[i].device.index or 0))
        try:
            with torch.no_grad():  # a leaf that requires grad may be pointed elsewhere too
                for storage, i in zip(opened, first):
                    storage.copy_(tensors[i].untyped_storage())  # byte for byte: views and overlaps alike
                torch.cuda.synchronize()
                for t, view in zip(tensors, views):
                    t.set_(opened[view["storage"]], view["offset"], view["size"], view["stride"])
        except RuntimeError as exc:
            raise SharingError(f"shared inputs: could not point the tensors at the shared memory: {exc}") from exc
    finally:
        entries = payload.get("storages") if isinstance(payload, dict) else None
        if isinstance(entries, list):
            release({"storages": entries[len(opened):]})  # opened ones are given back when freed


def collect() -> None:
    """Free memory this process shared and the other side has let go of (torch keeps such
    blocks until every reader is done; this makes it look now)."""
    import torch

    torch.cuda.ipc_collect()
