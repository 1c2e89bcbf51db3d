"""A paired run cut into shards (``pair --shard I/N``) and joined back (``merge``): every
row once, each still judged from its own alternating rounds; shards that do not belong
together, or a missing one, are refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tritongate.cli import main
from tritongate.errors import UsageError
from tritongate.gate.verdict import Verdict
from tritongate.pair.build import CompilerBuild
from tritongate.pair.merge import merge_shards
from tritongate.pair.orchestrator import PairRequest, run_pair
from tritongate.rundir import load_run

from tests.pair.fakes import InProcessWorker, ScriptedExecutor, World


def _spawn(spec):
    return InProcessWorker(spec.side, lambda settings, spec=spec: ScriptedExecutor(
        settings, world=World(), env=spec.env, side=spec.side))


def shard(tmp_path: Path, index: int, count: int, *, cand_env=None) -> Path:
    request = PairRequest(baseline=tmp_path / "baseline", suite="scripted", out=tmp_path / f"s{index}of{count}",
                          base=CompilerBuild("base"),
                          cand=CompilerBuild("candidate", env={"TG_BINARY": "new", **(cand_env or {})}),
                          executor="tests.pair.fakes:ScriptedExecutor", shard=(index, count))
    return run_pair(request, spawn=_spawn).path


def test_shards_split_the_rows_and_merge_into_one_paired_verdict(tmp_path: Path, capsys) -> None:
    one, two = shard(tmp_path, 1, 2, cand_env={"TG_FACTOR": "1.05"}), shard(tmp_path, 2, 2, cand_env={"TG_FACTOR": "1.05"})
    ops = [sorted(r.op for r in load_run(p / "base").rows) for p in (one, two)]
    assert ops == [["add", "matmul"], ["softmax"]]  # every 2nd row of the plan, from the 1st / the 2nd
    assert load_run(one / "base").identity["pair"]["shard"] == {
        "index": 1, "count": 2, "planned_rows": 3,
        "plan": [["add", "4096", "float16"], ["softmax", "64x512", "float16"], ["matmul", "64x64x64", "float16"]]}

    code = main(["merge", str(two), str(one), "--out", str(tmp_path / "m")])
    out = capsys.readouterr().out
    assert code == 1 and "merged 2 of 2 shards, 3 rows" in out  # a 5 % slowdown everywhere: gate fails
    doc = json.loads((tmp_path / "m" / "verdict" / "verdict.json").read_text())
    assert sorted(r["op"] for r in doc["rows"]) == ["add", "matmul", "softmax"]
    assert all(r["verdict"] == Verdict.REGRESSED.value and r["paired"] for r in doc["rows"])
    merged = load_run(tmp_path / "m" / "candidate")
    assert merged.complete and [s["shard"] for s in merged.identity["merged_from"]] == ["1/2", "2/2"]


def test_a_missing_shard_is_refused_unless_partial_is_allowed(tmp_path: Path, capsys) -> None:
    one = shard(tmp_path, 1, 2)
    with pytest.raises(UsageError, match=r"shard\(s\) 2/2 missing: their rows would be absent"):
        merge_shards([one], tmp_path / "m")
    # allowed, the missing shard's row is in the verdict as MISSING, and a partial merge never passes
    assert main(["merge", str(one), "--out", str(tmp_path / "p"), "--allow-partial"]) == 1
    doc = json.loads((tmp_path / "p" / "verdict" / "verdict.json").read_text())
    missing = [(r["op"], r["case"], r["reasons"]) for r in doc["rows"] if r["verdict"] == "MISSING"]
    assert missing == [("softmax", "64x512", ["its shard 2/2 was not given to the merge"])]
    assert doc["passed"] is False and doc["counts"]["MISSING"] == 1
    md = (tmp_path / "p" / "verdict" / "verdict.md").read_text()
    assert "**Note:** Partial: shard(s) 2/2 missing; 1 row not measured, listed MISSING." in md  # from verdict.json's notes
    capsys.readouterr()


def test_the_trusted_comment_reads_a_partial_merge_as_its_rows_say(tmp_path: Path, capsys) -> None:
    from tritongate.github.trusted import as_its_rows_say, parse_verdict_doc

    one, three = shard(tmp_path, 1, 3), shard(tmp_path, 3, 3)
    assert main(["merge", str(one), str(three), "--out", str(tmp_path / "p"), "--allow-partial"]) == 1
    path = tmp_path / "p" / "verdict" / "verdict.json"
    doc = parse_verdict_doc(path.read_bytes(), str(path))
    assert as_its_rows_say(doc)[1] is None  # no contradiction: its rows fail it
    assert [r.op for r in doc.rows if r.verdict is Verdict.MISSING] == ["softmax"]
    capsys.readouterr()


def test_a_missing_shard_of_shards_that_kept_no_plan_is_refused(tmp_path: Path) -> None:
    """Shards written before they kept their plan cannot say what a missing one held."""
    one = shard(tmp_path, 1, 2)
    for side in ("base", "candidate"):
        path = one / side / "run_identity.json"
        identity = json.loads(path.read_text())
        del identity["pair"]["shard"]["plan"]
        path.write_text(json.dumps(identity))
    with pytest.raises(UsageError, match="does not keep the plan it was cut from"):
        merge_shards([one], tmp_path / "m", allow_partial=True)
    assert merge_shards([one, shard(tmp_path, 2, 2)], tmp_path / "w").absent == {}  # whole: nothing to name


def test_shards_that_do_not_belong_together_are_named(tmp_path: Path, capsys) -> None:
    a, b = shard(tmp_path, 1, 2), shard(tmp_path, 1, 3)
    with pytest.raises(UsageError, match="cut differently"):
        merge_shards([a, b], tmp_path / "m")
    with pytest.raises(UsageError, match="given twice"):
        merge_shards([a, a], tmp_path / "m")
    with pytest.raises(UsageError, match="is not a pair directory"):
        merge_shards([tmp_path], tmp_path / "m")
    whole = shard(tmp_path, 1, 1)
    assert main(["merge", str(whole), "--out", str(tmp_path / "w")]) == 0
    assert main(["merge", str(whole), "--out", str(tmp_path / "w")]) == 2  # never over an earlier merge
    err = capsys.readouterr().err
    assert "already holds a merged run" in err
    code = main(["pair", str(tmp_path / "rec"), "--suite", "smoke", "--out", str(tmp_path / "x"), "--shard", "3/2"])
    assert code == 2 and "expected I/N with 1 <= I <= N" in capsys.readouterr().err


def test_the_merged_verdict_cites_the_calibration(tmp_path: Path, capsys, monkeypatch) -> None:
    from tests.gate.helpers import calibration_file

    monkeypatch.delenv("TRITONGATE_CALIBRATION", raising=False)
    whole = shard(tmp_path, 1, 1)
    cal = calibration_file(tmp_path / "cal")  # calibrated on an H200; the shards ran on the scripted GPU
    assert main(["merge", str(whole), "--out", str(tmp_path / "m"), "--calibration", str(cal)]) == 0
    md = (tmp_path / "m" / "verdict" / "verdict.md").read_text()
    assert "<sub>⚠️ Calibrated on NVIDIA H200, not this GPU (Scripted GPU), 2026-11-30" in md
    doc = json.loads((tmp_path / "m" / "verdict" / "verdict.json").read_text())
    assert doc["calibration"]["device"] == "NVIDIA H200"
    capsys.readouterr()


def test_only_rows_runs_just_those_planned_rows_and_says_so(tmp_path: Path) -> None:
    """A calibration's paired check names its rows: the others of their ops are not run."""
    full = shard(tmp_path, 1, 1)
    keys = sorted((r.op, r.case, r.dtype) for r in load_run(full / "base").rows)
    wanted = frozenset(k for k in keys if k[0] != "add")
    request = PairRequest(baseline=tmp_path / "baseline", suite="scripted", out=tmp_path / "only",
                          base=CompilerBuild("base"), cand=CompilerBuild("candidate", env={"TG_BINARY": "new"}),
                          executor="tests.pair.fakes:ScriptedExecutor", only_rows=wanted)
    path = run_pair(request, spawn=_spawn).path
    base = load_run(path / "base")
    assert sorted((r.op, r.case, r.dtype) for r in base.rows) == sorted(wanted) and len(wanted) == 2
    assert base.complete and base.identity["pair"]["only_rows"] == sorted("/".join(k) for k in wanted)


def test_shards_of_other_builds_or_records_are_refused_by_name(tmp_path: Path) -> None:
    """The merged identity is the first shard's: a shard of another candidate build, or one
    paired against another record, would be judged as if it were the same run."""
    one = shard(tmp_path / "a", 1, 2, cand_env={"TG_FACTOR": "1.05"})
    other_build = shard(tmp_path / "b", 2, 2)
    with pytest.raises(UsageError, match=r"\(candidate\) ran another candidate build than .*environment overlay"):
        merge_shards([one, other_build], tmp_path / "m1")
    other_record = shard(tmp_path / "c", 2, 2, cand_env={"TG_FACTOR": "1.05"})
    for side in ("base", "candidate"):
        path = other_record / side / "run_identity.json"
        ident = json.loads(path.read_text())
        path.write_text(json.dumps({**ident, "replay_from": "/store/pr_20261130T000000Z"}))
    with pytest.raises(UsageError, match=r"replayed another baseline record than .*record 'baseline' vs "
                                         r"'pr_20261130T000000Z'"):
        merge_shards([one, other_record], tmp_path / "m2")
    same = shard(tmp_path / "d", 2, 2, cand_env={"TG_FACTOR": "1.05"})
    assert merge_shards([one, same], tmp_path / "m3").rows == 3


def test_a_partial_merge_fails_unless_max_missing_tolerates_its_rows_and_the_help_says_so(tmp_path: Path,
                                                                                           capsys) -> None:
    """--allow-partial's help said a missing shard's rows fail the gate; under --max-missing N
    (a policy's max_missing) N of them pass, like any MISSING row, and the help now says so."""
    one = shard(tmp_path, 1, 2)
    assert main(["merge", str(one), "--out", str(tmp_path / "p"), "--allow-partial", "--max-missing", "1"]) == 0
    doc = json.loads((tmp_path / "p" / "verdict" / "verdict.json").read_text())
    assert doc["counts"]["MISSING"] == 1 and doc["passed"] is True
    capsys.readouterr()
    assert main(["merge", "--help"]) == 0
    helptext = " ".join(capsys.readouterr().out.split())
    assert "listed MISSING, which fails the gate unless --max-missing tolerates that many" in helptext
