"""history.json and history.md: versioned, newest first, new ones flagged, names escaped."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tritongate.history.changepoints import Detection
from tritongate.history.report import (HISTORY_JSON, HISTORY_MD, SCHEMA, build_report, new_change_points_markdown,
                                       render_markdown, to_json, write_report)
from tritongate.history.points import EntryInfo
from tritongate.history.series import History, missing_nightlies

from tests.history.helpers import T0, commit, noisy, series

HOSTILE = "evil|op <img src=x> @user [x](https://e.vil) **b** `c`"


def history_of(*all_series, store: Path = Path("/store"), notes=()) -> History:
    """A History over the union of the series' points (their entries, oldest first)."""
    seen = {}
    for s in all_series:
        for p in s.points:
            seen[p.entry] = EntryInfo(record_path=p.entry, recorded=p.recorded, commit=p.commit,
                                      compiler_repo="org/triton", triton_version="3.6.0", gpu_slug="nvidia-h200")
    entries = sorted(seen.values(), key=lambda e: e.recorded)
    missing = missing_nightlies([e.recorded for e in entries])
    return History(store=store, runner_class="h200", suite="pr", gpu_slug="nvidia-h200", entries=tuple(entries),
                   series=tuple(all_series), missing=tuple(missing),
                   notes=tuple(notes) + tuple(m.note for m in missing))


@pytest.fixture
def report():
    old = series(noisy([1.0] * 8 + [1.06] * 12, 0.004, seed=1), op=HOSTILE, case="c|1", dtype="float16")
    new = series(noisy([1.0] * 14 + [0.93] * 6, 0.004, seed=2), op="softmax", case="4096x4096")
    flat = series(noisy([1.0] * 20, 0.004, seed=3), op="softmax", case="1024x1024")
    short = series([5.0, 5.0, None], op="add", case="n=16", dtype="float32")
    return build_report(history_of(old, new, flat, short, notes=("skipped /store/x: damaged",)), Detection(),
                        new_last=1)


def test_change_points_newest_first_and_the_new_flag(report):
    cps = report.change_points
    assert [(c.op, c.index) for c in cps] == [("softmax", 14), (HOSTILE, 8)]
    assert [report.is_new(c) for c in cps] == [False, False]  # both were found without tonight too
    wide = build_report(report.history, new_last=6)
    assert [wide.is_new(c) for c in wide.change_points] == [True, False]
    assert "1 new" in wide.headline() and "4 series over 20 entries, 0 missing nightlies; 2 change points" \
        in wide.headline()


def test_a_change_is_new_the_night_the_history_first_shows_it():
    """A 7 % step after 14 nights needs 3 nights after it to be called: on night 17 it is new,
    the night after it is not (it was found the night before too)."""
    values = noisy([1.0] * 14 + [1.07] * 4, 0.003, seed=4)
    tonight = build_report(history_of(series(values[:17])), new_last=1)
    assert [(c.index, tonight.is_new(c)) for c in tonight.change_points] == [(14, True)]
    assert tonight.new_change_points and "1 new" in tonight.headline()
    next_night = build_report(history_of(series(values)), new_last=1)
    assert [(c.index, next_night.is_new(c)) for c in next_night.change_points] == [(14, False)]


def test_history_json_is_versioned_and_complete(report):
    doc = to_json(report, {"softmax": "plots/softmax.png"})
    assert doc["schema"] == SCHEMA == 2
    assert doc["counts"] == {"series": 4, "entries": 20, "missing_nightlies": 0, "change_points": 2,
                             "new_change_points": 0}
    assert doc["rule"]["min_effect"] == 0.02 and doc["rule"]["p_value"] == 0.01 and doc["rule"]["new_last"] == 1
    assert "log(n)" in doc["rule"]["penalty"]
    first = doc["change_points"][0]
    assert first["op"] == "softmax" and first["index"] == 14 and first["new"] is False
    assert first["before"]["commit"] == commit(13) and first["after"]["commit"] == commit(14)
    assert first["rel_change"] == pytest.approx(-0.07, abs=0.01) and first["drift"] == pytest.approx(-0.07, abs=0.01)
    by_op = {(s["op"], s["case"]): s for s in doc["series"]}
    flat = by_op[("softmax", "1024x1024")]
    assert len(flat["points"]) == 20 and flat["change_points"] == [] and flat["drift"] == 0
    first_point = report.history.series[2].points[0]
    assert flat["points"][0] == {"recorded_utc": T0.isoformat(), "commit": commit(0), "entry": first_point.entry,
                                 "median_us": first_point.median_us, "n": 25, "gap": None,
                                     "config": None}
    short = by_op[("add", "n=16")]
    assert short["points"][2]["gap"] == "error: boom" and short["note"].startswith("only 2 valued points (of 3)")
    assert doc["plots"] == {"softmax": "plots/softmax.png"} and len(doc["entries"]) == 20
    assert any("fewer than 6 valued points" in n for n in doc["notes"])
    json.dumps(doc, allow_nan=False)


def test_history_md_escapes_names_from_the_store(report):
    md = render_markdown(report, {HOSTILE: "plots/evil-op.png"})
    assert HOSTILE not in md and "<img" not in md and "@user" not in md and "](https" not in md
    row = next(line for line in md.splitlines() if line.startswith("|  | evil"))
    assert row.count(" | ") == 8  # nine cells: the | in the op and case names did not add columns
    assert "evil&#124;op &lt;img src=x&gt; &#64;&#8203;user" in row and "c&#124;1" in row
    assert f"`{commit(7)[:7]}…{commit(8)[:7]}` (2026-11-08 → 2026-11-09)" in row
    assert re.search(r"\| \+[56]\.\d% \| \d+\.\d+ µs → \d+\.\d+ µs \| \+[56]\.\d% \|", row)
    assert "[evil&#124;op" in md and "(plots/evil-op.png)" in md  # a plot link with escaped text


def test_history_md_sections_and_counts(report):
    md = render_markdown(report)
    assert md.startswith("# Performance history: pr on h200 (nvidia-h200)\n")
    assert "4 series, 20 entries (2026-11-01 to 2026-11-20), 0 missing nightlies; 2 change points, 0 new." in md
    # one of the 4 series is too short to look at: "no new change points" says so
    assert ("## New change points: pr on h200 (nvidia-h200)\n\nNo new change points in the last entry (3 series "
            "long enough to look at; 1 with fewer than 6 valued points were not looked at).") in md
    table = md.split("## All change points (newest first)")[1]
    assert table.index("softmax") < table.index("evil")
    assert "| new | op | case | dtype | change | before → after | series drift | between commits | p |" in table
    assert "- skipped /store/x: damaged" in md and "fewer than 6 valued points" in md


def test_the_new_section_alone(report):
    wide = build_report(report.history, new_last=6)
    section = new_change_points_markdown(wide)
    assert section.startswith("## New change points: pr on h200 (nvidia-h200)\n\n1 change point first seen in the "
                              "last 6 entries (+ is slower):")
    assert "softmax" in section and "evil" not in section and re.search(r"\| -[67]\.\d% \|", section)
    assert section in render_markdown(wide)


def test_no_change_points_says_so():
    quiet = build_report(history_of(series(noisy([1.0] * 12, 0.004, seed=0))))
    md = render_markdown(quiet)
    assert "No change points: no shift of 2.0% or more was confirmed at p < 0.01" in md
    assert "No new change points in the last entry." in md and "## Notes" not in md


def test_commits_that_are_not_hex_are_escaped_not_quoted():
    values = [20.0] * 8 + [22.0] * 8
    s = series(values, commits=["main`@x|y"] * 8 + ["v3.6.0-rc1"] * 8)
    md = render_markdown(build_report(history_of(s)))
    assert "main&#96;&#64;&#8203;x&#124;y…v3.6.0-rc1 (" in md and "`main" not in md


def test_missing_nightlies_are_counted_and_noted():
    s = series(noisy([1.0] * 10, 0.004, seed=0), skip_nights=[3, 4])
    rep = build_report(history_of(s))
    assert "2 missing nightlies" in rep.headline()
    assert "about 2 nightlies missing between 2026-11-03 03:00 and 2026-11-06 03:00 UTC" in render_markdown(rep)


def test_write_report_is_atomic_and_readable(tmp_path, report):
    out = tmp_path / "a" / "b"
    json_path, md_path = write_report(report, out)
    assert (json_path, md_path) == (out / HISTORY_JSON, out / HISTORY_MD)
    assert json.loads(json_path.read_text())["schema"] == 2 and md_path.read_text().startswith("# Performance")
    assert sorted(p.name for p in out.iterdir()) == [HISTORY_JSON, HISTORY_MD]  # no temp file left


def test_new_last_is_validated(report):
    with pytest.raises(ValueError, match="new_last"):
        build_report(report.history, new_last=0)


def test_only_series_with_a_change_point_are_analysed_again_without_the_last_entries(monkeypatch):
    import tritongate.history.report as report_mod

    calls = []
    real = report_mod.analyse_many

    def analyse_many(series, rule):
        calls.extend((s.key, len(s.points)) for s in series)
        return real(series, rule)

    monkeypatch.setattr(report_mod, "analyse_many", analyse_many)
    step = series(noisy([1.0] * 8 + [1.06] * 12, 0.004, seed=1), op="softmax", case="c1")
    flat = [series(noisy([1.0] * 20, 0.004, seed=s), op="softmax", case=f"flat{s}") for s in range(3)]
    got = build_report(history_of(step, *flat), new_last=1)
    assert [c.index for c in got.change_points] == [8] and not got.is_new(got.change_points[0])
    # every series once, then the one with a change point without tonight's entry
    assert calls == [(s.key, 20) for s in (step, *flat)] + [(step.key, 19)]


def test_history_json_is_written_a_series_at_a_time_byte_for_byte_as_one_dump(tmp_path, report):
    json_path, _ = write_report(report, tmp_path, {"softmax": "plots/softmax.png"})
    whole = json.dumps(to_json(report, {"softmax": "plots/softmax.png"}), indent=None, sort_keys=False,
                       allow_nan=False) + "\n"
    assert json_path.read_bytes() == whole.encode("utf-8")
    empty = build_report(history_of(series([5.0, 5.0, None], op="add", case="n=16", dtype="float32")))
    json_path, _ = write_report(empty, tmp_path / "empty")
    assert json_path.read_text() == json.dumps(to_json(empty), allow_nan=False) + "\n"


def test_a_failed_write_leaves_the_old_history_json(tmp_path, report, monkeypatch):
    import tritongate.history.jsonout as jsonout

    json_path, _ = write_report(report, tmp_path)
    before = json_path.read_bytes()

    def broken(doc):
        yield "{"
        raise OSError("disk full")

    monkeypatch.setattr(jsonout, "chunks", broken)
    with pytest.raises(OSError, match="disk full"):
        write_report(report, tmp_path)
    assert json_path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [HISTORY_JSON, HISTORY_MD]  # no temp file left


def test_a_step_too_new_to_confirm_is_not_called_no_movement():
    """Six nights, then three at +220 %: history.md said "no series moved by 2.0% or more beyond
    its noise". A two-sided Mann–Whitney U of 6 and 3 nights gives at best p = 2/84 = 0.024."""
    from tritongate.history.report import confirmable_sides

    step = series(noisy([1.0] * 6 + [3.2] * 3, 0.004, seed=5), op="mine")
    text = render_markdown(build_report(history_of(step), Detection(), new_last=1))
    assert "moved by" not in text
    assert ("No change points: no shift of 2.0% or more was confirmed at p < 0.01, which takes enough nights on "
            "both sides of it (at the least 9 and 3, 6 and 4 or 5 and 5).") in text
    assert confirmable_sides(Detection()) == [(9, 3), (6, 4), (5, 5)]
    four_after = series(noisy([1.0] * 6 + [3.2] * 4, 0.004, seed=5), op="mine")
    found = build_report(history_of(four_after), Detection(), new_last=1)
    (cp,) = [c for a in found.analyses for c in a.change_points]
    assert cp.p_value < 0.01 and "| 0.0095 |" in render_markdown(found)  # not "0.010": it passed p < 0.01
