import json
import os

import pytest

from tritongate.errors import IncompleteRunError, RunDirError, SchemaVersionError, UsageError
from tritongate.rundir import RESULTS, RunWriter, load_run, new_run_dir
from tritongate.schema import SCHEMA_VERSION, RunStatus

from tests.conftest import make_row


def _write(tmp_path, n=2, finish=True):
    w = RunWriter(tmp_path / "run", {"backend": "cpu", "timer": "host-wall"})
    for i in range(n):
        w.add(make_row(case=f"n={i}"))
    if finish:
        w.finish()
    return w


def test_complete_run_round_trips(tmp_path):
    _write(tmp_path)
    run = load_run(tmp_path / "run")
    assert run.complete and run.mode == "record"
    assert [r.case for r in run.rows] == ["n=0", "n=1"]
    assert run.identity["backend"] == "cpu" and run.identity["schema_version"] == SCHEMA_VERSION


def test_a_run_that_died_loads_as_incomplete_never_complete(tmp_path):
    _write(tmp_path, n=3, finish=False)  # the writer "crashed" after 3 rows
    with pytest.raises(IncompleteRunError, match="incomplete.*3 rows.*Re-run"):
        load_run(tmp_path / "run")
    run = load_run(tmp_path / "run", allow_incomplete=True)
    assert run.status is RunStatus.RUNNING and len(run.rows) == 3


def test_failed_run_names_the_failure(tmp_path):
    w = _write(tmp_path, finish=False)
    w.fail("CUDA error in row softmax")
    with pytest.raises(IncompleteRunError, match="CUDA error in row softmax"):
        load_run(tmp_path / "run")


def test_writes_are_atomic_and_leave_no_temp_files(tmp_path):
    _write(tmp_path)
    assert sorted(os.listdir(tmp_path / "run")) == ["results.json", "run_identity.json"]


@pytest.mark.parametrize("identity, where", [
    ({"pair": {"side": "left"}}, "pair.side"),          # a value no reader accepts
    ({"selection": {"ops": "add"}}, "selection"),       # a list written as one string
    ({"capture_only": "yes"}, "capture_only"),
])
def test_an_identity_its_readers_would_refuse_is_never_written(tmp_path, identity, where):
    """The writer checks run_identity.json with the model load_run checks it with: a bad
    field is the writer's bug, raised before a run directory holds it."""
    with pytest.raises(ValueError, match=where.replace(".", r"\.")):
        RunWriter(tmp_path / "run", {"backend": "cpu", **identity})
    assert not (tmp_path / "run" / "run_identity.json").exists()
    w = RunWriter(tmp_path / "ok", {"backend": "cpu"})
    with pytest.raises(ValueError, match=where.replace(".", r"\.")):
        w.set_identity_extra(identity)
    assert "pair" not in json.loads((tmp_path / "ok" / "run_identity.json").read_text())


def test_refuses_to_overwrite_and_duplicate_rows(tmp_path):
    w = _write(tmp_path, finish=False)
    with pytest.raises(ValueError, match="duplicate"):
        w.add(make_row(case="n=0"))
    with pytest.raises(UsageError, match="refusing to overwrite"):
        RunWriter(tmp_path / "run", {})


@pytest.mark.parametrize("version,match", [(0, "older|Re-record"), (SCHEMA_VERSION + 1, "upgrade tritongate")])
def test_other_schema_versions_are_refused_with_the_fix(tmp_path, version, match):
    _write(tmp_path)
    p = tmp_path / "run" / RESULTS
    doc = json.loads(p.read_text())
    doc["schema_version"], doc["tool_version"] = version, "9.0.0"  # as another tritongate writes it
    p.write_text(json.dumps(doc))
    with pytest.raises(SchemaVersionError, match=match):
        load_run(tmp_path / "run")


def test_missing_and_damaged_files(tmp_path):
    with pytest.raises(RunDirError, match="not a directory"):
        load_run(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RunDirError, match=r"empty/results.json is missing: .*empty is not a tritongate run directory"):
        load_run(tmp_path / "empty")
    _write(tmp_path)
    (tmp_path / "run" / RESULTS).write_text("{not json")
    with pytest.raises(RunDirError, match="not valid JSON"):
        load_run(tmp_path / "run")


def test_invalid_row_is_named(tmp_path):
    _write(tmp_path)
    p = tmp_path / "run" / RESULTS
    doc = json.loads(p.read_text())
    doc["rows"][1]["samples"] = [1.0, "x"]
    p.write_text(json.dumps(doc))
    with pytest.raises(RunDirError, match=r"results.json: rows\[1\].samples\[1\]: expected a number, got the text .x.$"):
        load_run(tmp_path / "run")


def test_new_run_dir_is_unique(tmp_path):
    import datetime as dt
    now = dt.datetime(2026, 11, 29, 12, 0, 0, tzinfo=dt.timezone.utc)
    a = new_run_dir(tmp_path, "smoke", now)
    b = new_run_dir(tmp_path, "smoke", now)
    assert a.name == "smoke_20261129T120000Z" and b.name == "smoke_20261129T120000Z-1"


def _count_writes(monkeypatch):
    """Names of the files ``RunWriter`` writes, and how often a row is serialised."""
    import tritongate.rundir as rundir
    from tritongate.schema import Row

    writes, dumps = [], []
    real_write, real_to_dict = rundir.write_text_atomic, Row.to_dict
    monkeypatch.setattr(rundir, "write_text_atomic", lambda p, t: (writes.append(p.name), real_write(p, t)))
    monkeypatch.setattr(Row, "to_dict", lambda self: (dumps.append(self.key), real_to_dict(self))[1])
    return writes, dumps


def test_each_row_added_is_serialised_once_and_written_with_its_add(tmp_path, monkeypatch):
    writes, dumps = _count_writes(monkeypatch)
    w = RunWriter(tmp_path / "run", {"backend": "cpu"})
    for i in range(5):
        w.add(make_row(case=f"n={i}"))
    assert writes.count(RESULTS) == 1 + 5  # the empty run, then one rewrite per add (a crash loses one row)
    w.finish()
    assert len(dumps) == 5  # the rewrites reuse each row's text
    assert len(load_run(tmp_path / "run").rows) == 5


def test_rows_extended_together_are_written_once(tmp_path, monkeypatch):
    writes, dumps = _count_writes(monkeypatch)
    w = RunWriter(tmp_path / "run", {"backend": "cpu"})
    w.extend(make_row(case=f"n={i}") for i in range(200))
    assert writes.count(RESULTS) == 2 and len(dumps) == 200  # the empty run, then all 200 at once
    run = load_run(tmp_path / "run", allow_incomplete=True)  # a merge that dies here is incomplete
    assert run.status is RunStatus.RUNNING and len(run.rows) == 200
    with pytest.raises(ValueError, match="duplicate"):
        w.extend([make_row(case="n=500"), make_row(case="n=500")])  # a duplicate adds none of them
    with pytest.raises(ValueError, match="duplicate"):
        w.extend([make_row(case="n=600"), make_row(case="n=3")])
    w.finish()
    assert [r.case for r in load_run(tmp_path / "run").rows] == [f"n={i}" for i in range(200)]


def test_a_loaded_row_is_summarised_once_however_often_it_is_read(tmp_path, monkeypatch):
    import tritongate.schema as schema

    _write(tmp_path, n=3)
    calls = []
    real = schema.summarize
    monkeypatch.setattr(schema, "summarize", lambda samples: (calls.append(len(samples)), real(samples))[1])
    run = load_run(tmp_path / "run")  # the stored summary is checked against the samples: one summary a row
    medians = [r.summary.median for r in run.rows for _ in range(4)]
    assert len(calls) == 3 and medians[:4] == [1.0] * 4


def test_a_run_whose_folder_is_removed_mid_run_is_never_finished_in_a_folder_made_again(tmp_path):
    """The out folder deleted while the run wrote it, and made again by a later write (the
    run's IR): every row is still in memory, so a finish would write a complete results.json
    beside no run.log and no earlier files. The next write is an error naming the folder."""
    import shutil

    w = RunWriter(tmp_path / "run", {"backend": "cpu", "timer": "host-wall"})
    w.add(make_row(op="add", case="1"))
    shutil.rmtree(tmp_path / "run")
    (tmp_path / "run" / "ttgir").mkdir(parents=True)
    with pytest.raises(FileNotFoundError) as caught:
        w.add(make_row(op="add", case="2"))
    assert caught.value.filename == str(tmp_path / "run") and "removed or replaced" in caught.value.strerror
    with pytest.raises(FileNotFoundError):
        w.finish()
    assert not (tmp_path / "run" / RESULTS).exists()
