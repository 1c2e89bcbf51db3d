"""What a verdict says, worked out once from the verdict.json document, for every face of it:
the comment and verdict.md (``verdict_markdown``) and the terminal (``verdict_terminal``).

Pure: no I/O, no torch, no pandas (the trusted comment job imports this). Strings that come
from the document are returned raw here; each renderer escapes them at its one choke point
(``report.untrusted``). Fields that older verdicts lack (the three-state headline, which rows
could not resolve their target and what stopped them) are worked out from the fields they have.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from tritongate.errors import ExitCode
from tritongate.model.verdict import (CALLED, NOT_JUDGED, QUIET, SHOWN_NOT_FAILING, Verdict, VerdictDoc,
                                      VerdictRowDoc, VerdictSideDoc, spread_bound)

_TOL = 1e-9  # a detectable effect equal to its target (as floats) reached it


def _get(row: Any, name: str) -> Any:
    return row.get(name) if isinstance(row, Mapping) else getattr(row, name, None)


def row_target(row: Any) -> float | None:
    """The effect a row had to be able to resolve: its paired target, else the op's minimum; the
    minimum where a gate asked for less than the pairing aimed at (re-judged with a larger one)."""
    target: float | None = _get(row, "target_effect")
    minimum: float | None = _get(row, "min_effect")
    if target is None or minimum is None:
        return target if target is not None else minimum
    return max(target, minimum)


def unconfirmed(row: Any) -> bool:
    """A change seen and not confirmed: called on fewer pairs than a call needs (a budget
    stopped the row), not repeated on fresh worker pairs, or resting on one worker pair."""
    return _get(row, "verdict") == Verdict.UNCONFIRMED or (
        _get(row, "verdict") in CALLED and bool(_get(row, "call_unconfirmed")))


def is_blind(row: Any) -> bool:
    """A timed row that found no change but could not have seen one of its target's size.
    A called row resolved its effect; a byte-identical one cannot differ."""
    if _get(row, "verdict") != Verdict.UNCHANGED or not _get(row, "timed"):
        return False
    reached = _get(row, "reached_target")
    if reached is None:
        reached = _get(row, "target_reached")
    if reached is not None:
        return not reached
    detectable, target = _get(row, "detectable_effect"), row_target(row)
    if target is None:
        return False
    return detectable is None or detectable > target + _TOL


def fallback_state(failed: bool, rows: Iterable[Any]) -> tuple[str, list[Any]]:
    """("pass" | "blind" | "fail", the blind rows) for a verdict that does not carry its state,
    from whether something failed and its rows: a verdict that judged no row saw nothing, so
    it is blind unless something failed."""
    rows = list(rows)
    blind = [r for r in rows if is_blind(r) or unconfirmed(r)]
    if failed:
        return "fail", blind
    seen = any(_get(r, "verdict") not in NOT_JUDGED for r in rows)
    return ("blind" if blind or not seen else "pass"), blind


@dataclass(frozen=True)
class RowView:
    doc: VerdictRowDoc

    @property
    def parts(self) -> tuple[str, str, str]:
        return (self.doc.op, self.doc.case, self.doc.dtype)

    @property
    def interval(self) -> tuple[float, float] | None:
        """The estimate ± its noise floor, as candidate / base - 1."""
        d = self.doc
        if d.effect_interval is not None:
            return (d.effect_interval[0], d.effect_interval[1])
        if d.effect is None or d.noise_floor is None or d.effect <= -1 or not math.isfinite(d.noise_floor):
            return None
        log, half = math.log1p(d.effect), math.log1p(d.noise_floor)
        return (math.expm1(log - half), math.expm1(log + half))

    @property
    def confirmation(self) -> tuple[int, int] | None:
        """(pairs the call was made on, pairs that measured it again on fresh worker pairs):
        a confirmed row's timing is its confirmation's, so its rounds exceed its pairs."""
        d = self.doc
        if d.paired and d.rounds is not None and d.pairs is not None and 0 < d.pairs < d.rounds:
            return d.rounds - d.pairs, d.pairs
        return None

    @property
    def judged(self) -> str:
        d = self.doc
        if not d.timed:
            return "not timed"
        if (both := self.confirmation) is not None:
            # a call its fresh pairs repeated can stay unconfirmed for another reason (too few pairs)
            agreed = any(r.startswith("confirmed on fresh worker pairs") for r in d.reasons)
            word = "confirmed" if not unconfirmed(d) else "repeated" if agreed else "not confirmed"
            return f"{both[0]} pairs, {word} on {both[1]} fresh"
        if d.paired:
            return f"{d.pairs} pair{'' if d.pairs == 1 else 's'}"
        return "unpaired" + (f", {d.rounds} rounds" if d.rounds else "")

    def unconfirmed_by(self) -> str | None:
        """What left a seen change unconfirmed, in the gate's own words: the reason that made the
        row UNCONFIRMED (``row_judging`` ends it "shown, not failing", naming what stopped a short
        call). None for a verdict without one (older files)."""
        d = self.doc
        why = next((r for r in reversed(d.reasons) if r.endswith(SHOWN_NOT_FAILING)), None)
        if why is None:
            return None
        return why[:-len(SHOWN_NOT_FAILING)]

    @property
    def estimate_kind(self) -> str:
        return "paired estimate" if self.doc.paired else "ratio of medians"

    def stopped_by(self) -> str:
        """What ended the row short of its target, in words."""
        d = self.doc
        # the recorded stop names the budget; the pairs say how far the row got
        budget = {"row_budget": "the row budget", "run_budget": "the run budget"}.get(d.stopped_by or "",
                                                                                      "the budget")
        if d.stopped_by == "launch_state":
            return "the sides' CUDA-graph launch states, far enough apart to hide the minimum effect"
        if d.why == "too_few_samples" or d.stopped_by == "too_few_samples":
            return f"too few samples (base {d.base_n}, candidate {d.cand_n})"
        if unconfirmed(d) and (why := self.unconfirmed_by()) is not None:
            return why
        if unconfirmed(d) and d.stopped_by != "round_cap":
            return f"{budget}, after {d.pairs} of the {d.confirm_rounds} pairs a call needs"
        if d.paired:
            if d.stopped_by == "round_cap" or (d.max_rounds and d.rounds is not None and d.rounds >= d.max_rounds):
                if spread_bound(d.detectable_effect, d.noise_floor, d.min_effect):
                    return (f"the spread of its samples within a round (IQRs overlap; {d.max_rounds or d.rounds} "
                            "rounds, and more do not narrow it)")
                return f"the round cap ({d.max_rounds or d.rounds} rounds)"
            if d.stopped_by in ("row_budget", "run_budget"):
                return f"{budget}, after {d.pairs} pairs"
            return f"the row or run budget, after {d.pairs} pairs"
        return f"unpaired runs: their noise, {d.rounds or '?'} rounds per side"

    @property
    def ir_changed(self) -> bool:
        return self.doc.ir is not None and self.doc.ir.changed > 0


@dataclass(frozen=True)
class VerdictView:
    doc: VerdictDoc
    state: str
    regressed: list[RowView]
    improved: list[RowView]
    unconfirmed: list[RowView]
    ir_only: list[RowView]  # time unchanged, IR changed
    not_judged: list[RowView]
    blind: list[RowView]
    unchanged: int  # quiet rows shown in no other section

    @property
    def show_ir(self) -> bool:
        return self.doc.ir is not None and bool(self.doc.ir.folder)

    @property
    def targets(self) -> list[float]:
        # the section and the headline count unconfirmed calls with the blind rows: so do their targets
        return sorted({t for r in (*self.blind, *self.unconfirmed) if (t := row_target(r.doc)) is not None})

    @property
    def interpreter(self) -> bool:
        return "host-wall" in (self.doc.base.timer, self.doc.candidate.timer) or \
            "cpu" in (self.doc.base.backend, self.doc.candidate.backend)


def build_view(doc: VerdictDoc) -> VerdictView:
    rows = [RowView(r) for r in doc.rows]
    failed = bool(doc.failures) or doc.exit_code == ExitCode.GATE_FAILED  # (files from before ``state``)
    state: str = doc.state if doc.state is not None else fallback_state(failed, doc.rows)[0]
    unconf = [r for r in rows if unconfirmed(r.doc)]
    regressed = sorted((r for r in rows if r.doc.verdict == Verdict.REGRESSED and not unconfirmed(r.doc)),
                       key=lambda r: -(r.doc.effect or 0))
    improved = sorted((r for r in rows if r.doc.verdict == Verdict.IMPROVED and not unconfirmed(r.doc)),
                      key=lambda r: r.doc.effect or 0)
    ir_only = [r for r in rows if r.doc.verdict == Verdict.UNCHANGED and r.ir_changed]
    blind = [r for r in rows if is_blind(r.doc)]
    shown = {id(r) for r in (*ir_only, *blind)}
    unchanged = sum(1 for r in rows if r.doc.verdict in QUIET and id(r) not in shown)
    return VerdictView(doc=doc, state=state, regressed=regressed, improved=improved, unconfirmed=unconf,
                       ir_only=ir_only, not_judged=[r for r in rows if r.doc.verdict in NOT_JUDGED],
                       blind=blind, unchanged=unchanged)


def count_parts(view: VerdictView) -> list[str]:
    """The counts line as every renderer writes it: the rows, then each group that has any."""
    n_rows = len(view.doc.rows)
    return [f"{n_rows} row{'' if n_rows == 1 else 's'}"] + [f"{n} {label}" for label, n in (
        ("regressed", len(view.regressed)), ("improved", len(view.improved)),
        ("unconfirmed", len(view.unconfirmed)), ("not judged", len(view.not_judged)),
        ("could not resolve their target", len(view.blind)), ("unchanged", view.unchanged)) if n]


def pct(value: float | None, digits: int = 1, sign: bool = True) -> str:
    """A relative effect as per cent, ``+5.1 %``; "n/a" where there is none."""
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value * 100:{'+' if sign else ''}.{digits}f} %"


def interval_text(iv: tuple[float, float] | None) -> str:
    return "n/a" if iv is None else f"{pct(iv[0])[:-2]} … {pct(iv[1])}"


def target_text(targets: Sequence[float]) -> str:
    if not targets:
        return "their target"
    if len(targets) == 1:
        return pct(targets[0], 0 if round(targets[0] * 100, 6).is_integer() else 1, sign=False)
    return "their targets"


# part of gate.verdict.AHEAD_OF_TIME_REASON (not imported: the renderer stays free of pandas and torch)
AHEAD_OF_TIME = "compiled byte-identical under both builds ahead of time"


INTERPRETER_CALLS = " (interpreter times, not the code a GPU would run)"


def headline_parts(view: VerdictView) -> tuple[str, list[str]]:
    """(emoji, plain-text pieces): the one headline line. Pieces holding row names are
    returned as (op, case, dtype) tuples joined by the renderer, which escapes them. Calls
    between two builds (another Triton, interpreter or patch set) with both sides on the
    interpreter say so in the headline: there the builds differ in their interpreters, not in
    the code they generate (one build against itself, a planted run, is measured as it is)."""
    emoji, pieces = _headline_parts(view)
    b, c = view.doc.base, view.doc.candidate

    def build(s: Any) -> tuple[Any, ...]:  # what tells two compiler builds apart (a PYTHONPATH picks a Triton)
        return (s.compiler_ref, s.commit, s.triton_version, s.python, s.patches, s.env_overlay.get("PYTHONPATH"))

    two_builds = build(b) != build(c)
    if b.backend == c.backend == "cpu" and two_builds and (view.regressed or view.improved or view.unconfirmed):
        pieces.append(INTERPRETER_CALLS)
    return emoji, pieces


def _headline_parts(view: VerdictView) -> tuple[str, list[str]]:
    d = view.doc
    rows = len(d.rows)
    if view.state == "fail":
        pieces: list[Any] = []
        if view.regressed:
            worst = view.regressed[0]
            pieces.append(f"{len(view.regressed)} regression{'' if len(view.regressed) == 1 else 's'}, worst ")
            pieces.append(worst.parts)
            pieces.append(f" {pct(worst.doc.effect)}")
        others = [f for f in d.failures if "regressed row" not in f]
        if others:
            pieces.append(("; " if pieces else "gate failed: ") + "; ".join(others))
        elif not pieces:
            pieces.append("gate failed")
        return "❌", pieces
    extra = f"; {len(view.improved)} improved" if view.improved else ""
    if all(r.verdict in NOT_JUDGED for r in d.rows) and view.state != "fail":
        # no row judged (or none planned): a verdict that says nothing is never a pass
        return "⚠️", [nothing_judged_text(d.rows)]
    if view.state == "blind":
        n, unc = len(view.blind) + len(view.unconfirmed), len(view.unconfirmed)
        # a call the confirmation did not repeat was still seen: "found" would hide it
        lead = f"No regression confirmed ({unc} call{'' if unc == 1 else 's'} not confirmed)" if unc \
            else "No regression found"
        return "⚠️", [f"{lead}; {n} row{'' if n == 1 else 's'} could not resolve {target_text(view.targets)}{extra}"]
    if rows and all(r.verdict == Verdict.IDENTICAL_BINARY and not r.timed and any(AHEAD_OF_TIME in x for x in r.reasons)
                    for r in d.rows):
        # every row's kernels compiled byte-identical ahead of time: nothing ran (the pre-screen)
        return "✅", [f"0 of {rows} rows' kernels changed between the two builds; no GPU time used"]
    return "✅", [f"No regression in {rows} row{'' if rows == 1 else 's'}{extra}"]


def nothing_judged_text(rows: Sequence[Any]) -> str:
    """The headline of a verdict none of whose rows was judged: how many, and what they were."""
    if not rows:
        return "Nothing was measured: there is no row to judge"
    counts = {v: sum(1 for r in rows if _get(r, "verdict") == v) for v in NOT_JUDGED}
    what = ", ".join(f"{n} {v.lower().replace('_', ' ')}" for v, n in counts.items() if n)
    which = "its only row" if len(rows) == 1 else f"none of its {len(rows)} rows"
    return f"Nothing was measured: {which} could {'not ' if len(rows) == 1 else ''}be judged ({what})"


def geomean_text(doc: VerdictDoc, any_called: bool) -> str:
    """The geometric-mean speedup with its interval, and what it does and does not say."""
    gm = doc.geomean_speedup
    if gm is None:
        return ""
    iv = doc.geomean_interval
    text = f"geomean speedup {gm:.3f}×" + (f" (95 % CI {iv[0]:.3f}–{iv[1]:.3f})" if iv else "")
    if iv and not any_called and (iv[0] > 1 or iv[1] < 1):
        lean = "faster" if iv[0] > 1 else "slower"
        text += (f": no single row cleared its own noise, but taken together the rows lean {lean}")
    return text


# settings that choose which code runs, not how Triton generates code: on the interpreter they
# still change what is measured (another Triton on the path), which the interpreter note says
CODE_PATHS = frozenset({"PYTHONPATH", "PATH", "LD_LIBRARY_PATH", "LD_PRELOAD"})


def overlay_inert(doc: VerdictDoc) -> str:
    """A note when a code-generation overlay was set on the cpu backend, where the Triton
    interpreter compiles nothing, so the overlay cannot change any kernel ("" otherwise)."""
    if "cpu" not in (doc.base.backend, doc.candidate.backend):
        return ""
    knobs = sorted({f"{k}={v}" for side in (doc.base, doc.candidate) for k, v in side.env_overlay.items()
                    if not k.startswith("TRITONGATE_") and k not in CODE_PATHS})
    if not knobs:
        return ""
    return (f"The environment overlay {' '.join(knobs)} does nothing on the cpu backend: the Triton "
            "interpreter compiles no kernel, so a code-generation setting cannot change what runs. "
            "This verdict says nothing about its effect; run the check on a GPU runner.")


def patches_on_interpreter(doc: VerdictDoc) -> str:
    """A note when a side of a cpu-backend verdict is an overlay build with patches: the
    interpreter runs Triton's Python code and compiles nothing, so only a patch to that code
    can show in its times ("" otherwise)."""
    if "cpu" not in (doc.base.backend, doc.candidate.backend) or doc.base.patches == doc.candidate.patches:
        return ""
    sides = [(name, side.patches) for name, side in (("base", doc.base), ("candidate", doc.candidate)) if side.patches]
    which = " and ".join(f"the {name}'s ({', '.join(patches)})" for name, patches in sides)
    return (f"Patches applied to {which} build{'s' if len(sides) > 1 else ''}: on the cpu backend only a change "
            "to Triton's Python code (its interpreter, language or runtime) can show in these times; a compiler "
            "pass or code-generation change shows ahead of time in tritongate prescreen (or ir and ir-diff), "
            "and in time only on a GPU.")


def side_text(side: VerdictSideDoc) -> list[str]:
    """A build in a few words: compiler (version), commit, overlay, run mode."""
    parts = [side.compiler_ref or (f"triton {side.triton_version}" if side.triton_version else "unknown build")]
    if side.commit:
        parts.append(side.commit[:12])
    parts += [f"{k}={v}" for k, v in sorted(side.env_overlay.items())]
    if side.patches:
        parts.append("+ " + ", ".join(side.patches))
    if side.python:
        parts.append(f"({side.python})")
    if side.mode:
        parts.append(side.mode)
    return parts


def where_parts(doc: VerdictDoc) -> list[str]:
    """Backend, GPU, timer: what both sides share (or both values where they differ)."""
    out = []
    for name in ("backend", "device", "timer"):
        b, c = getattr(doc.base, name), getattr(doc.candidate, name)
        value = b if b == c else f"{b or '?'} / {c or '?'}"
        if value and value not in out:  # the cpu backend's device is "cpu" too
            out.append(f"{value} timer" if name == "timer" else value)
    timed = [r for r in doc.rows if r.timed]
    if timed:
        out.append("paired rounds in one job" if any(r.paired for r in timed) else "two stored runs (unpaired)")
    return out


def notes(doc: VerdictDoc) -> list[str]:
    """The verdict's notes, each a sentence of its own; the overlays are on the where line."""
    out = [n[:1].upper() + n[1:] + ("" if n.rstrip().endswith((".", "!", "?", ")")) else ".") for n in doc.notes
           if not n.startswith(("base environment overlay:", "candidate environment overlay:"))]
    out += [note for note in (overlay_inert(doc), patches_on_interpreter(doc)) if note]
    return out
