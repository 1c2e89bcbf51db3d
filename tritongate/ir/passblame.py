"""Which compiler pass first makes a kernel differ between two builds.

``passdumps`` gives, per build, the normalised IR after every pass of one kernel variant's
compile. ``first_difference`` aligns the two pass sequences by name (a PR may add, remove or
reorder passes: ``difflib.SequenceMatcher``), walks them in run order and names the first
pass whose output differs, whether its input was equal (then that pass is where the builds
part), or the added/removed pass right before the first differing output. When every dumped
pass agrees, the builds' final outputs (TTIR, TTGIR, LLVM IR, PTX, cubin) say at which level
below the dumps the difference is (ptxas, when only the cubin differs).
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from tritongate.ir.index import CompiledVariant
from tritongate.ir.passdumps import (PassDump, PassDumps, compile_with_dumps, level_of_final, normalize_pass_text,
                                     same_ir)

INPUT = "input"  # the pipeline's input differs: the frontend's TTIR, before any pass
PASS = "pass"  # an aligned pass's output differs
PIPELINE = "pipeline"  # the first differing output follows a pass only one build runs
BELOW = "below"  # every dumped pass agrees; a final output differs
NONE = "none"  # nothing differs (passes added or removed without effect are still listed)
LEVELS = ("ttir", "ttgir", "llir", "ptx", "cubin")
EXCERPT_LINES = 20
LINE_CHARS = 200  # TTGIR lines carry whole layouts


@dataclass(frozen=True)
class Blame:
    """Where two builds' compiles of one kernel variant first part.

    ``pass_name``/``stage``/``level``: the pass blamed (for ``pipeline``, the added or removed
    one); ``index_base``/``index_cand``: its position in each build's pass list (-1: absent);
    ``input_equal``: whether the blamed pass's input was the same in both (None: not known);
    ``next_pass``: for ``pipeline``, the first aligned pass whose output differs after it;
    ``detail``: the pass's own first differing step (the software pipeliner's dumps);
    ``added``/``removed``: every pass only the candidate / only the base runs, in order;
    ``levels``: per final output, whether it differs (None: a side lacks it)."""

    kind: str
    pass_name: str = ""
    stage: str = ""
    level: str = ""
    index_base: int = -1
    index_cand: int = -1
    input_equal: bool | None = None
    next_pass: str = ""
    detail: str = ""
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    levels: tuple[tuple[str, bool | None], ...] = ()
    first_level: str = ""
    excerpt: str = ""
    passes_base: int = 0
    passes_cand: int = 0

    def summary(self) -> str:
        where = f"{self.stage}, " if self.stage else ""
        pipeline = _pipeline_note(self.added, self.removed)
        if self.kind == INPUT:
            return f"first differs before any pass: the frontend's TTIR (the pipeline input){pipeline}"
        if self.kind == PASS:
            eq = {True: "input equal", False: "input differs", None: "input unknown"}[self.input_equal]
            step = f"; first in its step {self.detail}" if self.detail else ""
            return f"first differs after `{self.pass_name}` ({where}{eq}{step}){pipeline}"
        if self.kind == PIPELINE:
            how = "added" if self.index_base < 0 else "removed"
            then = (f"the {self.next_pass} output differs" if self.next_pass in LEVELS
                    else f"`{self.next_pass}` after it differs")
            return f"first differs after {how} pass `{self.pass_name}` ({where}{then}){pipeline}"
        if self.kind == BELOW:
            return (f"every dumped pass output equal; first differs at the {self.first_level} level"
                    f"{' (ptxas)' if self.first_level == 'cubin' else ''}{pipeline}")
        return f"no difference{pipeline}"

    def to_dict(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["added"], doc["removed"] = list(self.added), list(self.removed)
        doc["levels"] = {k: v for k, v in self.levels}
        doc["summary"] = self.summary()
        return doc


def _pipeline_note(added: Sequence[str], removed: Sequence[str]) -> str:
    parts = [f"{len(names)} pass{'es' if len(names) != 1 else ''} {how}"
             for names, how in ((removed, "removed"), (added, "added")) if names]
    return f" [pipeline: {', '.join(parts)}]" if parts else ""


def excerpt(base: str, cand: str, label: str, limit: int = EXCERPT_LINES) -> str:
    """A unified diff of two normalised texts, at most ``limit`` lines (a note says how many more)."""
    lines = [line if len(line) <= LINE_CHARS else line[:LINE_CHARS - 1] + "…"
             for line in difflib.unified_diff(base.splitlines(), cand.splitlines(), f"base/{label}",
                                              f"cand/{label}", n=1, lineterm="")]
    if len(lines) <= limit:
        return "\n".join(lines)
    return "\n".join(lines[:limit - 1] + [f"... {len(lines) - limit + 1} more diff lines"])


def _input(passes: Sequence[PassDump], i: int, first: str | None) -> tuple[str | None, str]:
    """The IR pass ``i`` started from, and its level."""
    if passes[i].input is not None:
        return passes[i].input, passes[i].level
    return (passes[i - 1].text, passes[i - 1].level) if i > 0 else (first, "mlir")


def _label(p: PassDump) -> str:
    return f"{p.name}@{p.stage}" if p.stage else p.name


def _levels(base: Mapping[str, str], cand: Mapping[str, str], base_cubin: str,
            cand_cubin: str) -> tuple[tuple[str, bool | None], ...]:
    def differs(level: str) -> bool | None:
        if level == "cubin":
            return None if not base_cubin or not cand_cubin else base_cubin != cand_cubin
        b, c = base.get(level), cand.get(level)
        return None if not b or not c else not same_ir(b, c, level_of_final(level))
    return tuple((level, differs(level)) for level in LEVELS)


def _first_internal(b: PassDump, c: PassDump) -> str:
    for (bn, bt), (cn, ct) in zip(b.internal, c.internal):
        if bn != cn or not same_ir(bt, ct, "mlir"):
            return bn if bn == cn else f"{bn}/{cn}"
    return ""


def _diff(b: str, c: str, level: str, label: str) -> str:
    return excerpt(normalize_pass_text(b, level), normalize_pass_text(c, level), label)


def first_difference(base: PassDumps | Sequence[PassDump], cand: PassDumps | Sequence[PassDump], *,
                     base_input: str | None = None, cand_input: str | None = None,
                     base_finals: Mapping[str, str] | None = None, cand_finals: Mapping[str, str] | None = None,
                     base_cubin: str = "", cand_cubin: str = "") -> Blame:
    """Align two builds' passes by name and return where their outputs first differ. Given
    ``PassDumps``, their inputs, finals and cubin hashes are used; given pass lists, the
    keyword arguments (the pipeline inputs; the final outputs by level) stand in."""
    if isinstance(base, PassDumps):
        base_input, base_finals, base_cubin, base = base.input, base.finals, base.cubin_sha256, base.passes
    if isinstance(cand, PassDumps):
        cand_input, cand_finals, cand_cubin, cand = cand.input, cand.finals, cand.cubin_sha256, cand.passes
    b, c = list(base), list(cand)
    common = {"passes_base": len(b), "passes_cand": len(c)}
    levels = _levels(base_finals or {}, cand_finals or {}, base_cubin, cand_cubin)
    matcher = difflib.SequenceMatcher(None, [p.key for p in b], [p.key for p in c], autojunk=False)
    added: list[str] = []
    removed: list[str] = []
    found: Blame | None = None
    # A different pipeline input is the frontend's change only while it lasts: a difference the
    # first passes absorb (3.6 vs 3.7 mangle an inlined helper's name, gone after `inline`) is not
    # what makes the code differ, so the search goes on from the first equal output.
    input_blame: Blame | None = None
    if base_input and cand_input and not same_ir(base_input, cand_input, "mlir"):
        input_blame = Blame(INPUT, "(input)", b[0].stage if b else "", "mlir", input_equal=False,
                            excerpt=_diff(base_input, cand_input, "mlir", "input"), **common)
    last_change: tuple[PassDump, int, int] | None = None  # the first since the last equal pass
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            for i in range(i1, i2):
                removed.append(_label(b[i]))
                last_change = last_change or (b[i], i, -1)
            for j in range(j1, j2):
                added.append(_label(c[j]))
                last_change = last_change or (c[j], -1, j)
            continue
        for i, j in zip(range(i1, i2), range(j1, j2)):
            if found is not None:
                break
            bp, cp = b[i], c[j]
            if same_ir(bp.text, cp.text, bp.level):
                last_change = input_blame = None
                continue
            if input_blame is not None:  # still the input's difference, carried: not this pass's
                continue
            (in_b, level_b), (in_c, level_c) = _input(b, i, base_input), _input(c, j, cand_input)
            input_equal = (None if in_b is None or in_c is None or level_b != level_c
                           else same_ir(in_b, in_c, level_b))
            if last_change is not None and input_equal is not True:
                found = _pipeline_blame(last_change, _label(bp))
            else:
                found = Blame(PASS, bp.name, bp.stage, bp.level, i, j, input_equal, detail=_first_internal(bp, cp))
            found = replace(found, excerpt=_diff(bp.text, cp.text, bp.level, _label(bp)), **common)
    tail = {"added": tuple(added), "removed": tuple(removed), "levels": levels,
            "first_level": next((k for k, v in levels if v), "")}
    found = found or input_blame
    if found is not None:
        return replace(found, **tail)
    if last_change is not None and tail["first_level"]:  # the last passes differ, and then the code
        return _pipeline_blame(last_change, tail["first_level"], **common, **tail)
    return Blame(BELOW if tail["first_level"] else NONE, **common, **tail)


def _pipeline_blame(change: tuple[PassDump, int, int], next_pass: str, **kw: Any) -> Blame:
    """Blame the pass only one build runs (``change``: it, its index in base, in cand)."""
    p, bi, cj = change
    return Blame(PIPELINE, p.name, p.stage, p.level, bi, cj, None, next_pass, **kw)


def blame_variant(base_python: str, cand_python: str, variant: CompiledVariant, target: str, out: Path, *,
                  base_env: Mapping[str, str] | None = None, cand_env: Mapping[str, str] | None = None,
                  **compile_kw: Any) -> Blame:
    """Compile ``variant`` under both builds with every pass dumped (``out/base``, ``out/cand``,
    fresh folders; ``*_env``: a build's environment overlay; ``compile_kw`` as
    ``passdumps.compile_with_dumps`` takes) and blame it."""
    shared = dict(compile_kw.pop("env", None) or {})
    base, cand = (compile_with_dumps(python, variant, target, Path(out) / side, env={**shared, **(env or {})},
                                     **compile_kw)
                  for side, python, env in (("base", base_python, base_env), ("cand", cand_python, cand_env)))
    return first_difference(base, cand)
