"""Series from a store of real publishes: order, values, gaps, damaged entries, missing nights."""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest

from tritongate.baselines.manifest import BaselineError
from tritongate.history.points import ABSENT, Point, gap_reason
from tritongate.history.series import (HistoryError, MissingNightly, Series,
                                       load_history, missing_nightlies)

from tests.conftest import make_row
from tests.gate.helpers import row
from tests.history.helpers import DAY, T0, commit, publish_nights, series

FALLBACK = "AUTOTUNE_REPLAY_FALLBACK reason=key_missing kernel=k"


def _night(i: int) -> list:
    rows = [row(median=20.0 + i, seed=i), row(case="1024x1024", median=5.0, seed=i)]
    if i == 1:
        rows[1] = row(case="1024x1024", status="error", error="RuntimeError: out of\nresources")
    if i == 2:
        rows[1] = row(case="1024x1024", median=5.0, markers=(FALLBACK,))
    if i >= 1:
        rows.append(row(op="add", case="n=4096", dtype="float32", median=3.0, seed=i))  # an op added on night 1
    if i == 3:
        rows.pop(0)  # softmax 4096x4096 left out for a night
    return rows


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("series")
    store = tmp / "store"
    entries = publish_nights(store, tmp / "runs", [_night(i) for i in range(6)], skip=[4])
    return store, entries


def test_series_per_row_in_recorded_order_with_values_and_gaps(store):
    store, entries = store
    h = load_history(store, "h200", "pr")
    assert (h.runner_class, h.suite, h.gpu_slug, h.store) == ("h200", "pr", "nvidia-h200", store)
    assert [e.record_path for e in h.entries] == [str(p.relative_to(store)) for p in entries]
    assert [e.recorded for e in h.entries] == [T0 + i * DAY for i in (0, 1, 2, 3, 5)]
    assert [e.commit for e in h.entries] == [commit(i) for i in (0, 1, 2, 3, 5)]
    assert h.entries[0].compiler_repo == "org/triton" and h.entries[0].triton_version == "3.6.0"
    by_key = {s.key: s for s in h.series}
    assert list(by_key) == sorted(by_key)
    big = by_key[("softmax", "4096x4096", "float16")]
    assert [p.median_us for p in big.points][:3] == pytest.approx([20.0, 21.0, 22.0], rel=0.01)
    expected = row(median=20.0, seed=0).summary
    assert big.points[0].median_us == expected.median and big.points[0].n == expected.n == 25
    assert big.points[3].gap == ABSENT and big.points[3].median_us is None  # left out on night 3
    assert big.points[4].entry == h.entries[4].record_path and big.points[4].commit == commit(5)
    small = by_key[("softmax", "1024x1024", "float16")]
    assert small.points[1].gap == "error: RuntimeError: out of resources"
    assert small.points[2].gap == "marked AUTOTUNE_REPLAY_FALLBACK"
    assert small.valued() == [0, 3, 4]
    added = by_key[("add", "n=4096", "float32")]
    assert len(added.points) == 4 and added.points[0].recorded == T0 + DAY  # starts where the op appeared


def test_a_missing_nightly_is_noted(store):
    store, _ = store
    h = load_history(store, "h200", "pr")
    (hole,) = h.missing
    assert (hole.after, hole.before, hole.missing, hole.spacing_days) == (T0 + 3 * DAY, T0 + 5 * DAY, 1, 1.0)
    assert hole.note in h.notes and "2026-11-04 03:00 and 2026-11-06 03:00" in hole.note


def test_a_damaged_entry_is_skipped_with_a_note(tmp_path):
    store = tmp_path / "store"
    entries = publish_nights(store, tmp_path / "runs", [[row(median=20.0, seed=i)] for i in range(3)])
    results = entries[1] / "results.json"
    results.write_text(results.read_text().replace("softmax", "softmaz"))
    (entries[2] / "manifest.json").write_text("{")
    h = load_history(store, "h200", "pr")
    assert [e.commit for e in h.entries] == [commit(0)]
    assert len(h.notes) == 2 and all(n.startswith(("skipped ", "damaged ")) for n in h.notes)  # one per entry
    assert any("does not match its sha256" in n for n in h.notes)


def test_usage_errors_name_the_input_and_the_fix(tmp_path):
    with pytest.raises(HistoryError, match="is not a directory"):
        load_history(tmp_path / "nope", "h200", "pr")
    store = tmp_path / "store"
    publish_nights(store, tmp_path / "runs", [[row()]])
    with pytest.raises(HistoryError, match=r"no readable entries for runner class h200, suite deep in .*"
                                           r"tritongate baseline list --store"):
        load_history(store, "h200", "deep")
    with pytest.raises(HistoryError, match="on nvidia-h100"):
        load_history(store, "h200", "pr", gpu="NVIDIA H100")
    with pytest.raises(BaselineError, match="runner class"):
        load_history(store, "H200", "pr")


def test_several_gpus_need_a_choice(tmp_path):
    store = tmp_path / "store"
    publish_nights(store, tmp_path / "a", [[row()]] * 2)
    publish_nights(store, tmp_path / "b", [[row(median=30.0)]] * 2, device="NVIDIA H100")
    with pytest.raises(HistoryError, match=r"2 GPUs \(nvidia-h100, nvidia-h200\); pass --gpu"):
        load_history(store, "h200", "pr")
    h = load_history(store, "h200", "pr", gpu="nvidia-h100")
    assert h.gpu_slug == "nvidia-h100" and h.series[0].points[0].median_us == pytest.approx(30.0, rel=0.01)
    assert load_history(store, "h200", "pr", gpu="NVIDIA H200").gpu_slug == "nvidia-h200"


def test_two_compilers_nightlies_are_two_histories(tmp_path):
    # a FlagTree nightly and an upstream one on the same runners: not one series with steps between them
    store = tmp_path / "store"
    publish_nights(store, tmp_path / "a", [[row()]] * 2)
    publish_nights(store, tmp_path / "b", [[row(median=30.0)]] * 2, compiler_repo="git@github.com:flagos-ai/FlagTree.git")
    with pytest.raises(HistoryError, match=r"2 compiler repositories \(flagos-ai/FlagTree, org/triton\); "
                                           r"pass --compiler-repo"):
        load_history(store, "h200", "pr")
    h = load_history(store, "h200", "pr", compiler_repo="https://github.com/flagos-ai/flagtree")
    assert len(h.entries) == 2 and h.series[0].points[0].median_us == pytest.approx(30.0, rel=0.01)
    assert len(load_history(store, "h200", "pr", compiler_repo="org/triton").entries) == 2
    with pytest.raises(HistoryError, match="--compiler-repo"):
        load_history(store, "h200", "pr", compiler_repo="not a repo")


def test_nightlies_that_record_no_repository_are_a_history_of_their_own(tmp_path):
    store = tmp_path / "store"
    publish_nights(store, tmp_path / "a", [[row(seed=i)] for i in range(2)])
    publish_nights(store, tmp_path / "c", [[row(median=40.0, seed=i)] for i in range(2)], compiler_repo=None)
    with pytest.raises(HistoryError, match=r"\(none, org/triton\); pass --compiler-repo with one of them "
                                           r"\(none: the entries that record no repository\)"):
        load_history(store, "h200", "pr")
    h = load_history(store, "h200", "pr", compiler_repo="none")
    assert [p.median_us for p in h.series[0].points] == pytest.approx([40.0, 40.0], rel=0.01)
    assert len(load_history(store, "h200", "pr", compiler_repo="org/triton").entries) == 2
    # a repository spelt so that it cannot be read is unknown: not "none", and named as such
    manifest = next(store.rglob("manifest.json"))
    doc = json.loads(manifest.read_text())
    assert doc["compiler_repo"] == "org/triton"
    manifest.write_text(json.dumps({**doc, "compiler_repo": "Triton (upstream)"}))
    assert len(load_history(store, "h200", "pr", compiler_repo="none").entries) == 2
    with pytest.raises(HistoryError, match=r"\('Triton \(upstream\)' \(unreadable\), none, org/triton\)"):
        load_history(store, "h200", "pr")


def test_a_night_recorded_at_another_sample_length_is_named(tmp_path):
    """--sample-ms changes each row's launches per sample, and the per-launch time with it: a
    step on that night may be the measurement, not the compiler."""
    from tritongate.harness import MeasureConfig
    from tritongate.identity import config_dict

    def night(ms):
        return {"measure_config": config_dict(MeasureConfig(target_sample_s=ms / 1e3))} if ms else {}

    store = tmp_path / "store"
    publish_nights(store, tmp_path / "runs", [[row(seed=i)] for i in range(5)],
                   identities=[night(0.5), night(0.5), night(2), night(None), night(2)])
    notes = [n for n in load_history(store, "h200", "pr").notes if "sample length" in n]
    (note,) = notes  # 0.5 -> 2 on night 2; a night that does not say (night 3) is no change
    assert note.startswith(f"the sample length differs between the nights of {(T0 + DAY):%Y-%m-%d %H:%M} and "
                           f"{(T0 + 2 * DAY):%Y-%m-%d %H:%M} UTC (0.5 ms -> 2 ms, --sample-ms)")

def test_a_night_whose_suite_gave_an_op_another_sample_length_is_named(tmp_path):
    """A suite's per-op sample_ms changes that op's launches per sample (attention_causal 3 -> 14
    launches: its per-launch median moved about -1.5 % on an H100); the note names the op. An op
    whose length is not longer than the run's is no change."""
    from tritongate.harness import MeasureConfig
    from tritongate.identity import config_dict

    def night(per_op):
        suite = {"name": "pr", "digest": "d1", **({"sample_ms": per_op} if per_op is not None else {})}
        return {"measure_config": config_dict(MeasureConfig(target_sample_s=0.5e-3)), "suite": suite}

    store = tmp_path / "store"
    publish_nights(store, tmp_path / "runs", [[row(seed=i)] for i in range(4)],
                   identities=[night(None), night({"attention_causal": 2.0}), night({"attention_causal": 2.0,
                                                                                    "add": 0.5}), night({})])
    notes = [n for n in load_history(store, "h200", "pr").notes if "sample length" in n]
    assert [n.split(" UTC ")[1].split(":")[0] for n in notes] == [
        "(0.5 ms -> 0.5 ms (attention_causal 2 ms), the suite's sample_ms)",
        "(0.5 ms (attention_causal 2 ms) -> 0.5 ms, the suite's sample_ms)"]


def test_a_night_of_another_suite_file_is_named(tmp_path):
    """A record of another file named like the suite (or the suite edited) was merged into the
    series without a word; the night its digest changes is noted."""
    store = tmp_path / "store"
    publish_nights(store, tmp_path / "w", [[row()]] * 3, digests=("d1", "d1", "other"))
    h = load_history(store, "h200", "pr")
    (note,) = [n for n in h.notes if "suite file differs" in n]
    assert note.startswith("the pr suite file differs between the nights of 2026-") and "(digest d1 -> other)" in note
    assert not [n for n in load_history(store, "h200", "pr").notes if "d1 -> d1" in n]


def test_missing_nightlies_against_the_usual_spacing():
    days = [T0 + i * DAY for i in (0, 1, 2, 3, 6, 7, 8)]
    (hole,) = missing_nightlies(days)
    assert hole.missing == 2 and hole.after == T0 + 3 * DAY
    assert not missing_nightlies(days[:2] + [T0 + 9 * DAY])[1:]  # two intervals: one is compared
    assert not missing_nightlies([T0, T0 + 5 * DAY])  # one interval: no usual spacing
    assert not missing_nightlies([T0 + i * DAY for i in range(5)])
    rerun = [T0, T0 + DAY, T0 + DAY + dt.timedelta(hours=2), T0 + 2 * DAY, T0 + 3 * DAY]
    assert not missing_nightlies(rerun)  # a re-run the same night is not a hole


def test_entries_minutes_apart_miss_no_nightly():
    """Published seconds apart, a 60-second gap read as "about 16 nightlies missing"."""
    times = [T0 + dt.timedelta(seconds=s) for s in (0, 4, 8, 68)]
    assert missing_nightlies(times) == []
    assert len(missing_nightlies([T0 + i * DAY for i in (0, 1, 2, 5)])) == 1


def test_gap_reasons():
    assert gap_reason(row()) is None
    assert gap_reason(row(status="timeout", error="killed after 600 s")) == "timeout: killed after 600 s"
    assert gap_reason(row(markers=("GPU_BUSY pids=1", "GPU_BUSY pids=2", "CORRECTNESS_MISMATCH"))) == \
        "marked CORRECTNESS_MISMATCH, GPU_BUSY"
    assert len(gap_reason(row(status="error", error="x" * 1000))) < 220
    assert gap_reason(make_row(samples=(), skipped="identical_binary")) == "not timed (identical_binary)"


@pytest.mark.parametrize("kw,match", [
    ({"recorded": dt.datetime(2026, 1, 1)}, "timezone-aware"),
    ({"median_us": None}, "gap reason"),
    ({"gap": "why"}, "not a gap"),
    ({"median_us": 0.0}, "finite and > 0"),
    ({"n": 0}, "at least one sample"),
    ({"median_us": None, "gap": "why", "n": 3}, "no samples"),
])
def test_points_are_validated(kw, match):
    args = {"recorded": T0, "commit": "abc", "entry": "e", "median_us": 1.0, "n": 1, **kw}
    with pytest.raises(ValueError, match=match):
        Point(**args)


def test_series_and_holes_are_validated():
    s = series([1.0, 2.0])
    with pytest.raises(ValueError, match="recorded order"):
        Series("a", "b", "c", tuple(reversed(s.points)))
    with pytest.raises(ValueError, match="an op"):
        Series("", "b", "c", ())
    with pytest.raises(ValueError, match="earlier and a later"):
        MissingNightly(after=T0, before=T0, missing=1, spacing_days=1.0)
    assert Point(recorded=T0.astimezone(dt.timezone(dt.timedelta(hours=2))), commit=None, entry="e",
                 median_us=1.0, n=1).recorded.tzinfo == dt.timezone.utc


@pytest.mark.slow
def test_an_entry_s_rows_are_let_go_before_the_next_entry_is_read(store, monkeypatch):
    """A year of a deep scan's rows (raw samples and all) would not fit in memory: the
    history keeps each entry's points, never its rows (here through the full load, which an
    entry the cheap reader does not vouch for goes through)."""
    import gc
    import weakref

    import tritongate.history.entries as entries_mod

    store, _ = store
    alive: list[weakref.ref] = []
    real = entries_mod.load_run

    def full_load(path):
        gc.collect()
        assert not [r for r in alive if r() is not None], "the previous entry's rows are still held"
        run = real(path)
        alive.extend(weakref.ref(r) for r in run.rows)
        return run

    def refuse(entry, info):
        raise entries_mod._Refused

    monkeypatch.setattr(entries_mod, "_points", refuse)
    monkeypatch.setattr(entries_mod, "load_run", full_load)
    h = load_history(store, "h200", "pr")
    assert len(h.entries) == 5 and len(alive) > 10


def _cheap_only(monkeypatch):
    """Make the full load fail loudly: what passes was read by the cheap reader alone."""
    import tritongate.history.entries as entries_mod

    def full(*args, **kwargs):
        raise AssertionError("the full load was used")

    monkeypatch.setattr(entries_mod, "load_run", full)
    monkeypatch.setattr(entries_mod, "check_files", full)


def test_an_entry_s_timings_give_the_points_its_full_load_gives(store, monkeypatch):
    """The history reads each entry through ``entry_points`` (the stored summaries checked all
    at once): every point, gaps and their reasons included, is the one a full ``load_run`` of
    the entry gives."""
    from tritongate.baselines.store import list_entries
    from tritongate.history.entries import entry_points
    from tritongate.history.points import EntryInfo, points_of
    from tritongate.rundir import load_run

    store, _ = store
    entries, _ = list_entries(store, runner_class="h200", suite="pr")
    assert len(entries) == 5
    full = {}
    for entry in entries:
        info = EntryInfo.of(entry)
        full[entry.path] = points_of(info, load_run(entry.path).rows)
    _cheap_only(monkeypatch)
    for entry in entries:
        assert entry_points(entry, EntryInfo.of(entry)) == full[entry.path]
    assert {p.gap for points in full.values() for p in points.values()} >= {
        None, "error: RuntimeError: out of resources", "marked AUTOTUNE_REPLAY_FALLBACK"}


def _republish(entry, doc) -> None:
    """Rewrite an entry's results.json and its sha256 in the manifest: an entry edited
    consistently, which only the checks of its contents can refuse."""
    import hashlib
    import json

    raw = json.dumps(doc).encode()
    (entry / "results.json").write_bytes(raw)
    manifest = json.loads((entry / "manifest.json").read_text())
    manifest["files"]["results.json"] = hashlib.sha256(raw).hexdigest()
    (entry / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize("edit,match", [
    (lambda r: r.update(summary={**r["summary"], "median": r["summary"]["median"] * 1.1}), "stored summary median"),
    (lambda r: r.update(samples=[], summary=None), "an ok row needs samples"),
    (lambda r: r.update(status="error", error=""), "needs an error text"),
])
def test_a_row_the_full_load_refuses_skips_its_entry_with_a_note(tmp_path, edit, match):
    """The entry reader checks what the full load checks: a row it would refuse makes the
    entry a note, never a point."""
    import json

    from tritongate.baselines.store import list_entries
    from tritongate.rundir import load_run

    store = tmp_path / "store"
    publish_nights(store, tmp_path / "runs", [_night(0), _night(5)])
    entries, _ = list_entries(store, runner_class="h200", suite="pr")
    path = sorted(entries, key=lambda e: e.sort_key())[-1].path / "results.json"
    doc = json.loads(path.read_text())
    edit(doc["rows"][0])
    path.write_text(json.dumps(doc))
    with pytest.raises(Exception, match=match):
        load_run(path.parent)
    _republish(path.parent, doc)  # the sha256 matches again: the contents alone are refused
    h = load_history(store, "h200", "pr")
    assert len(h.entries) == 1 and len(h.notes) == 1
    assert h.notes[0].startswith(f"skipped {path.parent}: ") and re.search(match, h.notes[0])
    with pytest.raises(Exception, match=match):
        load_run(path.parent)


@pytest.mark.parametrize("edit,match", [
    (lambda d: d.update(status="running"), "is incomplete"),
    (lambda d: d.update(schema_version=999), "newer than this tritongate"),
    (lambda d: d["rows"].append(dict(d["rows"][0])), "a second row for"),
    (lambda d: d["rows"][0].update(samples=[1.0, -2.0]), r"rows\[0\]\.samples\[1\]"),
    (lambda d: d["rows"][0].update(skipped="identical_binary"), "a skipped row is ok and has no samples"),
    (lambda d: d["rows"][0].update(summary={**d["rows"][0]["summary"], "q3": 1e6}), "stored summary q3"),
])
def test_an_entry_the_full_load_refuses_is_a_note_with_the_full_load_s_error(tmp_path, edit, match):
    """Whatever the cheap reader does not vouch for is read again by the full load: the entry
    is skipped with the very error the full load gives."""
    import json

    from tritongate.baselines.store import list_entries
    from tritongate.rundir import load_run

    store = tmp_path / "store"
    publish_nights(store, tmp_path / "runs", [_night(0), _night(5)])
    entries, _ = list_entries(store, runner_class="h200", suite="pr")
    entry = sorted(entries, key=lambda e: e.sort_key())[-1].path
    doc = json.loads((entry / "results.json").read_text())
    edit(doc)
    _republish(entry, doc)
    with pytest.raises(Exception, match=match) as refused:
        load_run(entry)
    h = load_history(store, "h200", "pr")
    assert len(h.entries) == 1 and h.notes == (f"skipped {entry}: {refused.value}",)


def test_the_cheap_reader_gives_the_full_load_s_points_whatever_the_sample_counts(tmp_path, monkeypatch):
    """Rows of one, two and several samples (each count summarised at once), a stored summary
    with fields left out, and rows not timed: the points a full load gives."""
    import json

    from tritongate.baselines.store import list_entries
    from tritongate.history.entries import entry_points
    from tritongate.history.points import EntryInfo, points_of
    from tritongate.rundir import load_run

    rows = [make_row(case="one", samples=(3.0,)), make_row(case="two", samples=(1.0, 2.5)),
            make_row(case="seven", samples=(5.0, 4.0, 4.5, 6.0, 5.5, 4.25, 5.0)),
            make_row(case="seven2", samples=(2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0)),
            make_row(case="skipped", samples=(), skipped="identical_binary"), row(markers=(FALLBACK,)),
            row(case="timeout", status="timeout", error="killed after 600 s")]
    store = tmp_path / "store"
    (entry,) = publish_nights(store, tmp_path / "runs", [rows])
    doc = json.loads((entry / "results.json").read_text())
    doc["rows"][2]["summary"] = {"median": doc["rows"][2]["summary"]["median"], "q1": None}
    doc["rows"][3]["summary"] = None
    _republish(entry, doc)
    (listed,), _ = list_entries(store, runner_class="h200", suite="pr")
    info = EntryInfo.of(listed)
    full = points_of(info, load_run(entry).rows)
    _cheap_only(monkeypatch)
    got = entry_points(listed, info)
    assert got == full and [p.median_us for p in got.values()][:4] == [3.0, 1.75, 5.0, 2.0]
    assert [p.n for p in got.values()][:4] == [1, 2, 7, 7]


def test_an_entry_recorded_in_the_future_is_skipped_with_a_note(tmp_path):
    """A runner whose clock ran ahead (or an edited manifest) would make its entry the newest
    night for good, every later nightly sorted before it."""
    store = tmp_path / "store"
    publish_nights(store, tmp_path / "runs", [[row(median=20.0, seed=i)] for i in range(3)])
    now = T0 + dt.timedelta(hours=2)  # night 2 is more than a day ahead of this clock, night 1 not
    h = load_history(store, "h200", "pr", now=now)
    assert [e.commit for e in h.entries] == [commit(0), commit(1)]
    assert any(n.startswith("skipped ") and "after now (2026-11-01T05:00:00+00:00)" in n for n in h.notes)
    assert len(load_history(store, "h200", "pr", now=T0 + 2 * DAY).entries) == 3


def test_an_entry_dated_before_any_runner_clock_is_skipped_with_a_note_not_a_crash(tmp_path):
    """A hand-edited (or clock-reset) manifest dated year 1: the history took it as a night and
    matplotlib, drawing the op's axis from year 1, raised ValueError (exit 4, no history.md)."""
    from tritongate.cli import main

    store = tmp_path / "store"
    entries = publish_nights(store, tmp_path / "runs", [[row(median=20.0, seed=i)] for i in range(3)])
    manifest = entries[1] / "manifest.json"
    doc = json.loads(manifest.read_text())
    doc["recorded_utc"] = doc["created_utc"] = "0001-01-01T00:00:00+00:00"
    manifest.write_text(json.dumps(doc))
    h = load_history(store, "h200", "pr")
    assert [e.commit for e in h.entries] == [commit(0), commit(2)]
    (note,) = h.notes
    assert note.startswith(f"skipped {entries[1]}") and "expected a time after 1970" in note and "0001-01-01" in note
    assert main(["history", "--store", str(store), "--runner-class", "h200", "--suite", "pr",
                 "--out", str(tmp_path / "hist")]) == 0
    assert (tmp_path / "hist" / "history.md").is_file()


def test_nightlies_run_twice_a_night_miss_no_nightly():
    """Each night published twice an hour apart (a rerun): the usual spacing was read as the hour
    between a night's two entries, and history.md listed "about 22 nightlies missing" between every
    two nights (242 over 12 nights)."""
    twice = sorted(T0 + i * DAY + h for i in range(12) for h in (dt.timedelta(0), dt.timedelta(hours=1)))
    assert missing_nightlies(twice) == []
    (hole,) = missing_nightlies([t for t in twice if not T0 + 5 * DAY <= t < T0 + 8 * DAY])
    assert hole.missing == 3 and hole.after == T0 + 4 * DAY + dt.timedelta(hours=1) and hole.spacing_days > 0.9
    thrice = sorted(T0 + i * DAY + dt.timedelta(minutes=m) for i in range(12) for m in (0, 40, 80))
    assert missing_nightlies(thrice) == []


def test_a_night_of_another_backend_is_named(tmp_path):
    """Nights recorded by another backend on the same GPU (and runner class, suite, repository)
    joined the series without a word: the step at the switch read as the compiler's, between
    two commits."""
    from tritongate.baselines.publishing import publish
    from tests.baselines.test_store import make_record

    store = tmp_path / "store"
    for i in range(24):
        run = make_record(tmp_path / "w" / f"pr_{i:02d}", started=T0 + i * DAY, commit=commit(i),
                          rows=[row(median=20.0 if i < 12 else 26.0, seed=i)], backend="cuda" if i < 12 else "hip")
        publish(store, run, runner_class="h200", compiler_repo="org/triton", now=T0 + i * DAY + dt.timedelta(hours=2))
    h = load_history(store, "h200", "pr")
    (note,) = [n for n in h.notes if "backend" in n]
    assert note.startswith("the backend differs between the nights of 2026-11-12 03:00 and 2026-11-13 03:00 UTC "
                           "(cuda -> hip)") and "a step there may be that" in note
    same = tmp_path / "same"
    publish_nights(same, tmp_path / "v", [[row(seed=i)] for i in range(3)])
    assert not [n for n in load_history(same, "h200", "pr").notes if "backend" in n]


def test_outages_a_quarter_of_the_intervals_are_nightlies_missing_not_the_spacing():
    """The upper quartile alone took the nights between outages for reruns: a runner up 3 nights
    and down 5 (or a young store with three week-long outages) read as spaced a week apart, with
    no nightly missing."""
    on_off = [T0 + (8 * w + k) * DAY for w in range(7) for k in range(3)]
    holes = missing_nightlies(on_off)
    assert len(holes) == 6 and sum(h.missing for h in holes) == 30 and {h.spacing_days for h in holes} == {1.0}
    young = [T0 + d * DAY for d in (0, 1, 2, 10, 11, 20, 21, 30, 31, 32)]
    assert [h.missing for h in missing_nightlies(young)] == [7, 8, 8]
    # reruns an hour apart are still a night's, with a week off among the nights
    twice = sorted(T0 + d * DAY + h for d in [*range(10), *range(17, 27)] for h in (dt.timedelta(0), dt.timedelta(hours=1)))
    (week,) = missing_nightlies(twice)
    assert week.missing == 7 and week.spacing_days > 0.9
