"""``tritongate history`` end to end on a store of real publishes, and its usage errors."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from tritongate.cli import baseline as commands
from tritongate.cli import main as cli_main
from tritongate.cli.baseline import add_history_parser, run_history

from tests.gate.helpers import row
from tests.history.helpers import commit, publish_nights

HOSTILE = "evil|op <script>x</script> @team [y](https://e.vil)"
PNG = b"\x89PNG\r\n\x1a\n"
SKIPPED = 2  # that night published nothing
STEP_AT = 5  # the 6th night: softmax 4096x4096 is 8 % slower from here on


def _night(i: int) -> list:
    rows = [row(median=20.0 * (1.08 if i >= STEP_AT else 1.0), seed=i),
            row(case="1024x1024", median=5.0, seed=100 + i),
            row(op=HOSTILE, case="n=1", dtype="float32", median=3.0, seed=200 + i)]
    if i == 8:
        rows[1] = row(case="1024x1024", status="error", error="out of resources")
    return rows


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("history")
    publish_nights(tmp / "store", tmp / "runs", [_night(i) for i in range(12)], skip=[SKIPPED])
    return tmp / "store"


def _run(store: Path, out: Path, *extra: str) -> int:
    return cli_main(["history", "--store", str(store), "--runner-class", "h200", "--suite", "pr", "--out", str(out), *extra])


def test_history_end_to_end(store, tmp_path, capsys):
    out, summary = tmp_path / "out", tmp_path / "step" / "summary.md"
    assert _run(store, out, "--summary-out", str(summary)) == 0
    stdout, stderr = capsys.readouterr()
    lines = stdout.splitlines()
    assert lines == ["history h200/pr/nvidia-h200: 3 series over 11 entries, 1 missing nightly; 1 change point (0 new)",
                     str(out / "history.md")]
    assert "note: about 1 nightly missing between 2026-11-02 03:00 and 2026-11-04 03:00 UTC" in stderr

    doc = json.loads((out / "history.json").read_text())
    assert doc["schema"] == 2 and doc["counts"] == {"series": 3, "entries": 11, "missing_nightlies": 1,
                                                    "change_points": 1, "new_change_points": 0}
    (cp,) = doc["change_points"]
    assert (cp["op"], cp["case"], cp["dtype"]) == ("softmax", "4096x4096", "float16")
    assert cp["index"] == STEP_AT - 1  # night 2 published nothing: the 5th point
    assert cp["before"]["commit"] == commit(STEP_AT - 1) and cp["after"]["commit"] == commit(STEP_AT)
    assert cp["rel_change"] == pytest.approx(0.08, abs=0.005) and cp["p_value"] < 0.01 and cp["new"] is False
    assert cp["median_before_us"] == pytest.approx(20.0, rel=0.005)
    gap = next(s for s in doc["series"] if s["case"] == "1024x1024")
    assert [p["gap"] for p in gap["points"]].count("error: out of resources") == 1
    assert {s["op"] for s in doc["series"]} == {"softmax", HOSTILE}

    md = (out / "history.md").read_text()
    assert HOSTILE not in md and "<script>" not in md and "@team" not in md and "](https" not in md
    assert "evil&#124;op &lt;script&gt;" in md
    row_md = next(line for line in md.splitlines() if line.startswith("|  | softmax | 4096x4096"))
    assert f"`{commit(STEP_AT - 1)[:7]}…{commit(STEP_AT)[:7]}` (2026-11-05 → 2026-11-06)" in row_md
    assert re.search(r"\| \+[78]\.\d% \| 20\.\d\d µs → 21\.\d\d µs \|", row_md) and "1 missing nightly" in md
    assert summary.read_text() == ("## New change points: pr on h200 (nvidia-h200)\n\n"
                                   "No new change points in the last entry.\n")

    assert set(doc["plots"]) == {"softmax", HOSTILE}
    for rel in doc["plots"].values():
        assert rel.startswith("plots/") and (out / rel).read_bytes()[:8] == PNG
    assert len(list((out / "plots").iterdir())) == 2

    # a rerun into the same folder leaves no plot it did not draw: none after --no-plots
    (out / "plots" / "an-op-since-dropped.png").write_bytes(PNG)
    assert _run(store, out) == 0
    assert sorted(p.name for p in (out / "plots").iterdir()) == sorted(Path(r).name for r in doc["plots"].values())
    assert _run(store, out, "--no-plots") == 0
    assert list((out / "plots").iterdir()) == [] and json.loads((out / "history.json").read_text())["plots"] == {}


def test_new_last_flags_the_change_and_fills_the_summary(store, tmp_path, capsys):
    out, summary = tmp_path / "out", tmp_path / "summary.md"
    assert _run(store, out, "--no-plots", "--new-last", "7", "--summary-out", str(summary), "--min-change", "0.05",
                "--p-value", "0.02", "--gpu", "NVIDIA H200") == 0
    assert "1 change point (1 new)" in capsys.readouterr().out
    assert not (out / "plots").exists()
    doc = json.loads((out / "history.json").read_text())
    assert doc["change_points"][0]["new"] is True and doc["plots"] == {}
    assert doc["rule"]["min_effect"] == 0.05 and doc["rule"]["p_value"] == 0.02 and doc["rule"]["new_last"] == 7
    text = summary.read_text()
    assert "1 change point first seen in the last 7 entries" in text and "| softmax | 4096x4096 |" in text
    assert "| **new** | softmax |" in (out / "history.md").read_text()


@pytest.mark.parametrize("argv,message", [
    (["--store", "{tmp}/nope"], "is not a directory"),
    (["--suite", "deep"], "no readable entries for runner class h200, suite deep"),
    (["--runner-class", "H200"], "runner class 'H200' must be lower-case"),
    (["--gpu", "NVIDIA H100"], "on nvidia-h100"),
])
def test_input_errors_exit_2_with_one_line(store, tmp_path, capsys, argv, message):
    args = {"--store": str(store), "--runner-class": "h200", "--suite": "pr", "--out": str(tmp_path / "o")}
    for flag, value in zip(argv[::2], argv[1::2]):
        args[flag] = value.format(tmp=tmp_path)
    assert cli_main(["history", *[x for kv in args.items() for x in kv]]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err
    if "--suite" in argv:
        assert "tritongate baseline list --store" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("extra", [["--min-change", "2"], ["--min-effect", "0.05"], ["--p-value", "0"], ["--p-value", "nan"],
                                   ["--new-last", "0"], ["--new-last", "x"], ["--store", ""]])
def test_bad_options_exit_2(store, tmp_path, capsys, extra):
    assert _run(store, tmp_path / "o", *extra) == 2
    assert "error:" in capsys.readouterr().err


def test_missing_required_options_exit_2(capsys):
    assert cli_main(["history", "--store", "x"]) == 2
    assert "required" in capsys.readouterr().err


def test_an_internal_error_exits_4(store, tmp_path, capsys, monkeypatch):
    def boom(*a, **kw):
        raise RuntimeError("a bug")

    monkeypatch.setattr("tritongate.history.report.build_report", boom)
    assert _run(store, tmp_path / "o", "--no-plots") == 4
    assert "internal error (a bug in tritongate): RuntimeError: a bug" in capsys.readouterr().err


def test_the_parser_sets_func_like_the_other_subcommands():
    parser = argparse.ArgumentParser(prog="tritongate")
    sub = parser.add_subparsers(dest="command")
    add_history_parser(sub)
    args = parser.parse_args(["history", "--store", "s", "--runner-class", "h200", "--suite", "pr", "--out", "o"])
    assert args.func is run_history and args.command == "history"
    assert (args.min_effect, args.p_value, args.new_last, args.no_plots, args.gpu, args.summary_out) == \
        (0.02, 0.01, 1, False, None, None)
    with pytest.raises(SystemExit) as info:
        parser.parse_args(["history", "--help"])
    assert info.value.code == 0
    assert commands.__doc__ and "exit codes" in commands.FOOTER["history"]


@pytest.mark.slow
def test_the_nightlys_history_step_reads_its_own_compilers_entries(tmp_path):
    """`nightly_steps.sh history` as the record-baseline action runs it, on a store holding a
    FlagTree nightly beside this repository's: only this compiler's entries are its history."""
    import os
    import subprocess
    import sys

    from tests.history.helpers import publish_nights

    root = Path(__file__).resolve().parents[2]
    store = tmp_path / "baseline-store"
    publish_nights(store, tmp_path / "a", [[row()]] * 3)
    publish_nights(store, tmp_path / "b", [[row(median=30.0)]] * 2, compiler_repo="flagos-ai/FlagTree")
    summary = tmp_path / "summary.md"
    env = {**os.environ, "PY": sys.executable, "TG_SUITE": "pr", "TG_RUNNER_CLASS": "h200",
           "TG_COMPILER_REPO": "org/triton", "RUNNER_TEMP": str(tmp_path / "tmp"),
           "GITHUB_OUTPUT": str(tmp_path / "out"), "GITHUB_STEP_SUMMARY": str(summary)}
    proc = subprocess.run(["bash", str(root / "ci" / "nightly_steps.sh"), "history"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "tmp" / "tritongate" / "history" / "history.json").read_text())
    assert len(doc["entries"]) == 3


def test_a_change_point_where_autotune_chose_other_configs_says_so(tmp_path):
    """Two records of one build differ beyond 1 % on small rows where autotune chose another
    config: a change point across such a choice is marked, in history.json (schema 2) and in
    history.md, by the cheap reader and the full load alike; one with the same choice is not."""
    from dataclasses import replace

    from tritongate.schema import AutotuneInfo

    def tuned(block: int) -> AutotuneInfo:
        return AutotuneInfo(mode="record", kernels=({"kernel": "k.softmax", "key": [4096, "torch.float16"],
                                                     "config": {"kwargs": {"BLOCK": block}, "num_warps": 8}},))

    def nights(flip: bool) -> list:
        return [[replace(row(median=20.0 * (1.08 if i >= STEP_AT else 1.0), seed=i),
                         autotune=tuned(2048 if flip and i >= STEP_AT else 4096))] for i in range(10)]
    for flip in (True, False):
        work = tmp_path / str(flip)
        publish_nights(work / "store", work / "runs", nights(flip))
        assert _run(work / "store", work / "out", "--no-plots") == 0
        doc = json.loads((work / "out" / "history.json").read_text())
        (cp,) = doc["change_points"]
        assert cp["config_changed"] is flip
        assert (cp["before"]["config"] != cp["after"]["config"]) is flip and cp["before"]["config"] is not None
        md = (work / "out" / "history.md").read_text()
        assert ("% (other configs chosen) |" in md) is flip


@pytest.mark.slow
def test_the_nightlys_record_step_records_at_the_sample_length_asked_for(tmp_path):
    """`nightly_steps.sh record` as the record-baseline action runs it with its `sample-ms`
    input: the published entry (which PRs replay) was recorded at that sample length."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PY": sys.executable, "COMMIT": "0123456789abcdef0123456789abcdef01234567",
           "TG_SUITE": str(tmp_path / "s.yaml"), "TG_BACKEND": "cpu", "TG_SAMPLE_MS": "2", "TG_RUNNER_CLASS": "cpu",
           "TG_COMPILER_REPO": "org/triton", "RUNNER_TEMP": str(tmp_path / "tmp"),
           "GITHUB_OUTPUT": str(tmp_path / "out")}
    (tmp_path / "shapes.yaml").write_text("add: {shapes: [[4096]]}\n")
    (tmp_path / "s.yaml").write_text("shapes: shapes.yaml\ndtypes: [float32]\nops:\n  add: {}\n")
    proc = subprocess.run(["bash", str(root / "ci" / "nightly_steps.sh"), "record"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    entry = Path(dict(line.split("=", 1) for line in (tmp_path / "out").read_text().splitlines())["entry-path"])
    ident = json.loads((entry / "run_identity.json").read_text())
    assert ident["measure_config"]["target_sample_s"] == 0.002
