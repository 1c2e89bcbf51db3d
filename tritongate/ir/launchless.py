"""A JIT that specializes every launch for a GPU target and launches nothing.

For code that cannot run under the interpreter (FlagGems' ``LibEntry`` walks ``.fn`` to a
``JITFunction`` and refuses an interpreted kernel), the kernels stay real ``JITFunction``s
and ``JITFunction.run`` is replaced for the block: each call is bound by the build's own
binder for the target (``specialize.specialize_launch``: what ``JITFunction.run`` would
compile there) and recorded; nothing is compiled or executed. What is returned stands in
for the ``CompiledKernel``: ``LibEntry`` caches it and later launches it with
``kernel[grid](*args)``, which is recorded as a launch of the same variant, as on a GPU.

What ``JITFunction.run`` would do that cannot be reproduced without a device (a pre-run
hook) raises ``NotCapturable``: the row is then reported, never guessed.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

from tritongate.ir.capture import CompiledSeen
from tritongate.ir.specialize import specialize_launch


class NotCapturable(Exception):
    """What a row launches cannot be known exactly on this host; the message says why."""


_ABSENT = object()


@contextlib.contextmanager
def attributes_set(owner: Any, values: Mapping[str, Any]) -> Iterator[None]:
    """``owner``'s own attributes set to ``values`` inside the block; afterwards each is what
    it was, or removed again where ``owner`` had none of its own (an inherited one shows again)."""
    saved = {name: vars(owner).get(name, _ABSENT) for name in values}
    for name, value in values.items():
        setattr(owner, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is _ABSENT:
                delattr(owner, name)
            else:
                setattr(owner, name, value)


@dataclass
class LaunchLog:
    """Every variant specialized inside the block (``seen``) and the launches of each,
    by compile hash, since the last ``reset_launches``."""
    seen: CompiledSeen = field(default_factory=CompiledSeen)
    launches: Counter[str] = field(default_factory=Counter)

    def launched(self, fn: Any, spec: Any) -> None:
        self.seen.add(fn, spec)
        self.launches[spec.hash] += 1

    def reset_launches(self) -> None:
        self.launches = Counter()


class CapturedKernel:
    """What the patched ``run`` returns in place of a ``CompiledKernel``."""

    def __init__(self, fn: Any, spec: Any, log: LaunchLog) -> None:
        self.fn, self.spec, self._log = fn, spec, log
        self.hash = spec.hash
        self.src = spec.src
        self.metadata = spec.metadata

    def __getitem__(self, grid: Any) -> Any:
        # a cached launch past the JIT (LibEntry): the same binary as the call that cached it
        def launch(*args: Any, **kwargs: Any) -> None:
            self._log.launched(self.fn, self.spec)
        return launch

    def run(self, *args: Any, **kwargs: Any) -> None:
        self._log.launched(self.fn, self.spec)


def _captured_run(log: LaunchLog, target: tuple[str, int | str, int]) -> Any:
    def run(self: Any, *args: Any, grid: Any = None, warmup: bool = False, **kwargs: Any) -> Any:
        if getattr(self, "pre_run_hooks", None):
            raise NotCapturable(f"{_name(self)} has pre-run hooks, which need the device")
        try:
            spec = specialize_launch(self, args, kwargs, target=target)
        except NotCapturable:
            raise
        except Exception as exc:  # whatever the binder refused: the row is not known
            raise NotCapturable(f"{_name(self)}: the binder refused the launch ({type(exc).__name__}: "
                                f"{' '.join(str(exc).split())[:160]})") from exc
        if warmup:  # compiled on a GPU, not launched: known, not counted
            log.seen.add(self, spec)
        else:
            log.launched(self, spec)
        return CapturedKernel(self, spec, log)
    return run


def _name(fn: Any) -> str:
    py = getattr(fn, "fn", fn)
    return f"{getattr(py, '__module__', '?')}.{getattr(py, '__qualname__', '?')}"


@contextlib.contextmanager
def launchless_jit(target: tuple[str, int | str, int]) -> Iterator[LaunchLog]:
    """``JITFunction.run`` specializes for ``target`` and launches nothing, inside the block."""
    from triton.runtime.jit import JITFunction

    log = LaunchLog()
    with attributes_set(JITFunction, {"run": _captured_run(log, target)}):
        yield log
