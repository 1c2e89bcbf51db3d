"""Which kernel variants a call launched: patch the Triton launch entry points while the
call runs once, outside any timed region.

``JITFunction.run`` returns the ``CompiledKernel`` it launched; under the interpreter the
variant is named from its arguments. FlagGems' ``LibEntry`` launches cached kernels past
``JITFunction.run``, so its ``run`` is patched too.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import sys
from collections import Counter
from typing import Any, Callable, Iterator

from tritongate.schema import Variant

_OPTION_SHORT = {"num_warps": "w", "num_stages": "s", "num_ctas": "c", "maxnreg": "r"}
_IGNORED = {"debug", "instrumentation_mode", "grid", "warmup"}
# Where FlagGems (and its vLLM flavour) define LibTuner and LibEntry.
LIBENTRY_MODULES = ("flag_gems.utils.libentry", "flaggems_vllm.utils.libentry")


def kernel_id(fn: Any) -> str:
    """module.qualname of the Python function behind a JIT/interpreted kernel."""
    py = getattr(fn, "fn", fn)
    return f"{getattr(py, '__module__', '?')}.{getattr(py, '__qualname__', getattr(py, '__name__', '?'))}"


def variant_name(kwargs: dict[str, Any]) -> str:
    """Readable name from the launch's constexpr-like keyword arguments and options."""
    consts = [f"{k}={v}" for k, v in sorted(kwargs.items())
              if k not in _OPTION_SHORT and k not in _IGNORED and isinstance(v, (int, bool, str))]
    opts = [f"{_OPTION_SHORT[k]}{v}" for k, v in kwargs.items() if k in _OPTION_SHORT and v is not None]
    return " ".join(consts + sorted(opts)) or "default"


def binary_hash(compiled: Any) -> str:
    """The hash of the binary's bytes, not ``CompiledKernel.hash``: that is a cache key which
    includes the compiler build, so it differs across builds for byte-identical code."""
    binary = getattr(compiled, "kernel", None)
    binary = binary.encode() if isinstance(binary, str) else binary
    return hashlib.sha256(binary).hexdigest()[:16] if binary else ""


def patch_run(cls: type, make_run: Callable[[Any], Any]) -> Callable[[], None]:
    """``cls.run`` replaced by ``make_run(original)``; returns what puts the original back."""
    original = cls.run
    cls.run = make_run(original)
    return lambda: setattr(cls, "run", original)


def _source_hash(fn: Any) -> str:
    py = getattr(fn, "fn", fn)
    try:
        src = inspect.getsource(py)
    except (OSError, TypeError):
        return ""
    return hashlib.sha256(src.encode()).hexdigest()[:16]


class LaunchRecorder:
    def __init__(self) -> None:
        self._counts: Counter[tuple[str, str, str, str]] = Counter()
        # compile hash -> (function, CompiledKernel) and launches: the IR of what ran
        self.compiled: dict[str, tuple[Any, Any]] = {}
        self.compiled_launches: Counter[str] = Counter()
        self.total = 0  # launches recorded so far: tells a dispatcher whether the JIT saw its call
        self.notes: list[str] = []

    def record(self, fn: Any, kwargs: dict[str, Any], compiled: Any) -> None:
        name = variant_name(kwargs)
        src_hash, bin_hash = _source_hash(fn), ""
        if getattr(compiled, "interpreted", False):  # counted for the IR index only: the
            self.compiled.setdefault(compiled.hash, (fn, compiled))  # row's variants stay as
            self.compiled_launches[compiled.hash] += 1  # interpreted runs always named them
            compiled = None
        if compiled is not None and hasattr(compiled, "hash"):
            bin_hash = binary_hash(compiled)
            if isinstance(compiled.hash, str):
                self.compiled.setdefault(compiled.hash, (fn, compiled))
                self.compiled_launches[compiled.hash] += 1
            src = getattr(compiled, "src", None)
            if src is not None and hasattr(src, "hash"):
                src_hash = str(src.hash())
            meta = getattr(compiled, "metadata", None)
            if meta is not None and "num_warps" not in kwargs:  # a tuner passes its options as kwargs
                name = f"{name} w{getattr(meta, 'num_warps', '?')} s{getattr(meta, 'num_stages', '?')}"
        self._counts[(kernel_id(fn), name, src_hash, bin_hash)] += 1
        self.total += 1

    def variants(self) -> tuple[Variant, ...]:
        return tuple(Variant(kernel=k, name=n, source_hash=s, binary_hash=b, launches=c)
                     for (k, n, s, b), c in sorted(self._counts.items()))


def _patch(cls: type, recorder: LaunchRecorder, *, interpreted: bool = False) -> Callable[[], None]:
    """``interpreted``: recorded with the specialization a GPU launch would compile, so a CPU
    run's launches count towards the IR index like a GPU run's."""
    def make_run(original: Any) -> Any:
        def run(self: Any, *args: Any, grid: Any = None, warmup: bool = False, **kwargs: Any) -> Any:
            spec = None
            if interpreted and not warmup:
                spec = interpreted_specialization(self, args, kwargs, recorder.notes)
            result = original(self, *args, grid=grid, warmup=warmup, **kwargs)
            if not warmup:
                recorder.record(self, dict(kwargs), result if spec is None else spec)
            return result
        return run
    return patch_run(cls, make_run)


def _patch_libentry(cls: type, recorder: LaunchRecorder) -> Callable[[], None]:
    """``LibEntry.run`` returns ``(kernel, constexprs)``; a call served from its cache
    launches ``kernel`` without the JIT, so it is recorded here (once: a first call that
    compiled through ``JITFunction.run`` was recorded there)."""
    def make_run(original: Any) -> Any:
        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            before = recorder.total
            result = original(self, *args, **kwargs)
            if recorder.total == before and isinstance(result, tuple) and len(result) == 2:
                kernel, constexprs = result
                jit = getattr(self, "jit_function", None) or getattr(self, "fn", self)
                recorder.record(jit, dict(constexprs) if isinstance(constexprs, dict) else {}, kernel)
            return result
        return run
    return patch_run(cls, make_run)


def _libentry_classes() -> list[type]:
    """LibEntry classes of FlagGems packages already imported (nothing is imported here)."""
    classes = (getattr(sys.modules.get(module), "LibEntry", None) for module in LIBENTRY_MODULES)
    return [cls for cls in classes if isinstance(cls, type) and "run" in vars(cls)]


@contextlib.contextmanager
def record_launches() -> Iterator[LaunchRecorder]:
    """Record every Triton kernel launch made inside the block (not thread-safe)."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    recorder = LaunchRecorder()
    # Triton <= 3.4 gives each InterpretedFunction its own `run` closure: nothing to patch
    # at class level there, so interpreted launches go unrecorded on those versions.
    restores = [_patch(cls, recorder, interpreted=cls is InterpretedFunction)
                for cls in (JITFunction, InterpretedFunction) if "run" in vars(cls)]
    restores += [_patch_libentry(cls, recorder) for cls in _libentry_classes()]
    try:
        yield recorder
    finally:
        for restore in reversed(restores):
            restore()


def interpreted_specialization(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], notes: list[str]) -> Any:
    """``specialize.specialize_launch`` of one interpreted launch, or None with a note."""
    from tritongate.ir.specialize import capture_target, specialize_launch

    try:
        return specialize_launch(fn, args, kwargs, target=capture_target())
    except Exception as exc:  # noqa: BLE001 - the index is evidence: never fail the row
        note = f"no GPU specialization for {kernel_id(fn)}: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
        if note not in notes:
            notes.append(note)
        return None
