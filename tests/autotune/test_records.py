import json

import pytest

from tritongate.autotune.records import RECORDS_DIR, Record, load_records, write_records
from tritongate.cli import main
from tritongate.errors import PreflightError
from tritongate.rundir import RunWriter
from tritongate.schema import MeasurementInfo, Row


def _record_run(tmp_path, backend="cpu"):
    run = tmp_path / "rec"
    writer = RunWriter(run, {"backend": backend})
    writer.add(Row(op="add", case="4096", dtype="float32", timer="host-wall", samples=(1.0,),
                   measurement=MeasurementInfo(launches_per_sample=3, samples_per_round=1,
                                               warmup_calls=0, l2="warm")))
    writer.finish()
    rec = Record(op="add", kernel="m.k", tuner="Autotuner", key=[4096, "torch.float32"],
                 config={"kwargs": {"BLOCK": 1024}, "num_warps": 4}, cases=("4096/float32",))
    write_records(run, [rec], {"backend": backend, "device": "host"})
    return run


def test_records_round_trip(tmp_path):
    rs = load_records(_record_run(tmp_path), backend="cpu")
    rec = rs.lookup("m.k", (4096, "torch.float32"))
    assert rec.config["kwargs"] == {"BLOCK": 1024} and rec.cases == ("4096/float32",)
    assert rs.lookup("m.k", (8192, "torch.float32")) is None
    assert rs.launches == {("add", "4096", "float32"): 3}  # the replay measures with the same k
    doc = json.loads((tmp_path / "rec" / RECORDS_DIR / "add.json").read_text())
    assert doc["entries"][0]["kernel"] == "m.k"


def test_an_ir_index_capture_is_refused_for_replay_but_read_for_a_merge(tmp_path, monkeypatch):
    """A capture's records are no baseline to replay (its winners were never timed), but a
    batch of captures merges its shards' records as any batch does."""
    run = _record_run(tmp_path)
    ident = json.loads((run / "run_identity.json").read_text())
    (run / "run_identity.json").write_text(json.dumps({**ident, "capture_only": True}))
    monkeypatch.delenv("TRITONGATE_CAPTURE_ONLY", raising=False)
    with pytest.raises(PreflightError, match="is an IR index capture"):
        load_records(run, backend="cpu")
    assert load_records(run, backend="cpu", replaying=False).lookup("m.k", (4096, "torch.float32"))
    monkeypatch.setenv("TRITONGATE_CAPTURE_ONLY", "1")  # a capture replaying a capture: the pre-screen's
    assert load_records(run, backend="cpu").lookup("m.k", (4096, "torch.float32"))


def test_cross_backend_replay_is_refused(tmp_path):
    with pytest.raises(PreflightError, match="recorded on backend 'cpu'.*'cuda'") as info:
        load_records(_record_run(tmp_path), backend="cuda")
    assert info.value.check == "replay_backend"


def test_replay_of_a_replay_names_the_original(tmp_path):
    run = tmp_path / "replay"
    writer = RunWriter(run, {"backend": "cpu", "replay_from": "/runs/base"}, mode="replay")
    writer.finish()
    with pytest.raises(PreflightError, match=r"give the record it replayed instead \(/runs/base\)") as info:
        load_records(run, backend="cpu")
    assert info.value.check == "replay_from"


@pytest.mark.parametrize("setup,match", [
    (lambda p: None, "not a directory"),
    (lambda p: p.mkdir(), "not a tritongate run directory"),
    (lambda p: RunWriter(p, {}).finish(), "not a record run"),
    (lambda p: RunWriter(p, {}), "is incomplete"),
])
def test_not_a_record_run(tmp_path, setup, match):
    setup(tmp_path / "x")
    with pytest.raises(PreflightError, match=match):
        load_records(tmp_path / "x", backend="cpu")


def test_damaged_record(tmp_path):
    run = _record_run(tmp_path)
    (run / RECORDS_DIR / "add.json").write_text("{")
    with pytest.raises(PreflightError, match="damaged"):
        load_records(run, backend="cpu")


def test_cli_refuses_cross_backend_replay_with_exit_3(tmp_path, capsys):
    run = _record_run(tmp_path, backend="cuda")
    assert main(["run", "--suite", "smoke", "--backend", "cpu", "--out", str(tmp_path / "o"),
                 "--replay-from", str(run)]) == 3
    assert "!!! PREFLIGHT_FAILED check=replay_backend" in capsys.readouterr().err


@pytest.mark.parametrize("edit,match", [
    (lambda d: d["entries"][0]["config"].update(num_warps=True), r"add.json: entries\[0\].config.num_warps: expected an integer, got true"),
    (lambda d: d["entries"][0]["config"].update(kwargs=[1]), r"entries\[0\].config.kwargs: expected a mapping"),
    (lambda d: d["entries"][0].pop("kernel"), r"entries\[0\].kernel: is required"),
    (lambda d: d.update(schema_version=99), "newer than this tritongate"),
    (lambda d: d.update(entries="x"), "entries: expected a list"),
])
def test_invalid_record_file_is_named(tmp_path, edit, match):
    run = _record_run(tmp_path)
    path = run / RECORDS_DIR / "add.json"
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(PreflightError, match=match) as info:
        load_records(run, backend="cpu")
    assert info.value.check == "replay_from" and "\n" not in str(info.value)
