"""A paired run (`pair`, or `merge` of its shards) that judged no row never passes: exit 2
with one line naming the folder and the fix, its verdict still written and saying so. A pull
request whose kernels the pre-screen proved unchanged is a real pass without GPU time (exit 0),
and a gate that failed keeps its exit 1.

`tritongate pair` runs here on the scripted device in this process (tests/pair/fakes): the CLI's
own wiring and exit codes, without worker processes."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from tritongate.cli import main
from tritongate.gate.verdict import RowVerdict, Verdict
from tritongate.github.trusted import parse_verdict_doc, render_comment_body
from tritongate.ir.changed import ChangedRows
from tritongate.ops.registry import case_id
from tritongate.pair.evidence import JUDGED, nothing_measured
from tritongate.report.verdict_view import NOT_JUDGED

from tests.pair.fakes import ROWS, InProcessWorker, ScriptedExecutor, World

ALL_OPS = ",".join(op for op, _, _ in ROWS)
KEYS = frozenset((op, case_id(shape), dtype) for op, shape, dtype in ROWS)


def _spawn(spec):
    return InProcessWorker(spec.side, lambda settings, spec=spec: ScriptedExecutor(
        settings, world=World(), env=spec.env, side=spec.side))


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> dict:
    """`pair` on the scripted device; ``unchanged``: rows an ahead-of-time diff proved identical."""
    from tritongate.pair import orchestrator

    real, given = orchestrator.run_pair, {"unchanged": None}

    def run_pair(request, progress=None, **_):
        request = replace(request, executor="tests.pair.fakes:ScriptedExecutor")
        if given["unchanged"] is not None:
            request = replace(request, changed_from=ChangedRows(Path("ir-diff"), given["unchanged"], frozenset()))
        return real(request, progress, spawn=_spawn)

    monkeypatch.setattr(orchestrator, "run_pair", run_pair)
    return given


def _pair(tmp_path: Path, *extra: str, out: str = "out") -> int:
    return main(["pair", str(tmp_path / "record"), "--suite", "smoke", "--out", str(tmp_path / out),
                 "--color", "never", *extra])


def _verdict(tmp_path: Path, out: str = "out") -> tuple[dict, str]:
    (folder,) = (tmp_path / out).glob("pair-*/verdict") if out == "out" else [tmp_path / out / "verdict"]
    return json.loads((folder / "verdict.json").read_text()), (folder / "verdict.md").read_text()


def test_a_pair_whose_every_row_failed_on_both_sides_exits_2_and_says_so(scripted, tmp_path: Path, capsys) -> None:
    code = _pair(tmp_path, "--base-env", f"TG_ROW_ERROR={ALL_OPS}", "--cand-env", f"TG_ROW_ERROR={ALL_OPS}")
    out, err = capsys.readouterr()
    assert code == 2
    (line,) = [ln for ln in err.splitlines() if ln.startswith("error: ")]
    (pair_dir,) = (tmp_path / "out").glob("pair-*")
    assert line.startswith("error: nothing was measured: none of its 3 rows was judged (3 REJECTED; most often: "
                           "error on base: ")
    assert f"the verdict in {pair_dir / 'verdict'} says so" in line and "run.log; fix the cause" in line
    assert f"verdict:   {pair_dir / 'verdict' / 'verdict.md'}" in out  # the folders are still printed
    doc, md = _verdict(tmp_path)
    headline = "Nothing was measured: none of its 3 rows could be judged (3 rejected)"
    assert doc["headline"] == f"⚠️ {headline}" and md.splitlines()[1] == f"## ⚠️ {headline}"
    assert "✅" not in doc["headline"] and out.count("⚠️ Nothing was measured") == 1  # the terminal summary too
    assert doc["state"] == "blind"  # saw nothing: never "pass"
    assert (doc["passed"], doc["exit_code"]) == (False, 2)  # as the command exits, for scripts reading the file
    # the unpaired gate of the same two runs says so too, and exits 2
    base, cand = (next((tmp_path / "out").glob(f"pair-*/{side}")) for side in ("base", "candidate"))
    capsys.readouterr()
    assert main(["gate", str(base), str(cand), "--out", str(tmp_path / "gate")]) == 2
    err = capsys.readouterr().err
    assert "nothing was measured: none of its 3 rows was judged" in err
    assert err.rstrip().endswith("fix the cause and measure both runs again")  # no pair ran here
    gated = json.loads((tmp_path / "gate" / "verdict.json").read_text())
    assert (gated["state"], gated["passed"], gated["exit_code"]) == ("blind", False, 2)


def test_a_pair_that_planned_no_row_exits_2(scripted, tmp_path: Path, capsys) -> None:
    assert _pair(tmp_path, "--shard", "4/4") == 2  # three rows: the fourth shard holds none
    err = capsys.readouterr().err
    assert "nothing was measured: no row was planned;" in err and "use fewer shards than the suite has rows" in err
    doc, md = _verdict(tmp_path)
    assert doc["rows"] == [] and doc["headline"] == "⚠️ Nothing was measured: there is no row to judge"
    assert (doc["state"], doc["passed"], doc["exit_code"]) == ("blind", False, 2)
    # the trusted comment job renders it as the job did (its state agrees with its rows)
    body = render_comment_body(parse_verdict_doc(json.dumps(doc).encode(), "verdict.json"))
    assert "⚠️ Nothing was measured: there is no row to judge" in body and "says its state is" not in body
    assert _pair(tmp_path, "--shard", "4/4", "--fail-on-blind", out="again") == 1


def test_a_candidate_failing_every_row_the_base_ran_keeps_exit_1(scripted, tmp_path: Path, capsys) -> None:
    assert _pair(tmp_path, "--cand-env", f"TG_ROW_ERROR={ALL_OPS}") == 1
    err = capsys.readouterr().err
    assert "nothing was measured" not in err
    doc, _ = _verdict(tmp_path)
    assert doc["state"] == "fail" and doc["headline"].startswith("❌")


def test_a_pr_whose_kernels_are_all_unchanged_ahead_of_time_passes_without_timing(scripted, tmp_path: Path,
                                                                                  capsys) -> None:
    scripted["unchanged"] = KEYS
    assert _pair(tmp_path) == 0
    assert "error" not in capsys.readouterr().err
    doc, _ = _verdict(tmp_path)
    assert {r["verdict"] for r in doc["rows"]} == {"IDENTICAL_BINARY"} and not any(r["timed"] for r in doc["rows"])
    assert doc["headline"] == "✅ 0 of 3 rows' kernels changed between the two builds; no GPU time used"


def test_a_merge_of_shards_that_judged_no_row_exits_2(scripted, tmp_path: Path, capsys) -> None:
    for i in (1, 2):
        assert main(["pair", str(tmp_path / "record"), "--suite", "smoke", "--out", str(tmp_path / f"s{i}"),
                     "--shard", f"{i}/2", "--base-env", f"TG_ROW_ERROR={ALL_OPS}",
                     "--cand-env", f"TG_ROW_ERROR={ALL_OPS}"]) == 2
    shards = [str(p) for i in (1, 2) for p in (tmp_path / f"s{i}").glob("pair-*")]
    capsys.readouterr()
    assert main(["merge", *shards, "--out", str(tmp_path / "merged")]) == 2
    err = capsys.readouterr().err
    assert f"the verdict in {tmp_path / 'merged' / 'verdict'} says so" in err
    assert "run the shards' pairs again" in err
    doc, md = _verdict(tmp_path, "merged")
    assert doc["headline"].startswith("⚠️ Nothing was measured: none of its 3 rows") and "## ⚠️ Nothing" in md


def test_timeouts_ask_for_a_longer_row_timeout() -> None:
    rows = [RowVerdict("add", str(n), "float16", Verdict.REJECTED, reasons=("timeout on base", "timeout on candidate"))
            for n in range(3)] + [RowVerdict("mm", "1", "float16", Verdict.NOT_COMPARABLE, reasons=("timer differs",))]
    nothing = nothing_measured(SimpleNamespace(rows=rows))
    assert nothing.describe() == ("none of its 4 rows was judged (3 REJECTED, 1 NOT_COMPARABLE; most often: timeout "
                                  "on base (3 of 4))")
    assert nothing.fix(row_timeout_s=0.01) == "3 row(s) timed out: raise --row-timeout (it was 0.01 s) and run the pair again"
    judged = rows + [RowVerdict("ok", "1", "float16", Verdict.IDENTICAL_BINARY)]
    assert nothing_measured(SimpleNamespace(rows=judged)) is None


def test_the_cli_and_the_headline_agree_on_what_is_judged() -> None:
    assert {v.value for v in Verdict} - {v.value for v in JUDGED} == set(NOT_JUDGED)
