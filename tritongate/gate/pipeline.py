"""The one gate pipeline: two run directories, or rows already judged from other evidence,
to a verdict folder (verdict.json, verdict.md, ir-diff/).

Every command that produces a verdict goes through here: ``gate``, ``pair`` and ``loop``,
``merge`` and the pre-screen write one with ``gate_runs`` or ``write_result``; ``calibrate``
re-judges finished steps with ``judge_runs``. What a verdict cites beyond its two runs (the
baseline lookup, the runner's calibration, the artifact's address) travels as one
``Citations``, so no caller wires them on its own. Nothing here prints, exits or writes the
job summary: the CLI does.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence

from tritongate.gate.output import WrittenVerdict, write_verdict_files
from tritongate.gate.policy import GatePolicy
from tritongate.gate.row_verdict import RowVerdict
from tritongate.gate.verdict import GateResult, run_gate
from tritongate.model.verdict import Verdict
from tritongate.rundir import Run, load_run

if TYPE_CHECKING:
    from tritongate.model.calibration import CalibrationSummary
    from tritongate.gate.baseline_state import BaselineState


@dataclass(frozen=True)
class Citations:
    """What a verdict cites beyond its two runs: the baseline lookup's outcome (shown at the
    top), the runner's calibration (its footer), where the artifact is (its link) and the
    ahead-of-time IR diff the runs were paired with (their IR evidence where they kept none)."""

    baseline: BaselineState | None = None
    calibration: CalibrationSummary | None = None
    artifact_url: str | None = None
    ahead_of_time: Path | None = None


@dataclass(frozen=True)
class GatedRuns:
    result: GateResult
    written: WrittenVerdict


def judge_runs(base: Run | Path, cand: Run | Path, policy: GatePolicy, *, allow_mismatch: bool = False,
               notes: Sequence[str] = (), absent: Mapping[tuple[str, str, str], str] | None = None) -> GateResult:
    """Every row of ``cand`` judged against ``base`` (run directories are loaded and validated
    here); ``notes`` lead the verdict's own; ``absent``: rows neither run holds that were meant
    to be measured (a merge's missing shard), each with why, listed MISSING."""
    base_run = base if isinstance(base, Run) else load_run(base)
    cand_run = cand if isinstance(cand, Run) else load_run(cand)
    result = run_gate(base_run, cand_run, policy, allow_mismatch=allow_mismatch)
    result.notes[:0] = list(notes)
    result.rows += [RowVerdict(*key, verdict=Verdict.MISSING, reasons=(why,)) for key, why in (absent or {}).items()]
    return result


def write_result(result: GateResult, out: Path, cite: Citations = Citations(), *,
                 template: Path | None = None) -> WrittenVerdict:
    """``result`` as a verdict folder in ``out``; ``template``: verdict.md's jinja2 layout, when
    not the shipped one (verdict.json is the same either way)."""
    return write_verdict_files(result, Path(out), artifact_url=cite.artifact_url, baseline=cite.baseline,
                               calibration=cite.calibration, ahead_of_time=cite.ahead_of_time, template=template)


def gate_runs(base: Run | Path, cand: Run | Path, out: Path, policy: GatePolicy, *, cite: Citations = Citations(),
              allow_mismatch: bool = False, notes: Sequence[str] = (), template: Path | None = None,
              absent: Mapping[tuple[str, str, str], str] | None = None) -> GatedRuns:
    """Two run directories judged and written as a verdict folder in ``out``."""
    result = judge_runs(base, cand, policy, allow_mismatch=allow_mismatch, notes=notes, absent=absent)
    return GatedRuns(result=result, written=write_result(result, out, cite, template=template))
