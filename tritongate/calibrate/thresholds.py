"""Per-op minimum effects from a calibration, written into a gate policy file.

An op's threshold is the largest effect its rows showed in the A/A runs (noise the rule must
not call), times ``MARGIN``, rounded up to the next half per cent, never below the policy's
default. Raising one makes the gate blind to smaller changes of that op, so a write that would
is refused unless asked for (``--allow-loosen``), and every change is listed. Only the policy
file's ``ops:`` block is rewritten, each entry naming the calibration it came from; the
verdict's footer lists every per-op threshold, so a changed one shows in the next PR comment.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import yaml

from tritongate.atomicio import write_text_atomic
from tritongate.model.calibration import Calibration
from tritongate.errors import UsageError
from tritongate.yamlsafe import comment_text, flow_scalar, load_bounded

MARGIN = 1.5
STEP = 0.005  # thresholds are whole half per cents


@dataclass(frozen=True)
class ThresholdChange:
    op: str
    old: float  # the op's effective minimum effect before (its entry, else the default)
    new: float
    evidence: str  # the A/A effect it came from

    @property
    def loosens(self) -> bool:
        return self.new > self.old + 1e-12

    def line(self) -> str:
        verb = "raised (less sensitive)" if self.loosens else "lowered"
        return f"{self.op}: {self.old:.1%} -> {self.new:.1%} {verb}; {self.evidence}"


def derive(cal: Calibration, default: float) -> dict[str, tuple[float, str]]:
    """op -> (threshold, evidence) for every op of the calibration: its A/A noise with the
    margin, or ``default`` where that is enough."""
    worst = {op: (0.0, "no A/A effect") for op in sorted({r.op for r in cal.rows})}
    for r in cal.rows:
        for effect in r.aa_effects:
            if effect is not None and math.isfinite(effect) and abs(effect) > worst[r.op][0]:
                # a policy's min_effect is a fraction below 1 (validation.inputfiles.MinEffect): an op
                # noisier than that cannot be gated here (checked first: 1e306 overflowed math.ceil)
                if _threshold(abs(effect)) >= 1:
                    raise UsageError(f"{r.op} {r.case} {r.dtype}: A/A effect {effect:+.3g} would need a minimum "
                                     "effect of 100 % or more, which no policy holds: the op is too noisy to "
                                     "gate on this runner (a calibration on the interpreter?), or the "
                                     "calibration is damaged or edited; calibrate again on the GPU runner")
                worst[r.op] = (abs(effect), f"A/A {effect:+.2%} on {r.case} {r.dtype}")
    values = {op: (_threshold(effect), why) for op, (effect, why) in worst.items()}
    return {op: (round(value, 4), why) if value > default + 1e-12 else (default, f"{why} (the default is enough)")
            for op, (value, why) in values.items()}


def _threshold(effect: float) -> float:
    """The A/A effect with the margin, rounded up to a whole step."""
    if effect * MARGIN >= 1:
        return effect * MARGIN
    return math.ceil(round(effect * MARGIN / STEP, 9)) * STEP


def plan_changes(derived: Mapping[str, tuple[float, str]], current: Mapping[str, float],
                 default: float) -> list[ThresholdChange]:
    """The changes ``derived`` makes to a policy whose per-op entries are ``current`` (an op at the
    default with no entry needs none)."""
    return [ThresholdChange(op, current.get(op, default), value, evidence)
            for op, (value, evidence) in sorted(derived.items()) if not math.isclose(current.get(op, default), value)]


_OPS_LINE = re.compile(r"^ops\s*:(.*)$")
_KEY = re.compile(r"^(\s+)([^\s:#'\"][^:#]*?|'[^']*'|\"[^\"]*\")\s*:")


def _entry(op: str, value: float, comment: str) -> str:
    # The op and the comment come from a calibration file: serialized, never pasted.
    entry = f"  {flow_scalar(op)}: {{min_effect: {flow_scalar(float(value))}}}"
    return entry + (f"  # {comment_text(comment)}" if comment else "")


def rewrite_ops_block(text: str, current: Mapping[str, float], changes: Mapping[str, tuple[float, str]]) -> str:
    """``text`` with the entries of ``changes`` (op -> (value, comment)) set in its top-level
    ``ops:`` block: a changed op's entry replaced, a new op's appended; every other line,
    comments and other entries included, kept as it was."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if _OPS_LINE.match(line)), None)
    if start is None:
        return "\n".join(lines + ["ops:"] + [_entry(op, v, c) for op, (v, c) in sorted(changes.items())]) + "\n"
    inline = _OPS_LINE.match(lines[start]).group(1).split("#")[0].strip()
    if inline:  # a flow mapping on the ops line (no comments inside to keep): written out as a block
        merged = {op: (v, "") for op, v in current.items()} | dict(changes)
        block = ["ops:" if merged else "ops: {}"] + [_entry(op, v, c) for op, (v, c) in sorted(merged.items())]
        return "\n".join(lines[:start] + block + lines[start + 1:]) + "\n"
    end = start + 1
    while end < len(lines) and (lines[end].startswith((" ", "\t")) or not lines[end].strip()):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    body = lines[start + 1:end]
    indent = min((len(m.group(1)) for line in body if (m := _KEY.match(line))), default=2)
    starts = [i for i, line in enumerate(body) if (m := _KEY.match(line)) and len(m.group(1)) == indent]
    spans = {str(yaml.safe_load(_KEY.match(body[a]).group(2))): (a, b)  # op -> its lines in body
             for a, b in zip(starts, starts[1:] + [len(body)])}
    out: list[str] = []
    i = 0
    for a, op, b in sorted((a, op, b) for op, (a, b) in spans.items() if op in changes):
        out += body[i:a] + [_entry(op, *changes[op])]
        i = b
    out += body[i:] + [_entry(op, v, c) for op, (v, c) in sorted(changes.items()) if op not in spans]
    return "\n".join(lines[:start + 1] + out + lines[end:]) + "\n"


def write_thresholds(cal: Calibration, path: Path, *, allow_loosen: bool) -> list[ThresholdChange]:
    """Derive, check, write (atomically, validated first). Returns the changes made; raises
    ``UsageError`` listing the raises when ``allow_loosen`` is not given."""
    from tritongate.gate.policy import load_policy

    policy = load_policy(path)  # validates the file as it is
    changes = plan_changes(derive(cal, policy.min_effect), policy.op_min_effect, policy.min_effect)
    loosening = [c for c in changes if c.loosens]
    if loosening and not allow_loosen:
        raise UsageError(f"{path}: the calibration would raise {len(loosening)} minimum effect(s), making the "
                         f"gate blind to smaller changes of those ops ({'; '.join(c.line() for c in loosening)}); "
                         "pass --allow-loosen to write them")
    if not changes:
        return []
    where = f"calibration {cal.created_utc[:10]} on {cal.runner.get('device')} ({cal.runner.get('backend')})"
    updates = {c.op: (c.new, f"{where}: {c.evidence}") for c in changes}
    text = rewrite_ops_block(path.read_text(encoding="utf-8") if path.is_file() else "", policy.op_min_effect,
                             updates)
    candidate = path.with_name(f".{path.name}.check")
    try:
        write_text_atomic(candidate, text)
        check = load_policy(candidate)
    except UsageError as exc:
        raise UsageError(f"{path}: its ops block, rewritten, would not be a valid policy ({exc}); nothing was "
                         "written; edit it by hand") from None
    finally:
        candidate.unlink(missing_ok=True)
    expected = {**policy.op_min_effect, **{op: v for op, (v, _c) in updates.items()}}
    changed = _other_keys_changed(path.read_bytes() if path.is_file() else b"", text)
    if dict(check.op_min_effect) != expected or changed:
        what = f" (changed: {', '.join(changed)})" if changed else " (an op name the block cannot hold?)"
        raise UsageError(f"{path}: its ops block, rewritten, did not read back as written{what}; nothing was "
                         "written; edit it by hand")
    write_text_atomic(path, text)
    return changes


def _other_keys_changed(before: bytes, after: str) -> list[str]:
    """Top-level keys but ``ops`` whose values differ: a rewrite of the ops block touches nothing else."""
    def doc(raw: bytes | str) -> dict:
        data = load_bounded(raw) if raw else {}
        return data if isinstance(data, dict) else {}

    old, new = doc(before), doc(after)
    return sorted(str(k) for k in (old.keys() | new.keys()) - {"ops"} if old.get(k) != new.get(k))
