"""The baseline store: publish, find (ok / stale / mismatched / missing), damage, races."""

from __future__ import annotations

import datetime as dt
import json
import multiprocessing
import os
import re
import threading
from pathlib import Path

import pytest

from tritongate.autotune.records import Record, load_records, write_records
from tritongate.baselines import BaselineError, State, find, gpu_slug, list_entries, publish, read_manifest
from tritongate.baselines.manifest import MANIFEST, build_manifest, check_runner_class
from tritongate.baselines.store import INCOMING, SUMMARY, default_store
from tritongate.rundir import RunWriter, load_run

from tests.gate.helpers import row

T0 = dt.datetime(2026, 11, 20, 3, 0, tzinfo=dt.timezone.utc)
DAY = dt.timedelta(days=1)


def make_record(path: Path, *, started: dt.datetime = T0, device: str = "NVIDIA H200", suite: str = "pr",
                digest: str = "d1", backend: str = "cuda", commit: str | None = "0123456789abcdef",
                mode: str = "record", finish: bool = True, records: bool = True, rows=None,
                identity: dict | None = None) -> Path:
    """A small record run directory written with the real writers (no GPU)."""
    ident = {"device": device, "backend": backend, "timer": "cuda-graph", "compiler_ref": "triton 3.6.0",
             "commit": commit, "suite": {"name": suite, "digest": digest},
             "software": {"triton": {"version": "3.6.0", "build_hash": "deafe87b"}},
             "started_utc": started.isoformat(timespec="seconds"), **(identity or {})}
    if mode == "replay":
        ident["replay_from"] = "/somewhere/pr_20261119T030000Z"
    w = RunWriter(path, ident, mode=mode)
    for r in rows if rows is not None else [row(), row(case="1024x1024", median=5.0, markers=(
            "AUTOTUNE_REPLAY_FALLBACK reason=key_missing",))]:
        w.add(r)
    if records and mode == "record":
        write_records(path, [Record(op="softmax", kernel="tritongate.ops.kernels.reduction.softmax_kernel",
                                    tuner="Autotuner", key=[4096, "torch.float16"],
                                    config={"kwargs": {"BLOCK": 4096}, "num_warps": 8, "num_stages": 3},
                                    cases=("4096x4096/float16",))],
                      {"backend": backend, "device": device, "run": path.name, "suite": suite})
    (path / "shapes.yaml").write_text("softmax: {shapes: [[4096, 4096]]}\n")
    (path / "run.log").write_text("a log\n")
    (path / "ttgir" / "case").mkdir(parents=True)
    (path / "ttgir" / "case" / "k.ttgir").write_text("module {}\n")
    if finish:
        w.finish()
    return path


def lookup(store, gpu="NVIDIA H200", *, now=T0 + DAY, **kw):
    kw.setdefault("suite_digest", "d1")
    return find(store, "h200", kw.pop("suite", "pr"), gpu, now=now, **kw)


# -- publish then find ---------------------------------------------------------------------

def test_publish_copies_a_compact_record_that_replays_and_find_returns_it(tmp_path):
    run = make_record(tmp_path / "runs" / "pr_20261120T030000Z")
    store = tmp_path / "store"
    entry = publish(store, run, runner_class="h200", compiler_repo="org/flagtree", now=T0 + dt.timedelta(hours=2))
    assert entry.path == store / "h200" / "pr" / "nvidia-h200" / "20261120T030000Z-0123456789ab"
    names = sorted(str(p.relative_to(entry.path)) for p in entry.path.rglob("*") if p.is_file())
    assert names == ["autotune_records/meta.json", "autotune_records/softmax.json", MANIFEST,
                     "results.json", "run_identity.json", "shapes.yaml", SUMMARY]  # no ttgir/, no run.log
    assert (entry.path / "results.json").read_bytes() == (run / "results.json").read_bytes()
    m = read_manifest(entry.path / MANIFEST)
    assert (m.runner_class, m.suite_name, m.suite_digest, m.gpu_model, m.gpu_slug, m.backend) == \
        ("h200", "pr", "d1", "NVIDIA H200", "nvidia-h200", "cuda")
    assert (m.triton_version, m.triton_build_hash, m.compiler_repo, m.compiler_commit) == \
        ("3.6.0", "deafe87b", "org/flagtree", "0123456789abcdef")
    assert m.record_path == "h200/pr/nvidia-h200/20261120T030000Z-0123456789ab"
    assert m.recorded == T0 and m.created == T0 + dt.timedelta(hours=2)
    assert (m.rows, m.rows_ok, m.schema_version, m.source_run) == (2, 2, 1, run.name)
    tsv = (entry.path / SUMMARY).read_text().splitlines()
    assert tsv[0] == "op\tcase\tdtype\tstatus\tmedian_us\tiqr_us\tn\tmarkers"
    assert tsv[2].startswith("softmax\t1024x1024\tfloat16\tok\t") and tsv[2].endswith("\t25\tAUTOTUNE_REPLAY_FALLBACK")
    # the entry is a record run directory, as replay loads it
    assert load_run(entry.path).mode == "record"
    assert load_records(entry.path, backend="cuda").records

    found = lookup(store)
    assert found.state is State.OK and found.record == entry.path and not found.notes
    assert found.age_days == pytest.approx(1.0)
    assert "h200/pr/nvidia-h200/20261120T030000Z-0123456789ab" in found.reason
    assert found.refresh == f"python ci/record_baseline.py --suite pr --out runs --publish {store} --runner-class h200"
    assert found.to_dict()["entry"]["compiler_repo"] == "org/flagtree"


def test_find_chooses_the_newest_good_entry(tmp_path):
    store = tmp_path / "store"
    for i in range(3):
        publish(store, make_record(tmp_path / f"r{i}", started=T0 + i * DAY, commit=f"c{i}"), runner_class="h200")
    found = lookup(store, now=T0 + 3 * DAY)
    assert found.state is State.OK and found.record.name == "20261122T030000Z-c2"
    entries, notes = list_entries(store)
    assert [e.path.name for e in entries] == ["20261122T030000Z-c2", "20261121T030000Z-c1", "20261120T030000Z-c0"]
    assert not notes


def test_stale_entry_is_still_returned(tmp_path):
    store = tmp_path / "store"
    entry = publish(store, make_record(tmp_path / "r"), runner_class="h200")
    assert lookup(store, now=T0 + 7 * DAY).state is State.OK  # exactly max_age_days: not older
    stale = lookup(store, now=T0 + 8 * DAY)
    assert stale.state is State.STALE and stale.record == entry.path
    assert stale.age_days == pytest.approx(8.0) and "8.0 days old (older than 7" in stale.reason
    assert lookup(store, now=T0 + 8 * DAY, max_age_days=10).state is State.OK


def test_an_entry_from_the_future_is_ok_with_a_note(tmp_path):
    store = tmp_path / "store"
    publish(store, make_record(tmp_path / "r"), runner_class="h200")
    found = lookup(store, now=T0 - DAY)
    assert found.state is State.OK and found.age_days == 0 and "future" in found.notes[0]


# -- mismatched ----------------------------------------------------------------------------

@pytest.mark.parametrize("kw,expect", [
    ({"gpu": "NVIDIA H100 80GB HBM3"}, "GPU nvidia-h200 (NVIDIA H200), expected nvidia-h100-80gb-hbm3"),
    ({"suite_digest": "d2"}, "suite digest d1, expected d2"),
    ({"backend": "rocm"}, "backend cuda, expected rocm"),
])
def test_mismatched_names_the_difference(tmp_path, kw, expect):
    store = tmp_path / "store"
    entry = publish(store, make_record(tmp_path / "r"), runner_class="h200")
    found = lookup(store, kw.pop("gpu", "NVIDIA H200"), **kw)
    assert found.state is State.MISMATCHED and found.record is None and found.nearest.path == entry.path
    assert expect in found.reason


def test_an_older_matching_entry_wins_over_a_newer_mismatched_one(tmp_path):
    store = tmp_path / "store"
    old = publish(store, make_record(tmp_path / "a"), runner_class="h200")
    publish(store, make_record(tmp_path / "b", started=T0 + DAY, device="NVIDIA H100"), runner_class="h200")
    found = lookup(store, now=T0 + 2 * DAY)
    assert found.state is State.OK and found.record == old.path


def test_a_suite_digest_of_none_is_not_compared(tmp_path):
    store = tmp_path / "store"
    publish(store, make_record(tmp_path / "r", digest="other"), runner_class="h200")
    assert lookup(store).state is State.MISMATCHED
    assert lookup(store, suite_digest=None).state is State.OK


# -- missing -------------------------------------------------------------------------------

def test_missing_for_no_store_an_empty_one_a_wrong_suite_or_runner(tmp_path):
    gone = lookup(tmp_path / "nope")
    assert gone.state is State.MISSING and "does not exist" in gone.reason and gone.record is None
    (tmp_path / "empty").mkdir()
    assert lookup(tmp_path / "empty").state is State.MISSING
    store = tmp_path / "store"
    publish(store, make_record(tmp_path / "r"), runner_class="h200")
    other = lookup(store, suite="deep")
    assert other.state is State.MISSING and "no deep baseline for runner class h200" in other.reason
    assert "--suite deep" in other.refresh
    assert find(store, "h100", "pr", "NVIDIA H200", now=T0).state is State.MISSING


def test_a_store_that_is_a_file_is_a_usage_error(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(BaselineError, match="not a directory"):
        lookup(tmp_path / "f")


# -- damage never crashes a lookup ---------------------------------------------------------

def _two_entries(tmp_path):
    store = tmp_path / "store"
    old = publish(store, make_record(tmp_path / "a", commit="aaa"), runner_class="h200")
    new = publish(store, make_record(tmp_path / "b", started=T0 + DAY, commit="bbb"), runner_class="h200")
    return store, old, new


@pytest.mark.parametrize("damage", [
    lambda p: (p / MANIFEST).write_text("{not json"),
    lambda p: (p / MANIFEST).write_text(json.dumps({"schema_version": 1})),
    lambda p: (p / MANIFEST).write_text('{"schema_version": 99}'),
    lambda p: (p / MANIFEST).unlink(),
    lambda p: (p / "results.json").write_text((p / "results.json").read_text().replace('"complete"', '"running"')),
    lambda p: (p / "autotune_records" / "meta.json").unlink(),
    lambda p: p.rename(p.with_name("20261121T030000Z-moved")),  # a manifest that lies about where it is
])
def test_a_damaged_newest_entry_is_skipped_with_a_note(tmp_path, damage):
    store, old, new = _two_entries(tmp_path)
    damage(new.path)
    found = lookup(store, now=T0 + 2 * DAY)
    assert found.state is State.OK and found.record == old.path
    assert len(found.notes) == 1 and found.notes[0].startswith("skipped ") and "1 damaged entry skipped" in found.reason


def test_when_every_entry_is_damaged_the_state_is_missing(tmp_path):
    store, old, new = _two_entries(tmp_path)
    for e in (old, new):
        (e.path / MANIFEST).write_text("[]")
    found = lookup(store, now=T0 + 2 * DAY)
    assert found.state is State.MISSING and len(found.notes) == 2 and "2 damaged entries" in found.reason
    entries, notes = list_entries(store)
    assert entries == [] and len(notes) == 2


def test_symlinks_and_in_flight_publishes_are_not_entries(tmp_path):
    store, old, new = _two_entries(tmp_path)
    folder = new.path.parent
    (folder / f"{INCOMING}abc").mkdir()  # a publish in flight (or one that died)
    os.symlink(old.path, folder / "29991231T000000Z-link")
    found = lookup(store, now=T0 + 2 * DAY)
    assert found.record == new.path and [n for n in found.notes if "symlink" in n]


# -- publish refuses what is not a finished record -----------------------------------------

@pytest.mark.parametrize("kw,match", [
    ({"finish": False}, r"the run is incomplete \(running, 2 rows\).*ci/record_baseline.py"),
    ({"mode": "replay"}, r"is a replay run \(of /somewhere/pr_20261119T030000Z\).*publish the record it replayed"),
    ({"records": False}, r"has no autotune_records/meta.json"),
    ({"rows": []}, r"it has no rows"),
    ({"identity": {"suite": {"name": "pr"}}}, r"has no suite.digest"),
    ({"identity": {"software": {}}}, r"has no software.triton.version"),
    ({"identity": {"compiler_ref": "triton\n3.6"}}, r"its baseline manifest: compiler_ref: expected one line"),
    ({"identity": {"capture_only": True}}, r"it is an IR index capture \(TRITONGATE_CAPTURE_ONLY=1.*never a baseline"),
    ({"identity": {"selection": {"ops": ["softmax"], "dtypes": [], "rows": None}}},
     r"it measured part of suite 'pr' \(--ops softmax, 2 rows\); record the whole suite, or write a suite YAML"),
])
def test_publish_refuses_what_is_not_a_finished_record(tmp_path, kw, match):
    run = make_record(tmp_path / "run", **kw)
    store = tmp_path / "store"
    with pytest.raises(BaselineError, match=match) as info:
        publish(store, run, runner_class="h200")
    text = str(info.value)
    assert "\n" not in text and str(run) in text and text.startswith("refusing to publish")
    leftovers = [p for p in store.rglob("*")] if store.exists() else []
    assert not [p for p in leftovers if p.name.startswith(INCOMING) or p.name == MANIFEST]


def test_publish_refuses_a_failed_run_and_a_missing_directory(tmp_path):
    w = RunWriter(tmp_path / "run", {"backend": "cuda"})
    w.add(row())
    w.fail("CUDA error")
    with pytest.raises(BaselineError, match=r"incomplete \(failed"):
        publish(tmp_path / "store", tmp_path / "run", runner_class="h200")
    with pytest.raises(BaselineError, match="not a directory"):
        publish(tmp_path / "store", tmp_path / "nope", runner_class="h200")


@pytest.mark.parametrize("name", ["H200", "", "../x", ".hidden", "a/b", "h200 nvl"])
def test_odd_runner_classes_are_refused(tmp_path, name):
    with pytest.raises(BaselineError, match="runner class"):
        check_runner_class(name)
    with pytest.raises(BaselineError, match="runner class"):
        find(tmp_path, name, "pr", "NVIDIA H200")


def test_gpu_slugs():
    assert gpu_slug("NVIDIA H200") == "nvidia-h200"
    assert gpu_slug("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3"
    assert gpu_slug("AMD Instinct MI300X") == "amd-instinct-mi300x"
    assert gpu_slug("host") == gpu_slug("cpu") == gpu_slug(" CPU ") == "cpu"
    with pytest.raises(BaselineError):
        gpu_slug("  ")


def test_a_manifest_is_validated_when_built(tmp_path):
    with pytest.raises(BaselineError, match="is required but missing"):
        build_manifest({"runner_class": "h200"}, source=tmp_path / MANIFEST)
    store = tmp_path / "store"
    entry = publish(store, make_record(tmp_path / "r"), runner_class="h200")
    doc = json.loads((entry.path / MANIFEST).read_text())
    assert build_manifest(doc, source="m").record_path == doc["record_path"]
    with pytest.raises(BaselineError, match="runner_class"):
        build_manifest({**doc, "runner_class": "Bad Name"}, source="m")
    with pytest.raises(BaselineError, match="created_utc"):
        build_manifest({**doc, "created_utc": "2026-11-20T03:00:00+02:00"}, source="m")
    with pytest.raises(BaselineError, match="record_path"):
        build_manifest({**doc, "record_path": "../elsewhere"}, source="m")
    with pytest.raises(BaselineError, match="gpu_model"):
        build_manifest({**doc, "gpu_model": "NVIDIA\nH200"}, source="m")


def test_default_store_is_the_repo_folder_unless_overridden(tmp_path):
    assert default_store({}) == Path(__file__).resolve().parents[2] / "baselines"
    assert default_store({"TRITONGATE_BASELINE_STORE": str(tmp_path)}) == tmp_path


# -- races ---------------------------------------------------------------------------------

def _race(store, runs, nows):
    barrier = threading.Barrier(len(runs))
    out, errors = [None] * len(runs), []

    def go(i):
        barrier.wait()
        try:
            out[i] = publish(store, runs[i], runner_class="h200", now=nows[i])
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(len(runs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    return out


def test_racing_publishes_of_one_commit_in_one_second_both_land(tmp_path):
    store = tmp_path / "store"
    # the same stamp and commit: one name; four measurements (one run published twice is refused, and
    # which of two identical ones lands first would decide which publish fails)
    runs = [make_record(tmp_path / f"r{i}", rows=[row(seed=i)]) for i in range(4)]
    entries = _race(store, runs, [T0 + DAY] * 4)
    names = sorted(e.path.name for e in entries)
    assert names == ["20261120T030000Z-0123456789ab"] + [f"20261120T030000Z-0123456789ab-{i}" for i in (2, 3, 4)]
    listed, notes = list_entries(store)
    assert len(listed) == 4 and not notes
    for e in listed:
        assert read_manifest(e.path / MANIFEST).record_path.endswith(e.path.name)
    assert lookup(store, now=T0 + DAY).state is State.OK
    assert not [p for p in store.rglob(f"{INCOMING}*")]


def test_racing_publishes_both_valid_and_latest_is_the_newer(tmp_path):
    store = tmp_path / "store"
    older = make_record(tmp_path / "older", commit="aaa")
    newer = make_record(tmp_path / "newer", started=T0 + dt.timedelta(hours=1), commit="bbb")
    _race(store, [newer, older], [T0 + DAY, T0 + DAY])
    found = lookup(store, now=T0 + DAY)
    assert found.state is State.OK and found.record.name == "20261120T040000Z-bbb"


def _publish_in_process(store, run, now_iso, queue):
    try:
        entry = publish(Path(store), Path(run), runner_class="h200", now=dt.datetime.fromisoformat(now_iso))
        queue.put(str(entry.path))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        queue.put(f"error: {exc}")


def test_racing_publishes_from_two_processes(tmp_path):
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    store = tmp_path / "store"
    runs = [make_record(tmp_path / f"p{i}", started=T0 + i * dt.timedelta(minutes=1)) for i in range(2)]
    procs = [ctx.Process(target=_publish_in_process, args=(str(store), str(r), (T0 + DAY).isoformat(), queue))
             for r in runs]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    results = sorted(queue.get(timeout=5) for _ in procs)
    assert all(not r.startswith("error") for r in results), results
    assert len(set(results)) == 2
    assert lookup(store, now=T0 + DAY).record.name == "20261120T030100Z-0123456789ab"


def test_a_record_this_tritongate_cannot_read_is_mismatched_not_damaged(tmp_path):
    import hashlib

    store = tmp_path / "store"
    entry = publish(store, make_record(tmp_path / "r"), runner_class="h200")
    results = entry.path / "results.json"
    text = re.sub(r'"schema_version": \d+', '"schema_version": 99', results.read_text(), count=1)
    results.write_text(re.sub(r'"tool_version": "[^"]*"', '"tool_version": "9.0.0"', text, count=1))  # a newer writer
    doc = json.loads((entry.path / MANIFEST).read_text())
    doc["files"]["results.json"] = hashlib.sha256(results.read_bytes()).hexdigest()
    (entry.path / MANIFEST).write_text(json.dumps(doc))
    found = lookup(store)
    assert found.state is State.MISMATCHED and "record unreadable by this tritongate" in found.reason
    assert "upgrade tritongate" in found.reason and not found.notes


def test_the_same_run_published_twice_is_refused_the_second_time(tmp_path):
    """Each publish made its own entry (`-2`), so one measurement stood as two nights in the
    history and weighed double in its change-point statistics."""
    run = make_record(tmp_path / "run")
    store = tmp_path / "store"
    first = publish(store, run, runner_class="h200")
    with pytest.raises(BaselineError, match=r"it is already published as .*20261\S* \(the same results\.json and "
                                            r"run_identity\.json\)"):
        publish(store, run, runner_class="h200")
    assert [p.name for p in first.path.parent.iterdir()] == [first.path.name]
    other = make_record(tmp_path / "other", started=T0 + dt.timedelta(hours=1))  # another night: its own entry
    assert publish(store, other, runner_class="h200").path != first.path
