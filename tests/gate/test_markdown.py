import json
import math
import os
import re
from dataclasses import replace
from pathlib import Path

import pytest

from tritongate.gate.output import write_verdict
from tritongate.gate.policy import GatePolicy
from tritongate.gate.rule import Why
from tritongate.gate.verdict import VERDICT_SCHEMA_VERSION, Verdict, run_gate
from tritongate.report.markdown import STICKY_MARKER, cell, render_markdown
from tritongate.schema import PairInfo, Row, SkipReason

from tritongate.gate.simulate import synthetic_run

from tests.gate.helpers import CALIBRATION, binary, calibration_summary, pair, row

GOLDEN = Path(__file__).parent / "golden" / "verdict.md"


def paired(r: Row, side: str, *, pair_id="pair-1", target=0.01, reached=0.008, target_reached=True,
           max_rounds=80, confirm_rounds=0, inputs="own") -> Row:
    """``r`` as one side of a paired run (rounds alternating with the other side's)."""
    rounds = len(r.samples) // r.measurement.samples_per_round
    info = PairInfo(pair_id=pair_id, side=side, went_first=tuple(i % 2 == (side == "base") for i in range(rounds)),
                    worker_pairs=tuple(2 * i // rounds for i in range(rounds)),  # two worker pairs, half each
                    target_effect=target, detectable_effect=reached, target_reached=target_reached,
                    min_rounds=min(3, max_rounds), max_rounds=max_rounds, confirm_rounds=confirm_rounds,
                    inputs=inputs)
    return replace(r, measurement=replace(r.measurement, pairing=info))


def untimed(op="add", case="4096", dtype="float32", skip=SkipReason.IDENTICAL_BINARY, h="abc") -> Row:
    """An ok row deliberately not timed (its kernels were byte-identical to the other side's)."""
    r = row(op=op, case=case, dtype=dtype, variants=[binary(h)])
    return replace(r, samples=(), skipped=skip)


def table_line(text: str, *cells: str) -> str:
    """The one Markdown table line whose first cells are ``cells``."""
    head = "| " + " | ".join(cells) + " |"
    lines = [ln for ln in text.splitlines() if ln.startswith(head)]
    assert len(lines) == 1, (head, lines)
    return lines[0]


def cells_of(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def golden_result(tmp_path):
    base = [row(op="matmul", case="4096x4096x4096", median=220, seed=1),
            row(op="softmax", case="4096x4096", median=18, seed=2),
            row(op="add", case="1048576", dtype="float32", median=2.5, seed=3),
            row(op="rmsnorm", case="16x8192", median=1.9, seed=4),
            row(op="attention", case="4x16x1024x64", median=51, seed=5),
            row(op="silu_mul", case="16x14336", median=1.4, seed=6),
            row(op="rmsnorm", case="1x4096", median=3.1, seed=7, per_round=1),
            paired(row(rounds=40, op="layernorm", case="16x8192", median=4.2, seed=8), "base"),
            paired(row(rounds=40, op="softmax", case="8x256", median=2.2, seed=9, round_sd=0.02), "base",
                   reached=0.09, target_reached=False),
            untimed()]
    cand = [row(op="matmul", case="4096x4096x4096", median=235, seed=11),
            row(op="softmax", case="4096x4096", median=17, seed=12),
            row(op="add", case="1048576", dtype="float32", median=2.5, seed=13),
            row(op="rmsnorm", case="16x8192", median=1.9, seed=14,
                markers=["AUTOTUNE_REPLAY_FALLBACK reason=key_missing kernel=tritongate.ops.kernels.reduction.rmsnorm_kernel"]),
            row(op="attention", case="4x16x1024x64", median=51, seed=15),
            row(op="attention", case="1x32x4096x128", median=640, seed=16),
            row(op="rmsnorm", case="1x4096", median=3.4, seed=17, per_round=1),
            paired(row(rounds=40, op="layernorm", case="16x8192", median=4.2, seed=18), "candidate"),
            paired(row(rounds=40, op="softmax", case="8x256", median=2.2, seed=19, round_sd=0.02), "candidate",
                   reached=0.09, target_reached=False),
            untimed()]
    base_run, cand_run = pair(tmp_path, base, cand)
    return run_gate(base_run, cand_run, GatePolicy(op_min_effect={"add": 0.02}))


def test_markdown_matches_the_golden_file(tmp_path):
    text = render_markdown(golden_result(tmp_path), artifact_url="https://github.com/o/r/actions/runs/1/artifacts/2")
    if os.environ.get("TRITONGATE_UPDATE_GOLDEN"):
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()


def test_golden_structure(tmp_path):
    text = GOLDEN.read_text()
    assert text.startswith(STICKY_MARKER)
    assert text.index("Regressions") < text.index("Improvements") < text.index("Rejected") \
        < text.index("Missing") < text.index("New in") < text.index("<details>")
    assert "geomean speedup" in text and "Speedup by op" in text and "artifacts/2" in text


HOSTILE = [
    "<script>alert(1)</script>",
    "x|y|z",
    "[click](https://evil.example)",
    "@maintainers",
    "`rm -rf`",
    "**bold** _em_ ~~gone~~ #123",
    "<!-- tritongate-verdict -->",
    "</details><img src=x onerror=alert(1)>",
]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_are_escaped(tmp_path, name):
    marker = f"AUTOTUNE_REPLAY_FALLBACK reason=key_missing kernel={name.replace(' ', '_')}"
    base, cand = pair(tmp_path, [row(op=name, case=name)],
                      [row(op=name, case=name, seed=1, markers=[marker])])
    text = render_markdown(run_gate(base, cand, GatePolicy()))
    body = text[len(STICKY_MARKER):]
    for raw in ("<script", "](https://evil", "@maintainers", "`rm", "**bold**", "<img", "</details><",
                "<!-- tritongate"):
        assert raw not in body
    # the table row keeps its 4 cells: no injected pipe splits it
    rejected_rows = [ln for ln in text.splitlines() if ln.startswith("| ") and "replay fallback" in ln]
    assert rejected_rows and all(ln.count("|") == 5 for ln in rejected_rows)


def test_cell_escapes_everything_active():
    assert cell("a|b") == "a&#124;b"
    assert cell("<b>") == "&lt;b&gt;"
    assert cell("x\ny") == "x y"
    assert cell(None) == "–"
    stripped = re.sub(r"&#?\w+;", "", cell("<>|`*_[]@#~\\!$\"'&"))
    assert stripped == ""


def test_long_verdicts_are_cut_under_the_limit_and_say_so(tmp_path):
    long = "x" * 60
    base = [row(op=f"op{i:04d}{long}", case=f"c{i}", seed=i) for i in range(1500)]
    cand = [row(op=f"op{i:04d}{long}", case=f"c{i}", seed=10_000 + i, median=22 if i < 400 else 20)
            for i in range(1500)]
    result = run_gate(synthetic_run(base, "record"), synthetic_run(cand, "replay"), GatePolicy())
    text = render_markdown(result)
    assert len(text) <= 60_000
    assert "shortened to stay under 60,000 characters (1500 rows in all)" in text
    assert "more row(s) not shown" in text
    assert text.index("Regressions (400)") < text.index("shortened")
    out = write_verdict(result, tmp_path / "v")
    assert len(json.loads(out[0].read_text())["rows"]) == 1500


def test_step_summary_gets_the_verdict(tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    json_path, md_path = write_verdict(golden_result(tmp_path), tmp_path / "v")
    assert summary.read_text() == "earlier step\n" + md_path.read_text() + "\n"
    doc = json.loads(json_path.read_text())
    assert doc["schema_version"] == VERDICT_SCHEMA_VERSION == 4 and doc["passed"] is False
    assert doc["state"] == "fail" and doc["blind_rows"] >= 1
    assert doc["counts"]["REGRESSED"] == 1 and doc["counts"]["NEW"] == 1
    assert {"op", "rows", "min", "geomean", "max"} <= set(doc["per_op"][0])


def test_golden_result_covers_every_kind_of_detail_row(tmp_path):
    """The golden file shows each thing verdict.md must be able to say."""
    rows = {r.key: r for r in golden_result(tmp_path).rows}
    assert rows[("rmsnorm", "1x4096", "float16")].timing.why is Why.TOO_FEW_SAMPLES
    assert rows[("layernorm", "16x8192", "float16")].timing.paired
    assert rows[("softmax", "8x256", "float16")].pairing.target_reached is False
    untimed_row = rows[("add", "4096", "float32")]
    assert untimed_row.verdict is Verdict.IDENTICAL_BINARY and untimed_row.timing is None


def test_too_few_samples_says_so_and_detectable_is_not_a_number(tmp_path):
    base, cand = pair(tmp_path, [row(per_round=1)], [row(median=30, per_round=1, seed=1)])
    result = run_gate(base, cand, GatePolicy())
    (r,) = result.rows
    assert r.verdict is Verdict.UNCHANGED and r.timing.detectable is None  # the case under test
    text = render_markdown(result)
    line = cells_of(table_line(text, "softmax", "4096x4096", "float16", "UNCHANGED"))
    assert line[7] == "n/a"  # detectable
    assert line[8] == "unpaired"
    assert line[9] == "too few samples (base 5, candidate 5; 10 needed per side)"
    assert "≥ n/a" not in text and "None" not in text


def test_an_infinite_detectable_is_n_a(tmp_path):
    # one sample per side: no spread to estimate a noise floor from, so nothing is detectable
    base, cand = pair(tmp_path, [row(rounds=1, per_round=1)], [row(median=25, seed=1, rounds=1, per_round=1)])
    result = run_gate(base, cand, GatePolicy(min_samples=1))
    t = result.rows[0].timing
    assert t.why is Why.BELOW_NOISE_FLOOR and math.isinf(t.detectable) and math.isinf(t.noise_floor)
    line = cells_of(table_line(render_markdown(result), "softmax", "4096x4096", "float16", "UNCHANGED"))
    assert line[7] == "n/a" and "inf" not in " ".join(line)
    assert line[9] == "below the noise floor (not estimable: too few rounds)"


def test_every_unchanged_row_says_why_in_words(tmp_path):
    base = [row(case="overlap", median=20, seed=5),
            row(case="floor", median=20, seed=1, round_sd=0.03, within_sd=0.0005),
            row(case="small", median=20, seed=3, round_sd=0.0005, within_sd=0.0005)]
    cand = [row(case="overlap", median=20, seed=6),
            row(case="floor", median=21, seed=2, round_sd=0.03, within_sd=0.0005),
            row(case="small", median=20.1, seed=4, round_sd=0.0005, within_sd=0.0005)]
    base_run, cand_run = pair(tmp_path, base, cand)
    result = run_gate(base_run, cand_run, GatePolicy())
    rows = {r.case: r for r in result.rows}
    assert {c: r.timing.why for c, r in rows.items()} == {
        "overlap": Why.IQRS_OVERLAP, "floor": Why.BELOW_NOISE_FLOOR, "small": Why.BELOW_MIN_EFFECT}
    text = render_markdown(result)
    line = {c: cells_of(table_line(text, "softmax", c, "float16", "UNCHANGED")) for c in rows}
    assert line["overlap"][9] == "IQRs overlap"
    assert line["small"][9] == "below the minimum effect (1.0%)"
    assert line["floor"][9] == f"below the noise floor (±{rows['floor'].timing.noise_floor:.1%})"
    for c in rows:  # each could have called a change of some finite size
        assert re.fullmatch(r"≥ \d+\.\d%", line[c][7]), line[c][7]


def test_a_paired_row_is_labelled_paired_with_its_rounds(tmp_path):
    base, cand = pair(tmp_path, [paired(row(rounds=40, ), "base"), row(case="stored")],
                      [paired(row(rounds=40, seed=1), "candidate"), row(case="stored", seed=2)])
    result = run_gate(base, cand, GatePolicy())
    text = render_markdown(result)
    assert cells_of(table_line(text, "softmax", "4096x4096", "float16"))[8] == "paired, 40 rounds"
    assert cells_of(table_line(text, "softmax", "stored", "float16"))[8] == "unpaired"
    # a regression judged from paired rounds says so in its section too
    base, cand = pair(tmp_path / "reg", [paired(row(rounds=40, ), "base")], [paired(row(rounds=40, median=23, seed=1), "candidate")])
    text = render_markdown(run_gate(base, cand, GatePolicy()))
    line = cells_of(table_line(text, "softmax", "4096x4096", "float16"))
    assert text.index("Regressions") < text.index(table_line(text, "softmax", "4096x4096")) < text.index("Speedup by op")
    # paired: the effect is the mean per-pair log ratio, close to the 15 % planted
    assert line[5].startswith(("**+14.", "**+15.")) and line[5].endswith("%**") and line[8] == "paired, 40 rounds"


def test_an_untimed_identical_binary_row_renders(tmp_path):
    base, cand = pair(tmp_path, [untimed(), row()], [untimed(), row(seed=1)])
    result = run_gate(base, cand, GatePolicy())
    r = result.rows[0]
    assert r.verdict is Verdict.IDENTICAL_BINARY and r.timing is None and result.passed
    text = render_markdown(result)
    line = cells_of(table_line(text, "add", "4096", "float32", "IDENTICAL_BINARY"))
    assert line[4:6] == ["not timed", "not timed"]
    assert line[9] == "byte-identical kernels (not timed)"
    assert "All other rows (1 unchanged, 1 identical binary)" in text


def test_the_short_of_target_section_lists_rows_whose_pairing_fell_short(tmp_path):
    base = [paired(row(rounds=40, case="short"), "base", reached=0.034, target_reached=False, max_rounds=40),
            paired(row(rounds=40, case="reached"), "base", pair_id="pair-1")]
    cand = [paired(row(rounds=40, case="short", seed=1), "candidate", reached=0.034, target_reached=False,
                   max_rounds=40),
            paired(row(rounds=40, case="reached", seed=2), "candidate")]
    base_run, cand_run = pair(tmp_path, base, cand)
    result = run_gate(base_run, cand_run, GatePolicy())
    assert [r.case for r in result.short_of_target()] == ["short"]
    text = render_markdown(result)
    assert "### ⏳ Short of the precision target (1)" in text
    section = text[text.index("Short of the precision target"):text.index("<details>")]
    line = cells_of(table_line(section, "softmax", "short", "float16"))
    assert line[3:] == ["UNCHANGED", "1.0%", "3.4%", "40 (cap 40)"]
    assert "| softmax | reached |" not in section


def test_a_call_the_budgets_left_on_fewer_pairs_than_a_call_needs_is_unconfirmed(tmp_path):
    """A 10 % slowdown called on 12 pairs where a call needs 20 (the run budget ran out first):
    UNCONFIRMED, shown with the pairs it rests on, and it does not fail the gate."""
    base = [paired(row(rounds=12, case="early"), "base", max_rounds=80, confirm_rounds=20),
            paired(row(rounds=40, case="confirmed"), "base", max_rounds=80, confirm_rounds=20)]
    cand = [paired(row(rounds=12, case="early", median=22.0, seed=1), "candidate", max_rounds=80, confirm_rounds=20),
            paired(row(rounds=40, case="confirmed", median=22.0, seed=2), "candidate", max_rounds=80,
                   confirm_rounds=20)]
    result = run_gate(*pair(tmp_path, base, cand), GatePolicy())
    assert {r.case: r.verdict for r in result.rows} == {"early": Verdict.UNCONFIRMED, "confirmed": Verdict.REGRESSED}
    assert [r.case for r in result.short_of_target()] == ["early"]
    assert result.failures == ["1 regressed row(s)"]  # the confirmed one only
    section = render_markdown(result)
    section = section[section.index("Short of the precision target"):]
    line = cells_of(table_line(section, "softmax", "early", "float16"))
    assert line[3] == "UNCONFIRMED" and line[-1] == "12 (cap 80); a call needs 20"
    assert "| softmax | confirmed |" not in section
    rows = {r["case"]: r for r in (r.to_dict() for r in result.rows)}
    assert rows["early"]["call_unconfirmed"] is True and rows["confirmed"]["call_unconfirmed"] is False
    assert rows["early"]["reached_target"] is False and rows["early"]["stopped_by"] == "row_budget"
    alone = run_gate(*pair(tmp_path / "alone", base[:1], cand[:1]), GatePolicy())
    assert alone.passed and alone.state == "blind" and alone.headline().startswith("⚠️ no regression found")


def test_verdict_json_says_whose_inputs_each_paired_row_read(tmp_path):
    base = [paired(row(rounds=40, case="s"), "base", inputs="shared"), paired(row(rounds=40, case="o"), "base")]
    cand = [paired(row(rounds=40, case="s", seed=1), "candidate", inputs="shared"), paired(row(rounds=40, case="o", seed=2), "candidate")]
    rows = {r["case"]: r for r in (r.to_dict() for r in run_gate(*pair(tmp_path, base, cand), GatePolicy()).rows)}
    assert rows["s"]["inputs"] == "shared" and rows["o"]["inputs"] == "own"


def test_no_short_of_target_section_when_every_target_was_reached(tmp_path):
    base, cand = pair(tmp_path, [paired(row(rounds=40, ), "base")], [paired(row(rounds=40, seed=1), "candidate")])
    assert "Short of the precision target" not in render_markdown(run_gate(base, cand, GatePolicy()))


def test_the_rule_footnote_describes_the_log_ratio_rule(tmp_path):
    text = GOLDEN.read_text()
    rule = text[text.index("<sub>Rule:"):]
    for words in ("log ratio", "mean per-pair log ratio", "IQRs are disjoint", "minimum effect (1.0%; add 2.0%)",
                  "standard error of the log ratio", "Student's t", "tail probability of 4 normal SDs",
                  "per-round medians", "at least 10 samples"):
        assert words in rule
    assert "median difference" not in rule


def test_the_new_sections_shrink_under_the_size_limit_too(tmp_path):
    long = "y" * 60
    base = [paired(row(rounds=40, op=f"op{i:04d}{long}", case=f"c{i}", seed=i), "base", reached=0.05, target_reached=False)
            for i in range(600)]
    cand = [paired(row(rounds=40, op=f"op{i:04d}{long}", case=f"c{i}", seed=10_000 + i), "candidate", reached=0.05,
                   target_reached=False) for i in range(600)]
    result = run_gate(synthetic_run(base, "record"), synthetic_run(cand, "replay"), GatePolicy())
    assert len(result.short_of_target()) == 600
    text = render_markdown(result, limit=20_000)
    assert len(text) <= 20_000 and text.startswith(STICKY_MARKER)
    assert "Short of the precision target (600)" in text and "more row(s) not shown" in text
    assert "shortened to stay under 20,000 characters (600 rows in all)" in text


def test_a_timed_identical_binary_row_calls_its_difference_noise(tmp_path):
    base, cand = pair(tmp_path, [row(median=20, variants=[binary("abc")])],
                      [row(median=21, seed=9, variants=[binary("abc")])])
    result = run_gate(base, cand, GatePolicy())
    assert result.rows[0].verdict is Verdict.IDENTICAL_BINARY and result.rows[0].timing.why is Why.CALLED
    line = cells_of(table_line(render_markdown(result), "softmax", "4096x4096", "float16", "IDENTICAL_BINARY"))
    assert line[4] == "20.01 µs (19.98–20.03 µs)" and line[5] == "20.99 µs (20.96–21.01 µs)"  # timed: medians shown  # timed: medians shown
    assert line[8] == "unpaired"
    assert re.fullmatch(r"byte-identical kernels \(timing alone differed by \+\d\.\d\d%: run-to-run noise\)", line[9])


def test_an_aa_headline_counts_rows_and_does_not_sell_the_geomean(tmp_path):
    base, cand = pair(tmp_path, [row(case=f"c{i}", seed=i) for i in range(5)],
                      [row(case=f"c{i}", seed=100 + i) for i in range(5)])
    result = run_gate(base, cand, GatePolicy(process_sd=0.0))
    head = result.headline()
    assert head.startswith("⚠️ no regression found; ") and "(5 rows: 5 compared, 0 missing, 0 new)" in head
    assert "timed unpaired, from two stored runs (not the PR path" in head
    assert "no row changed beyond its noise (geomean" in head and "95 % CI" in head
    assert "geomean speedup" not in head


def test_notes_come_first_in_the_verdict(tmp_path):
    base, cand = pair(tmp_path, [row()], [row(seed=1)], cand_identity={"suite": {"name": "pr", "digest": "other"}})
    text = render_markdown(run_gate(base, cand, GatePolicy()))
    assert "suite files differ" in text
    assert text.index("suite files differ") < text.index("<details>")
    assert text.index("suite files differ") < text.index("<sub>Rule")


def test_medians_and_iqrs_are_auto_scaled_with_one_unit_per_range(tmp_path):
    def exact(case: str, start: float, step: float, seed: int = 0) -> Row:
        # 25 evenly spaced samples: q1, median and q3 are the 7th, 13th and 19th values
        return replace(row(case=case, seed=seed), samples=tuple(start + i * step for i in range(25)))

    base = [exact("ms", 1200, 2), exact("ns", 0.800, 0.002), exact("edge", 999.90, 0.005)]
    cand = [exact("ms", 1200, 2.001), exact("ns", 0.800, 0.0021), exact("edge", 999.90, 0.0051)]
    base_run, cand_run = pair(tmp_path, base, cand)
    text = render_markdown(run_gate(base_run, cand_run, GatePolicy()))
    assert "µs (IQR)" not in text and "| base median (IQR) | candidate median (IQR) |" in text
    line = {c: cells_of(table_line(text, "softmax", c, "float16", "UNCHANGED")) for c in ("ms", "ns", "edge")}
    assert line["ms"][4] == "1.224 ms (1.212–1.236 ms)"
    assert line["ns"][4] == "824.0 ns (812.0–836.0 ns)"
    # 999.96 µs rounds to 1000.0 µs: shown as 1.000 ms, its lower quartile (999.93) in ms too
    assert line["edge"][4] == "1.000 ms (0.9999–1.000 ms)"


def calibration_line(text: str) -> str:
    """The footer's line before the rule (its own paragraph), or "" when there is none."""
    lines = text.splitlines()
    rule = next(i for i, ln in enumerate(lines) if ln.startswith("<sub>Rule: "))
    assert lines[rule - 1] == ""
    return lines[rule - 2] if lines[rule - 2].startswith("<sub>") else ""


CALIBRATED = ("Calibrated on this runner 2026-11-30 (`tritongate calibrate`): 0 false verdicts in 102 A/A rows; "
              "a 2% slowdown caught on 33 of 34 rows.")


def test_the_footer_cites_the_calibration_and_says_nothing_without_one(tmp_path):
    result = golden_result(tmp_path)
    url = "https://github.com/o/r/actions/runs/1/artifacts/2"
    without = render_markdown(result, artifact_url=url)
    assert without == GOLDEN.read_text() and "Calibrated" not in without and "calibrat" not in without
    text = render_markdown(result, artifact_url=url, calibration=calibration_summary())
    assert calibration_line(text) == f"<sub>{CALIBRATED}</sub>"  # its own line, just before the rule
    assert calibration_line(without) == ""
    assert text.replace(f"<sub>{CALIBRATED}</sub>\n\n", "") == without  # nothing else moves


def test_a_calibration_from_another_gpu_is_a_warning(tmp_path):
    result = golden_result(tmp_path)  # measured on an NVIDIA H200
    text = render_markdown(result, calibration=calibration_summary(device="NVIDIA H100"))
    assert calibration_line(text) == ("<sub>⚠️ Calibrated on NVIDIA H100, not this GPU (NVIDIA H200), 2026-11-30 "
                    "(`tritongate calibrate`): 0 false verdicts in 102 A/A rows; a 2% slowdown caught on "
                    "33 of 34 rows.</sub>")
    assert calibration_line(render_markdown(result, calibration=calibration_summary())) == f"<sub>{CALIBRATED}</sub>"


@pytest.mark.parametrize("name", HOSTILE + ["</sub><b>x</b>", "`tritongate calibrate` <i>"])
def test_a_hostile_calibration_device_stays_escaped(tmp_path, name):
    base, cand = pair(tmp_path, [row()], [row(seed=1)])
    text = render_markdown(run_gate(base, cand, GatePolicy()),
                           calibration=calibration_summary(device=name, created_utc=f"<b>{name}"))
    line = calibration_line(text)
    assert line.startswith("<sub>⚠️ Calibrated on ") and line.endswith("</sub>") and "\n" not in line
    inner = line[len("<sub>"):-len("</sub>")]
    for raw in ("<", ">", "](", "@maintainers", "**", "~~", "#123", "|"):
        assert raw not in inner
    # the only code span is the fixed command: backticks come in pairs around it
    assert inner.replace("`tritongate calibrate`", "").count("`") == 0


def test_verdict_json_carries_the_calibration(tmp_path):
    from tritongate.gate.verdict_file import load_verdict

    base, cand = pair(tmp_path, [row()], [row(seed=1)])
    result = run_gate(base, cand, GatePolicy())
    write_verdict(result, tmp_path / "with", calibration=calibration_summary())
    write_verdict(result, tmp_path / "without")
    doc = json.loads((tmp_path / "with" / "verdict.json").read_text())
    assert doc["calibration"] == CALIBRATION and doc["schema_version"] == VERDICT_SCHEMA_VERSION
    assert json.loads((tmp_path / "without" / "verdict.json").read_text())["calibration"] is None
    assert CALIBRATED in (tmp_path / "with" / "verdict.md").read_text()
    assert "Calibrated" not in (tmp_path / "without" / "verdict.md").read_text()
    assert load_verdict(tmp_path / "with").passed  # an optional key: readers of this schema keep reading
