import json

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


def test_show_newer_schema_is_exit_2(tmp_path, capsys):
    w = RunWriter(tmp_path / "r", {})
    w.finish()
    p = tmp_path / "r" / RESULTS
    doc = json.loads(p.read_text())
    doc["schema_version"] = 99
    p.write_text(json.dumps(doc))
    assert main(["show", str(tmp_path / "r")]) == 2
    assert "upgrade tritongate" in capsys.readouterr().err


def test_ops_lists_builtin_ops_and_suites(capsys):
    assert main(["ops"]) == 0
    out = capsys.readouterr().out
    for op in ("add", "silu_mul", "softmax", "rmsnorm", "matmul", "attention", "attention_causal"):
        assert f"\n{op} " in f"\n{out}"
    assert "[M, N, K]" in out and "suites in" in out and "smoke" in out
