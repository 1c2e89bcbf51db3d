"""Which compiled kernels a row produced, read from Triton's ``CompiledKernel`` objects.

Wrapping ``JITFunction.run`` while a row's first launch runs sees every variant compiled for
the row; one not launched in the recording pass is a *sweep loser*: indexed, IR not kept.
What this Triton does not expose is skipped with a note: IR is evidence, not a gate input.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, replace
from typing import Any, Iterator

from tritongate.atomicio import jsonable
from tritongate.backends import CAPTURE_ONLY_ENV, capture_only_active
from tritongate.ir.index import OPTION_KEYS, CompiledVariant
from tritongate.ir.variants import binary_hash, interpreted_specialization, kernel_id, patch_run


@dataclass
class CompiledSeen:
    """Compiled kernels observed during a block: compile hash -> (kernel id, kernel)."""
    kernels: dict[str, tuple[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(self, fn: Any, compiled: Any) -> None:
        compiled = _resolved(compiled)
        digest = getattr(compiled, "hash", None)
        if isinstance(digest, str) and digest and getattr(compiled, "asm", None) is not None:
            self.kernels.setdefault(digest, (kernel_id(fn), compiled))


def _resolved(compiled: Any) -> Any:
    """3.5+ may hand back a future while compiling asynchronously."""
    result = getattr(compiled, "result", None)
    return result() if callable(result) and not hasattr(compiled, "asm") else compiled


@contextlib.contextmanager
def observe_compiled() -> Iterator[CompiledSeen]:
    """Every ``CompiledKernel`` a JIT launch returns inside the block, sweeps included (not thread-safe)."""
    seen = CompiledSeen()
    if install_capture_only():
        seen.notes.append(f"{CAPTURE_ONLY_ENV}=1: interpreted launches indexed, not executed")
    try:
        from triton.runtime.jit import JITFunction
    except ImportError:  # pragma: no cover - triton is a dependency
        seen.notes.append("triton.runtime.jit.JITFunction not found: no IR captured")
        yield seen
        return

    def make_run(original: Any) -> Any:
        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(self, *args, **kwargs)
            try:
                seen.add(self, result)
            except Exception as exc:  # noqa: BLE001 - IR capture must never fail a row
                seen.notes.append(f"IR capture skipped a kernel: {type(exc).__name__}: {exc}")
            return result
        return run
    restore_jit = patch_run(JITFunction, make_run)
    restore_interpreted = _observe_interpreted(seen)
    try:
        yield seen
    finally:
        restore_jit()
        restore_interpreted()


def _observe_interpreted(seen: CompiledSeen) -> Any:
    """Under the interpreter: each launch's GPU specialization as if it had compiled (Triton
    <= 3.5 has no class-level ``InterpretedFunction.run`` to patch: nothing indexed, noted)."""
    from triton.runtime.interpreter import InterpretedFunction

    if "run" not in vars(InterpretedFunction):
        seen.notes.append("this Triton's interpreter has no class-level run: no IR index from a CPU run")
        return lambda: None

    def make_run(original: Any) -> Any:
        def run(self: Any, *args: Any, grid: Any = None, warmup: bool = False, **kwargs: Any) -> Any:
            if not warmup:
                spec = interpreted_specialization(self, args, kwargs, seen.notes)
                if spec is not None:
                    seen.add(self, spec)
            return original(self, *args, grid=grid, warmup=warmup, **kwargs)
        return run
    return patch_run(InterpretedFunction, make_run)


def install_capture_only(environ: Any = None) -> bool:
    """With ``TRITONGATE_CAPTURE_ONLY=1`` under the interpreter, interpreted launches are indexed
    but not executed, for the whole process (the pr suite's shapes take hours per launch on
    the interpreter): every row is then a CORRECTNESS_MISMATCH, an IR index, never a baseline.
    Returns whether it was installed."""
    if not capture_only_active(environ):
        return False
    from triton.runtime.interpreter import InterpretedFunction

    if getattr(InterpretedFunction.run, "_tritongate_capture_only", False) or "run" not in vars(InterpretedFunction):
        return "run" in vars(InterpretedFunction)

    def run(self: Any, *args: Any, grid: Any = None, warmup: bool = False, **kwargs: Any) -> Any:
        return None

    run._tritongate_capture_only = True  # type: ignore[attr-defined]
    InterpretedFunction.run = run
    return True


def describe_compiled(compiled: Any, *, kernel: str, case: str) -> CompiledVariant:
    """A ``CompiledKernel`` as an index entry (launch counts and flags are set by the caller);
    ``AttributeError``/``TypeError`` on a Triton that exposes less."""
    src = compiled.src
    meta = compiled.metadata
    arg_names = list(getattr(src.fn, "arg_names", ()))

    def name_of(key: Any) -> str:
        # 3.3+ key constants and attrs by (arg index,); older versions by index or name
        index = key[0] if isinstance(key, tuple) and len(key) == 1 else key
        return arg_names[index] if isinstance(index, int) and index < len(arg_names) else str(key)

    signature = src.signature
    if not isinstance(signature, dict):
        raise TypeError("ASTSource.signature is not a mapping on this Triton")
    signature = {name_of(k) if not isinstance(k, str) else k: str(v) for k, v in signature.items()}
    constexprs = {name_of(k): jsonable(v) for k, v in (getattr(src, "constants", None) or {}).items()}
    attrs = {name_of(k): jsonable(v) for k, v in (getattr(src, "attrs", None) or {}).items()}
    options = {k: jsonable(getattr(meta, k, None)) for k in OPTION_KEYS}
    target = getattr(meta, "target", None)
    return CompiledVariant(
        case=case, kernel=kernel, signature=signature, constexprs=constexprs, specialization=attrs,
        options=options, compile_hash=str(compiled.hash), source_hash=str(src.hash()),
        binary_hash=binary_hash(compiled),
        target=f"{target.backend}:{target.arch}" if target is not None else "")


def ttgir_of(compiled: Any) -> str | None:
    asm = getattr(compiled, "asm", None) or {}
    text = asm.get("ttgir") if hasattr(asm, "get") else None
    return text if isinstance(text, str) else None


# the levels below TTGIR kept beside it (``<variant>.llir`` ...), top down: ``tritongate ir``
# keeps them so ir-diff can say where two builds' code first differs; GPU runs keep TTGIR only
LOWER_LEVELS = ("llir", "ptx", "sass")


def lower_irs(compiled: Any, *, sass: bool = True, levels: tuple[str, ...] = LOWER_LEVELS) -> dict[str, str]:
    """LLVM IR, PTX and (``sass``: disassembled by the ``cuobjdump`` the Triton wheel ships, a
    process of about 0.3 s a kernel) SASS of a compiled kernel, of ``levels``; a level this backend or
    build lacks is left out."""
    asm = getattr(compiled, "asm", None) or {}
    out: dict[str, str] = {}
    for level in levels:
        if level == "sass" and (not sass or "cubin" not in asm):
            continue
        try:  # "sass" is computed on first access (Triton's AsmDict) and may fail without the tool
            text = asm[level]
        except Exception:  # noqa: BLE001 - a missing level is absent, never a failed compile
            continue
        if isinstance(text, str) and text:
            out[level] = text
    return out


@dataclass(frozen=True)
class RowIR:
    """A row's compiled variants (launched and sweep losers) and the TTGIR of the launched;
    ``lower``: compile hash -> level (``LOWER_LEVELS``) -> text, where kept."""
    variants: tuple[CompiledVariant, ...] = ()
    ttgir: dict[str, str] = field(default_factory=dict)  # compile hash -> TTGIR text
    notes: tuple[str, ...] = ()
    lower: dict[str, dict[str, str]] = field(default_factory=dict)


def row_ir(seen: CompiledSeen, launched: dict[str, int] | None, *, case: str, row: str) -> RowIR:
    """``seen``: every compiled kernel of the row; ``launched``: compile hash -> launches in the
    recording pass, or None when the row crashed before it ended (then every variant keeps its IR)."""
    variants, texts, notes = [], {}, list(seen.notes)
    for digest, (kernel, compiled) in sorted(seen.kernels.items()):
        try:
            v = describe_compiled(compiled, kernel=kernel, case=case)
        except (AttributeError, TypeError, KeyError, IndexError) as exc:
            notes.append(f"IR of {kernel} not indexed on this Triton: {type(exc).__name__}: {exc}")
            continue
        count = (launched or {}).get(digest, 0)
        loser = launched is not None and count == 0
        variants.append(replace(v, launches=count, sweep_loser=loser, rows=(row,)))
        if not loser and not getattr(compiled, "interpreted", False):  # interpreted: nothing compiled
            text = ttgir_of(compiled)
            if text is None:
                notes.append(f"no TTGIR for {kernel} on this backend")
            else:
                texts[digest] = text
    return RowIR(variants=tuple(variants), ttgir=texts, notes=tuple(notes))
