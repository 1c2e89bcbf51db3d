"""verdict.md from real gate results (synthetic runs): what each row kind says, the job
summary, the verdict.json beside it. The comment's layout itself is checked on the golden
verdicts (tests/report/test_verdict_markdown.py)."""

import json
import math
from dataclasses import replace

from tritongate.gate.pipeline import Citations, write_result
from tritongate.gate.policy import GatePolicy
from tritongate.gate.rule import Why
from tritongate.gate.verdict import VERDICT_SCHEMA_VERSION, Verdict, run_gate
from tritongate.gate.output import render_markdown
from tritongate.report.verdict_markdown import STICKY_MARKER, cell
from bench.sim.simulate import synthetic_run

from tests.gate.helpers import binary, pair, paired_run, row
from tests.report.golden_verdicts import untimed


def section(text: str, title: str) -> str:
    start = text.index(title)
    ends = [i for i in (text.find("\n**", start + 1), text.find("<details>", start)) if i > 0]
    return text[start: min(ends) if ends else len(text)]


def test_cell_escapes_everything_active():
    import re

    assert cell("a|b") == "a&#124;b"
    assert cell("<b>") == "&lt;b&gt;"
    assert cell("x\ny") == "x y"
    assert cell(None) == "–"
    assert re.sub(r"&#?\w+;", "", cell("<>|`*_[]@#~\\!$&")) == ""
    # quotes are inert once `<` is escaped (no HTML attribute can open, a cell is no link title)
    assert cell("the builds' \"python\"") == "the builds' \"python\""


def test_too_few_samples_is_a_row_that_could_not_resolve_anything(tmp_path):
    base, cand = pair(tmp_path, [row(per_round=1)], [row(median=30, per_round=1, seed=1)])
    result = run_gate(base, cand, GatePolicy())
    (r,) = result.rows
    assert r.verdict is Verdict.UNCHANGED and r.timing.detectable is None  # the case under test
    text = render_markdown(result)
    assert text.splitlines()[1] == "## ⚠️ No regression found; 1 row could not resolve 1 %"
    line = section(text, "Could not resolve 1 %")
    assert "| softmax · 4096x4096 · float16 | no change found | nothing | 1 % | too few samples (base 5, candidate 5) |" in line
    assert "None" not in text and "inf" not in text


def test_an_infinite_noise_floor_reads_nothing_not_inf(tmp_path):
    base, cand = pair(tmp_path, [row(rounds=1, per_round=1)], [row(median=25, seed=1, rounds=1, per_round=1)])
    result = run_gate(base, cand, GatePolicy(min_samples=1))
    t = result.rows[0].timing
    assert t.why is Why.BELOW_NOISE_FLOOR and math.isinf(t.detectable) and math.isinf(t.noise_floor)
    text = render_markdown(result)
    assert "inf" not in text and "| nothing |" in text


def test_a_paired_row_is_labelled_paired_with_its_pairs(tmp_path):
    b, c = paired_run(row(rounds=40), row(median=23, seed=1, rounds=40))
    base, cand = pair(tmp_path / "reg", [b, row(case="stored")], [c, row(case="stored", median=23, seed=2)])
    text = render_markdown(run_gate(base, cand, GatePolicy()))
    reg = section(text, "🔴 Regressed (2)")
    assert "| softmax · 4096x4096 · float16 | **+15." in reg and "| 20 pairs, confirmed on 20 fresh |" in reg
    assert "| softmax · stored · float16 | **+14." in reg and "| unpaired, 5 rounds |" in reg
    assert "the 20 % trimmed mean of the per-pair log ratios), so it can differ from the ratio of the two medians" in text


def test_an_untimed_identical_binary_row_counts_as_unchanged(tmp_path):
    timed = paired_run(row(rounds=40), row(seed=1, rounds=40))
    base, cand = pair(tmp_path, [untimed("add", "4096", "float32"), timed[0]],
                      [untimed("add", "4096", "float32"), timed[1]])
    result = run_gate(base, cand, GatePolicy())
    assert result.rows[0].verdict is Verdict.IDENTICAL_BINARY and result.rows[0].timing is None
    assert result.rows[1].verdict is Verdict.UNCHANGED and result.rows[1].reached_target  # the timed row saw 1 %
    text = render_markdown(result)
    assert "<details><summary>2 unchanged · all 2 rows</summary>" in text
    assert "| add · 4096 · float32 | IDENTICAL_BINARY | – | – | – | – |" in text


def test_rows_short_of_their_target_are_listed_and_regressed_rows_are_not(tmp_path):
    # short: its rounds move 1 % each, and 80 pairs (the round cap) cannot resolve 1 %
    rows = [paired_run(row(case="short", round_sd=0.01, rounds=80), row(case="short", seed=1, round_sd=0.01, rounds=80)),
            paired_run(row(case="reached", rounds=40), row(case="reached", seed=2, rounds=40)),
            paired_run(row(case="slow", rounds=40), row(case="slow", median=44, seed=3, rounds=40))]
    result = run_gate(*pair(tmp_path, [b for b, _ in rows], [c for _, c in rows]), GatePolicy())
    verdicts = {r.case: r for r in result.rows}
    assert verdicts["slow"].verdict is Verdict.REGRESSED and verdicts["short"].stopped_by == "round_cap"
    assert verdicts["reached"].reached_target and not verdicts["short"].reached_target
    text = render_markdown(result)
    blind = section(text, "Could not resolve 1 % (1)")
    assert "| softmax · short · float16 | no change found |" in blind and "the round cap (80 rounds)" in blind
    assert "reached" not in blind and "slow" not in blind


def test_a_row_short_of_the_pairings_aim_is_judged_at_a_larger_minimum_effect_when_re_gated(tmp_path):
    """A pair aimed at 1 % and could not reach it; gated again at 10 % the row resolves (its
    precision is far finer than 10 %), and a row short even of that shows 10 % as its target,
    not the pairing's 1 %."""
    rows = [paired_run(row(case="short", round_sd=0.01, rounds=80), row(case="short", seed=1, round_sd=0.01, rounds=80)),
            paired_run(row(case="wild", round_sd=0.15, rounds=80), row(case="wild", seed=1, round_sd=0.15, rounds=80))]
    assert all(b.measurement.pairing.target_reached is False for b, _ in rows)
    base, cand = pair(tmp_path, [b for b, _ in rows], [c for _, c in rows])
    at_1 = {r.case: r.reached_target for r in run_gate(base, cand, GatePolicy()).rows}
    regated = run_gate(base, cand, GatePolicy(min_effect=0.10))
    got = {r.case: r for r in regated.rows}
    assert at_1 == {"short": False, "wild": False}
    assert got["short"].reached_target and got["short"].verdict is Verdict.UNCHANGED
    assert not got["wild"].reached_target
    text = render_markdown(regated)
    blind = section(text, "Could not resolve 10 % (1)")
    assert "| softmax · wild · float16 | no change found |" in blind and "| 10 % |" in blind and "short" not in blind


def test_a_call_on_fewer_pairs_than_a_call_needs_is_unconfirmed(tmp_path):
    # early: 4 s a pair, so a 10 s run budget stops it after its first 5 pairs, called on them
    # (the row budget would not: a would-be call may pass it); confirmed: called on 20 pairs
    # and called again on 20 more on fresh worker pairs
    from dataclasses import replace

    from tritongate.pair.request import default_schedule
    early = paired_run(row(case="early", rounds=40), row(case="early", median=22.0, seed=1, rounds=40), per_pair_s=4.0,
                       schedule=replace(default_schedule("cuda", 5), run_budget_s=10.0))
    confirmed = paired_run(row(case="confirmed", rounds=40), row(case="confirmed", median=22.0, seed=2, rounds=40))
    assert early[1].measurement.pairing.stopped_by == "run_budget"
    assert confirmed[1].measurement.pairing.confirm_from == 20
    result = run_gate(*pair(tmp_path, [early[0], confirmed[0]], [early[1], confirmed[1]]), GatePolicy())
    assert {r.case: r.verdict for r in result.rows} == {"early": Verdict.UNCONFIRMED, "confirmed": Verdict.REGRESSED}
    text = render_markdown(result)
    unconf = section(text, "🟡 Unconfirmed")
    assert "softmax · early · float16" in unconf and "softmax · confirmed · float16" not in unconf
    assert "softmax · confirmed · float16" in section(text, "🔴 Regressed (1)")
    # what left it unconfirmed, in the gate's words, with the budget that cut it short
    blind = section(text, "Could not resolve 1 %")
    assert "| softmax · early · float16 | call not confirmed |" in blind
    assert ("| 1 % | called on 5 pairs, fewer than the 20 a confirmation needs (stopped by the run budget) |") in blind
    assert "| 5 pairs |" in unconf and "| 20 pairs, confirmed on 20 fresh |" in text
    rows = {r["case"]: r for r in (r.to_dict() for r in result.rows)}
    assert rows["early"]["call_unconfirmed"] is True and rows["confirmed"]["call_unconfirmed"] is False


def test_step_summary_and_verdict_md_are_the_same_rendering_of_verdict_json(tmp_path, monkeypatch, capsys):
    """The library writes no job summary; the gate command appends verdict.md to it."""
    from tritongate.cli import main
    from tritongate.report.verdict_markdown import render_verdict

    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    base, cand = pair(tmp_path, [row(), row(case="b")], [row(median=23, seed=1), row(case="b", seed=2)])
    write_result(run_gate(base, cand, GatePolicy()), tmp_path / "library")
    assert summary.read_text() == "earlier step\n"
    assert main(["gate", str(base.path), str(cand.path), "--out", str(tmp_path / "v"),
                 "--artifact-url", "https://github.com/o/r/actions/runs/1/artifacts/2"]) == 1
    json_path, md_path = tmp_path / "v" / "verdict.json", tmp_path / "v" / "verdict.md"
    assert summary.read_text() == "earlier step\n" + md_path.read_text() + "\n"
    doc = json.loads(json_path.read_text())
    assert render_verdict(doc) == md_path.read_text()  # what the trusted comment job draws
    assert doc["schema_version"] == VERDICT_SCHEMA_VERSION and doc["passed"] is False
    assert doc["state"] == "fail" and doc["counts"]["REGRESSED"] == 1
    assert doc["artifact_url"].endswith("artifacts/2") and md_path.read_text().startswith(STICKY_MARKER)
    reg = next(r for r in doc["rows"] if r["verdict"] == "REGRESSED")
    lo, hi = reg["effect_interval"]
    assert lo < reg["effect"] < hi


def test_a_cpu_run_with_a_codegen_overlay_says_it_does_nothing_there(tmp_path):
    from tests.gate.helpers import write_run

    cpu = {"device": "cpu", "backend": "cpu", "timer": "host-wall"}
    b = write_run(tmp_path / "smoke_20261201T120000Z", [row(timer="host-wall", median=900)], identity=cpu)
    c = write_run(tmp_path / "smoke_20261201T120500Z", [row(timer="host-wall", median=900, seed=1)],
                  mode="replay", replay_from=b.path,
                  identity={**cpu, "pair": {"build": {"env_overlay": {"DISABLE_MMA_V3": "1"}}}})
    result = run_gate(b, c, GatePolicy())
    assert result.passed
    text = render_markdown(result)
    assert "**Note:** The environment overlay DISABLE_MMA_V3=1 does nothing on the cpu backend" in text


def test_long_verdicts_stay_under_the_limit_and_say_what_they_left_out(tmp_path):
    long = "x" * 60
    base = [row(op=f"op{i:04d}{long}", case=f"c{i}", seed=i) for i in range(1500)]
    cand = [row(op=f"op{i:04d}{long}", case=f"c{i}", seed=10_000 + i, median=22 if i < 400 else 20)
            for i in range(1500)]
    result = run_gate(synthetic_run(base, "record"), synthetic_run(cand, "replay"), GatePolicy())
    text = render_markdown(result)
    assert len(text) <= 60_000
    assert "380 more rows not shown; verdict.json has every row." in text
    assert text.index("Regressed (400)") < text.index("380 more rows")
    assert "1480 more ops not shown; verdict.json has every op." in text  # the per-op table keeps 20
    out = write_result(result, tmp_path / "v")
    written = json.loads(out.json_path.read_text())
    assert len(written["rows"]) == 1500 and len(written["per_op"]) == 1500  # the artifact has them all


CALIBRATED = ("Calibrated on this runner 2026-11-30 (`tritongate calibrate`): 0 false verdicts in 102 A/A rows; "
              "a 2% slowdown caught on 33 of 34 rows.")


def calibration_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if "Calibrated" in ln]
    assert len(lines) <= 1
    return lines[0] if lines else ""


def test_the_footer_cites_the_calibration_and_says_nothing_without_one(tmp_path):
    from tests.gate.helpers import calibration_summary

    result = run_gate(*pair(tmp_path, [row()], [row(seed=1)]), GatePolicy())
    without = render_markdown(result)
    assert "alibrat" not in without
    text = render_markdown(result, calibration=calibration_summary())
    assert calibration_line(text) == f"<sub>{CALIBRATED}</sub>"
    other = render_markdown(result, calibration=calibration_summary(device="NVIDIA H100"))
    assert calibration_line(other).startswith("<sub>⚠️ Calibrated on NVIDIA H100, not this GPU (NVIDIA H200), ")


def test_a_hostile_calibration_device_stays_escaped(tmp_path):
    from tests.gate.helpers import calibration_summary

    result = run_gate(*pair(tmp_path, [row()], [row(seed=1)]), GatePolicy())
    for name in ("</sub><b>x</b>", "`tritongate calibrate` <i>", "[click](https://evil.example) @maintainers"):
        line = calibration_line(render_markdown(result, calibration=calibration_summary(device=name)))
        inner = line[len("<sub>"):-len("</sub>")]
        for raw in ("<", ">", "](", "@maintainers"):
            assert raw not in inner
        assert inner.replace("`tritongate calibrate`", "").count("`") == 0


def test_a_timed_identical_binary_row_is_unchanged_whatever_its_timing(tmp_path):
    base, cand = pair(tmp_path, [row(median=20, variants=[binary("abc")])],
                      [row(median=21, seed=9, variants=[binary("abc")])])
    result = run_gate(base, cand, GatePolicy())
    assert result.rows[0].verdict is Verdict.IDENTICAL_BINARY and result.rows[0].timing.why is Why.CALLED
    text = render_markdown(result)
    assert text.splitlines()[1] == "## ✅ No regression in 1 row"
    assert "| softmax · 4096x4096 · float16 | IDENTICAL_BINARY | +4." in text


def test_notes_are_paragraphs_of_their_own(tmp_path):
    base, cand = pair(tmp_path, [row()], [row(seed=1)], cand_identity={"suite": {"name": "pr", "digest": "other"}})
    text = render_markdown(run_gate(base, cand, GatePolicy()))
    assert "\n\n**Note:** Suite files differ" in text


def test_verdict_json_carries_the_calibration_and_reads_back(tmp_path):
    from tritongate.gate.verdict_file import load_verdict
    from tests.gate.helpers import CALIBRATION, calibration_summary

    result = run_gate(*pair(tmp_path, [row()], [row(seed=1)]), GatePolicy())
    write_result(result, tmp_path / "with", Citations(calibration=calibration_summary()))
    doc = json.loads((tmp_path / "with" / "verdict.json").read_text())
    assert doc["calibration"] == CALIBRATION and doc["calibration_line"] == CALIBRATED
    assert load_verdict(tmp_path / "with").passed


def test_the_footer_lists_the_thresholds_in_force(tmp_path):
    result = run_gate(*pair(tmp_path, [row()], [row(seed=1)]), GatePolicy(op_min_effect={"add": 0.02}))
    text = render_markdown(result)
    assert "<sub>Rule: minimum effect 1 % (add 2 %); a change must clear the row's noise floor" in text


def test_two_builds_told_apart_only_by_their_interpreters_name_them():
    """`pair --cand-python <overlay venv>` with the same Triton version: the footer read
    "base: triton 3.6.0 replay; candidate: triton 3.6.0 replay"; it names each interpreter now,
    and only where nothing else differs."""
    from types import SimpleNamespace

    from tritongate.gate.output import _sides
    from tritongate.model.verdict import VerdictSideDoc
    from tritongate.report.verdict_view import side_text

    def run(python, **extra):
        ident = {"compiler_ref": "triton 3.6.0", "pair": {"build": {"python": python}}, **extra}
        return SimpleNamespace(identity=ident, path="p", name="n", mode="replay")

    b, c = _sides(run("/opt/base/bin/python"), run("/opt/overlay/bin/python"))
    assert side_text(VerdictSideDoc(**b)) == ["triton 3.6.0", "(/opt/base/bin/python)", "replay"]
    assert side_text(VerdictSideDoc(**c)) == ["triton 3.6.0", "(/opt/overlay/bin/python)", "replay"]
    b, c = _sides(run("/opt/base/bin/python"), run("/opt/overlay/bin/python", compiler_ref="flagtree pr-7"))
    assert "python" not in b and "python" not in c
    b, c = _sides(run("/usr/bin/python3"), run("/usr/bin/python3"))
    assert "python" not in b


def test_an_overlay_build_names_its_patches(tmp_path):
    """`pair --cand-python <overlay venv>`: the footer said "triton 3.6.0" on both sides; the
    candidate's run identity holds the overlay's record (identity.triton_build), so it names
    the patches, and the verdict.json side lists them."""
    import json as _json

    from tritongate.gate.output import _sides, verdict_document
    from tritongate.model.verdict import VerdictSideDoc
    from tritongate.report.verdict_view import side_text

    overlay = _json.dumps({"patches": [{"path": "/w/bench/patches/drop-coalesce.patch", "sha256": "a" * 64},
                                       {"path": "jit-grid-tuple.patch", "sha256": "b" * 64}],
                           "files": ["triton/runtime/jit.py"], "base_triton": "/x"}, sort_keys=True)
    ident = {"compiler_ref": "triton 3.6.0", "software": {"triton": {"version": "3.6.0", "overlay": overlay}}}
    from types import SimpleNamespace

    b, c = _sides(SimpleNamespace(identity={"compiler_ref": "triton 3.6.0"}, path="p", name="n", mode="replay"),
                  SimpleNamespace(identity=ident, path="p", name="n", mode="replay"))
    assert "patches" not in b and c["patches"] == ["drop-coalesce.patch", "jit-grid-tuple.patch"]
    assert side_text(VerdictSideDoc(**c)) == ["triton 3.6.0", "+ drop-coalesce.patch, jit-grid-tuple.patch", "replay"]
    broken = {"compiler_ref": "x", "software": {"triton": {"overlay": "{not json"}}}
    assert "patches" not in _sides(SimpleNamespace(identity=broken, path="p", name="n", mode="m"),
                                   SimpleNamespace(identity=broken, path="p", name="n", mode="m"))[1]
    # through the gate: verdict.json's candidate lists them, and the Markdown names them
    base, cand = pair(tmp_path, [row()], [row()], cand_identity={"software": ident["software"]})
    result = run_gate(base, cand, GatePolicy())
    doc = verdict_document(result)
    assert doc["candidate"]["patches"] == ["drop-coalesce.patch", "jit-grid-tuple.patch"]
    assert "patches" not in doc["base"]
    assert "+ drop-coalesce.patch, jit-grid-tuple.patch" in render_markdown(result)


def test_a_row_held_by_the_spread_of_its_samples_is_not_told_to_raise_the_round_cap(tmp_path):
    """Each sample spreads ±2 % within its round while round medians agree to 0.05 %: a +1 %
    change clears the noise floor, but the IQRs overlap at any number of rounds (two
    attention_causal rows on an H100 aimed at 0.5 %); the verdict said "raise --max-rounds"."""
    b, c = paired_run(row(case="spread", within_sd=0.02, round_sd=0.0005, rounds=80),
                      row(case="spread", median=20.2, within_sd=0.02, round_sd=0.0005, seed=1, rounds=80))
    result = run_gate(*pair(tmp_path, [b], [c]), GatePolicy())
    (r,) = result.rows
    assert r.verdict is Verdict.UNCHANGED and r.timing.why is Why.IQRS_OVERLAP and r.stopped_by == "round_cap"
    assert r.timing.noise_floor < r.timing.effect < r.timing.detectable
    assert "1 by the spread of their samples within a round" in result.blind_text()
    assert "longer samples do: record with --sample-ms" in result.blind_text()
    assert "raise --max-rounds" not in result.blind_text()
    # a sample's launches are the CUDA-graph timer's: on another timer the hint would not help
    host = replace(result, base=replace(result.base, identity={**result.base.identity, "timer": "host-wall"}))
    assert "more rounds do not narrow it)" in host.blind_text() and "--sample-ms" not in host.blind_text()
    blind = section(render_markdown(result), "Could not resolve 1 % (1)")
    assert "the spread of its samples within a round (IQRs overlap; 80 rounds, and more do not narrow it)" in blind
