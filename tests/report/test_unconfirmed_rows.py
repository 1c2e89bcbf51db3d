"""What the verdict says left a seen change unconfirmed: the gate's own reason for the row,
never a budget or a failed confirmation it did not meet."""

from __future__ import annotations

from dataclasses import replace

from tests.gate.helpers import pair, row, samples
from tests.gate.test_verdict import POLICY, _paired_rows
from tritongate.gate.output import verdict_document
from tritongate.gate.verdict import run_gate
from tritongate.model.verdict import SHOWN_NOT_FAILING, Verdict, VerdictDoc
from tritongate.report.verdict_markdown import render_verdict
from tritongate.report.verdict_view import build_view


def _part(median: float, seed: int, rounds: int = 20) -> tuple[float, ...]:
    return samples(median, rounds=rounds, seed=seed)


def _why(result) -> str | None:
    (r,) = build_view(VerdictDoc.model_validate(verdict_document(result))).unconfirmed
    return r.unconfirmed_by()


def _blind_line(result) -> str:
    return next(x for x in render_verdict(verdict_document(result)).splitlines() if "| call not confirmed |" in x)


def test_a_short_first_call_its_fresh_pairs_repeated_is_said_to_be_short_not_unrepeated(tmp_path) -> None:
    # (runs before 2026-12-06 confirmed a call made on fewer pairs than a call needs)
    short = _paired_rows(tmp_path, [_part(20, 1, 10), _part(20, 2)], [_part(21, 3, 10), _part(21, 4)],
                         confirm_from=10, worker_pairs=tuple([0] * 5 + [1] * 5 + [2] * 10 + [3] * 10))
    (r,) = short.rows
    assert r.verdict is Verdict.UNCONFIRMED and any(x.startswith("confirmed on fresh worker pairs") for x in r.reasons)
    # what stopped the first call was not recorded: no stop is guessed (the confirmation's is not it)
    assert _why(short) == "the first call has 10 pairs, fewer than the 20 a call needs"
    assert "| 10 pairs, repeated on 20 fresh |" in render_verdict(verdict_document(short))


def test_a_short_confirmation_names_its_own_stop(tmp_path) -> None:
    parts = dict(confirm_from=20, worker_pairs=tuple([0] * 5 + [1] * 5 + [2] * 10 + [3] * 5 + [4] * 5))
    capped = _paired_rows(tmp_path / "capped", [_part(20, 1), _part(20, 2, 10)], [_part(21, 3), _part(21, 4, 10)],
                          stopped_by="round_cap", **parts)
    (r,) = capped.rows
    assert r.verdict is Verdict.UNCONFIRMED and r.stopped_by == "round_cap"
    assert _why(capped) == "its confirmation has 10 pairs, fewer than the 20 a call needs (stopped by the round cap)"
    # an earlier run's short first call and short confirmation: the stop is the confirmation's
    both = _paired_rows(tmp_path / "both", [_part(20, 1, 10), _part(20, 2, 10)], [_part(21, 3, 10), _part(21, 4, 10)],
                        confirm_from=10, worker_pairs=tuple([0] * 5 + [1] * 5 + [2] * 5 + [3] * 5),
                        stopped_by="run_budget")
    assert _why(both) == ("the first call has 10 pairs and its confirmation has 10 pairs (stopped by the run budget), "
                          "fewer than the 20 a call needs")


def test_a_call_the_launch_states_explain_names_the_states(tmp_path) -> None:
    for confirm_from, name in ((20, "confirmed"), (0, "first")):
        res = _paired_rows(tmp_path / name, [_part(1.2, 1), _part(1.2, 2)], [_part(1.38, 3), _part(1.38, 4)],
                           confirm_from=confirm_from, states=((0.82,) * 40, (1.0,) * 40))
        (r,) = res.rows
        assert r.verdict is Verdict.UNCONFIRMED and "launch states" in r.reasons[-1]
        assert _why(res) == r.reasons[-1][:-len(SHOWN_NOT_FAILING)]
        line = _blind_line(res)
        assert "pairs a call needs" not in line and "did not repeat" not in line and "not confirmed on" not in line


def test_an_unpaired_call_the_launch_states_explain_names_them_and_no_pairs(tmp_path) -> None:
    b, c = row(median=1.2), row(median=1.2)
    b = replace(b, samples=_part(1.2, 1, 8), measurement=replace(b.measurement, launch_state_us=(0.82,) * 8))
    c = replace(c, samples=_part(1.38, 2, 8), measurement=replace(c.measurement, launch_state_us=(1.0,) * 8))
    res = run_gate(*pair(tmp_path, [b], [c]), POLICY)
    assert res.rows[0].verdict is Verdict.UNCONFIRMED
    line = _blind_line(res)
    assert "launch state" in line and "None" not in line and "pairs a call needs" not in line


def test_a_call_its_fresh_pairs_did_not_repeat_gives_both_measurements(tmp_path) -> None:
    # the interpreter's layout: the first call on worker pair 0, its confirmation on worker pair 1
    res = _paired_rows(tmp_path, [_part(20, 1), _part(20, 2)], [_part(21, 3), _part(20, 4)], confirm_from=20,
                       worker_pairs=(0,) * 20 + (1,) * 20)
    why = _why(res)
    assert why is not None and why.startswith("+") and "on the first 20 pairs was not confirmed on fresh worker pairs" \
        in why and "on the 20 after" in why


def test_the_terminal_gives_an_unconfirmed_row_its_reason(tmp_path) -> None:
    from tritongate.report.verdict_terminal import summary_lines

    res = _paired_rows(tmp_path, [_part(20, 1), _part(20, 2)], [_part(21, 3), _part(21, 4)], worker_pairs=(0,) * 40)
    (line,) = [x for x in summary_lines(verdict_document(res)) if x.lstrip().startswith("UNCONFIRMED")]
    assert line.endswith("; why: called on one worker pair, where a process's own offset cannot be told from a change "
                         "(the cpu backend keeps one)")


def test_a_call_its_confirmation_did_not_repeat_is_not_said_to_be_stopped_by_a_budget(tmp_path) -> None:
    # nothing stopped either measurement: the advice was "raise --row-budget", which cannot help
    res = _paired_rows(tmp_path, [_part(20, 1), _part(20, 2)], [_part(21, 3), _part(20, 4)], confirm_from=20)
    (r,) = res.rows
    assert r.verdict is Verdict.UNCONFIRMED and r.stopped_by is None and r.reached_target is False
    assert "row budget" not in res.blind_text() and "1 called and not confirmed" in res.blind_text()
    assert _why(res).startswith("+4.96% on the first 20 pairs was not confirmed on fresh worker pairs")
