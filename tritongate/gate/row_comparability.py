"""Whether a base row and a candidate row are evidence of the same thing: what each side's
status and markers say, measurement settings that differ, byte-identical kernels, and
whether the two were timed round by round against each other (one paired run)."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from tritongate.schema import Row, RowStatus, Variant


def row_status_reasons(row: Row, side: str) -> list[str]:
    if row.status is RowStatus.ERROR:
        return [f"error on {side}: {row.error}"]
    if row.status is RowStatus.TIMEOUT:
        return [f"timeout on {side}"]
    return []


def row_marker_reasons(base: Row, cand: Row) -> tuple[list[str], bool]:
    """Why a row is not same-config evidence; and whether that fails the gate by itself."""
    reasons: list[str] = []
    hard = False
    if not (base.markers or cand.markers):
        return reasons, hard
    from tritongate import markers  # it imports the harness: only for rows that carry markers

    for side, row, other in (("base", base, cand), ("candidate", cand, base)):
        for line in row.markers:
            m = markers.parse_marker(line)
            why = m.fields.get("reason", "")
            if m.kind == markers.REPLAY_FALLBACK:
                reasons.append(f"replay fallback on {side}: {why} ({m.fields.get('kernel', '?')})")
                hard = hard or why == "compile_failed"
            elif m.kind == markers.NO_CUDAGRAPH:
                if not any(markers.parse_marker(o).kind == markers.NO_CUDAGRAPH for o in other.markers):
                    reasons.append(f"timer fallback on {side} only (phase {m.fields.get('phase', '?')}): {why}")
            elif m.kind == markers.CORRECTNESS_MISMATCH:
                reasons.append(f"correctness mismatch on {side}: {why}")
            elif m.kind in (markers.GPU_BUSY, markers.GPU_THROTTLED):
                reasons.append(f"{'GPU busy' if m.kind == markers.GPU_BUSY else 'GPU throttled'} on {side}: {why}")
            elif m.kind == markers.ROW_TIMEOUT:
                reasons.append(f"timeout on {side}")
            elif m.kind != markers.ROW_ERROR:  # errors come from the row status
                reasons.append(f"{m.kind} on {side}: {why}")
    return reasons, hard


def row_mismatch(base: Row, cand: Row) -> list[str]:
    out = []
    if base.timer != cand.timer:
        out.append(f"timer differs: base {base.timer}, candidate {cand.timer}")
    bm, cm = base.measurement, cand.measurement
    if bm and cm:
        if bm.launches_per_sample != cm.launches_per_sample and base.timer == "cuda-graph":
            out.append(f"launches per sample differ (base k={bm.launches_per_sample}, candidate "
                       f"k={cm.launches_per_sample}): per-launch time depends on k; replay from the base record")
        if bm.l2 != cm.l2:
            out.append(f"L2 policy differs: base {bm.l2}, candidate {cm.l2}")
    return out


def same_binaries(base_variants: Sequence[Variant], cand_variants: Sequence[Variant],
                  base_params: Mapping[str, Any], cand_params: Mapping[str, Any]) -> bool:
    """Every launched kernel byte-identical on both sides, doing the same work (params)."""
    def sig(variants: Sequence[Variant]) -> set[tuple[str, str]]:
        return {(v.kernel, v.binary_hash) for v in variants}
    return bool(base_variants) and all(v.binary_hash for v in (*base_variants, *cand_variants)) \
        and sig(base_variants) == sig(cand_variants) and dict(base_params) == dict(cand_params)


def identical_binaries(base: Row, cand: Row) -> bool:
    return same_binaries(base.variants, cand.variants, base.params, cand.params)


def paired_rows(base: Row, cand: Row) -> bool:
    """Were these two rows measured round by round against each other (one paired run)?"""
    bp = base.measurement.pairing if base.measurement else None
    cp = cand.measurement.pairing if cand.measurement else None
    return bool(bp and cp and bp.pair_id == cp.pair_id and bp.side == "base" and cp.side == "candidate"
                and row_rounds(base) == row_rounds(cand))


def row_rounds(row: Row) -> int | None:
    if not row.samples or row.measurement is None:
        return None
    return len(row.samples) // row.measurement.samples_per_round


# The two CUDA-graph launch states of a process are 0.13-0.26 µs a launch apart (H200, H100:
# bench/results/2026-12-05_h100_two_speeds.md). Noise only pushes a reading up (a stray round
# of a primed process read 1.1525 beside 0.997s; 0.82-0.89 beside 190 µs matmuls), so a
# second state is a gap of half the smallest move with several rounds on each side of it,
# and two sides are compared by their lower quartiles.
LAUNCH_STATE_GAP_US = 0.09
LAUNCH_STATE_MIN_SHARE = 0.1  # of a side's rounds, and at least 2, read the other state
# A kernel launched as one graph node moves with the state by about the reference graph's own
# move (add 4096 f32: +0.178 µs where the reference moved +0.176); twice that is as much as the
# state can explain of a change (a bigger change is the code's).
LAUNCH_STATE_SENSITIVITY = 2.0


@dataclass(frozen=True)
class LaunchState:
    """The sides' CUDA-graph launch states, where they differ: ``move_us`` is how far apart
    the states read (µs a node of the reference graph); ``cand_slower`` whether the candidate
    ran in the slower one (None: a side's own rounds span both, either way)."""

    reason: str
    move_us: float
    cand_slower: bool | None

    @property
    def reach_us(self) -> float:
        """The most the state can move a launch, either way."""
        return LAUNCH_STATE_SENSITIVITY * self.move_us

    def explains(self, change_us: float) -> bool:
        """Could the state alone have made the candidate ``change_us`` slower (< 0: faster)
        a launch? Only in the direction the states point, and by at most ``reach_us``."""
        if abs(change_us) > self.reach_us:
            return False
        return self.cand_slower is None or (change_us > 0) == self.cand_slower


def launch_state_unknown(base: Row, cand: Row) -> str | None:
    """The side that kept no launch-state readings where the other did (a timer fallback drops
    them): its state cannot be compared, which the verdict says."""
    kept = {name: bool(r.measurement and r.measurement.launch_state_us) for name, r in (("base", base),
                                                                                         ("candidate", cand))}
    if kept["base"] == kept["candidate"]:
        return None
    missing = "base" if not kept["base"] else "candidate"
    return f"the {missing}'s CUDA-graph launch state was not read: a state difference could not be checked"


def _two_states(readings: tuple[float, ...]) -> tuple[float, float] | None:
    """The medians of the two states a side's rounds read, split at their widest gap; None
    when the gap is jitter or the second state holds too few rounds to be one."""
    s = sorted(readings)
    if len(s) < 4:
        return None
    gap, at = max((b - a, i + 1) for i, (a, b) in enumerate(zip(s, s[1:])))
    fewest = max(2, math.ceil(LAUNCH_STATE_MIN_SHARE * len(s)))
    if gap < LAUNCH_STATE_GAP_US or min(at, len(s) - at) < fewest:
        return None
    return statistics.median(s[:at]), statistics.median(s[at:])


def _level(readings: tuple[float, ...]) -> float:
    """A side's state as its readings' lower quartile: upward noise does not move it."""
    s = sorted(readings)
    return s[(len(s) - 1) // 4]


def launch_state(base: Row, cand: Row, first_round: int = 0) -> LaunchState | None:
    """The sides (or one side's rounds from ``first_round`` on: a confirmation's) ran in
    different CUDA-graph launch states: None where they did not, or a side has no readings."""
    def states(row: Row) -> tuple[float, ...]:
        readings = row.measurement.launch_state_us if row.measurement else ()
        # one reading a round: the rounds a call stands on (all, where they do not line up)
        return readings[first_round:] if len(readings) == row_rounds(row) and first_round < len(readings) else readings
    b, c = states(base), states(cand)
    if not b or not c:
        return None
    spans = {name: two for name, r in (("base", b), ("candidate", c)) if (two := _two_states(r)) is not None}
    if spans:
        move = max(hi - lo for lo, hi in spans.values())
        lo, hi = next(iter(spans.values()))
        where = " and the ".join(spans)
        return LaunchState(f"the {where}'s rounds span two CUDA-graph launch states ({lo:.3f} and {hi:.3f} µs a "
                           "node of the reference graph; a kernel moves with the state by about as much a launch)",
                           move, None)
    bl, cl = _level(b), _level(c)
    if abs(bl - cl) < LAUNCH_STATE_GAP_US:
        return None
    return LaunchState(f"base and candidate ran in different CUDA-graph launch states ({bl:.3f} vs {cl:.3f} µs a "
                       f"node of the reference graph, {abs(bl - cl):.2f} µs apart; a kernel moves with the state by "
                       "about as much a launch)", abs(bl - cl), cl > bl)
