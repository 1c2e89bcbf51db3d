import json

import pytest

from tritongate.autotune.records import RECORDS_DIR, Record, load_records, write_records
from tritongate.cli import main
from tritongate.errors import PreflightError


def _record_run(tmp_path, backend="cpu", identity_mode="record"):
    run = tmp_path / "rec"
    run.mkdir()
    (run / "run_identity.json").write_text(json.dumps({"mode": identity_mode}))
    rec = Record(op="add", kernel="m.k", tuner="Autotuner", key=[4096, "torch.float32"],
                 config={"kwargs": {"BLOCK": 1024}, "num_warps": 4}, cases=("4096/float32",))
    write_records(run, [rec], {"backend": backend, "device": "host"})
    return run


def test_records_round_trip(tmp_path):
    rs = load_records(_record_run(tmp_path), backend="cpu")
    rec = rs.lookup("m.k", (4096, "torch.float32"))
    assert rec.config["kwargs"] == {"BLOCK": 1024} and rec.cases == ("4096/float32",)
    assert rs.lookup("m.k", (8192, "torch.float32")) is None
    doc = json.loads((tmp_path / "rec" / RECORDS_DIR / "add.json").read_text())
    assert doc["entries"][0]["kernel"] == "m.k"


def test_cross_backend_replay_is_refused(tmp_path):
    with pytest.raises(PreflightError, match="recorded on backend 'cpu'.*'cuda'") as info:
        load_records(_record_run(tmp_path), backend="cuda")
    assert info.value.check == "replay_backend"


def test_replay_of_a_replay_names_the_original(tmp_path):
    run = tmp_path / "replay"
    run.mkdir()
    (run / "run_identity.json").write_text(json.dumps({"mode": "replay", "replay_from": "/runs/base"}))
    with pytest.raises(PreflightError, match="--replay-from /runs/base") as info:
        load_records(run, backend="cpu")
    assert info.value.check == "replay_from"


@pytest.mark.parametrize("setup,match", [
    (lambda p: None, "not a directory"),
    (lambda p: p.mkdir(), "not a record run"),
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
