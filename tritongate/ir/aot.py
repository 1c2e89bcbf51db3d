"""Recompile, ahead of time and without a GPU, every kernel variant a run launched.

The run's ``ttgir/index.tsv`` holds enough to rebuild each launched variant's ``ASTSource``
and ``triton.compile`` it for a target under *this* interpreter's compiler. The output has a
run's ``ttgir/`` layout, so ``ir-diff`` reads both alike.
"""

from __future__ import annotations

import importlib
import os
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from tritongate.errors import UsageError
from tritongate.ir.capture import RowIR, describe_compiled, lower_irs, ttgir_of
from tritongate.identity import CODEGEN_SETTINGS
from tritongate.ir.index import CompiledVariant
from tritongate.ir.store import IRStore

# code-generation settings a run recorded that change the emitted code: the recompile uses
# the run's values (TRITON_DISABLE_LINE_INFO=1 on GPU runs: IR without source paths) unless
# this process sets them itself, which is how one asks "what does this setting change?"
CODEGEN_ENV = CODEGEN_SETTINGS
# a recorded option whose default one of those settings gives: the record's value was its own
# run's setting, so a compile under the setting leaves the option to it (an option passed to
# triton.compile wins over the setting, and TRITON_DEFAULT_FP_FUSION=0 would change nothing)
OPTION_SETTINGS = {"enable_fp_fusion": "TRITON_DEFAULT_FP_FUSION"}


@dataclass(frozen=True)
class Target:
    backend: str
    arch: int | str
    warp_size: int = 32

    @classmethod
    def parse(cls, text: str) -> "Target":
        """``cuda:90`` / ``hip:gfx942``: backend and architecture."""
        backend, _, arch = text.partition(":")
        if not backend or not arch:
            raise UsageError(f"--target {text!r}: expected BACKEND:ARCH, e.g. cuda:90 (H100/H200) or cuda:100")
        if backend == "cuda":
            if not arch.isdigit():
                raise UsageError(f"--target {text!r}: a cuda architecture is a number (90 for sm_90)")
            return cls("cuda", int(arch), 32)
        return cls(backend, arch, 64 if backend == "hip" else 32)

    def __str__(self) -> str:
        return f"{self.backend}:{self.arch}"


@dataclass
class AotOutcome:
    compiled: int = 0
    failed: list[str] = field(default_factory=list)  # "case kernel name: why"
    store: IRStore | None = None
    codegen_env: dict[str, str] = field(default_factory=dict)  # the code-affecting settings it compiled with
    levels: dict[str, int] = field(default_factory=dict)  # level kept -> variants that have it (ttgir too)


def options_overridden_by(env: Mapping[str, str]) -> tuple[str, ...]:
    """The recorded options a compile in ``env`` (its process's environment) leaves to the
    build's default, because ``env`` sets the setting they follow: ``recompile`` and the
    pass-dump compiles of a blame (``passdumps.compile_with_dumps``) both decide by it."""
    return tuple(option for option, setting in OPTION_SETTINGS.items() if setting in env)


def resolve_kernel(kernel_id: str) -> Any:
    """The ``JITFunction`` behind a kernel id (module.qualname), decorators unwrapped."""
    module_name, _, qualname = kernel_id.rpartition(".")
    obj: Any = None
    while module_name:
        try:
            obj = importlib.import_module(module_name)
            break
        except ImportError:
            module_name, _, head = module_name.rpartition(".")
            qualname = f"{head}.{qualname}"
    if obj is None:
        raise LookupError(f"module of {kernel_id} cannot be imported")
    for part in qualname.split("."):
        obj = getattr(obj, part)
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    # autotune / heuristics wrappers hold the kernel in .fn (and have arg_names themselves)
    while not isinstance(obj, (JITFunction, InterpretedFunction)) and hasattr(obj, "fn"):
        obj = obj.fn
    if not isinstance(obj, (JITFunction, InterpretedFunction)):
        raise LookupError(f"{kernel_id} is not a Triton JIT function")
    return _jit(obj)


def _jit(obj: Any) -> Any:
    """Compiling a kernel defined under TRITON_INTERPRET=1 needs a JIT function of its source."""
    from triton.runtime.jit import JITFunction

    if isinstance(obj, JITFunction):
        return obj
    if not hasattr(obj, "_tritongate_jit"):
        obj._tritongate_jit = JITFunction(obj.fn)
    return obj._tritongate_jit


def source_for(fn: Any, v: CompiledVariant) -> Any:
    """The ``ASTSource`` the JIT built, in the kernel's argument order: the index stores its
    mappings with sorted keys, and the order enters the source hash (and the cache key)."""
    from triton.compiler import ASTSource

    names = list(fn.arg_names)
    unknown = (set(v.signature) | set(v.constexprs) | set(v.specialization)) - set(names)
    if unknown:
        raise LookupError(f"the kernel's arguments changed: {sorted(unknown)} not in {names}")
    signature = {n: v.signature[n] for n in names if n in v.signature}
    constexprs = {n: v.constexprs[n] for n in names if n in v.constexprs}
    attrs = {(i,): [list(a) for a in v.specialization[n]] for i, n in enumerate(names) if n in v.specialization}
    return ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs)


def recompile(variants: list[CompiledVariant], target: Target, out: Path, *,
              codegen_env: Mapping[str, str | None] | None = None, progress: Any = None,
              sass: bool = True) -> AotOutcome:
    """Compile every launched variant for ``target`` into ``out/ttgir/``, its LLVM IR, PTX and
    (``sass``) SASS beside each ``.ttgir``; one that fails is listed."""
    import triton
    from triton.backends.compiler import GPUTarget

    gpu = GPUTarget(target.backend, target.arch, target.warp_size)
    outcome = AotOutcome(store=IRStore(out))
    launched = [v for v in variants if not v.sweep_loser]
    saved = {k: os.environ.get(k) for k in CODEGEN_ENV}
    # set in this process on purpose (decided before the record's settings are applied): a GPU
    # run under it compiles with fp fusion as it says, so the record's option gives way
    overridden = options_overridden_by(os.environ)
    pool = ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) if sass else None
    pending: list[tuple[CompiledVariant, str, dict[str, str], Future[dict[str, str]] | None]] = []
    try:
        for k, value in (codegen_env or {}).items():
            # one set here on purpose (DISABLE_MMA_V3=1 tritongate ir ...) wins
            if k in CODEGEN_ENV and k not in os.environ and value is not None:
                os.environ[k] = str(value)
        # as a GPU run compiles (backends.prepare_environment) when the record does not say:
        # a record made on the interpreter never set it, and line info changes the binary
        os.environ.setdefault("TRITON_DISABLE_LINE_INFO", "1")
        outcome.codegen_env = {k: os.environ[k] for k in CODEGEN_ENV if k in os.environ}
        for i, v in enumerate(launched):
            if progress is not None:
                progress(i, len(launched), v)
            try:
                fn = resolve_kernel(v.kernel)
                options = {k: val for k, val in v.options.items() if val is not None and k not in overridden}
                compiled = triton.compile(source_for(fn, v), target=gpu, options=options)
                text = ttgir_of(compiled)
                if text is None:
                    raise LookupError("the compiler gave no TTGIR")
                fresh = replace(describe_compiled(compiled, kernel=v.kernel, case=v.case),
                                launches=v.launches, sweep_loser=False, rows=v.rows)
                # the SASS (a cuobjdump process a kernel) is disassembled while the next compiles
                pending.append((fresh, text, lower_irs(compiled, sass=False),
                                pool.submit(lower_irs, compiled, levels=("sass",)) if pool else None))
            except Exception as exc:  # noqa: BLE001 - one variant failing is a finding, not a crash
                reason = " ".join(str(exc).split())[:300]
                outcome.failed.append(f"{v.case} {v.kernel} {v.name}: {type(exc).__name__}: {reason}")
    finally:
        os.environ.update({k: value for k, value in saved.items() if value is not None})
        for k in (k for k, value in saved.items() if value is None):
            os.environ.pop(k, None)
        for fresh, text, lower, sass_job in pending:  # in compile order: the same folder as one by one
            lower |= sass_job.result() if sass_job is not None else {}
            outcome.store.add(RowIR(variants=(fresh,), ttgir={fresh.compile_hash: text},  # type: ignore[union-attr]
                                    lower={fresh.compile_hash: lower}))
            outcome.compiled += 1
            for level in ("ttgir", *lower):
                outcome.levels[level] = outcome.levels.get(level, 0) + 1
        if pool is not None:
            pool.shutdown()
        outcome.store.close()  # type: ignore[union-attr]
    return outcome


def add_module_paths(identity: Mapping[str, Any]) -> None:
    """A suite's own op modules: importable from where the run found them."""
    suite = identity.get("suite") or {}
    for module in (suite.get("modules") or []) if isinstance(suite, Mapping) else []:
        file = module.get("file") if isinstance(module, Mapping) else None
        if isinstance(file, str) and file:
            folder = str(Path(file).resolve().parent)
            if folder not in sys.path:
                sys.path.append(folder)
