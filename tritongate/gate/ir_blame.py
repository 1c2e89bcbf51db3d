"""The pass blame beside a verdict's IR diff: ``ir-diff/blame.json`` as verdict.json's ``ir.blame``.

``tritongate ir-diff BASE CAND --blame N`` (and the pre-screen) write ``blame.json`` into the
diff folder: per changed kernel variant, the first compiler pass whose output differs between
the two builds (``ir.passblame.Blame.to_dict``, keyed by case, kernel and variant). Here each
changed variant of the verdict's own diff is given its entry, or a reason it has none (beyond
the N blamed, launched by one build only, an entry saying why), and the variants of one kernel
that share an outcome become one line.

The file is made from a PR's compiler output: it is read as a plain file inside the folder (a
link is refused), bounded in size and entries, every string cut to one short line (the
renderers escape it). Whatever is wrong with it becomes a note; a verdict is never lost to it.
No blame.json: ``None``, and the verdict says nothing new.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from tritongate import safefs
from tritongate.ir.diff import BASE_ONLY, BINARY_CHANGED, BLAME_JSON, CAND_ONLY, CHANGED, VariantDiff
from tritongate.ir.passblame import BELOW, INPUT, NONE, PASS, PIPELINE
from tritongate.model.verdict import MAX_BLAME_LINES, MAX_BLAME_TEXT

BLAME_SCHEMA_VERSION = 1  # what ``tritongate ir-diff --blame`` writes
MAX_BLAME_BYTES = 16 * 1024 * 1024  # ~4 kB a blamed variant (its excerpt): thousands of variants
MAX_ENTRIES = 20_000
KEPT_LINES = 100  # lines of verdict.json (the model allows MAX_BLAME_LINES); the rest counted in ``more``
MAX_CASES = 20
NOT_BLAMED = "not_blamed"
FAILED = "failed"
BEYOND = "past the first {n} changed variant{s}, the ones blamed (a larger --blame N blames more)"
BLAMED_KINDS = (PASS, PIPELINE, INPUT, BELOW, NONE)
BLAMEABLE = (CHANGED, BINARY_CHANGED, BASE_ONLY, CAND_ONLY)  # a kernel compiled differently, or by one side only
ONE_SIDE = "launched by one build only: there are not two compiles to compare pass by pass"
assert KEPT_LINES <= MAX_BLAME_LINES


class _Unreadable(ValueError):
    """blame.json cannot be used; one line, the note."""


def _text(value: Any, limit: int = MAX_BLAME_TEXT) -> str:
    """One line of at most ``limit`` characters (raw: the renderers escape it)."""
    text = " ".join(str(value).split()) if isinstance(value, (str, int, float)) else ""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _shown(value: Any) -> str:
    """A value of the file in a few characters (a number or text as is, anything else by its type)."""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return _text(json.dumps(value), 40)
    return "null" if value is None else type(value).__name__


def _load(folder: Any) -> dict[str, Any]:
    """blame.json's object, or ``_Unreadable``."""
    try:
        raw = safefs.read_bytes(folder, BLAME_JSON, limit=MAX_BLAME_BYTES)
    except safefs.LinkError:  # its target is not named: it may be anywhere on the runner
        raise _Unreadable("it is not a plain file in the folder (a link, never followed)") from None
    except OSError as exc:
        raise _Unreadable(f"it cannot be read ({_text(exc.strerror or exc, 200)})") from None
    if len(raw) > MAX_BLAME_BYTES:
        raise _Unreadable(f"it is larger than {MAX_BLAME_BYTES // 2**20} MiB")
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise _Unreadable(f"it is not valid JSON ({_text(exc, 120)})") from None
    if not isinstance(doc, dict):
        raise _Unreadable("it does not hold a JSON object")
    version = doc.get("schema_version")
    if type(version) is not int or version != BLAME_SCHEMA_VERSION:
        raise _Unreadable(f"its schema_version {_shown(version)} is not one this tritongate reads "
                          f"({BLAME_SCHEMA_VERSION})")
    if not isinstance(doc.get("variants"), list):
        raise _Unreadable("it has no list of variants")
    return doc


def _outcome(entry: Mapping[str, Any], beyond: str) -> dict[str, Any]:
    """An entry's outcome as a line's fields (without kernel and counts)."""
    kind = entry.get("kind")
    if kind == FAILED:
        return {"outcome": NOT_BLAMED, "why": _text("its compiles with every pass dumped failed: "
                                                  + (_text(entry.get("error")) or "no reason given"))}
    if kind == NOT_BLAMED and not any(isinstance(entry.get(k), str) for k in ("reason", "why")):
        return {"outcome": NOT_BLAMED, "why": beyond}
    if kind not in BLAMED_KINDS:  # an entry that says why it has no blame, or one this reader does not know
        why = next((entry[k] for k in ("reason", "why", "error", "note") if isinstance(entry.get(k), str)), "")
        return {"outcome": NOT_BLAMED,
                "why": _text(why) or f"blame.json gives it no blame (kind {_shown(kind)})"}
    out: dict[str, Any] = {"outcome": kind}
    if kind in (PASS, PIPELINE, INPUT):
        out["pass_name"] = _text(entry.get("pass_name")) or None
        out["stage"] = _text(entry.get("stage")) or None
    if kind == PIPELINE:
        added = type(entry.get("index_base")) is int and entry["index_base"] < 0
        out["change"] = "added" if added else "removed"
        out["next_pass"] = _text(entry.get("next_pass")) or None
    if kind == BELOW:
        out["level"] = _text(entry.get("first_level")) or None
    return out


def _entries(doc: Mapping[str, Any]) -> dict[tuple[str, str, str], Mapping[str, Any]]:
    """(case, kernel, variant) -> its entry: blamed (``variants``), or, as the pre-screen also
    writes, left out past the limit (``not_blamed``) or without dumps (``failed``)."""
    found: dict[tuple[str, str, str], Mapping[str, Any]] = {}
    lists = [(doc["variants"], None)] + [(doc[k], k) for k in (FAILED, NOT_BLAMED) if isinstance(doc.get(k), list)]
    for entries, kind in lists:
        for entry in entries[:MAX_ENTRIES]:
            if not isinstance(entry, Mapping):
                continue
            key = (entry.get("case"), entry.get("kernel"), entry.get("variant"))
            if all(isinstance(k, str) for k in key) and len(found) < MAX_ENTRIES:
                found.setdefault(key, entry if kind is None else {**entry, "kind": kind})  # type: ignore[arg-type]
    return found


def _lines(changed: Sequence[VariantDiff], entries: Mapping[tuple[str, str, str], Mapping[str, Any]]) \
        -> list[dict[str, Any]]:
    """One line per kernel and outcome, blamed kernels first, each in the diff's order."""
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    covered = sum(1 for e in entries.values() if e.get("kind") != NOT_BLAMED)
    beyond = BEYOND.format(n=covered, s="" if covered == 1 else "s")
    for d in changed:
        entry = entries.get((d.case, d.kernel, d.name))
        if entry is not None and d.status not in (BASE_ONLY, CAND_ONLY):
            fields = _outcome(entry, beyond)
        else:
            fields = {"outcome": NOT_BLAMED, "why": ONE_SIDE if d.status in (BASE_ONLY, CAND_ONLY) else beyond}
        kernel = _text(d.kernel, 1_000) or "?"
        key = (kernel, *sorted(fields.items()))
        line = groups.setdefault(key, {"kernel": kernel, **fields, "variants": 0, "cases": []})
        line["variants"] += 1
        case = _text(d.case)
        if case and case not in line["cases"] and len(line["cases"]) < MAX_CASES:
            line["cases"].append(case)
    lines = list(groups.values())
    return [x for x in lines if x["outcome"] != NOT_BLAMED] + [x for x in lines if x["outcome"] == NOT_BLAMED]


def read_blame(folder: Any, diffs: Sequence[VariantDiff], rel: str) -> dict[str, Any] | None:
    """verdict.json's ``ir.blame`` for the diff folder ``folder`` (``rel``: its path inside the
    verdict folder) and the diff's variants; ``None`` where the folder has no blame.json."""
    file = f"{rel}/{BLAME_JSON}"
    found = safefs.kind(folder, BLAME_JSON)
    if found == "missing":
        return None
    out: dict[str, Any] = {"file": file, "note": None, "target": None, "kernels": [], "more": 0}
    try:
        if found not in ("file", "link"):
            raise _Unreadable(f"it is not a plain file ({'a folder' if found == 'dir' else 'a pipe, socket or device'})")
        doc = _load(folder)
    except _Unreadable as exc:
        return {**out, "note": f"the pass blame in {file} could not be read: {exc}"}
    entries = _entries(doc)
    changed = [d for d in diffs if d.status in BLAMEABLE]
    if entries and not any((d.case, d.kernel, d.name) in entries for d in changed):
        return {**out, "note": f"the pass blame in {file} names none of this diff's changed kernel variants "
                               "(it is of another comparison); not shown"}
    lines = _lines(changed, entries)
    return {**out, "target": _text(doc.get("target")) or None, "kernels": lines[:KEPT_LINES],
            "more": max(0, len(lines) - KEPT_LINES)}


def carry_blame(source: Any, verdict_dir: Any, rel: str) -> bool:
    """Copy ``source/blame.json`` (a pre-screen's or a shard's IR diff folder) into the verdict's
    IR diff folder ``verdict_dir/rel`` before the verdict is written, so its lines reach the
    verdict of the rows a pair then times; read as bytes within the size bound, a link never
    followed. False when there is none to carry (the verdict then says nothing of blame)."""
    from pathlib import Path

    from tritongate.atomicio import write_bytes_atomic

    try:
        raw = safefs.read_bytes(Path(source), BLAME_JSON, limit=MAX_BLAME_BYTES)
    except (safefs.LinkError, OSError, ValueError):  # none, a link, a folder: nothing carried
        return False
    if len(raw) > MAX_BLAME_BYTES:
        return False
    dest = Path(verdict_dir) / rel
    dest.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(dest / BLAME_JSON, raw)
    return True
