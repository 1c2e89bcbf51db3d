"""The parallel sweep: rows dealt round robin to shard processes, their winners merged
(conflicts counted), the run measuring serially with those winners; refused or discarded,
with the reason said, where a spread sweep would lie."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tritongate.autotune import parallel_sweep as ps
from tritongate.autotune.records import Record, RecordSet
from tritongate.errors import UsageError

REPO = Path(__file__).resolve().parents[2]


def record_set(path: str, configs: dict[str, int]) -> RecordSet:
    records = {("k.mm", json.dumps([m])): Record(op="matmul", kernel="k.mm", tuner="Autotuner", key=[m],
                                                 config={"kwargs": {"BLOCK": b}, "num_warps": 4}, cases=(f"{m}/fp16",))
               for m, b in ((int(k), v) for k, v in configs.items())}
    return RecordSet(run_dir=Path(path), meta={"backend": "cuda"}, records=records)


def test_rows_are_dealt_round_robin() -> None:
    rows = [("mm", str(i), "fp16") for i in range(7)]
    shards = ps.shard_rows(rows, 3)
    assert [[r[1] for r in s] for s in shards] == [["0", "3", "6"], ["1", "4"], ["2", "5"]]


def test_merged_winners_keep_the_first_shard_and_count_conflicts() -> None:
    merged, conflicts = ps.merge_records([record_set("/a", {"16": 64, "32": 64}),
                                          record_set("/b", {"32": 128, "48": 32})])
    assert {m: r.config["kwargs"]["BLOCK"] for (_, m), r in merged.records.items()} == {
        json.dumps([16]): 64, json.dumps([32]): 64, json.dumps([48]): 32}
    assert len(conflicts) == 1 and conflicts[0].startswith("k.mm ")


@pytest.mark.parametrize("kw, why", [
    (dict(replaying=True, backend_name="cuda", devices=["0", "1"]), "being replayed"),
    (dict(replaying=False, backend_name="cuda", devices=["0"]), "1 device(s) visible"),
    (dict(replaying=False, backend_name="cpu", devices=[]), "cpu backend has no GPUs"),
])
def test_refusals_say_why(kw, why) -> None:
    assert why in ps.refusal(2, **kw)
    assert ps.refusal(2, replaying=False, backend_name="cuda", devices=["0", "1"]) == ""


def test_the_request_comes_from_the_option_or_the_environment() -> None:
    assert ps.requested_gpus(None, {ps.ENV: "4"}) == 4
    assert ps.requested_gpus(3, {ps.ENV: "4"}) == 3
    assert ps.requested_gpus(None, {}) == 0
    with pytest.raises(UsageError, match="PARALLEL_WARMUP_GPUS='many'"):
        ps.requested_gpus(None, {ps.ENV: "many"})
    assert ps.visible_devices("cuda", {"CUDA_VISIBLE_DEVICES": "2,3"}) == ["2", "3"]
    assert ps.visible_devices("cuda", {ps.DEVICES_ENV: "1, 5", "CUDA_VISIBLE_DEVICES": "0"}) == ["1", "5"]


def test_a_failed_shard_discards_the_whole_sweep(tmp_path: Path) -> None:
    seen = []

    def spawn(cmd, env, log):
        seen.append(env["CUDA_VISIBLE_DEVICES"])
        code = 3 if env["CUDA_VISIBLE_DEVICES"] == "1" else 0
        return subprocess.Popen([sys.executable, "-c", f"raise SystemExit({code})"])

    out = ps.run_sweep(suite="smoke", backend_name="cuda", shape_file=None,
                       rows=[("mm", str(i), "fp16") for i in range(4)], devices=["0", "1", "2"], gpus=2,
                       work_dir=tmp_path / "sweep", spawn=spawn)
    assert seen == ["0", "1"]  # min(gpus, devices) shards, one device each
    assert out.status == "discarded" and "shard 2 exit 3" in out.reason and "sweeping serially" in out.reason
    assert out.records is None and (tmp_path / "sweep").is_dir()  # logs kept for inspection
    assert out.log_line().startswith("PARALLEL_SWEEP discarded: shard 2 exit 3")


def _run(tmp_path: Path, *extra: str, env: dict[str, str] | None = None) -> tuple[Path, str]:
    proc = subprocess.run([sys.executable, "-m", "tritongate", "run", "--suite", "smoke", "--backend", "cpu",
                           "--ops", "matmul,add", "--dtypes", "float16", "--color", "never", *extra],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**{k: v for k, v in os.environ.items() if k not in (ps.ENV, ps.DEVICES_ENV)},
                               **(env or {})})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return Path(proc.stdout.strip().splitlines()[-1]), proc.stderr


@pytest.mark.slow
def test_a_record_run_sweeps_in_shards_and_measures_with_their_winners(tmp_path: Path) -> None:
    run, err = _run(tmp_path, "--out", str(tmp_path / "rec"), "--sweep-gpus", "2",
                    env={ps.DEVICES_ENV: "0,1"})
    log = (run / "run.log").read_text()
    assert "PARALLEL_SWEEP used devices=0,1" in log and "conflicts=0" in log
    ident = json.loads((run / "run_identity.json").read_text())
    assert ident["parallel_sweep"]["status"] == "used" and ident["mode"] == "record"
    rows = json.loads((run / "results.json").read_text())["rows"]
    assert {r["op"] for r in rows} == {"matmul", "add"}
    for r in rows:  # the winners came from the shards: no sweep in the run itself
        assert r["autotune"]["sweep_benchmarks"] == 0
        assert {k["source"] for k in r["autotune"]["kernels"]} == {"presweep"}
    assert (run / "autotune_records" / "matmul.json").is_file()
    assert not [p for p in (tmp_path / "rec").iterdir() if p.name.startswith(".sweep-")]  # scratch removed
    # the record replays like any other
    replay, _ = _run(tmp_path, "--out", str(tmp_path / "rep"), "--replay-from", str(run), "--sweep-gpus", "2",
                     env={ps.DEVICES_ENV: "0,1"})
    assert json.loads((replay / "run_identity.json").read_text())["parallel_sweep"]["status"] == "refused"
    assert "PARALLEL_SWEEP refused: a record is being replayed" in (replay / "run.log").read_text()
    for r in json.loads((replay / "results.json").read_text())["rows"]:
        assert r["autotune"]["sweep_benchmarks"] == 0
        assert {k["source"] for k in r["autotune"]["kernels"]} == {"replayed"}


@pytest.mark.parametrize("content, match", [
    ("not json", "unreadable"),
    ('[["add", "4096"]]', "string triples"),
    ('{"add": 1}', "string triples"),
])
def test_a_bad_rows_file_is_a_usage_error(tmp_path: Path, capsys, content: str, match: str) -> None:
    from tritongate.cli import main

    rows = tmp_path / "rows.json"
    rows.write_text(content)
    code = main(["run", "--suite", "smoke", "--backend", "cpu", "--out", str(tmp_path / "o"), "--only-rows", str(rows)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: --only-rows") and match in err and err.count("\n") == 1
    assert not (tmp_path / "o").exists()
