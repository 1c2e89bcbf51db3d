import pytest
import json
import shlex
import subprocess
import sys

from tritongate.cli import main
from tritongate.rundir import RESULTS, RunWriter

from tests.conftest import make_row


def test_help_documents_exit_codes(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "exit codes" in out and "PREFLIGHT_FAILED" in out


def test_bad_usage_is_exit_2(capsys):
    assert main(["no-such-command"]) == 2
    assert main([]) == 2


def test_show_prints_table_and_folds_constant_columns(tmp_path, capsys):
    w = RunWriter(tmp_path / "r", {"backend": "cpu"})
    w.add(make_row(case="n=1", samples=(1.0, 1.0, 1.0)))
    w.add(make_row(case="n=2", samples=(2.0, 2.0, 2.0)))
    w.finish()
    assert main(["show", str(tmp_path / "r"), "--color", "never"]) == 0
    out = capsys.readouterr().out
    assert "\x1b[" not in out
    assert "dtype: float32" in out and "timer: cuda-graph" in out  # legend line
    assert "n=1" in out and "2.00" in out


def test_show_incomplete_is_exit_2_with_fix(tmp_path, capsys):
    w = RunWriter(tmp_path / "r", {"backend": "cpu"})
    w.add(make_row())
    assert main(["show", str(tmp_path / "r")]) == 2
    assert "incomplete" in capsys.readouterr().err
    assert main(["show", str(tmp_path / "r"), "--allow-incomplete", "--color", "always"]) == 0
    assert "\x1b[" in capsys.readouterr().out


@pytest.mark.parametrize("fmt", ["csv", "md"])
def test_show_incomplete_as_a_document_says_it_is_incomplete(tmp_path, capsys, fmt):
    w = RunWriter(tmp_path / "r", {"backend": "cpu"})
    w.add(make_row())
    assert main(["show", str(tmp_path / "r"), "--allow-incomplete", "--format", fmt]) == 0
    captured = capsys.readouterr()
    assert "is incomplete (running, 1 rows so far)" in captured.err
    assert ("run_status" in captured.out.splitlines()[0]) if fmt == "csv" else ("Incomplete run" in captured.out)


def test_show_newer_schema_is_exit_2(tmp_path, capsys):
    w = RunWriter(tmp_path / "r", {})
    w.finish()
    p = tmp_path / "r" / RESULTS
    doc = json.loads(p.read_text())
    doc["schema_version"], doc["tool_version"] = 99, "9.0.0"  # as a newer tritongate writes it
    p.write_text(json.dumps(doc))
    assert main(["show", str(tmp_path / "r")]) == 2
    assert "upgrade tritongate" in capsys.readouterr().err


def test_ops_lists_builtin_ops_and_suites(capsys):
    assert main(["ops"]) == 0
    out = capsys.readouterr().out
    for op in ("add", "silu_mul", "softmax", "rmsnorm", "matmul", "attention", "attention_causal"):
        assert f"\n{op} " in f"\n{out}"
    assert "[M, N, K]" in out and "suites in" in out and "smoke" in out


def test_a_bug_is_exit_4_with_one_line_and_a_traceback_file(tmp_path, capsys, monkeypatch):
    import tritongate.cli.inspect as cli

    def broken(args):
        raise KeyError("a key the code expected")
    monkeypatch.setenv("TRITONGATE_LOG_DIR", str(tmp_path))
    monkeypatch.setattr(cli, "cmd_ops", broken)
    assert main(["ops"]) == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("internal error (a bug in tritongate): KeyError")
    (trace,) = tmp_path.glob("tritongate-traceback-*.txt")
    assert "a key the code expected" in trace.read_text() and str(trace) in err[0]


def test_an_unwritable_step_summary_is_a_named_input_error(tmp_path, capsys, monkeypatch):
    from tests.gate.helpers import pair, row

    base, cand = pair(tmp_path, [row()], [row(seed=1)])
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path))  # a directory
    assert main(["gate", str(base.path), str(cand.path), "--out", str(tmp_path / "v")]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path) in err and "Is a directory" in err


def test_error_messages_are_bounded(tmp_path, capsys):
    huge = tmp_path / ("x" * 200)
    for _ in range(20):
        huge = huge / ("y" * 200)
    assert main(["show", str(huge)]) == 2
    err = capsys.readouterr().err
    assert len(err) < 2200 and "more characters" in err


def test_show_formats_are_data_for_other_tools(tmp_path, capsys):
    import csv
    import io

    w = RunWriter(tmp_path / "r", {"backend": "cpu"})
    w.add(make_row(case="n=1", samples=(1.0, 2.0, 3.0)))
    w.finish()
    assert main(["show", str(tmp_path / "r"), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)  # nothing but the document on stdout
    assert doc["status"] == "complete" and doc["rows"][0]["samples"] == [1.0, 2.0, 3.0]
    assert main(["show", str(tmp_path / "r"), "--format", "csv"]) == 0
    (rec,) = csv.DictReader(io.StringIO(capsys.readouterr().out))
    assert rec["case"] == "n=1" and float(rec["median_us"]) == 2.0 and rec["samples_us"] == "1.0 2.0 3.0"
    assert main(["show", str(tmp_path / "r"), "--format", "md"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("| op |") and "2.000 µs" in out
    assert main(["show", str(tmp_path / "r"), "--format", "xml"]) == 2


def test_the_run_and_verdict_load_as_data_frames(tmp_path):
    from tests.gate.helpers import pair, row
    from tritongate.gate.verdict_file import load_verdict
    from tritongate.rundir import load_run

    base, cand = pair(tmp_path, [row(), row(case="b", seed=3)], [row(seed=1, median=30), row(case="b", seed=4)])
    assert main(["gate", str(base.path), str(cand.path), "--out", str(tmp_path / "v")]) == 1
    frame = load_run(cand.path).to_pandas()
    assert list(frame["case"]) == ["4096x4096", "b"] and frame["median_us"][0] > 29
    verdict = load_verdict(tmp_path / "v")
    assert not verdict.passed
    table = verdict.to_pandas()
    assert set(table["verdict"]) == {"REGRESSED", "UNCHANGED"} and "why" in table.columns


def test_a_damaged_verdict_is_named(tmp_path):
    import pytest

    from tritongate.errors import GateError
    from tritongate.gate.verdict_file import load_verdict

    (tmp_path / "verdict.json").write_text(json.dumps({"schema_version": 2, "passed": "yes"}))
    with pytest.raises(GateError, match=r"verdict.json: passed: expected true or false, got the text 'yes'"):
        load_verdict(tmp_path)
    (tmp_path / "verdict.json").write_text(json.dumps({"schema_version": 9}))
    with pytest.raises(GateError, match="upgrade tritongate"):
        load_verdict(tmp_path / "verdict.json")


@pytest.mark.slow
def test_ops_lists_a_suites_own_ops_and_every_subcommand_names_its_exit_codes(capsys):
    assert main(["ops", "--suite", "tritongate/assets/examples/user_ops.yaml"]) == 0
    assert "scale_shift" in capsys.readouterr().out
    for cmd, codes in (("show", "0 2 4"), ("gate", "0 1 2 4"), ("run", "0 2 3 4 130"), ("pair", "0 1 2 3 4 130")):
        try:
            main([cmd, "--help"])
        except SystemExit:
            pass
        out = capsys.readouterr().out
        footer = out[out.index("exit codes:"):]
        assert " ".join(line.split()[0] for line in footer.splitlines()[1:] if line[:6].strip().isdigit()) == codes


def test_ops_with_a_suite_lists_exactly_that_suites_ops_and_rows(capsys):
    assert main(["ops", "--suite", "pr"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("suite pr (") and out[0].endswith(": 7 ops, 34 rows")
    listed = [line.split()[0] for line in out[1:out.index("")]]
    assert listed == ["add", "silu_mul", "softmax", "rmsnorm", "matmul", "attention", "attention_causal"]
    longer = [line.split()[0] for line in out[1:out.index("")] if "samples of at least" in line]
    assert longer == ["attention_causal"] and out[7].endswith("(samples of at least 2 ms)")  # the suite's sample_ms


@pytest.mark.slow
def test_a_reader_that_goes_away_stops_the_listing_quietly():
    # `true` exits before the interpreter has started: every write meets a closed pipe
    proc = subprocess.run(f"{shlex.quote(sys.executable)} -m tritongate ops --suite pr | true; "
                          "echo \"rc=${PIPESTATUS[0]}\"", shell=True, executable="/bin/bash",
                          capture_output=True, text=True, timeout=120)
    assert proc.stdout.splitlines()[-1] == "rc=141" and proc.stderr == "", proc.stderr


def test_a_failed_file_operation_gets_the_hint_that_fits_it(capsys):
    """"free space or fix the path" was said of a file standing where a folder was asked for."""
    import errno

    from tritongate.cli.common import report_errors

    def failing(code: int, text: str):
        def call() -> int:
            raise OSError(code, text, "/tmp/x/out")
        return call

    for code, text, hint in ((errno.ENOTDIR, "Not a directory", "a file stands where a folder is needed"),
                             (errno.EEXIST, "File exists", "a file stands where a folder is needed"),
                             (errno.EACCES, "Permission denied", "the path is not writable here"),
                             (errno.ENOSPC, "No space left on device", "free space or fix the path")):
        assert report_errors(failing(code, text)) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: /tmp/x/out: {text}; {hint}"), err
