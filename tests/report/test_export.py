import io
import json
import math
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from tritongate.gate.output import verdict_document
from tritongate.schema import ResultsDoc
from tritongate.gate.policy import GatePolicy
from tritongate.gate.verdict import Verdict, run_gate
from tritongate.report.export import (FORMATS, RUN_COLUMNS, VERDICT_COLUMNS, render_run, run_frame, verdict_csv,
                                      verdict_frame)
from tritongate.rundir import Run
from tritongate.schema import SCHEMA_VERSION, PairInfo, Row, RunStatus, SkipReason

from tests.gate.helpers import binary, pair, row, write_run

HOSTILE = "<script>alert(1)</script>|[x](https://evil.example) @all `rm` **b**\u202eevil"


def spaced(start: float, step: float, n: int = 25) -> tuple[float, ...]:
    """25 evenly spaced samples: q1, median and q3 are exactly the 7th, 13th and 19th."""
    return tuple(start + i * step for i in range(n))


def timed(op="softmax", case="4096x4096", samples=spaced(1200, 2), **kw) -> Row:
    return replace(row(op=op, case=case), samples=tuple(samples), **kw)


def paired(r: Row, *, reached=0.008, target_reached=True) -> Row:
    info = PairInfo(pair_id="p1", side="candidate", went_first=(True, False) * 2 + (True,), target_effect=0.01,
                    detectable_effect=reached, target_reached=target_reached)
    return replace(r, measurement=replace(r.measurement, pairing=info))


def skipped(case="same") -> Row:
    return replace(row(op="add", case=case, variants=[binary("abc")]), samples=(), skipped=SkipReason.IDENTICAL_BINARY)


def a_run(rows, name="pr_20261129T120000Z", status=RunStatus.COMPLETE) -> Run:
    return Run(path=Path("/runs") / name, status=status, identity={"backend": "cuda"}, rows=tuple(rows),
               mode="record")


def by_case(frame: pd.DataFrame) -> dict[str, pd.Series]:
    return {rec["case"]: rec for _, rec in frame.iterrows()}


# -- run_frame ----------------------------------------------------------------------------------

def test_run_frame_has_stable_columns_and_dtypes():
    frame = run_frame(a_run([timed(), skipped(), row(op="bad", status="error", error="boom")]))
    assert list(frame.columns) == list(RUN_COLUMNS) == [
        "op", "case", "dtype", "status", "timer", "n", "median_us", "q1_us", "q3_us", "rel_iqr", "min_us",
        "mean_us", "launches_per_sample", "markers", "skipped", "error", "bytes", "flops", "tb_s", "tflop_s",
        "paired", "pairs", "detectable_effect", "target_reached", "samples_us"]
    assert {c: str(t) for c, t in frame.dtypes.items()} == RUN_COLUMNS


def test_a_new_scalar_field_of_a_stored_row_is_a_column_with_no_edit_to_the_export():
    """A field added to schema.Row reaches the CSV and the frame by itself (after the known
    columns); the fields the known columns stand for are fields of Row."""
    import dataclasses as dc
    from typing import Optional

    from pydantic.dataclasses import dataclass

    from tritongate.report.export import _ROW_FIELDS_SHOWN

    assert _ROW_FIELDS_SHOWN <= {f.name for f in dc.fields(Row)}

    @dataclass(frozen=True)
    class NotedRow(Row):
        note: Optional[str] = None

    noted = NotedRow(**{f.name: getattr(timed(), f.name) for f in dc.fields(Row)}, note="clock pinned")
    frame = run_frame(a_run([noted, timed(case="other")]))
    assert list(frame.columns) == [*RUN_COLUMNS, "note"]
    assert by_case(frame)["4096x4096"]["note"] == "clock pinned" and pd.isna(by_case(frame)["other"]["note"])
    assert "clock pinned" in render_run(a_run([noted]), "csv")


def test_an_empty_run_still_has_every_column_and_dtype():
    frame = run_frame(a_run([]))
    assert len(frame) == 0 and list(frame.columns) == list(RUN_COLUMNS)
    assert {c: str(t) for c, t in frame.dtypes.items()} == RUN_COLUMNS


def test_a_timed_row_holds_its_statistics_and_raw_samples():
    r = timed(markers=("GPU_BUSY reason=x", "GPU_THROTTLED reason=y"))
    (rec,) = [rec for _, rec in run_frame(a_run([r])).iterrows()]
    s = r.summary
    assert (rec["median_us"], rec["q1_us"], rec["q3_us"]) == (1224.0, 1212.0, 1236.0)
    assert (rec["min_us"], rec["mean_us"], rec["rel_iqr"]) == (s.min, s.mean, s.rel_iqr)
    assert rec["n"] == 25 and rec["launches_per_sample"] == 25 and rec["status"] == "ok"
    assert rec["samples_us"] == r.samples and isinstance(rec["samples_us"], tuple)
    assert rec["markers"] == "GPU_BUSY reason=x; GPU_THROTTLED reason=y"
    assert pd.isna(rec["skipped"]) and rec["error"] == ""
    assert not rec["paired"] and rec["pairs"] == 0 and pd.isna(rec["target_reached"])


def test_rows_without_samples_have_na_statistics_not_zeros():
    no_meas = replace(row(op="bare", case="bare", status="error", error="boom"), measurement=None)
    frame = run_frame(a_run([skipped(), row(op="bad", case="bad", status="error", error="kaput"), no_meas]))
    recs = by_case(frame)
    assert recs["same"]["skipped"] == "identical_binary" and recs["same"]["n"] == 0
    assert recs["bad"]["status"] == "error" and recs["bad"]["error"] == "kaput"
    for rec in recs.values():
        assert all(pd.isna(rec[c]) for c in ("median_us", "q1_us", "q3_us", "rel_iqr", "min_us", "mean_us"))
        assert rec["samples_us"] == ()
    assert pd.isna(recs["bare"]["launches_per_sample"]) and recs["bad"]["launches_per_sample"] == 25
    assert frame["launches_per_sample"].isna().tolist() == [False, False, True]


def test_throughput_only_for_device_time():
    device = timed(case="device", samples=[10.0] * 5, bytes=2e6, flops=4e6)  # 2 MB, 4 MFLOP in 10 µs
    host = replace(device, case="host", timer="host-wall")
    recs = by_case(run_frame(a_run([device, host, timed(case="unknown")])))
    assert recs["device"]["tb_s"] == pytest.approx(0.2) and recs["device"]["tflop_s"] == pytest.approx(0.4)
    assert math.isnan(recs["host"]["tb_s"]) and math.isnan(recs["host"]["tflop_s"])
    assert recs["host"]["bytes"] == 2e6  # the work is still recorded
    assert math.isnan(recs["unknown"]["bytes"]) and math.isnan(recs["unknown"]["tb_s"])


def test_paired_rows_say_their_pairs_and_precision():
    recs = by_case(run_frame(a_run([
        paired(timed(case="reached")), paired(timed(case="short"), reached=0.03, target_reached=False),
        paired(timed(case="unknown"), reached=None, target_reached=None), timed(case="single")])))
    assert recs["reached"]["paired"] and recs["reached"]["pairs"] == 5  # 25 samples, 5 per round
    assert recs["reached"]["detectable_effect"] == 0.008 and recs["reached"]["target_reached"]
    assert not recs["short"]["target_reached"] and recs["short"]["detectable_effect"] == 0.03
    assert pd.isna(recs["unknown"]["target_reached"]) and math.isnan(recs["unknown"]["detectable_effect"])
    assert not recs["single"]["paired"] and recs["single"]["pairs"] == 0


def test_a_loaded_run_gives_the_same_frame(tmp_path):
    rows = [timed(), paired(timed(case="p")), skipped()]
    loaded = write_run(tmp_path / "run", rows)
    pd.testing.assert_frame_equal(run_frame(loaded), run_frame(a_run(rows)))


# -- render_run ---------------------------------------------------------------------------------

def test_unknown_formats_are_refused_with_the_choices():
    assert FORMATS == ("csv", "json", "md")
    with pytest.raises(ValueError, match="unknown format 'table'; choose one of csv, json, md"):
        render_run(a_run([timed()]), "table")


def test_csv_reads_back_exactly_with_samples_space_separated():
    rows = [timed(op=HOSTILE, case='a,b "quoted"\nnext line'), skipped(), paired(timed(case="p"))]
    text = render_run(a_run(rows), "csv")
    assert text.splitlines()[0] == ",".join(RUN_COLUMNS)
    back = pd.read_csv(io.StringIO(text), keep_default_na=False, na_values=[""])
    assert len(back) == 3 and list(back.columns) == list(RUN_COLUMNS)
    assert back["op"][0] == HOSTILE and back["case"][0] == 'a,b "quoted"\nnext line'
    assert tuple(float(x) for x in back["samples_us"][0].split(" ")) == rows[0].samples  # raw µs, exact
    assert back["median_us"][0] == 1224.0 and back["q1_us"][0] == 1212.0  # numbers, not "1.22 ms"
    assert pd.isna(back["samples_us"][1]) and pd.isna(back["median_us"][1])
    assert back["skipped"][1] == "identical_binary"
    assert back["paired"].tolist() == [False, False, True] and back["pairs"].tolist() == [0, 0, 5]


def test_json_is_a_versioned_document_of_the_stored_rows():
    rows = [timed(op=HOSTILE), skipped(), row(op="bad", status="error", error="boom")]
    text = render_run(a_run(rows, status=RunStatus.FAILED), "json")
    doc = json.loads(text)
    assert doc["schema_version"] == SCHEMA_VERSION and doc["run"] == "pr_20261129T120000Z"
    assert doc["status"] == "failed" and doc["mode"] == "record"
    assert doc["rows"] == [json.loads(json.dumps(r.to_dict())) for r in rows]
    assert tuple(doc["rows"][0]["samples"]) == rows[0].samples  # raw µs
    assert list(ResultsDoc.model_validate_json(text, strict=True).rows) == rows  # the rows round-trip
    assert "\u202e" not in text and text.isascii()  # a bidi override stays an inert escape


def test_json_names_a_paired_side_as_pair_id_and_side():
    run = replace(a_run([timed()], name="base"), identity={"pair": {"pair_id": "pair-7", "side": "base"}})
    assert json.loads(render_run(run, "json"))["run"] == "pair-7/base"


def md_cells(line: str) -> list[str]:
    assert line.startswith("| ") and line.endswith(" |")
    return [c.strip() for c in line[2:-2].split(" | ")]


def test_md_is_a_table_with_formatted_times_and_right_aligned_numbers():
    rows = [timed(case="ms"), timed(case="ns", samples=spaced(0.800, 0.002)), skipped(),
            timed(case="tp", samples=[10.0] * 5, bytes=2e6)]
    lines = render_run(a_run(rows), "md").splitlines()
    assert len(lines) == 2 + len(rows)
    head = md_cells(lines[0])
    assert head == ["op", "case", "dtype", "timer", "status", "median", "IQR", "rel IQR", "n", "k", "markers",
                    "TB/s"]
    assert lines[1] == "|---|---|---|---|---|---:|---:|---:|---:|---:|---|---:|"
    body = {c[1]: dict(zip(head, c)) for c in map(md_cells, lines[2:])}
    assert (body["ms"]["median"], body["ms"]["IQR"]) == ("1.224 ms", "1.212–1.236 ms")
    assert (body["ns"]["median"], body["ns"]["IQR"]) == ("824.0 ns", "812.0–836.0 ns")
    assert body["same"]["median"] == "not timed (identical binary)" and body["same"]["n"] == "0"
    assert body["tp"]["TB/s"] == "0.20" and body["ms"]["TB/s"] == ""


def test_md_escapes_a_hostile_op_name_in_every_cell():
    marker = f"AUTOTUNE_REPLAY_FALLBACK reason=key_missing kernel={HOSTILE}"
    rows = [timed(op=HOSTILE, case="x|y\nz", markers=(marker,)), timed(case="plain")]
    text = render_run(a_run(rows), "md")
    for raw in ("<script", "](https://", "@all", "`rm", "**b**", "\u202e", "\n|z"):
        assert raw not in text
    lines = text.splitlines()
    assert len(lines) == 4  # the newline in the case did not start a row
    assert {ln.count("|") for ln in lines} == {12}  # 11 cells each: no injected pipe splits a row
    assert "&lt;script&gt;" in lines[2] and "&#92;u202e" in lines[2]  # shown, not obeyed


@pytest.mark.parametrize("status", [RunStatus.FAILED, RunStatus.RUNNING])
def test_csv_and_md_of_an_incomplete_run_say_so(status):
    # `show --allow-incomplete --format csv|md` printed the rows so far as a complete run's
    text = render_run(a_run([timed()], status=status), "csv")
    back = pd.read_csv(io.StringIO(text), keep_default_na=False, na_values=[""])
    assert list(back.columns) == ["run_status", *RUN_COLUMNS] and back["run_status"].tolist() == [status.value]
    assert render_run(a_run([], status=status), "csv").startswith("run_status,op,")
    md = render_run(a_run([timed()], status=status), "md")
    assert md.endswith(f"**Incomplete run ({status.value}): 1 rows so far, not the whole suite.**\n")
    complete = render_run(a_run([timed()]), "csv")  # a complete run's layout is unchanged
    assert complete.splitlines()[0] == ",".join(RUN_COLUMNS) and "Incomplete" not in render_run(a_run([]), "md")


def test_md_of_an_empty_run_is_just_the_header():
    lines = render_run(a_run([]), "md").splitlines()
    assert len(lines) == 2 and md_cells(lines[0])[:2] == ["op", "case"]


# -- verdict_frame ------------------------------------------------------------------------------

def verdict_doc(tmp_path) -> dict:
    base = [row(case="reg", median=20, seed=1), row(case="same", seed=2), skipped("untimed"),
            row(case="gone", seed=3), row(case="bad", seed=4)]
    cand = [row(case="reg", median=22, seed=5), row(case="same", seed=6), skipped("untimed"),
            row(case="bad", status="error", error="boom|<b>"), row(case="new", seed=7)]
    base_run, cand_run = pair(tmp_path, base, cand)
    # through JSON, as a reader of verdict.json gets it
    return json.loads(json.dumps(verdict_document(run_gate(base_run, cand_run, GatePolicy()))))


def test_verdict_frame_flattens_every_row_result(tmp_path):
    doc = verdict_doc(tmp_path)
    frame = verdict_frame(doc)
    assert len(frame) == len(doc["rows"]) == 6
    assert list(frame.columns) == list(VERDICT_COLUMNS)
    assert {c: str(t) for c, t in frame.dtypes.items()} == VERDICT_COLUMNS
    recs = by_case(frame)
    raw = {r["case"]: r for r in doc["rows"]}
    reg = recs["reg"]
    assert reg["verdict"] == Verdict.REGRESSED.value and reg["timed"]
    for c in ("effect", "speedup", "base_median_us", "cand_q3_us", "noise_floor", "detectable_effect", "min_effect"):
        assert reg[c] == raw["reg"][c]
    assert (reg["base_n"], reg["cand_n"], reg["pairs"], reg["rounds"]) == (25, 25, 0, 5)
    assert reg["why"] == "called" and not reg["paired"]
    assert recs["bad"]["reasons"] == "; ".join(raw["bad"]["reasons"]) and "boom|<b>" in recs["bad"]["reasons"]
    assert recs["bad"]["fails_policy"]


@pytest.mark.parametrize("name", ["-A1", "=HYPERLINK(\"https://evil.example\")", "+1+cmd", "@SUM(A1)"])
def test_verdict_csv_never_starts_a_cell_with_a_formula(tmp_path, name):
    # a user op may be named "-A1" ("letters, digits, _, . and -"): the run's csv quoted it, the verdict's did not
    doc = verdict_doc(tmp_path)
    for r in doc["rows"]:
        r["op"] = name
    back = pd.read_csv(io.StringIO(verdict_csv(doc)), keep_default_na=False, na_values=[""])
    assert back["op"].tolist() == ["'" + name] * len(doc["rows"])
    assert back["effect"].notna().any()  # numbers stay numbers


def test_verdict_csv_is_the_frame_as_csv_when_nothing_needs_quoting(tmp_path):
    doc = verdict_doc(tmp_path)
    assert verdict_csv(doc) == verdict_frame(doc).to_csv(index=False, lineterminator="\n")


def test_rows_that_were_not_timed_have_na_timings(tmp_path):
    recs = by_case(verdict_frame(verdict_doc(tmp_path)))
    for case, verdict in (("gone", "MISSING"), ("new", "NEW"), ("bad", "REJECTED"), ("untimed", "IDENTICAL_BINARY")):
        rec = recs[case]
        assert rec["verdict"] == verdict and not rec["timed"]
        assert pd.isna(rec["base_median_us"]) and pd.isna(rec["base_n"]) and pd.isna(rec["paired"])
        assert pd.isna(rec["target_reached"])


def test_verdict_frame_keeps_fields_it_does_not_know_and_reads_older_documents():
    doc = {"schema_version": 1, "rows": [
        {"op": "add", "case": "c", "dtype": "f16", "verdict": "UNCHANGED", "reasons": ["a", "b"],
         "base_median_us": 2.5, "extra": {"deep": {"x": 1}, "y": "z"}, "labels": [1, 2]}]}
    frame = verdict_frame(doc)
    assert list(frame.columns) == [*VERDICT_COLUMNS, "extra.deep.x", "extra.y", "labels"]
    (rec,) = [rec for _, rec in frame.iterrows()]
    assert rec["reasons"] == "a; b" and rec["base_median_us"] == 2.5 and rec["labels"] == "1; 2"
    assert rec["extra.deep.x"] == 1 and rec["extra.y"] == "z"
    assert pd.isna(rec["timed"]) and pd.isna(rec["why"])  # not in a schema-1 document


def test_an_empty_verdict_has_the_columns_and_a_non_verdict_is_refused():
    frame = verdict_frame({"rows": []})
    assert len(frame) == 0 and list(frame.columns) == list(VERDICT_COLUMNS)
    for bad in ({}, {"rows": "x"}, {"rows": [1]}, []):
        with pytest.raises(ValueError, match="not a verdict document"):
            verdict_frame(bad)
