"""Compare two runs row by row and decide (``run_gate``): the data behind verdict.json and verdict.md.

A row's verdict is ``row_verdict.RowVerdict``, made by ``row_judging`` from what ``row_comparability``
finds; the whole gate's is ``gate_result.GateResult``. Callers import these names from here.

Versioned output (bump ``VERDICT_SCHEMA_VERSION`` on any change a reader must know):
  1 - first version: per-row verdicts with both medians/IQRs, speedup, effect, detectable
      effect and reasons; counts, failures, geometric-mean speedup, per-op speedup intervals.
  2 - the rule works in log ratios; per row ``paired`` (judged from paired rounds or from
      two stored runs), ``pairs``, ``why`` (called, too_few_samples, iqrs_overlap,
      below_min_effect, below_noise_floor), ``detectable_effect`` null where the row could
      not have been called, ``timed`` (false for an IDENTICAL_BINARY row that was not
      timed), and the pairing's precision target (``target_effect``, ``target_reached``,
      ``rounds``).
  3 - IR evidence: per row ``ir`` (kernels launched, kernels whose IR changed, the smallest
      diff's path inside the verdict folder, variants only one side launched; null when the
      runs kept no IR) and a top-level ``ir`` (the ir-diff folder, variants per status, a
      note when the IR could not be compared).
      Added since, optional, without a bump (readers ignore keys they do not know): a top-level
      ``calibration`` (the runner's calibration summary the footer cites; null without one);
      per paired row ``confirm_rounds`` (the pairs a call needs) and ``call_unconfirmed`` (a
      REGRESSED or IMPROVED made on fewer, a budget having stopped the row); per paired row
      ``inputs`` (``shared``: the side timed second in each pair read the first side's inputs).
  4 - the verdict never claims more than it measured: a top-level ``state`` (``pass``: every
      timed row reached its precision target or was identical; ``blind``: no regression found
      but some rows could not resolve their target; ``fail``) and ``blind_rows`` (count) with
      ``blind`` (what stopped them, the flag that raises it, the largest detectable effect);
      the verdict ``UNCONFIRMED`` (a call made on fewer pairs than a confirmation needs: shown,
      never failing; it replaces ``call_unconfirmed``, still written); per row
      ``reached_target`` (null for rows not timed), ``stopped_by`` (``row_budget``,
      ``run_budget``, ``round_cap``, ``unpaired``, ``too_few_samples``; null when it reached
      its target), ``worker_pairs`` and ``order_effect`` (paired rows), and the policy's
      ``process_sd`` and ``fail_on_blind``.
      Added since, optional, without a bump (readers ignore keys they do not know; a bump would
      make every older trusted comment job refuse the verdict): ``ir.blame``, present only where
      the IR diff folder holds a ``blame.json`` (``tritongate ir-diff --blame``, the pre-screen):
      ``file``, ``target``, ``note`` (why it could not be read; no lines then), ``kernels`` (one
      line per changed kernel and outcome, at most 100: ``kernel``, ``outcome`` pass, pipeline,
      input, below, none or not_blamed, ``variants``, ``cases``, ``pass_name``, ``stage``,
      ``change`` added/removed, ``next_pass``, ``level``, ``why``) and ``more`` (lines left out);
      ``stopped_by`` ``launch_state`` (an unchanged row whose sides' CUDA-graph launch states could
      hide its minimum effect; a reader older than it refuses such a file by name); per side
      ``python`` (the build's interpreter, only where nothing else tells the two builds apart)
      and ``patches`` (an overlay build's patch file names, only for such a build);
      the policy's ``strict``, ``max_missing`` and ``fail_on_blind`` read as typed (written since
      version 4), so the trusted comment fails a document as the gate did.
      Since 2026-12-06, without a bump: a verdict that judged no row writes ``passed`` false and
      ``exit_code`` 2, as the command exits (it had written true and 0, with ``state`` blind,
      which it keeps); an UNCONFIRMED call that nothing cut short has ``stopped_by`` null.
      Since 2026-12-07, without a bump: ``calibration`` may hold ``scope`` ("one GPU" or "runner
      class (N GPUs)"), and a headline of calls between two builds timed on the interpreter ends
      "(interpreter times, not the code a GPU would run)"; a row gated with a larger
      ``min_effect`` than its pairing's ``target_effect`` has ``reached_target`` judged at
      ``min_effect`` (it had kept the pairing's "not reached").
"""

from __future__ import annotations

from pathlib import Path

from tritongate.errors import GateError
from tritongate.gate.comparability import identity_mismatches, notes
from tritongate.gate.gate_result import GateResult
from tritongate.gate.policy import GatePolicy
from tritongate.gate.row_comparability import same_binaries
from tritongate.gate.row_judging import AHEAD_OF_TIME_REASON, judge_rows
from tritongate.gate.row_verdict import RowVerdict
from tritongate.model.verdict import Verdict
from tritongate.rundir import Run, gc_paused
from tritongate.schema import Row

__all__ = ["AHEAD_OF_TIME_REASON", "GateResult", "IncomparableRunsError", "RowVerdict", "VERDICT_SCHEMA_VERSION",
           "Verdict", "run_gate", "same_binaries"]

VERDICT_SCHEMA_VERSION = 4


class IncomparableRunsError(GateError):
    """The runs' identities differ where timings cannot be compared."""


UNPAIRED_NOTE = ("{n} row(s) were timed unpaired, from two stored runs: two processes at two times, whose "
                 "drift between the runs no pairing cancels. Their floors carry each run's process offset "
                 "({sd:.1%} each) and most cannot resolve 1 %; unpaired timing is not the PR path: "
                 "tritongate pair times both builds in alternating pairs on fresh worker pairs")


def run_gate(base: Run, cand: Run, policy: GatePolicy, *, allow_mismatch: bool = False) -> GateResult:
    """Compare ``cand`` against ``base``. Identity mismatches are refused
    (``IncomparableRunsError``) unless ``allow_mismatch``, which makes every row NOT_COMPARABLE."""
    if Path(base.path).resolve() == Path(cand.path).resolve():
        raise GateError(f"{base.path} was given as both the base and the candidate run; a run compared "
                        "with itself always passes. Pass the base build's run and the candidate's")
    mismatches = identity_mismatches(base.identity, cand.identity)
    if mismatches and not allow_mismatch:
        listing = "; ".join(map(str, mismatches))
        raise IncomparableRunsError(
            f"{base.path} and {cand.path} were not measured alike ({listing}). Measure both sides on "
            "the same runner with the same settings, or pass --allow-mismatch to list every row as "
            "NOT_COMPARABLE")
    base_rows, cand_rows = base.row_map(), cand.row_map()
    slots: list[RowVerdict | int] = []  # a verdict, or where the row is among those judged (together)
    judged: list[tuple[Row, Row]] = []
    for key, brow in base_rows.items():
        crow = cand_rows.get(key)
        if crow is None:
            slots.append(RowVerdict(*key, verdict=Verdict.MISSING, reasons=("not in the candidate run",),
                                    base_markers=brow.markers))
        elif mismatches:
            slots.append(RowVerdict(*key, verdict=Verdict.NOT_COMPARABLE,
                                    reasons=tuple(str(m) for m in mismatches),
                                    base_markers=brow.markers, cand_markers=crow.markers))
        else:
            slots.append(len(judged))
            judged.append((brow, crow))
    with gc_paused():
        verdicts = judge_rows(judged, policy)
    rows = [verdicts[s] if isinstance(s, int) else s for s in slots]
    for key, crow in cand_rows.items():
        if key not in base_rows:
            rows.append(RowVerdict(*key, verdict=Verdict.NEW, reasons=("not in the base run",),
                                   cand_markers=crow.markers))
    found = notes(base.identity, cand.identity, str(base.path))
    unpaired = [r for r in rows if r.timing is not None and not r.timing.paired]
    if unpaired:
        found.append(UNPAIRED_NOTE.format(n=len(unpaired), sd=policy.process_sd))
    return GateResult(base=base, cand=cand, policy=policy, rows=rows, mismatches=mismatches, notes=found)
