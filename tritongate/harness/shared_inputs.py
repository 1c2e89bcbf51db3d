"""One side of a paired round reads the other side's inputs: the same physical memory.

A round's inputs land on new pages every round (see ``measure``); for a kernel whose time
depends on where its data sits (a skinny matmul streaming 32 MB of weights through a warm
L2 moves 2-3 % a round on the H200), each side's own placement then differs within a pair,
and the pair's log ratio carries both. When the side measured second reads the inputs the
first side built, through CUDA IPC, both see the same placement and it cancels in the pair
(``bench/results/2026-11-30_h200_shared_inputs.md``: the paired SD fell 3.5-4.5x).

``export_inputs`` turns a round's input tensors into a JSON-able payload (IPC handles and
each tensor's view); ``adopt_inputs`` makes the other worker's freshly built tensors read
that memory instead of their own: their values are copied over it first (both sides build
from the same seed, so the values are the same; an op that writes its inputs thus starts
each side's round from fresh ones), then each tensor is pointed at the shared storage in
place, so the op's launch closure, which holds the tensor objects, reads it.

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
    """What both sides' tensors must agree on, plus where the view starts in its storage."""
    return {"dtype": str(t.dtype).removeprefix("torch."), "size": list(t.size()), "stride": list(t.stride()),
            "offset": int(t.storage_offset()), "storage_bytes": int(t.untyped_storage().nbytes())}


def export_inputs(tensors: Sequence[Any]) -> dict[str, Any]:
    """The payload another process passes to ``adopt_inputs``. The caller keeps ``tensors``
    alive until that process has let go of them (torch defers freeing memory it shared)."""
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
            except Exception as exc:  # noqa: BLE001 - named below
                raise SharingError(f"UntypedStorage._share_cuda_ failed: {type(exc).__name__}: {exc}") from exc
            index[key] = len(storages)
            storages.append({"device": int(device), "handle": _b64(handle), "size": int(size), "offset": int(offset),
                             "ref_counter_handle": _b64(ref_handle), "ref_counter_offset": int(ref_offset),
                             "event_handle": _b64(event_handle), "event_sync_required": bool(event_sync)})
        views.append({"storage": index[key], **describe_tensor(t)})
    return {"version": PAYLOAD_VERSION, "storages": storages, "tensors": views}


def _open(entry: Any) -> Any:
    import torch

    if not isinstance(entry, dict):
        raise SharingError("shared inputs: a storage entry must be an object")
    try:
        return torch.UntypedStorage._new_shared_cuda(
            int(entry["device"]), _unb64(entry["handle"], "handle"), int(entry["size"]), int(entry["offset"]),
            _unb64(entry["ref_counter_handle"], "ref_counter_handle"), int(entry["ref_counter_offset"]),
            _unb64(entry["event_handle"], "event_handle"), bool(entry["event_sync_required"]))
    except SharingError:
        raise
    except Exception as exc:  # noqa: BLE001 - named below
        raise SharingError(f"UntypedStorage._new_shared_cuda failed: {type(exc).__name__}: {exc}") from exc


MATCHED = ("dtype", "size", "stride", "storage_bytes")


def check_payload(mine: Sequence[dict[str, Any]], payload: Any) -> list[dict[str, Any]]:
    """The payload's tensor views, checked against this side's (``describe_tensor`` of each):
    the same count, and each the same dtype, size, stride and storage size."""
    if not isinstance(payload, dict) or payload.get("version") != PAYLOAD_VERSION:
        raise SharingError(f"shared inputs: not a version-{PAYLOAD_VERSION} payload")
    views, entries = payload.get("tensors"), payload.get("storages")
    if not isinstance(views, list) or not isinstance(entries, list):
        raise SharingError("shared inputs: the payload needs 'tensors' and 'storages' lists")
    if len(views) != len(mine):
        raise SharingError(f"shared inputs: the other side built {len(views)} tensors, this side {len(mine)}")
    for i, (own, view) in enumerate(zip(mine, views)):
        ok = isinstance(view, dict) and all(view.get(k) == own[k] for k in MATCHED) \
            and type(view.get("storage")) is int and 0 <= view["storage"] < len(entries) \
            and type(view.get("offset")) is int and view["offset"] >= 0
        if not ok:
            theirs = {k: view.get(k) for k in ("storage", "offset", *MATCHED)} if isinstance(view, dict) else view
            raise SharingError(f"shared inputs: tensor {i} differs between the sides (this side "
                               f"{ {k: own[k] for k in MATCHED} }, the other {theirs})")
    return views


def adopt_inputs(tensors: Sequence[Any], payload: Any) -> None:
    """Point ``tensors`` (this process's freshly built inputs of the same row) at the memory
    ``payload`` exports, after copying their values over it. They must match it one to one
    in dtype, size and stride; the adopted memory is let go when they are freed."""
    why = unshareable(tensors)
    if why:
        raise SharingError(f"cannot adopt shared inputs: {why}")
    views = check_payload([describe_tensor(t) for t in tensors], payload)
    entries = payload["storages"]
    import torch

    opened = [_open(entry) for entry in entries]
    try:
        shared = [torch.empty(0, dtype=t.dtype, device=t.device).set_(opened[v["storage"]], v["offset"],
                                                                       v["size"], v["stride"])
                  for t, v in zip(tensors, views)]
        for mine, theirs in zip(tensors, shared):
            theirs.copy_(mine)
        torch.cuda.synchronize()
        for mine, theirs in zip(tensors, shared):
            mine.set_(theirs.untyped_storage(), theirs.storage_offset(), theirs.size(), theirs.stride())
    except RuntimeError as exc:  # a view outside its storage, a copy that failed
        raise SharingError(f"shared inputs: could not point the tensors at the shared memory: {exc}") from exc


def collect() -> None:
    """Free memory this process shared and the other side has let go of (torch keeps such
    blocks until every reader is done; this makes it look now)."""
    import torch

    torch.cuda.ipc_collect()
