"""``tritongate prescreen``: the table of changed rows, the count line and the paths, the
exit codes for bad inputs, and ``--blame``. The fast tests fake the two builds' recompiles and
captures (tests/test_prescreen.py's ``fake_builds``); the slow one screens a real Triton source
change (an overlay of the installed Triton, as tests/prescreen/ does) and blames it for real."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tests.test_prescreen as fake_world
from tritongate.cli import main
from tritongate.ir import passblame
from tritongate.prescreen.rows import changed_rows

ROOT = Path(__file__).resolve().parents[2]
record, fake_builds = fake_world.record, fake_world.fake_builds  # its fixtures: a record, the faked builds


def _table_rows(stdout: str) -> list[tuple[str, str, str, str]]:
    """The rows of the printed table: (op, case, dtype, why)."""
    lines = stdout.splitlines()
    start = lines.index(next(ln for ln in lines if ln.startswith("op ") and ln.rstrip().endswith("why")))
    out = []
    for line in lines[start + 1:]:
        if line.startswith((" ", "blame:", "note:")) or " rows " in line:
            break
        op, case, dtype, why = line.split(None, 3)
        out.append((op, case, dtype, why))
    return out


def test_the_table_lists_exactly_the_changed_rows_then_the_count_and_the_paths(tmp_path, record, fake_builds,
                                                                             capsys) -> None:
    out = tmp_path / "pre screen"  # the hint is a command to paste: a path with a space is quoted
    code = main(["prescreen", "--baseline", str(record), "--base-python", fake_builds(tmp_path, "base"),
                 "--cand-python", fake_builds(tmp_path, "newer"), "--out", str(out)])
    assert code == 0
    stdout, stderr = capsys.readouterr()
    # said before the recompile and the captures: tens of seconds passed with no line at all
    assert stderr.splitlines()[0] == (f"screening {record}: recompiling its launched kernels for its GPU target and "
                                      "capturing its rows under the two builds ...")
    assert _table_rows(stdout) == [("matmul", "64x64x64", "float16", "kernels changed: matmul_kernel (TTGIR +1 -1)")]
    lines = stdout.splitlines()
    assert lines[-2] == f"1 of 2 rows can change between the two builds; pair them with --changed-from '{out / 'ir-diff'}'"
    assert lines[-1] == str(out / "prescreen.json")


def test_a_variant_set_change_is_named_as_such(tmp_path, record, fake_builds, capsys) -> None:
    assert main(["prescreen", "--baseline", str(record), "--base-python", fake_builds(tmp_path, "base"),
                 "--cand-python", fake_builds(tmp_path, "warps8"), "--out", str(tmp_path / "o")]) == 0
    (row,) = _table_rows(capsys.readouterr().out)
    assert row[:3] == ("add", "4096", "float32") and row[3].startswith("variant set: the builds launch different")
    doc = json.loads((tmp_path / "o" / "prescreen.json").read_text())
    assert doc["rows_timed"] == [["add", "4096", "float32", "variant_set", row[3].removeprefix("variant set: ")]]


def test_no_changed_row_prints_no_table_and_names_the_verdict(tmp_path, record, fake_builds, capsys) -> None:
    out = tmp_path / "o"
    assert main(["prescreen", "--baseline", str(record), "--base-python", fake_builds(tmp_path, "base"),
                 "--cand-python", fake_builds(tmp_path, "same"), "--out", str(out)]) == 0
    assert capsys.readouterr().out.splitlines() == ["0 of 2 rows can change between the two builds; no GPU time needed",
                                                    f"verdict: {out / 'verdict'}", str(out / "prescreen.json")]


def test_a_launch_path_change_names_its_files_once(tmp_path, record, fake_builds, monkeypatch, capsys) -> None:
    from tritongate import prescreen

    sides = iter([{"runtime/jit.py": "a"}, {"runtime/jit.py": "b"}])
    monkeypatch.setattr(prescreen.side, "launch_path_files", lambda triton_dir: next(sides))
    assert main(["prescreen", "--baseline", str(record), "--base-python", fake_builds(tmp_path, "base"),
                 "--cand-python", fake_builds(tmp_path, "newer"), "--out", str(tmp_path / "o")]) == 0
    stdout = capsys.readouterr().out
    assert [r[3] for r in _table_rows(stdout)] == [
        "launch path: Triton's launch path changed",
        "kernels changed: matmul_kernel (TTGIR +1 -1); launch path: Triton's launch path changed"]
    assert stdout.count("runtime/jit.py") == 1
    assert "note: the PR changes Triton's launch path (runtime/jit.py), so every row is timed\n" in stdout
    summary = tmp_path / "summary.md"  # a runner's job summary: the count and the note
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    sides = iter([{"runtime/jit.py": "a"}, {"runtime/jit.py": "b"}])
    assert main(["prescreen", "--baseline", str(record), "--base-python", fake_builds(tmp_path, "base"),
                 "--cand-python", fake_builds(tmp_path, "newer"), "--out", str(tmp_path / "o2")]) == 0
    assert summary.read_text().splitlines()[2:-1] == [
        "2 of 2 rows can change between the two builds; pair them with --changed-from the pre-screen's ir-diff",
        "- the PR changes Triton's launch path (runtime/jit.py), so every row is timed"]


@pytest.mark.parametrize("bad, named", [
    ({"--baseline": "{tmp}"}, "--baseline"),
    ({"--cand-python": "{tmp}/nope"}, "--cand-python"),
    ({"--base-python": "{tmp}"}, "--base-python"),
    ({"--suite": "no-such-suite"}, "--suite no-such-suite"),
    ({"--blame": "-1"}, "--blame -1"),
])
def test_a_bad_input_is_exit_2_naming_it(tmp_path, record, fake_builds, capsys, bad, named) -> None:
    args = {"--baseline": str(record), "--base-python": fake_builds(tmp_path, "base"),
            "--cand-python": fake_builds(tmp_path, "newer"), "--out": str(tmp_path / "o")}
    args |= {k: v.format(tmp=tmp_path) for k, v in bad.items()}
    assert main(["prescreen", *[x for kv in args.items() for x in kv]]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and named in err[0], err
    assert not (tmp_path / "o" / "prescreen.json").exists()


def test_one_build_on_both_sides_is_called_an_a_a_check(tmp_path, record, fake_builds, capsys) -> None:
    """As `pair` says of the same case: "0 changed between the two builds" of one build against itself
    says nothing of a compiler change; an overlay on one side is a real comparison."""
    base = fake_builds(tmp_path, "base")
    assert main(["prescreen", "--baseline", str(record), "--base-python", base, "--cand-python", base,
                 "--out", str(tmp_path / "aa")]) == 0
    assert "note: base and candidate are the same build (same interpreter, no overlay difference): an A/A" \
        in capsys.readouterr().out
    assert main(["prescreen", "--baseline", str(record), "--base-python", base, "--cand-python", base,
                 "--cand-env", "DISABLE_MMA_V3=1", "--out", str(tmp_path / "knob")]) == 0
    assert "same build" not in capsys.readouterr().out


def test_an_internal_error_is_exit_4(tmp_path, record, fake_builds, monkeypatch, capsys) -> None:
    from tritongate import prescreen

    def broken(*args, **kw):
        raise RuntimeError("boom")

    monkeypatch.setattr(prescreen.side, "_aot_both", broken)
    monkeypatch.setenv("TRITONGATE_LOG_DIR", str(tmp_path))
    base = fake_builds(tmp_path, "base")
    assert main(["prescreen", "--baseline", str(record), "--base-python", base, "--cand-python", base,
                 "--out", str(tmp_path / "o")]) == 4
    assert "internal error" in capsys.readouterr().err


def test_blame_writes_ir_diff_blame_json_and_lists_kernels_past_n(tmp_path, record, fake_builds, monkeypatch,
                                                                  capsys) -> None:
    """Both kernels changed, --blame 1: the first is blamed (blame_variant faked: the real one
    compiles with dumps, the slow test's), the second listed as not blamed, in blame.json too."""
    calls = []

    def fake_blame(base_python, cand_python, variant, target, out, **kw):
        calls.append((Path(base_python).name, Path(cand_python).name, variant.kernel, target, kw.get("base_env"),
                      kw.get("cand_env")))
        return passblame.Blame(passblame.PASS, "tritongpu-coalesce", "ttgir", "mlir", 3, 3, True)

    monkeypatch.setattr(passblame, "blame_variant", fake_blame)
    monkeypatch.setattr(fake_world, "_tree", _both_changed(fake_world._tree))
    out = tmp_path / "o"
    assert main(["prescreen", "--baseline", str(record), "--base-python", fake_builds(tmp_path, "base"),
                 "--cand-python", fake_builds(tmp_path, "newer"), "--out", str(out), "--blame", "1",
                 "--cand-env", "DISABLE_MMA_V3=1"]) == 0
    stdout, stderr = capsys.readouterr()
    # each build blamed with the overlay it was screened with
    assert calls == [("base", "newer", "m.add_kernel", "cuda:90", {}, {"DISABLE_MMA_V3": "1"})]
    assert "  blame  4096  m.add_kernel  " in stdout
    # a line before the blame's compiles start (seconds to a minute), on stderr with the other progress
    (starting,) = [line for line in stderr.splitlines() if line.startswith("  blaming ")]
    assert starting.startswith("  blaming 1 of 1: 4096  m.add_kernel  ") and starting.endswith(" ...")
    assert "blaming" not in stdout
    assert "first differs after `tritongpu-coalesce` (ttgir, input equal)" in stdout
    assert "  not blamed  64x64x64  m.matmul_kernel  " in stdout
    assert f"blame: {out / 'ir-diff' / 'blame.json'}" in stdout
    doc = json.loads((out / "ir-diff" / "blame.json").read_text())
    assert doc["schema_version"] == 1 and doc["target"] == "cuda:90" and doc["failed"] == []
    (blamed,) = doc["variants"]
    assert blamed["kernel"] == "m.add_kernel" and blamed["pass_name"] == "tritongpu-coalesce"
    assert blamed["summary"].startswith("first differs after `tritongpu-coalesce`")
    assert [k["kernel"] for k in doc["not_blamed"]] == ["m.matmul_kernel"]
    # screened again into the same folder: refused, so the earlier blame never passes for this one's
    before = (out / "ir-diff" / "blame.json").read_bytes()
    assert main(["prescreen", "--baseline", str(record), "--base-python", fake_builds(tmp_path, "base"),
                 "--cand-python", fake_builds(tmp_path, "newer"), "--out", str(out)]) == 2
    assert "holds an earlier pre-screen's" in capsys.readouterr().err
    assert (out / "ir-diff" / "blame.json").read_bytes() == before
    fresh = tmp_path / "o2"
    assert main(["prescreen", "--baseline", str(record), "--base-python", fake_builds(tmp_path, "base"),
                 "--cand-python", fake_builds(tmp_path, "newer"), "--out", str(fresh)]) == 0
    assert not (fresh / "ir-diff" / "blame.json").exists()


def _both_changed(real):
    """tests/test_prescreen's ``_tree`` with add's TTGIR changed too under the "newer" build."""
    def tree(root, texts, **kw):
        if texts.get("matmul") == "mm v2\n":
            texts = {**texts, "add": "add v2\n"}
        return real(root, texts, **kw)
    return tree


def test_ci_prescreen_prints_the_same_table(tmp_path, record, fake_builds, capsys) -> None:
    sys.path.insert(0, str(ROOT / "ci"))
    try:
        import prescreen as ci_prescreen
    finally:
        sys.path.remove(str(ROOT / "ci"))
    assert ci_prescreen.main(["--baseline", str(record), "--base-python", fake_builds(tmp_path, "base"),
                              "--cand-python", fake_builds(tmp_path, "newer"), "--out", str(tmp_path / "o")]) == 0
    assert _table_rows(capsys.readouterr().out) == [
        ("matmul", "64x64x64", "float16", "kernels changed: matmul_kernel (TTGIR +1 -1)")]


def test_the_why_of_a_record_the_prescreen_cannot_compile_for() -> None:
    doc = {"rows_total": 1, "rows_changed": [["add", "4096", "float32"]], "target": None,
           "timed_without_ir_change": {"why": "the baseline was recorded for hip:gfx942", "rows": 1}}
    (row,) = changed_rows(doc)
    assert row.why == "not compared: the baseline was recorded for hip:gfx942"


@pytest.mark.slow
def test_a_real_pass_change_is_tabled_and_blamed(tmp_path: Path) -> None:
    """The installed Triton against an overlay that drops a Hopper pipeline pass, on the smoke
    suite's CPU capture: the table lists exactly prescreen.json's changed rows, each with its
    changed kernel, and --blame 1 names the first differing pass of one of them."""
    from tritongate.overlay import make_overlay

    env = {**os.environ, "TRITON_INTERPRET": "1", "TRITONGATE_CAPTURE_ONLY": "1"}
    rec = subprocess.run([sys.executable, "-m", "tritongate", "run", "--suite", "smoke", "--backend", "cpu",
                          "--rounds", "1", "--samples-per-round", "1", "--out", str(tmp_path / "rec"),
                          "--color", "never"], env=env, cwd=ROOT, capture_output=True, text=True)
    record_dir = rec.stdout.strip().splitlines()[-1]
    build = make_overlay(sys.executable, [ROOT / "bench" / "patches" / "drop-hopper-pipeline.patch"],
                         tmp_path / "overlay")
    out = tmp_path / "pre"
    proc = subprocess.run([sys.executable, "-m", "tritongate", "prescreen", "--baseline", record_dir,
                           "--base-python", sys.executable, "--cand-python", str(build.python), "--out", str(out),
                           "--blame", "1"], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads((out / "prescreen.json").read_text())
    rows = _table_rows(proc.stdout)
    assert [r[:3] for r in rows] == [tuple(r) for r in doc["rows_changed"]]
    assert 0 < len(rows) < doc["rows_total"] and all(r[3].startswith("kernels changed: ") for r in rows)
    blame = json.loads((out / "ir-diff" / "blame.json").read_text())
    assert len(blame["variants"]) == 1 and blame["failed"] == []
    assert "tritongpu-pipeline" in blame["variants"][0]["summary"]
    assert proc.stdout.count("  blame  ") == 1 and "first differs after" in proc.stdout
    assert len(blame["not_blamed"]) == proc.stdout.count("  not blamed  ") >= 1


def test_a_build_s_environment_reaches_its_compiles_and_captures_and_its_identity(tmp_path, record, fake_builds,
                                                                                 capsys) -> None:
    same = fake_builds(tmp_path, "same")
    assert main(["prescreen", "--baseline", str(record), "--base-python", same, "--cand-python", same,
                 "--cand-env", "DISABLE_MMA_V3=1", "--cand-env", "TRITON_DEFAULT_FP_FUSION=0",
                 "--out", str(tmp_path / "o")]) == 0
    want = {"base": {}, "cand": {"DISABLE_MMA_V3": "1", "TRITON_DEFAULT_FP_FUSION": "0"}}
    assert fake_builds.seen["aot_envs"] == want and fake_builds.seen["capture_envs"] == want
    cand = json.loads((tmp_path / "o" / "side-cand.json").read_text())["build"]
    base = json.loads((tmp_path / "o" / "side-base.json").read_text())["build"]
    assert cand["env_overlay"] == want["cand"] and "env_overlay" not in base


@pytest.mark.parametrize("argv, message", [
    (["--cand-env", "TRITON_INTERPRET=0"], "--cand-env TRITON_INTERPRET=...: the pre-screen compiles without"),
    (["--base-env", "no-equals"], "--base-env 'no-equals': expected NAME=VALUE"),
    (["--judge", "--cand-env", "X=1"], "--base-env/--cand-env with --judge: the judge runs no build"),
    (["--side", "base", "--cand-env", "X=1"], "--cand-env with --side base: give it to the --side cand run"),
])
def test_an_environment_overlay_it_cannot_honour_is_refused(tmp_path, record, capsys, argv, message) -> None:
    pythons = [] if "--judge" in argv else ["--base-python", sys.executable] if "--side" in argv else \
        ["--base-python", sys.executable, "--cand-python", sys.executable]
    assert main(["prescreen", "--baseline", str(record), *pythons, "--out", str(tmp_path / "o"), *argv]) == 2
    assert message in capsys.readouterr().err


def test_the_commands_carry_the_overlay_and_keep_the_pre_screen_s_own_switches(tmp_path) -> None:
    from tritongate.prescreen.respecialize import capture_cmd
    from tritongate.prescreen.side import _aot_cmd, package_lead

    overlay = {"DISABLE_MMA_V3": "1", "TRITON_DISABLE_LINE_INFO": "0", "PYTHONPATH": "/src/triton/python"}
    _, aot_env = _aot_cmd(sys.executable, tmp_path, tmp_path / "ir-cand", "cuda:90", overlay)
    assert aot_env["DISABLE_MMA_V3"] == "1" and aot_env["TRITON_DISABLE_LINE_INFO"] == "0"
    assert "TRITON_INTERPRET" not in aot_env and aot_env["TRITON_CACHE_DIR"].endswith("ir-cand.triton-cache")
    _, cap_env = capture_cmd(sys.executable, tmp_path, "smoke", [], tmp_path / "capture-cand", "cuda:90",
                             package_lead(tmp_path), overlay)
    assert cap_env["DISABLE_MMA_V3"] == "1" and cap_env["TRITON_INTERPRET"] == "1"
    for env in (aot_env, cap_env):  # added to the path that finds this tritongate, never replacing it
        paths = env["PYTHONPATH"].split(os.pathsep)
        assert (Path(paths[0]) / "tritongate").resolve() == ROOT / "tritongate" and "/src/triton/python" in paths


@pytest.mark.slow
def test_a_compiler_knob_is_screened_with_one_interpreter_as_both_builds(tmp_path: Path) -> None:
    """`--cand-env DISABLE_MMA_V3=1` with the same interpreter on both sides: only rows whose
    kernels hold a dot product change (the knob lowers tl.dot another way), and the candidate's
    identity in prescreen.json names the overlay."""
    env = {**os.environ, "TRITON_INTERPRET": "1", "TRITONGATE_CAPTURE_ONLY": "1"}
    rec = subprocess.run([sys.executable, "-m", "tritongate", "run", "--suite", "smoke", "--backend", "cpu",
                          "--rounds", "1", "--samples-per-round", "1", "--out", str(tmp_path / "rec"),
                          "--color", "never"], env=env, cwd=ROOT, capture_output=True, text=True)
    record_dir = rec.stdout.strip().splitlines()[-1]
    out = tmp_path / "pre"
    proc = subprocess.run([sys.executable, "-m", "tritongate", "prescreen", "--baseline", record_dir,
                           "--base-python", sys.executable, "--cand-python", sys.executable,
                           "--cand-env", "DISABLE_MMA_V3=1", "--out", str(out)], capture_output=True, text=True,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads((out / "prescreen.json").read_text())
    changed = {tuple(r) for r in doc["rows_changed"]}
    # attention's config is fixed; matmul's is tuned live on the interpreter, and a config without
    # wgmma (num_warps 2) does not change under the knob
    assert {("attention", "1x2x64x32", "float16"), ("attention_causal", "1x2x64x32", "float16")} <= changed
    assert changed <= {("attention", "1x2x64x32", "float16"), ("attention_causal", "1x2x64x32", "float16"),
                       ("matmul", "64x64x64", "float16")}
    assert doc["builds"]["cand"]["env_overlay"] == {"DISABLE_MMA_V3": "1"} and "env_overlay" not in doc["builds"]["base"]
