"""The operator registry: what an op needs to be measured, checked and reported.

An ``OpSpec`` builds a ``Case`` from a shape, a dtype, a device and a seeded generator.
All allocation happens in ``build``; ``Case.launch`` only launches, so the timed closure
measures the kernel and nothing else, and each ``build`` gives fresh inputs from the seed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # torch is imported lazily: the registry is read by preflight too
    import torch

Shape = tuple[int, ...]

# (atol, rtol) per dtype for a result compared in float32 against the torch reference.
DEFAULT_TOLERANCE: dict[str, tuple[float, float]] = {
    "float32": (1e-4, 1e-4),
    "float16": (1e-2, 1e-2),
    "bfloat16": (2e-2, 2e-2),
}


@dataclass
class Case:
    launch: Callable[[], None]  # launches the op's kernel(s) on the prepared inputs
    output: Callable[[], "torch.Tensor"]  # the tensor the launch wrote
    reference: Callable[[], "torch.Tensor"]  # the expected result, computed by torch
    tensors: tuple[Any, ...] = ()  # everything the launch reads or writes: kept alive


@dataclass(frozen=True)
class OpSpec:
    name: str
    description: str
    shape_doc: str  # e.g. "[M, N, K]"
    ranks: tuple[int, ...]  # accepted shape lengths
    dtypes: tuple[str, ...]
    build: Callable[[Shape, "torch.dtype", "torch.device", "torch.Generator"], Case]
    bytes: Callable[[Shape, int], float]  # bytes moved, given the element size
    flops: Callable[[Shape], float] | None = None
    tolerance: dict[str, tuple[float, float]] = field(default_factory=lambda: dict(DEFAULT_TOLERANCE))
    plantable: bool = False  # builds its case with planting.active()'s delay (calibration)

    def check_shape(self, shape: Shape) -> str | None:
        """Why ``shape`` does not fit this op, or None."""
        if len(shape) not in self.ranks:
            return (f"{self.name} takes shapes {self.shape_doc} ({' or '.join(map(str, self.ranks))} "
                    f"dims), got {list(shape)}")
        if any(not isinstance(d, int) or isinstance(d, bool) or d < 1 for d in shape):
            return f"{self.name}: every dimension must be a positive integer, got {list(shape)}"
        return None


def case_id(shape: Shape) -> str:
    return "x".join(str(d) for d in shape)


class Registry:
    def __init__(self) -> None:
        self._ops: dict[str, OpSpec] = {}

    def register(self, spec: OpSpec) -> OpSpec:
        if spec.name in self._ops:
            raise ValueError(f"op {spec.name!r} is registered twice")
        self._ops[spec.name] = spec
        return spec

    def get(self, name: str) -> OpSpec:
        return self._ops[name]

    def __contains__(self, name: object) -> bool:
        return name in self._ops

    def names(self) -> list[str]:
        return sorted(self._ops)
