"""The gate judges its timed rows together (``batch.decide_rows``): each decision must equal
``rule.decide``'s for that row alone, field for field, on every branch of the rule."""

from __future__ import annotations

import math
import random

from tritongate.gate.rule_rows import RowSamples, decide_rows
from tritongate.gate.rule import PairLayout, Why, decide
from tritongate.stats import summarize

RULE = dict(noise_z=4.0, min_samples=10, process_sd=0.002, pair_inflation=2.5)


def _side(rng: random.Random, median: float, rounds: int, per_round: int, round_sd: float,
          steps: list[float]) -> list[float]:
    out = []
    for r in range(rounds):
        level = median * math.exp(rng.gauss(0, round_sd) + steps[r])
        out += [level * math.exp(rng.gauss(0, 0.001)) for _ in range(per_round)]
    return out


def _cases(n: int, seed: int = 7) -> list[RowSamples]:
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        rounds = rng.choice([1, 2, 3, 5, 8, 12, 20, 31])
        per_round = rng.choice([1, 3, 5])
        effect = rng.choice([0.0, 0.002, 0.008, 0.03, 0.2, -0.05])
        groups = rng.choice([1, 1, 2, 3, 4])
        step = 0.0
        sd = rng.choice([0.0005, 0.004, 0.03])
        if i % 8 == 0:  # a step on one worker pair only: the worker pairs disagree
            rounds, per_round, effect, groups, step, sd = 40, 5, 0.3, 8, 0.03, 0.0005
        wp = tuple(sorted(rng.randrange(groups) for _ in range(rounds)))
        steps = [step if w == groups - 1 and groups > 1 else 0.0 for w in wp]
        base = _side(rng, 10.0 + i, rounds, per_round, sd, [0.0] * rounds)
        cand = _side(rng, (10.0 + i) * math.exp(effect), rounds, per_round, sd, steps)
        paired = rng.random() < 0.7
        layout = None
        if paired and rng.random() < 0.8:
            layout = PairLayout(base_first=tuple(rng.random() < 0.5 for _ in range(rounds)), worker_pairs=wp)
        with_summaries = rng.random() < 0.5
        cases.append(RowSamples(base, cand, base_per_round=per_round, cand_per_round=per_round,
                                min_effect=rng.choice([0.0, 0.01, 0.05]), paired=paired, layout=layout,
                                base_summary=summarize(base) if with_summaries else None,
                                cand_summary=summarize(cand) if with_summaries else None))
    return cases


def test_decide_rows_equals_decide_row_by_row_on_every_branch():
    cases = _cases(96, seed=3)  # a seed whose rows reach every branch
    got = decide_rows(cases, **RULE)
    want = [decide(c.base, c.cand, base_per_round=c.base_per_round, cand_per_round=c.cand_per_round,
                   min_effect=c.min_effect, noise_z=RULE["noise_z"], min_samples=RULE["min_samples"],
                   paired=c.paired, layout=c.layout, process_sd=RULE["process_sd"],
                   pair_inflation=RULE["pair_inflation"]) for c in cases]
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert repr(g) == repr(w), i  # repr: exact floats, and a NaN (one pair) equals itself
    # the comparison covers every reason the rule gives, paired and unpaired
    assert {(d.why, d.paired) for d in want} >= {(why, p) for why in Why for p in (True, False)
                                                 if why is not Why.WORKER_PAIRS_DISAGREE or p}


def test_decide_rows_of_no_rows_and_of_unequal_floors():
    assert decide_rows([], **RULE) == []
    # rows of different degrees of freedom each get their own floor, not the first row's
    cases = [c for c in _cases(60, seed=3) if not c.paired][:2]
    one_by_one = [decide_rows([c], **RULE)[0] for c in cases]
    assert len(cases) == 2 and repr(decide_rows(cases, **RULE)) == repr(one_by_one)
