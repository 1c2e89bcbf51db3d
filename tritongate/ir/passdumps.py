"""The IR after every compiler pass of one kernel variant, from a given build's interpreter.

Triton 3.6 prints, with ``MLIR_ENABLE_DUMP=1``, the module *before* every MLIR pass
(``// -----// IR Dump Before TritonGPUCoalesce (tritongpu-coalesce) ('builtin.module'
operation) //----- //``; never after one) and, with ``LLVM_IR_ENABLE_DUMP=1``, the LLVM IR
*after* every LLVM pass: the optimizer's (``; *** IR Dump After InstCombinePass on k ***``),
the NVPTX code generator's IR passes (``*** IR Dump After SROA (sroa) ***``) and machine
passes (``# *** IR Dump After ... (nvptx-isel) ***:``). All go to stderr, unbuffered, unless
``MLIR_DUMP_PATH`` names a *file* (one buffered stream for the whole process, not a folder):
it is left unset, so the stage markers this module's child writes between Triton's stages
(``knobs.runtime.add_stages_inspection_hook``) land in order. After a stage the child prints
the MLIR module as the stage left it: the last MLIR pass of a stage has no dump of its own.
A pass's output is the next dump (or the stage's module); its input the dump before it.
Everything is normalised (``normalize_pass_text``) so two compiles of one kernel are equal.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from tritongate.childenv import build_env, package_link_dir, with_overlay
from tritongate.errors import UsageError
from tritongate.ir.index import CompiledVariant
from tritongate.ir.normalize import normalize_ptx, normalize_ttgir, strip_abs_paths

DUMP_LOG = "dumps.log"  # the child's stderr: every dump and stage marker, raw
DUMP_LOG_GZ = DUMP_LOG + ".gz"  # as kept: 60-70 MB a matmul or attention kernel raw, about 20x less gzipped
COMPILED_JSON = "compiled.json"  # what the child compiled, with which build, how long
PATH_DIR = ".pythonpath"  # the link to this tritongate on the child's path; removed after
FINALS = ("ttir", "ttgir", "llir", "ptx")
_MARK = "// tritongate-passdumps: "

_MLIR_BEFORE = re.compile(r"^// -----// IR Dump Before (\S+)(?: \(([^()'\s]+)\))?(?: \((.*)\))? //----- //\s*$")
# MLIR as Triton 3.8 links it: "Before InlinerPass: inline{default-pipeline=...} ('builtin.module' operation)"
_MLIR_BEFORE_ARGS = re.compile(r"^// -----// IR Dump Before (\S+): ([^\s{(]+)(?:\{.*?\})? \(('[^']*' operation.*)\) //----- //\s*$")
_PIPELINER = re.compile(r"^// -----// SoftwarePipeliner internal IR Dump After: (.*?)\s*$")
_LLVM_NEW = re.compile(r"^; \*\*\* IR Dump After (.+?) on (.+?) \*\*\*\s*$")
_LLVM_LEGACY = re.compile(r"^\*\*\* IR Dump After (.+?) \*\*\*\s*$")
_LLVM_MIR = re.compile(r"^# \*\*\* IR Dump After (.+?) \*\*\*:?\s*$")
_ARG = re.compile(r"\(([\w.<>:-]+)\)\s*$")  # "Global Value Numbering (gvn)" -> gvn


@dataclass(frozen=True)
class PassDump:
    """One pass run: its name (the pass argument, ``tritongpu-coalesce``; an LLVM pass's class,
    ``InstCombinePass``), the Triton stage that ran it (``ttir``/``ttgir``/``llir``/``ptx``), the
    IR level (``mlir``/``llvm``/``mir``) and its normalised output. ``input`` is set where the
    pass's input is not the previous pass's output (a stage's first MLIR pass); ``internal``:
    dumps a pass printed of its own steps (the software pipeliner's), (step, text)."""

    name: str
    stage: str
    level: str
    text: str  # as dumped; ``normalized`` for comparing
    title: str = ""
    input: str | None = None
    internal: tuple[tuple[str, str], ...] = ()

    @property
    def key(self) -> str:
        return f"{self.level}:{self.name}"

    @property
    def normalized(self) -> str:
        return normalize_pass_text(self.text, self.level)


def same_ir(a: str | None, b: str | None, level: str) -> bool:
    """Whether two dumps are the same code: byte-equal (most are: normalising them is the
    slow part, so it is done only for texts that differ), else equal once normalised."""
    if a is None or b is None:
        return a is b
    return a == b or normalize_pass_text(a, level) == normalize_pass_text(b, level)


@dataclass(frozen=True)
class PassDumps:
    """Every pass of one compile, in the order they ran, and the compile's own outputs."""

    input: str  # the IR entering the first pass (the frontend's TTIR), as dumped
    passes: tuple[PassDump, ...]
    finals: Mapping[str, str] = field(default_factory=dict)  # ttir/ttgir/llir/ptx the compile returned
    cubin_sha256: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict)  # build, variant, wall_s, bytes


# ---------------------------------------------------------------------------- normalising

_INLINE_ALIAS = re.compile(r"^(#[\w$.-]+) = (.*)$")
_NAME = re.compile(r'"(?:[^"\\\n]|\\.)*"|(?<![\w$.@%-])([%^])([\w$.-]+)')
_LLVM_DROP = re.compile(r"^(?:; ModuleID|source_filename|!llvm\.dbg\.cu|!\d+ = (?:distinct )?!DI).*\n?", re.M)
_MIR_LOC = re.compile(r"; [^;\n]*:\d+:\d+[ \t]*$", re.M)  # an instruction's source line, as a comment
_LLVM_DBG = re.compile(r",?\s*(?:!dbg !\d+|debug-location !\d+|debug-instr-number \d+)")


def inline_aliases(text: str) -> str:
    """MLIR attribute aliases (``#blocked = #ttg.blocked<...>``) written out where used: a
    module printed by Triton has them, a pass dump does not."""
    aliases: dict[str, str] = {}
    body: list[str] = []
    for line in text.split("\n"):
        m = _INLINE_ALIAS.match(line)
        if m and not line.startswith("#loc"):
            aliases[m.group(1)] = _substitute(m.group(2), aliases)
        else:
            body.append(line)
    return _substitute("\n".join(body), aliases) if aliases else text


def _substitute(text: str, aliases: Mapping[str, str]) -> str:
    if not aliases:
        return text
    pattern = re.compile("|".join(re.escape(a) for a in sorted(aliases, key=len, reverse=True)) + r"(?![\w$.-])")
    return pattern.sub(lambda m: aliases[m.group()], text)


def canonical_names(text: str) -> str:
    """SSA values (``%0``, ``%arg3``, ``%c1_i32``, ``%a``) and block labels (``^bb2``; LLVM's
    ``5:``) renamed by order of first appearance, string literals left alone."""
    seen: dict[str, str] = {}

    def rename(m: re.Match[str]) -> str:
        if m.group(1) is None:
            return m.group()
        token = m.group()
        if token not in seen:
            seen[token] = f"{m.group(1)}{'v' if m.group(1) == '%' else 'b'}{len(seen)}"
        return seen[token]

    text = re.sub(r"^(\d+):", r"%\1:", text, flags=re.M)  # an unnamed LLVM block's label
    return _NAME.sub(rename, text)


@functools.lru_cache(maxsize=64)
def normalize_pass_text(text: str, level: str = "mlir") -> str:
    """IR of one dump (``level``: mlir, llvm, mir, ptx) made comparable across compiles and
    builds: locations, debug records, absolute paths, aliases and blank lines removed, value
    and block names positional. Idempotent."""
    if level == "ptx":
        return normalize_ptx(text)
    if level == "mlir":
        text = inline_aliases(normalize_ttgir(text))
    else:
        text = _LLVM_DROP.sub("", text)
        text = _LLVM_DBG.sub("", text) if ("!dbg" in text or "debug-" in text) else text
        text = _MIR_LOC.sub("", text) if level == "mir" else text
        text = strip_abs_paths(text) if "/" in text else text
    lines = [line.rstrip() for line in canonical_names(text).split("\n")]
    return "\n".join(line for line in lines if line.strip()) + "\n"


def level_of_final(kind: str) -> str:
    return {"ptx": "ptx", "llir": "llvm"}.get(kind, "mlir")


# ---------------------------------------------------------------------------- parsing

def _header(line: str) -> tuple[str, str, str] | None:
    """(kind, name, title) of a dump header line, or None for an IR line."""
    if line.startswith(_MARK):
        return "mark", line[len(_MARK):].strip(), ""
    if not line.startswith(("// -----//", "; ***", "*** IR", "# *** IR")):
        return None
    if m := _MLIR_BEFORE.match(line):
        return "mlir", m.group(2) or m.group(1), m.group(1) + (f" {m.group(3)}" if m.group(3) else "")
    if m := _MLIR_BEFORE_ARGS.match(line):
        return "mlir", m.group(2), f"{m.group(1)} {m.group(3)}"
    if m := _PIPELINER.match(line):
        return "internal", m.group(1), "SoftwarePipeliner"
    if m := _LLVM_NEW.match(line):
        return "llvm", m.group(1), f"on {m.group(2)}"
    for kind, pattern in (("mir", _LLVM_MIR), ("llvm", _LLVM_LEGACY)):
        if m := pattern.match(line):
            arg = _ARG.search(m.group(1))
            return kind, arg.group(1) if arg else m.group(1), m.group(1)
    return None


def _blocks(text: str) -> list[tuple[str, str, str, str]]:
    """(kind, name, title, body) in stream order; text before the first header is dropped."""
    out: list[tuple[str, str, str, str]] = []
    current: tuple[str, str, str] | None = None
    body: list[str] = []
    for line in text.split("\n"):
        head = _header(line)
        if head is None:
            body.append(line)
            continue
        if current is not None:
            out.append((*current, "\n".join(body)))
        current, body = head, []
    if current is not None:
        out.append((*current, "\n".join(body)))
    return out


def parse_dump_stream(text: str) -> tuple[str, list[PassDump]]:
    """The stream of one compile's dumps (``dumps.log``) as (pipeline input, passes in run order)."""
    interned: dict[str, str] = {}  # most passes change nothing: one string per distinct text
    keep = lambda body: interned.setdefault(body, body)  # noqa: E731

    stage, pipeline_input = "", None
    passes: list[PassDump] = []
    pending: dict[str, Any] | None = None  # an MLIR pass whose output is the next MLIR text

    def close(output: str) -> None:
        nonlocal pending
        if pending is not None:
            passes.insert(pending.pop("at"), PassDump(text=output, **pending))
            pending = None

    for kind, name, title, body in _blocks(text):
        if kind == "mark":
            words = name.split()
            if len(words) == 3 and words[0] == "stage":
                stage = words[1] if words[2] == "begin" else stage
                if words[2] == "mlir-output":
                    close(keep(body))
            continue
        if kind == "mlir":
            ir = keep(body)
            fresh = pending is None
            close(ir)
            pipeline_input = ir if pipeline_input is None else pipeline_input
            pending = {"name": name, "stage": stage, "level": "mlir", "title": title, "at": len(passes),
                       "input": ir if fresh else None, "internal": ()}
        elif kind == "internal" and pending is not None:
            pending["internal"] += ((name, keep(body)),)
        elif kind in ("llvm", "mir"):
            passes.append(PassDump(name=name, stage=stage, level=kind, title=title, text=keep(body)))
    close("")  # a stream cut short: the last pass's output is unknown
    return pipeline_input or "", passes


# ---------------------------------------------------------------------------- compiling

def child_env(parent: Mapping[str, str], *, llvm: bool = True) -> dict[str, str]:
    """What the child runs with: no runner file commands, no interpreter, line info off (as GPU
    runs and ``tritongate ir`` compile), dumps on (``compile_with_dumps`` puts tritongate on its
    path)."""
    env = build_env(parent)
    env.pop("TRITON_INTERPRET", None)
    env.pop("MLIR_DUMP_PATH", None)  # a file, buffered: the stage markers would land out of order
    env.setdefault("TRITON_DISABLE_LINE_INFO", "1")
    env["MLIR_ENABLE_DUMP"] = "1"
    env["LLVM_IR_ENABLE_DUMP"] = "1" if llvm else "0"
    return env


def compile_with_dumps(python: str, variant: CompiledVariant, target: str, out: Path, *,
                       env: Mapping[str, str] | None = None, drop_options: Sequence[str] = (),
                       identity: Mapping[str, Any] | None = None, llvm: bool = True,
                       timeout_s: float = 900.0) -> PassDumps:
    """Compile ``variant`` for ``target`` (``cuda:90``) under ``python`` (a build's interpreter)
    with every pass dumped into ``out`` (a fresh folder), and parse the dumps. ``env``: extra
    settings for the child (``TRITON_DEFAULT_FP_FUSION``); ``drop_options``: recorded options left
    to the build's default, with those the child's settings override (as ``tritongate ir``
    compiles: ``aot.options_overridden_by``); ``identity``: the run's, for its op modules."""
    from tritongate.ir.aot import options_overridden_by

    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"{out}: not empty; pass dumps go into a fresh folder")
    out.mkdir(parents=True, exist_ok=True)
    lead = out / PATH_DIR  # a link to this tritongate, never its parent folder (made once the spec is)
    child = with_overlay(child_env(os.environ, llvm=llvm), env, lead=str(lead))
    child["TRITON_CACHE_DIR"] = str(out / "triton-cache")
    # decided by the child's environment, as `ir` by its own (the recorded enable_fp_fusion won)
    drop = list(dict.fromkeys((*drop_options, *options_overridden_by(child))))
    spec = {"variant": asdict(variant), "target": target, "drop_options": drop, "suite": (identity or {}).get("suite")}
    (out / "spec.json").write_text(json.dumps(spec, indent=1, default=list) + "\n", encoding="utf-8")
    package_link_dir(lead)
    t0 = time.monotonic()
    try:
        with open(out / DUMP_LOG, "wb") as log:
            done = subprocess.run([python, "-m", "tritongate.ir.passdumps", "--spec", str(out / "spec.json"),
                                   "--out", str(out)], stdout=subprocess.DEVNULL, stderr=log, env=child,
                                  timeout=timeout_s, check=False)
    finally:  # a timeout too: the folder keeps the dumps and the log, not the helpers
        shutil.rmtree(out / "triton-cache", ignore_errors=True)  # the same IR again, in Triton's layout
        shutil.rmtree(lead, ignore_errors=True)
    wall = time.monotonic() - t0
    if done.returncode != 0 or not (out / COMPILED_JSON).is_file():
        tail = (out / DUMP_LOG).read_bytes()[-1500:].decode("utf-8", "replace")
        raise RuntimeError(f"{python}: compiling {variant.kernel} with dumps failed (exit {done.returncode}): "
                           f"{tail.strip().splitlines()[-1] if tail.strip() else 'no output'}")
    with open(out / DUMP_LOG, "rb") as raw, gzip.open(out / DUMP_LOG_GZ, "wb", compresslevel=6) as packed:
        shutil.copyfileobj(raw, packed, 1 << 20)
    (out / DUMP_LOG).unlink()
    return load_dumps(out, extra={"wall_s": round(wall, 3)})


def load_dumps(folder: Path, *, extra: Mapping[str, Any] | None = None) -> PassDumps:
    """A folder ``compile_with_dumps`` wrote, parsed again."""
    folder = Path(folder)
    meta = json.loads((folder / COMPILED_JSON).read_text(encoding="utf-8"))
    t0 = time.monotonic()
    if (folder / DUMP_LOG).is_file():
        text = (folder / DUMP_LOG).read_text(encoding="utf-8", errors="replace")
    else:
        with gzip.open(folder / DUMP_LOG_GZ, "rt", encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    first, passes = parse_dump_stream(text)
    finals = {kind: (folder / f"final.{kind}").read_text(encoding="utf-8", errors="replace")
              for kind in FINALS if (folder / f"final.{kind}").is_file()}
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    meta = {**meta, "parse_s": round(time.monotonic() - t0, 3), "bytes": size, "folder": str(folder),
            **(extra or {})}
    return PassDumps(input=first, passes=tuple(passes), finals=finals,
                     cubin_sha256=meta.get("cubin_sha256", ""), meta=meta)


# ---------------------------------------------------------------------------- the child

def _mark(text: str) -> None:
    sys.stderr.flush()
    os.write(2, (_MARK + text + "\n").encode("utf-8"))


_HOOK_KEY = "tritongate-passdumps-1"


def _stage_hook(backend: Any = None, stages: dict[str, Any] | None = None, options: Any = None,
                language: Any = None, capability: Any = None) -> tuple[str, str] | None:
    """Wrap every stage: a marker before it; after an MLIR stage the module as it left it.
    Triton 3.7 and later also call the hook with no arguments for the part of the cache key it
    adds (``compiler.compile``: ``key, hash = hook()``); 3.6 only calls it with the stages."""
    if stages is None:
        return _HOOK_KEY, hashlib.sha256(_HOOK_KEY.encode()).hexdigest()
    for name, fn in list(stages.items()):
        def run(src: Any, metadata: Any, _fn: Any = fn, _name: str = name) -> Any:
            _mark(f"stage {_name} begin")
            result = _fn(src, metadata)
            if not isinstance(src, (str, bytes)):  # an MLIR module, changed in place
                _mark(f"stage {_name} mlir-output")
                os.write(2, (str(src) + "\n").encode("utf-8"))
            _mark(f"stage {_name} end")
            return result
        stages[name] = run
    return None


def _child(spec_path: Path, out: Path) -> int:
    import triton
    from triton import knobs
    from triton.backends.compiler import GPUTarget

    from tritongate.ir.aot import Target, add_module_paths, resolve_kernel, source_for

    spec = json.loads(spec_path.read_text(encoding="utf-8"))
    raw = dict(spec["variant"])
    raw["rows"] = tuple(raw.get("rows") or ())
    variant = CompiledVariant(**raw)
    if spec.get("suite"):
        add_module_paths({"suite": spec["suite"]})
    target = Target.parse(spec["target"])
    drop = set(spec.get("drop_options") or ())
    options = {k: v for k, v in variant.options.items() if v is not None and k not in drop}
    hooked = hasattr(knobs.runtime, "add_stages_inspection_hook")
    if hooked:
        knobs.runtime.add_stages_inspection_hook = _stage_hook
    t0 = time.monotonic()
    compiled = triton.compile(source_for(resolve_kernel(variant.kernel), variant),
                              target=GPUTarget(target.backend, target.arch, target.warp_size), options=options)
    wall = time.monotonic() - t0
    _mark("compile end")
    for kind in FINALS:
        text = compiled.asm.get(kind)
        if isinstance(text, str):
            (out / f"final.{kind}").write_text(text, encoding="utf-8")
    cubin = compiled.asm.get("cubin")
    meta = {"python": sys.executable, "triton": triton.__version__, "triton_dir": str(Path(triton.__file__).parent),
            "kernel": variant.kernel, "case": variant.case, "variant": variant.name, "target": spec["target"],
            "options": options, "stage_markers": hooked, "compile_s": round(wall, 3),
            "cubin_sha256": hashlib.sha256(cubin).hexdigest() if isinstance(cubin, bytes) else "",
            "env": {k: os.environ.get(k) for k in ("TRITON_DISABLE_LINE_INFO", "TRITON_DEFAULT_FP_FUSION",
                                                    "DISABLE_MMA_V3", "DISABLE_LLVM_OPT") if k in os.environ}}
    (out / COMPILED_JSON).write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="compile one kernel variant with per-pass dumps (stderr)")
    ap.add_argument("--spec", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ns = ap.parse_args()
    sys.exit(_child(ns.spec, ns.out))
