"""The peer rules `bench/peer_rules.py` applies to the gate's raw samples are the tools' own:
pyperf's significance test checked against pyperf itself, asv's Mann-Whitney p-value against
scipy's asymptotic test, on samples with the structure GPU timings have (a shift, heavy tails,
a second process level). And `bench/record_replay.py`'s agreement counts."""

from __future__ import annotations

import numpy as np
import pyperf._utils
import pytest
from scipy import stats  # type: ignore[import-untyped]

from bench import peer_rules, record_replay


def _samples(rng: np.random.Generator, kind: str, n: int, shift: float) -> tuple[np.ndarray, np.ndarray]:
    base = 10.0 + rng.normal(0, 0.05, n)
    cand = 10.0 * (1 + shift) + rng.normal(0, 0.05, n)
    if kind == "heavy":  # rare long samples, as a loaded host gives
        base += rng.pareto(3.0, n) * 0.05
        cand += rng.pareto(3.0, n) * 0.05
    if kind == "levels":  # part of each side at a second process level
        base[: n // 3] += 0.2
        cand[n // 2:] += 0.2
    return base, cand


@pytest.mark.parametrize("kind", ["gaussian", "heavy", "levels"])
def test_the_pyperf_port_calls_what_pyperf_itself_finds_significant(kind: str) -> None:
    rng = np.random.default_rng(7)
    seen = set()
    for n in (10, 25, 50, 120, 300):
        for shift in (0.0, 0.001, 0.003, 0.01, -0.003):
            base, cand = _samples(rng, kind, n, shift)
            significant, _ = pyperf._utils.is_significant(base.tolist(), cand.tolist())
            call = peer_rules.pyperf_call(base.tolist(), cand.tolist())
            assert (call != "same") == significant, (kind, n, shift)
            if significant:
                assert call == ("slower" if cand.mean() > base.mean() else "faster")
            seen.add(call)
    assert {"same", "slower"} <= seen  # both outcomes were exercised


@pytest.mark.parametrize("kind", ["gaussian", "heavy", "levels"])
def test_the_asv_mann_whitney_port_is_the_asymptotic_test(kind: str) -> None:
    rng = np.random.default_rng(11)
    for n, m in ((25, 25), (50, 80), (200, 200)):
        for shift in (0.0, 0.002, 0.01):
            base, cand = _samples(rng, kind, max(n, m), shift)
            x, y = base[:n], cand[:m]
            ours = peer_rules.mann_whitney_u_p(x, y)
            theirs = stats.mannwhitneyu(x, y, alternative="two-sided", method="asymptotic", use_continuity=False).pvalue
            assert ours == pytest.approx(theirs, rel=1e-9, abs=1e-300), (kind, n, m, shift)


def test_record_replay_counts_agreement_only_where_the_configs_agree() -> None:
    def row(us: float, config: int) -> dict:
        return {"summary": {"median": us}, "autotune": {"kernels": [{"kernel": "k", "key": [1],
                                                                       "config": {"BLOCK": config}}]}}
    r1 = {"a": row(1.000, 64), "b": row(1.000, 64), "c": row(20.0, 128)}
    r2 = {"a": row(1.009, 64), "b": row(1.120, 32), "c": row(20.5, 128)}
    replays = [{"a": row(1.0, 64), "b": row(1.0, 64), "c": row(20.0, 128)},
               {"a": row(1.02, 64), "b": row(1.001, 64), "c": row(20.1, 128)}]
    agreement = record_replay.timing_agreement(r1, r2, replays)
    assert [(a["row"], a["same_configs"]) for a in agreement] == [("a", True), ("b", False), ("c", True)]
    text = "\n".join(record_replay.agreement_lines(agreement))
    assert "- Rows < 10 µs: 2. Records with the same configs within 1 %: 1 of 1; replays within 1 % of the first " \
           "replay: 1 of 2 (largest +2.00 %)." in text
    assert "- Rows >= 10 µs: 1. Records with the same configs within 1 %: 0 of 1;" in text
