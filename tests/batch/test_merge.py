"""The merged run and the shards of a deep scan: ``BATCH/run`` is an ordinary run directory
(loads complete, gates, replays), shards merge to what one batch gives (same rows, same
statuses), shards that do not belong together are refused by name, and a replay batch finds
each op's own record."""

from __future__ import annotations

import datetime as dt

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.batch.fake_ops import calls, fake_command, write_suite
from tritongate.autotune.records import load_records
from tritongate.batch import BatchRequest, OpStatus, merge_batches, run_batch
from tritongate.cli.batch import main
from tritongate.batch.status import read_csv
from tritongate.errors import UsageError
from tritongate.gate.policy import GatePolicy
from tritongate.gate.verdict import Verdict, run_gate
from tritongate.ir.index import read_index
from tritongate.rundir import load_run

OPS = {"ok_a": ["float32", "float16"], "ok_b": ["float32"], "skip_c": ["float32"], "flaky_d": ["float32"],
       "ok_e": ["float16"]}


@pytest.fixture(scope="module")
def scans(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("merge")
    suite = write_suite(tmp / "fake.yaml", OPS)

    def batch(out: str, **kw) -> Path:
        return run_batch(BatchRequest(suite=str(suite), out=tmp / out, command=fake_command(tmp / f"state-{out}"),
                                      **kw)).path

    return {"tmp": tmp, "suite": suite, "whole": batch("whole"),
            "shards": [batch(f"s{i}", shard=(i, 3)) for i in (1, 2, 3)], "batch": batch}


def _statuses(batch: Path) -> dict[str, str]:
    return {line["op"]: line["status"] for line in read_csv(batch / "ops_status.csv")}


@pytest.mark.slow
def test_shards_run_round_robin_and_merge_to_the_whole_batch(scans) -> None:
    shards = scans["shards"]
    assert [json.loads((s / "batch.json").read_text())["plan"]["ops"] for s in shards] == \
        [["ok_a", "flaky_d"], ["ok_b", "ok_e"], ["skip_c"]]
    assert shards[0].name.startswith("batch-fake-shard1of3_")
    out = scans["tmp"] / "merged"
    code = main(["batch-merge", *map(str, reversed(shards)), "--out", str(out)])
    assert code == 0
    whole = scans["whole"]
    assert _statuses(out) == _statuses(whole) == {"ok_a": "PASS", "ok_b": "PASS", "skip_c": "SKIP",
                                                  "flaky_d": "PASS", "ok_e": "PASS"}
    got, want = load_run(out / "run"), load_run(whole / "run")
    assert got.complete and got.mode == want.mode == "record"
    assert sorted((r.key, r.samples) for r in got.rows) == sorted((r.key, r.samples) for r in want.rows)
    assert len(read_csv(out / "summary.csv")) == len(read_csv(whole / "summary.csv")) == len(got.rows)
    assert [m["shard"] for m in got.identity["batch"]["merged_from"]] == ["1/3", "2/3", "3/3"]
    runs = {line["op"]: line["run"] for line in read_csv(out / "ops_status.csv")}
    assert (out / runs["ok_b"]).resolve() == (shards[1] / read_csv(shards[1] / "ops_status.csv")[0]["run"]).resolve()
    # each op's log is named from the merged folder too, where a reader of its table starts
    logs = {line["op"]: line["log"] for line in read_csv(out / "ops_status.csv")}
    assert (out / logs["ok_b"]).resolve() == (shards[1] / read_csv(shards[1] / "ops_status.csv")[0]["log"]).resolve()
    assert all((out / log).is_file() for log in logs.values())
    manifest = json.loads((out / "batch.json").read_text())
    assert manifest["plan"]["shard"] is None and len(manifest["merged_from"]) == 3


@pytest.mark.slow
def test_the_merged_run_gates_and_replays_like_any_record_run(scans) -> None:
    whole = scans["whole"]
    run = load_run(whole / "run")
    assert run.complete and set(run.identity["batch"]["ops"]) == {"ok_a", "ok_b", "flaky_d", "ok_e"}
    assert run.identity["batch"]["ops"]["ok_a"][0]["dtypes"] == ["float16", "float32"]
    # started when its first op started (a store entry's night), not when the merge wrote it
    starts = [o["started_utc"] for ops in run.identity["batch"]["ops"].values() for o in ops]
    assert run.identity["started_utc"] == min(starts, key=dt.datetime.fromisoformat)
    records = load_records(whole / "run", backend="cpu")
    assert {r.op for r in records.records.values()} == {"ok_a", "ok_b", "flaky_d", "ok_e"}
    assert len(records.records) == len(run.rows)
    index = read_index(whole / "run" / "ttgir" / "index.tsv")
    assert len(index) == len(run.rows) and all((whole / "run" / "ttgir" / v.file).is_file() for v in index)
    log = (whole / "run" / "run.log").read_text()
    assert "=== op ok_a:" in log and "=== op ok_e:" in log

    # a replay batch: each op replays its own record run (the original, never the merged copy)
    replay = scans["batch"]("replay", replay_root=whole)
    rcalls = calls(scans["tmp"] / "state-replay")
    argv = (replay / "ops" / "ok_b" / "logs" / "attempt-01.argv").read_text().split()
    ok_b_record = whole / read_csv(whole / "ops_status.csv")[1]["run"]
    assert argv[argv.index("--replay-from") + 1] == str(ok_b_record) and len(rcalls) == 6  # flaky_d: 2
    rrun = load_run(replay / "run")
    assert rrun.mode == "replay" and rrun.identity["replay_from"] == str((whole / "run").resolve())
    assert not (replay / "run" / "autotune_records").exists()  # replay runs write no records
    speedups = {line["speedup"] for line in read_csv(replay / "summary.csv")}
    assert speedups == {"1.0000"}  # the record's median over this row's: same fake samples

    result = run_gate(load_run(whole / "run"), rrun, GatePolicy())
    assert result.exit_code == 0 and {r.verdict for r in result.rows} == {Verdict.UNCHANGED}
    assert len(result.rows) == len(run.rows)

    # a merged (shard) batch as the replay root: it has no ops/, every op replays its merged run
    merged = merge_batches(scans["shards"], scans["tmp"] / "merged-root").path
    again = scans["batch"]("replay2", replay_root=merged, ops=("ok_e",))
    argv = (again / "ops" / "ok_e" / "logs" / "attempt-01.argv").read_text().split()
    assert argv[argv.index("--replay-from") + 1] == str(merged / "run")
    assert load_run(again / "run").mode == "replay"


@pytest.mark.slow
def test_shards_that_do_not_belong_together_are_refused(scans) -> None:
    s1, s2, s3 = scans["shards"]
    tmp = scans["tmp"]
    with pytest.raises(UsageError, match=r"shard\(s\) 3/3 missing"):
        merge_batches([s1, s2], tmp / "m1")
    partial = merge_batches([s1, s2], tmp / "m2", allow_partial=True)
    assert partial.missing == (3,) and _statuses(tmp / "m2")["skip_c"] == "MISSING"
    assert partial.exit_code == 1  # an op that was not measured is never a pass
    with pytest.raises(UsageError, match="given twice"):
        merge_batches([s1, s1, s2, s3], tmp / "m3")
    other = scans["batch"]("other", shard=(2, 2))
    with pytest.raises(UsageError, match="cut differently"):
        merge_batches([s1, other], tmp / "m4")
    dtypes = scans["batch"]("dt", shard=(3, 3), dtypes=("float32",))
    with pytest.raises(UsageError, match="planned unlike.*dtypes"):
        merge_batches([s1, s2, dtypes], tmp / "m5")
    with pytest.raises(UsageError, match="not empty"):
        merge_batches([s1, s2, s3], tmp / "m2")
    with pytest.raises(UsageError, match="already a merged batch"):
        merge_batches([tmp / "m2"], tmp / "m6")
    unfinished = scans["batch"]("unfinished", shard=(3, 3))
    doc = json.loads((unfinished / "batch.json").read_text())
    (unfinished / "batch.json").write_text(json.dumps({**doc, "finished": False}))
    with pytest.raises(UsageError, match="has not finished"):
        merge_batches([s1, s2, unfinished], tmp / "m7")


def test_the_merge_refuses_op_runs_measured_unlike(scans, tmp_path: Path) -> None:
    from tritongate.batch.shards import OpRun, merge_op_runs

    whole = scans["whole"]
    lines = {line["op"]: line["run"] for line in read_csv(whole / "ops_status.csv")}
    moved = tmp_path / "copy"
    subprocess.run(["cp", "-r", str(whole / lines["ok_b"]), str(moved)], check=True)
    ident = json.loads((moved / "run_identity.json").read_text())
    (moved / "run_identity.json").write_text(json.dumps({**ident, "device": "another GPU"}))
    with pytest.raises(UsageError, match="not measured like.*GPU model"):
        merge_op_runs([OpRun("ok_a", whole / lines["ok_a"]), OpRun("ok_b", moved)], tmp_path / "run", provenance={})
    assert not (tmp_path / "run").exists() and not list(tmp_path.glob(".run.*"))


def test_the_parent_never_imports_torch_or_triton(scans) -> None:
    """A batch and a merge in a fresh interpreter: neither loads torch or triton (an op's
    crash must never be able to take the parent down)."""
    tmp = scans["tmp"]
    code = ("import sys\n"
            "from pathlib import Path\n"
            "from tests.batch.fake_ops import fake_command\n"
            "from tritongate.batch import BatchRequest, merge_batches, run_batch\n"
            f"run_batch(BatchRequest(suite={str(scans['suite'])!r}, out=Path({str(tmp / 'np-out')!r}), ops=('ok_b',),\n"
            f"          command=fake_command(Path({str(tmp / 'np-state')!r}))))\n"
            f"merge_batches([Path(p) for p in {list(map(str, scans['shards']))!r}], Path({str(tmp / 'np')!r}))\n"
            "print(sorted(m for m in ('torch', 'triton') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2]).stdout
    assert out.strip() == "[]"


def test_an_empty_shard_and_no_passing_op_leave_no_run(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "fake.yaml", {"skip_a": ["float32"]})
    empty = run_batch(BatchRequest(suite=str(suite), out=tmp_path / "o", shard=(2, 2),
                                   command=fake_command(tmp_path / "s")))
    assert empty.results == [] and empty.run is None and empty.exit_code == 0
    skipped = run_batch(BatchRequest(suite=str(suite), out=tmp_path / "o", command=fake_command(tmp_path / "s")))
    assert skipped.run is None and not (skipped.path / "run").exists()
    assert [r.status for r in skipped.results] == [OpStatus.SKIP]


def test_a_record_every_op_replays_is_read_once_per_merge(scans, monkeypatch) -> None:
    import tritongate.batch.status as status_mod  # where a replayed record's medians are read

    merged = scans["tmp"] / "merged-record"
    assert main(["batch-merge", *map(str, scans["shards"]), "--out", str(merged)]) == 0
    # a merged batch as the replay root: every op replays the same run, merged/run
    replays = [scans["batch"](f"replay-shard{i}", shard=(i, 2), replay_root=merged, ops=("ok_a", "ok_b", "ok_e"))
               for i in (1, 2)]
    loads: list[Path] = []
    real = status_mod.load_run
    monkeypatch.setattr(status_mod, "load_run", lambda p, **kw: (loads.append(Path(p).resolve()), real(p, **kw))[1])
    assert main(["batch-merge", *map(str, replays), "--out", str(scans["tmp"] / "merged-replays")]) == 0
    assert loads.count((merged / "run").resolve()) == 1  # not once per op (3 ops)
    lines = read_csv(scans["tmp"] / "merged-replays" / "summary.csv")
    assert len(lines) == 8 and all(line["speedup"] for line in lines)  # each row against the record
