"""What the PR job found in the baseline store, shown in the verdict.

``tritongate baseline find --state-out FILE`` (``ci/find_baseline.py``) writes the lookup;
``gate``/``pair``/``merge --baseline-state FILE`` read it here, so a stale, mismatched or
missing baseline is a visible line of ``verdict.md`` with the command that refreshes it,
never a silent fallback.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Optional

from tritongate.errors import UsageError
from tritongate.validation import validate
from tritongate.validation.core import OpenDoc


class _EntryDoc(OpenDoc):
    record_path: Optional[str] = None
    recorded_utc: Optional[str] = None
    compiler_commit: Optional[str] = None


class BaselineStateDoc(OpenDoc):
    state: Literal["ok", "stale", "mismatched", "missing"]
    reason: str = ""
    refresh: str = ""
    record: Optional[str] = None
    age_days: Optional[float] = None
    max_age_days: Optional[float] = None
    entry: Optional[_EntryDoc] = None


@dataclass(frozen=True)
class BaselineState:
    doc: BaselineStateDoc

    @property
    def state(self) -> str:
        return self.doc.state

    @property
    def healthy(self) -> bool:
        return self.doc.state == "ok"

    def line(self, replayed: str | None = None) -> str:
        """One line for verdict.md (escaped by the renderer); ``replayed``: the record the
        runs replayed, to say when it is not the one the store offered (a fallback)."""
        d = self.doc
        if d.state == "ok":
            entry = d.entry.record_path if d.entry and d.entry.record_path else (d.record or "")
            age = f", {d.age_days:.1f} days old" if d.age_days is not None else ""
            return f"Baseline: {entry}{age}"
        head = {"stale": "Baseline stale", "mismatched": "Baseline mismatched",
                "missing": "Baseline missing"}[d.state]
        reason = d.reason.rstrip()
        text = f"⚠️ {head}: {reason}" + ("" if not reason or reason.endswith((".", "!", "?")) else ".")
        if replayed and (d.record is None or Path(replayed).resolve() != Path(d.record).resolve()):
            text += f" This check replayed a baseline recorded with the base build in this job ({Path(replayed).name})."
        return text + (f" Refresh it: {d.refresh}" if d.refresh else "")

    def to_dict(self) -> dict[str, Any]:
        d = self.doc
        return {"state": d.state, "reason": d.reason or None, "refresh": d.refresh or None,
                "record": d.record, "age_days": d.age_days}


def load_baseline_state(path: str | Path) -> BaselineState:
    """The lookup's JSON, validated; ``UsageError`` naming the file and how to make it."""
    from tritongate.rundir import read_json_object

    path = Path(path)

    def usage(message: str) -> Exception:
        return UsageError(f"--baseline-state: {message}; write it with `tritongate baseline find ... --state-out FILE`")

    raw = read_json_object(path, "baseline state", error=usage, missing=f"{path} is missing or not a plain file")
    return BaselineState(validate(BaselineStateDoc, raw, source=path, error=UsageError))
