"""The specialization a GPU launch would have, computed for an interpreted launch.

Under ``TRITON_INTERPRET=1`` a launch compiles nothing, but Triton decides what to compile
from the arguments alone: the JIT's binder (``create_function_from_signature``) and
``JITFunction._pack_args`` are called here as ``JITFunction.run`` calls them, for a target
(``cuda:90`` by default) instead of the current device, so nothing is re-implemented.
``compile_hash`` is the key ``triton.compile`` would give the kernel in this process; it is
not comparable with a GPU run's (the interpreter patches ``triton.language``), so a CPU index
and a GPU capture are compared on their parameters (``bench/index_equality.py``).
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from typing import Any, Mapping

DEFAULT_TARGET = ("cuda", 90, 32)
# the GPU a CPU capture specializes for (``cuda:80``): the pre-screen sets the baseline record's
CAPTURE_TARGET_ENV = "TRITONGATE_CAPTURE_TARGET"
# settings that change the compile key but only describe the interpreter process itself
_INTERPRETER_ENV = frozenset({"TRITON_INTERPRET"})


def capture_target(environ: Mapping[str, str] | None = None) -> tuple[str, int | str, int]:
    """``TRITONGATE_CAPTURE_TARGET`` (``cuda:NN``) as a target, ``DEFAULT_TARGET`` when unset."""
    import os

    text = (os.environ if environ is None else environ).get(CAPTURE_TARGET_ENV, "")
    if not text:
        return DEFAULT_TARGET
    backend, _, arch = text.partition(":")
    if backend != "cuda" or not arch.isdigit():
        raise ValueError(f"{CAPTURE_TARGET_ENV}={text!r}: expected cuda:ARCH, e.g. cuda:80")
    return ("cuda", int(arch), 32)


@dataclass(frozen=True)
class _Target:
    """What ``CompiledKernel.metadata.target`` holds, for the index."""
    backend: str
    arch: int | str


class SpecializedLaunch:
    """What a compiled kernel exposes to ``capture.describe_compiled``, without compiling."""

    interpreted = True

    def __init__(self, src: Any, options: Any, target: tuple[str, int | str, int], digest: str) -> None:
        self.src = src
        self.metadata = _Metadata(options, _Target(target[0], target[1]))
        self.hash = digest
        self.kernel = b""
        self.asm: dict[str, str] = {}


class _Metadata:
    def __init__(self, options: Any, target: _Target) -> None:
        self._options = options
        self.target = target

    def __getattr__(self, name: str) -> Any:
        return getattr(self._options, name)


@functools.lru_cache(maxsize=8)
def _backend(target: tuple[str, int | str, int]) -> Any:
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend

    return make_backend(GPUTarget(*target))


def _binder(jit: Any, target: tuple[str, int | str, int]) -> Any:
    """The JIT's own binder for ``target``, built once per kernel (``create_binder``: per device)."""
    from triton.runtime.jit import create_function_from_signature

    binders = jit.__dict__.setdefault("_tritongate_binders", {})
    if target not in binders:
        binders[target] = create_function_from_signature(jit.signature, jit.params, _backend(target))
    return binders[target]


def jit_of(fn: Any) -> Any:
    from triton.runtime.jit import JITFunction

    if isinstance(fn, JITFunction):
        return fn
    jit = fn.__dict__.get("_tritongate_jit")
    if jit is None:
        kw: Mapping[str, Any] = getattr(fn, "kwargs", None) or {}
        keep = {k: kw[k] for k in ("do_not_specialize", "do_not_specialize_on_alignment", "debug", "noinline")
                if k in kw}
        jit = JITFunction(fn.fn, **keep)
        fn._tritongate_jit = jit
    return jit


def specialize_launch(fn: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any],
                      target: tuple[str, int | str, int] = DEFAULT_TARGET) -> SpecializedLaunch:
    """The specialization ``JITFunction.run(*args, **kwargs)`` would compile for ``target``."""
    from triton import knobs
    from triton._C.libtriton import get_cache_invalidating_env_vars
    from triton.compiler import ASTSource
    from triton.runtime.cache import get_cache_key

    jit = jit_of(fn)
    backend = _backend(target)
    kw = dict(kwargs)
    # what JITFunction.run adds before binding (they enter the options); 3.5 has no
    # instrumentation mode
    kw["debug"] = kw.get("debug", jit.debug) or knobs.runtime.debug
    if hasattr(knobs.compilation, "instrumentation_mode"):
        kw["instrumentation_mode"] = knobs.compilation.instrumentation_mode
    bound, specialization, options = _binder(jit, target)(*args, **kw)
    options, signature, constexprs, attrs = jit._pack_args(backend, kw, bound, specialization, options)
    src = ASTSource(jit, signature, constexprs, attrs)
    env = {k: v for k, v in dict(get_cache_invalidating_env_vars()).items() if k not in _INTERPRETER_ENV}
    digest = hashlib.sha256(get_cache_key(src, backend, options, env_vars=env).encode("utf-8")).hexdigest()
    return SpecializedLaunch(src, options, target, digest)
