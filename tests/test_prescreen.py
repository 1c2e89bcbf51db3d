"""``ci/prescreen.py``: the rows a PR can change, from the two builds' AOT trees and their
captures of what each row launches (faked here: the real recompiles and captures are
tests/prescreen/'s and bench/prescreen_e2e.py's), the zero-change verdict through the gate's
writer, the GitHub output lines and the exit codes."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.conftest import make_row
from tritongate import prescreen
from tritongate.ir.capture import RowIR
from tritongate.ir.index import CompiledVariant
from tritongate.ir.provenance import this_build, write_aot
from tritongate.ir.store import IRStore
from tritongate.rundir import RunWriter

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ci"))
import prescreen as ci_prescreen

ROWS = (("add", "4096", "float32"), ("matmul", "64x64x64", "float16"))


def _tree(root: Path, texts: dict[str, str], *, warps: int = 4, target: str = "cuda:90") -> None:
    store = IRStore(root)
    for op, case, dtype in ROWS:
        v = CompiledVariant(case=case, kernel=f"m.{op}_kernel", signature={"x": "*fp16"}, constexprs={},
                            specialization={}, options={"num_warps": warps if op == "add" else 4},
                            compile_hash=f"h{op}", binary_hash=texts[op][:8], rows=(f"{op}/{dtype}",), launches=1,
                            target=target)
        store.add(RowIR(variants=(v,), ttgir={v.compile_hash: texts[op]}))
    store.close()


def _record(path: Path, target: str = "cuda:90") -> Path:
    w = RunWriter(path, {"backend": target.split(":")[0], "suite": {"name": "pr"}})
    for op, case, dtype in ROWS:
        w.add(make_row(op, case, dtype))
    w.finish()
    _tree(path, {"add": "add v1\n", "matmul": "mm v1\n"}, target=target)
    return path


@pytest.fixture
def record(tmp_path: Path) -> Path:
    return _record(tmp_path / "record")


@pytest.fixture
def fake_builds(monkeypatch: pytest.MonkeyPatch):
    """Each "python" names the TTGIR its compiler would emit for matmul, and the num_warps its
    binder gives add's launch ("warps8": a build whose option default changed)."""
    texts = {"base": "mm v1\n", "same": "mm v1\n", "newer": "mm v2\n", "warps8": "mm v1\n"}
    seen: dict[str, object] = {}

    def aot(pythons, record: Path, out: Path, target: str, envs=None) -> dict:
        seen["target"], seen["aot_envs"] = target, envs
        for side, python in pythons.items():
            _tree(out / f"ir-{side}", {"add": "add v1\n", "matmul": texts[Path(python).name]})
            write_aot(out / f"ir-{side}" / "ttgir", record, target=target, compiled=2, failed=[])
        return {}

    def capture(pythons, record: Path, suite: str, rows, out: Path, target: str, envs=None):
        seen["suite"], seen["capture_envs"] = suite, envs
        runs = {}
        for side, python in pythons.items():
            _tree(out / f"capture-{side}" / "run", {"add": "", "matmul": ""},
                  warps=8 if Path(python).name == "warps8" else 4)
            runs[side] = out / f"capture-{side}" / "run"
        return runs, {}

    monkeypatch.setattr(prescreen.side, "_aot_both", aot)
    monkeypatch.setattr(prescreen.side, "_capture_both", capture)
    monkeypatch.setattr(prescreen.side, "build_of", lambda python, env=None: this_build())
    builds = lambda tmp_path, name: _exe(tmp_path / name)  # noqa: E731
    builds.seen = seen  # type: ignore[attr-defined]
    return builds


def _exe(path: Path) -> str:
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return str(path)


def test_a_changed_kernel_lists_exactly_its_rows(tmp_path, record, fake_builds, monkeypatch, capsys) -> None:
    out_file = tmp_path / "github_output"
    monkeypatch.setenv("GITHUB_OUTPUT", str(out_file))
    code = ci_prescreen.main(["--baseline", str(record), "--base-python", fake_builds(tmp_path, "base"),
                              "--cand-python", fake_builds(tmp_path, "newer"), "--out", str(tmp_path / "o")])
    assert code == 0
    doc = json.loads((tmp_path / "o" / "prescreen.json").read_text())
    assert doc["schema_version"] == 1 and doc["rows_total"] == 2 and doc["target"] == "cuda:90"
    assert doc["rows_changed"] == [["matmul", "64x64x64", "float16"]]
    assert fake_builds.seen["target"] == "cuda:90" and fake_builds.seen["suite"] == "pr"  # the record's
    assert fake_builds.seen["aot_envs"] == {"base": {}, "cand": {}}  # no overlay unless one is given
    assert {k["kernel"]: k["status"] for k in doc["kernels"]} == {"m.add_kernel": "identical",
                                                                   "m.matmul_kernel": "changed"}
    assert doc["baseline"]["content_sha256"] and doc["builds"]["cand"]["triton_key"]
    assert out_file.read_text() == "rows_changed=1\nrows_total=2\n"
    assert not (tmp_path / "o" / "verdict").exists()
    assert (tmp_path / "o" / "ir-diff" / "provenance.json").is_file()


def test_identical_builds_write_a_zero_verdict_and_no_gpu_job(tmp_path, record, fake_builds) -> None:
    code = ci_prescreen.main(["--baseline", str(record), "--base-python", fake_builds(tmp_path, "base"),
                              "--cand-python", fake_builds(tmp_path, "same"), "--out", str(tmp_path / "o")])
    assert code == 0
    verdict = json.loads((tmp_path / "o" / "verdict" / "verdict.json").read_text())
    assert verdict["headline"] == "✅ 0 of 2 rows' kernels changed between the two builds; no GPU time used"
    assert [r["verdict"] for r in verdict["rows"]] == ["IDENTICAL_BINARY"] * 2
    assert not any(r["timed"] for r in verdict["rows"])
    md = (tmp_path / "o" / "verdict" / "verdict.md").read_text()
    assert "no GPU time used" in md
    # it ran a compile for the record's GPU: not the record's machine or timer
    assert "Compiled for cuda:90 ahead of time, no GPU, nothing timed · base: triton" in md and "timer" not in md
    assert "Ran on" not in md and "Rule:" not in md  # nothing was timed: no timing rule applied
    assert verdict["candidate"]["device"] == "no GPU: ahead-of-time compile for cuda:90"
    assert verdict["base"]["mode"] == verdict["candidate"]["mode"] == "ahead-of-time"  # not the record's "record"


def test_the_zero_verdict_names_each_sides_environment_overlay(tmp_path, record, fake_builds) -> None:
    """--cand-env (a compiler knob) is what tells the builds apart: the verdict says so."""
    prescreen.run_prescreen(record, fake_builds(tmp_path, "base"), fake_builds(tmp_path, "same"), tmp_path / "o",
                            envs={"base": {}, "cand": {"TRITON_ALWAYS_COMPILE": "1"}})
    verdict = json.loads((tmp_path / "o" / "verdict" / "verdict.json").read_text())
    assert verdict["candidate"]["env_overlay"] == {"TRITON_ALWAYS_COMPILE": "1"} and verdict["base"]["env_overlay"] == {}
    assert "TRITON_ALWAYS_COMPILE=1" in (tmp_path / "o" / "verdict" / "verdict.md").read_text()


def test_a_suite_other_than_the_records_is_refused(tmp_path, fake_builds) -> None:
    """Another suite's rows would screen as changes the PR never made."""
    from tritongate.errors import UsageError
    from tritongate.suites import load_suite

    smoke = load_suite("smoke")
    rec = tmp_path / "rec"
    w = RunWriter(rec, {"backend": "cuda", "suite": {"name": "smoke", "digest": smoke.digest}})
    for op, case, dtype in ROWS:
        w.add(make_row(op, case, dtype))
    w.finish()
    _tree(rec, {"add": "add v1\n", "matmul": "mm v1\n"})
    with pytest.raises(UsageError, match=r"--suite pr is not the suite the baseline was recorded with \(smoke\)"):
        prescreen.run_prescreen(rec, fake_builds(tmp_path, "base"), fake_builds(tmp_path, "same"), tmp_path / "o",
                                suite="pr")
    for same in ("smoke", str(smoke.path)):  # its name, or its file: the same suite
        out = tmp_path / f"o-{Path(same).name}"
        prescreen.run_prescreen(rec, fake_builds(tmp_path, "base"), fake_builds(tmp_path, "same"), out, suite=same)
        assert (out / "prescreen.json").is_file()


def test_a_record_whose_index_names_rows_its_results_lack_is_refused(tmp_path, record, fake_builds) -> None:
    """A row deleted from results.json (status left complete) would be screened as nothing at all."""
    from tritongate.errors import UsageError

    doc = json.loads((record / "results.json").read_text())
    doc["rows"] = doc["rows"][:-1]
    (record / "results.json").write_text(json.dumps(doc))
    with pytest.raises(UsageError, match=r"its ttgir/index.tsv names 1 row\(s\) its results.json does not hold "
                                         r"\(matmul 64x64x64 float16\)"):
        prescreen.run_prescreen(record, fake_builds(tmp_path, "base"), fake_builds(tmp_path, "same"), tmp_path / "o")


def test_bad_input_is_exit_2_naming_it_and_a_crash_is_exit_4(tmp_path, record, fake_builds, monkeypatch,
                                                             capsys) -> None:
    base = fake_builds(tmp_path, "base")
    assert ci_prescreen.main(["--baseline", str(tmp_path), "--base-python", base, "--cand-python", base,
                              "--out", str(tmp_path / "o")]) == 2
    assert "--baseline" in capsys.readouterr().err
    assert ci_prescreen.main(["--baseline", str(record), "--base-python", base, "--cand-python",
                              str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 2
    assert "--cand-python" in capsys.readouterr().err

    def broken(*args, **kw):
        raise RuntimeError("boom")

    monkeypatch.setattr(prescreen.side, "_aot_both", broken)
    assert ci_prescreen.main(["--baseline", str(record), "--base-python", base, "--cand-python", base,
                              "--out", str(tmp_path / "o2")]) == 4
    assert "internal error" in capsys.readouterr().err and not (tmp_path / "o2" / "prescreen.json").exists()


def test_the_renderer_knows_the_ahead_of_time_reason() -> None:
    from tritongate.gate.verdict import AHEAD_OF_TIME_REASON
    from tritongate.report.verdict_view import AHEAD_OF_TIME

    assert AHEAD_OF_TIME in AHEAD_OF_TIME_REASON


def test_a_binder_or_option_default_change_times_the_rows_it_changes(tmp_path, record, fake_builds) -> None:
    """The recorded variants compile the same under both builds, but the PR's binder gives add
    another num_warps: add is timed (launch_changed in ir-diff/, so pair --changed-from times it)."""
    assert ci_prescreen.main(["--baseline", str(record), "--base-python", fake_builds(tmp_path, "base"),
                              "--cand-python", fake_builds(tmp_path, "warps8"), "--out", str(tmp_path / "o")]) == 0
    doc = json.loads((tmp_path / "o" / "prescreen.json").read_text())
    assert doc["rows_changed"] == [["add", "4096", "float32"]] and not (tmp_path / "o" / "verdict").exists()
    assert doc["timed_without_ir_change"]["reasons"] == {
        "the builds launch different variants (1 only under the base, 1 only under the candidate)": 1}
    from tritongate.ir.changed import load_changed_rows

    proven = load_changed_rows(tmp_path / "o" / "ir-diff", record=record)
    assert proven.changed == {("add", "4096", "float32")}


def test_a_launch_path_change_times_every_row(tmp_path, record, fake_builds, monkeypatch) -> None:
    """Identical code and launches, but the PR edits runtime/jit.py: no row is vouched for."""
    import tritongate.prescreen.launch_path as lp

    sides = iter([{"runtime/jit.py": "a", "knobs.py": "k"}, {"runtime/jit.py": "b", "knobs.py": "k"}])
    monkeypatch.setattr(prescreen.side, "launch_path_files", lambda triton_dir: next(sides))
    base = fake_builds(tmp_path, "base")
    assert ci_prescreen.main(["--baseline", str(record), "--base-python", base, "--cand-python",
                              fake_builds(tmp_path, "same"), "--out", str(tmp_path / "o")]) == 0
    doc = json.loads((tmp_path / "o" / "prescreen.json").read_text())
    assert len(doc["rows_changed"]) == 2 and doc["timed_without_ir_change"]["launch_path"] == ["runtime/jit.py"]
    jit = {"runtime/jit.py": "j"}
    assert lp.launch_path_changes(jit | {"x": "1"}, jit | {"x": "1", "y": "2"}) == ["y"]
    assert lp.launch_path_changes({}, {}) == ["runtime/jit.py"]  # no launch path to compare: fail closed


def test_a_record_for_another_target_is_compiled_for_it_and_a_non_cuda_one_times_every_row(
        tmp_path, fake_builds, capsys, monkeypatch) -> None:
    a100 = _record(tmp_path / "a100", target="cuda:80")
    base = fake_builds(tmp_path, "base")
    assert ci_prescreen.main(["--baseline", str(a100), "--base-python", base, "--cand-python", base,
                              "--out", str(tmp_path / "o")]) == 0
    assert fake_builds.seen["target"] == "cuda:80"
    hip = _record(tmp_path / "hip", target="hip:gfx942")
    capsys.readouterr()
    assert ci_prescreen.main(["--baseline", str(hip), "--base-python", base, "--cand-python", base,
                              "--out", str(tmp_path / "o2")]) == 0
    doc = json.loads((tmp_path / "o2" / "prescreen.json").read_text())
    assert doc["target"] is None and len(doc["rows_changed"]) == 2 and not (tmp_path / "o2" / "verdict").exists()
    assert not (tmp_path / "o2" / "ir-diff").exists()  # nothing to upload: the GPU job must not download one
    assert "2 of 2 rows timed: the baseline was recorded for hip:gfx942" in capsys.readouterr().out
    # on a runner, the job's summary says why every row is timed (the GPU job's verdict does not)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert ci_prescreen.main(["--baseline", str(hip), "--base-python", base, "--cand-python", base,
                              "--out", str(tmp_path / "o3")]) == 0
    assert summary.read_text() == ("### tritongate pre-screen\n\n"
                                   "2 of 2 rows timed: the baseline was recorded for hip:gfx942; the pre-screen compiles for "
                                   "CUDA GPUs only\n\n")


def test_a_failed_capture_vouches_for_nothing(tmp_path, record, fake_builds, monkeypatch) -> None:
    monkeypatch.setattr(prescreen.side, "_capture_both", lambda *a, **k: ({"base": None, "cand": None}, {}))
    base = fake_builds(tmp_path, "base")
    assert ci_prescreen.main(["--baseline", str(record), "--base-python", base, "--cand-python", base,
                              "--out", str(tmp_path / "o")]) == 0
    doc = json.loads((tmp_path / "o" / "prescreen.json").read_text())
    assert len(doc["rows_changed"]) == 2 and doc["timed_without_ir_change"]["reasons"] == {
        "both builds' captures of what they launch failed": 2}


def _two_kernel_tree(root: Path, *, both: bool = True, target: str = "cuda:90") -> None:
    """One row (matmul) launching two kernels, mm and its epilogue; ``both=False``: mm only."""
    store = IRStore(root)
    for kernel in ("m.mm_kernel", "m.epilogue_kernel")[: 2 if both else 1]:
        v = CompiledVariant(case="64x64x64", kernel=kernel, signature={"x": "*fp16"}, constexprs={},
                            specialization={}, options={"num_warps": 4}, compile_hash=f"h{kernel}",
                            binary_hash="b" + kernel[-8:], rows=("matmul/float16",), launches=1, target=target)
        store.add(RowIR(variants=(v,), ttgir={v.compile_hash: f"{kernel} v1\n"}))
    store.close()


def test_a_kernel_that_failed_to_compile_on_both_sides_leaves_its_row_timed(tmp_path, fake_builds,
                                                                             monkeypatch) -> None:
    """The row's epilogue compiled on neither side: nothing was compared for it, so the row is
    timed (it passed as unchanged, its other kernel identical and the failure only listed)."""
    record = tmp_path / "record"
    w = RunWriter(record, {"backend": "cuda", "suite": {"name": "pr"}})
    w.add(make_row("matmul", "64x64x64", "float16"))
    w.finish()
    _two_kernel_tree(record)

    def aot(pythons, record_dir, out, target, envs=None):
        for side in pythons:
            _two_kernel_tree(out / f"ir-{side}", both=False)
            write_aot(out / f"ir-{side}" / "ttgir", record_dir, target=target, compiled=1,
                      failed=["m.epilogue_kernel"])
        return {}

    def capture(pythons, record_dir, suite, rows, out, target, envs=None):
        for side in pythons:
            _two_kernel_tree(out / f"capture-{side}" / "run")
        return {side: out / f"capture-{side}" / "run" for side in pythons}, {}

    monkeypatch.setattr(prescreen.side, "_aot_both", aot)
    monkeypatch.setattr(prescreen.side, "_capture_both", capture)
    base = fake_builds(tmp_path, "base")
    assert ci_prescreen.main(["--baseline", str(record), "--base-python", base, "--cand-python", base,
                              "--out", str(tmp_path / "o")]) == 0
    doc = json.loads((tmp_path / "o" / "prescreen.json").read_text())
    assert doc["variants"] == {"identical": 1}
    assert doc["rows_changed"] == [["matmul", "64x64x64", "float16"]] and not (tmp_path / "o" / "verdict").exists()


def test_a_suite_the_builds_refuse_is_exit_2_naming_the_option(tmp_path, monkeypatch) -> None:
    """The capture replays the baseline with its suite; a build that refuses it (exit 2) is bad
    input: the message names --suite, the exit code is 2."""
    from tritongate.errors import UsageError
    from tritongate.prescreen import respecialize

    monkeypatch.setattr(respecialize, "run_both", lambda commands, logs, timeout_s: ({"base": 2, "cand": 0}, {}))
    with pytest.raises(UsageError, match="name the baseline's suite with --suite"):
        respecialize.capture_both({"base": "py", "cand": "py"}, tmp_path, "nosuch", [], tmp_path, "cuda:90", str(tmp_path / "lead"))


def _without_times(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k not in ("created_utc", "wall_s")}


def test_two_sides_and_a_judge_say_what_the_one_command_says(tmp_path, record, fake_builds, capsys) -> None:
    """In CI each build's half runs in its own job and the judge in one that holds neither:
    the same prescreen.json (but its times), ir-diff and verdict as one command; the side jobs
    write no step output, so only the judge can say how many rows changed."""
    base, newer = fake_builds(tmp_path, "base"), fake_builds(tmp_path, "newer")
    assert ci_prescreen.main(["--baseline", str(record), "--base-python", base, "--cand-python", newer,
                              "--out", str(tmp_path / "one")]) == 0
    split = tmp_path / "split"
    for side, py in (("base", base), ("cand", newer)):
        assert ci_prescreen.main(["--baseline", str(record), "--side", side, f"--{side}-python", py,
                                  "--out", str(split)]) == 0
        assert capsys.readouterr().out.strip().endswith(f"side-{side}.json")
        assert not (split / "prescreen.json").exists()
    assert ci_prescreen.main(["--baseline", str(record), "--judge", "--out", str(split)]) == 0
    one, judged = (json.loads((d / "prescreen.json").read_text()) for d in (tmp_path / "one", split))
    assert _without_times(judged) == _without_times(one)
    assert judged["rows_changed"] == [["matmul", "64x64x64", "float16"]]
    assert (split / "ir-diff" / "index.tsv").read_text() == (tmp_path / "one" / "ir-diff" / "index.tsv").read_text()


def test_the_judge_needs_no_suite_file(tmp_path, record, fake_builds, capsys) -> None:
    """The sides ran where the suite file is (a path in the compiler's checkout); the judge's job
    holds neither build nor that checkout, and judges by the halves alone."""
    suite = tmp_path / "perf" / "suite.yaml"
    suite.parent.mkdir()
    suite.write_text("shapes: shapes.yaml\nops: {add: {}, matmul: {}}\n")
    (suite.parent / "shapes.yaml").write_text("add: {shapes: [[4096]]}\nmatmul: {shapes: [[64, 64, 64]]}\n")
    split = tmp_path / "split"
    for side, py in (("base", fake_builds(tmp_path, "base")), ("cand", fake_builds(tmp_path, "newer"))):
        assert ci_prescreen.main(["--baseline", str(record), "--side", side, f"--{side}-python", py,
                                  "--suite", str(suite), "--out", str(split)]) == 0
    suite.unlink()  # not in the judge's job
    assert ci_prescreen.main(["--baseline", str(record), "--judge", "--suite", str(suite), "--out", str(split)]) == 0
    assert json.loads((split / "prescreen.json").read_text())["rows_changed"] == [["matmul", "64x64x64", "float16"]]
    # a side still refuses a suite it cannot read
    assert ci_prescreen.main(["--baseline", str(record), "--side", "base", "--base-python",
                              fake_builds(tmp_path, "base"), "--suite", str(suite), "--out", str(tmp_path / "s2")]) == 2
    assert "suite.yaml does not exist" in capsys.readouterr().err


def test_the_judge_refuses_a_side_it_cannot_vouch_for(tmp_path, record, fake_builds, capsys) -> None:
    base = fake_builds(tmp_path, "base")
    split = tmp_path / "split"
    for side in ("base", "cand"):
        assert ci_prescreen.main(["--baseline", str(record), "--side", side, f"--{side}-python", base,
                                  "--out", str(split)]) == 0
    capsys.readouterr()
    good = (split / "side-cand.json").read_text()

    def judged_with(text: str | None, *, link: bool = False, fifo: bool = False) -> str:
        path = split / "side-cand.json"
        path.unlink(missing_ok=True)
        if link:
            path.symlink_to(split / "side-base.json")
        elif fifo:
            os.mkfifo(path)
        elif text is not None:
            path.write_text(text)
        assert ci_prescreen.main(["--baseline", str(record), "--judge", "--out", str(split)]) == 2
        assert not (split / "prescreen.json").exists()
        return capsys.readouterr().err

    doc = json.loads(good)
    missing = judged_with(None)
    assert "side-cand.json" in missing and "--side cand" in missing
    assert "is a symbolic link" in judged_with(None, link=True)
    assert "is not a regular file (a pipe or a device)" in judged_with(None, fifo=True)  # not called a link
    assert "it is the base side's" in judged_with(json.dumps({**doc, "side": "base"}))
    assert "another baseline" in judged_with(json.dumps({**doc, "baseline": {"content_sha256": "0" * 64}}))
    assert "not a folder name" in judged_with(json.dumps({**doc, "capture": "../../etc"}))
    assert "not a pre-screen side" in judged_with(json.dumps({**doc, "rows_changed": 0}))  # a field of its own
    assert "not a pre-screen side" in judged_with(json.dumps({**doc, "schema_version": 2}))
    assert "made for target" in judged_with(json.dumps({**doc, "target": "cuda:80"}))
    # and the split options are used as documented
    assert ci_prescreen.main(["--baseline", str(record), "--side", "cand", "--out", str(split)]) == 2
    assert "--cand-python PY is needed with --side cand" in capsys.readouterr().err
    assert ci_prescreen.main(["--baseline", str(record), "--judge", "--blame", "3", "--out", str(split)]) == 2
    with pytest.raises(SystemExit) as parse_error:  # argparse's error: one line, exit 2
        ci_prescreen.main(["--baseline", str(record), "--side", "base", "--judge", "--out", str(split)])
    assert parse_error.value.code == 2 and "not allowed with argument --side" in capsys.readouterr().err


@pytest.mark.parametrize("gone", ["capture-cand", "ir-base"])
def test_a_side_whose_output_is_gone_is_named_with_the_command_that_makes_it(tmp_path, record, fake_builds,
                                                                               capsys, gone: str) -> None:
    import shutil

    split = tmp_path / "split"
    for side in ("base", "cand"):
        assert ci_prescreen.main(["--baseline", str(record), "--side", side, f"--{side}-python",
                                  fake_builds(tmp_path, "base"), "--out", str(split)]) == 0
    shutil.rmtree(split / gone)
    capsys.readouterr()
    assert ci_prescreen.main(["--baseline", str(record), "--judge", "--out", str(split)]) == 2
    err = capsys.readouterr().err
    side = gone.split("-")[1]
    assert f"the {side} side's output is missing" in err and f"--side {side} --baseline" in err
    assert "fix the path" not in err and not (split / "prescreen.json").exists()


def test_the_judge_runs_without_torch_or_triton(tmp_path, record, fake_builds) -> None:
    """The judge job holds no build: its imports must not need one."""
    import subprocess

    base = fake_builds(tmp_path, "base")
    split = tmp_path / "split"
    for side in ("base", "cand"):
        assert ci_prescreen.main(["--baseline", str(record), "--side", side, f"--{side}-python", base,
                                  "--out", str(split)]) == 0
    blocked = ("import sys, runpy; sys.modules.update(torch=None, triton=None); "
               f"sys.argv = ['ci/prescreen.py', '--baseline', {str(record)!r}, '--judge', '--out', {str(split)!r}]; "
               "runpy.run_path('ci/prescreen.py', run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[1])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads((split / "prescreen.json").read_text())["rows_changed"] == []


def test_a_folder_with_an_earlier_prescreen_is_refused_not_mixed(tmp_path, record, fake_builds, capsys) -> None:
    # a recompile appends to ir-<side>/ttgir/index.tsv: a second run into one folder paired two
    # source versions' variants and called every kernel "compiled by one side only"
    base = fake_builds(tmp_path, "base")
    out = tmp_path / "ps"
    assert ci_prescreen.main(["--baseline", str(record), "--base-python", base, "--cand-python", base,
                              "--out", str(out)]) == 0
    before = (out / "ir-base" / "ttgir" / "index.tsv").read_text()
    capsys.readouterr()
    assert ci_prescreen.main(["--baseline", str(record), "--base-python", base, "--cand-python", base,
                              "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "earlier pre-screen's ir-base, capture-base, side-base.json" in err and "a fresh --out" in err
    assert (out / "ir-base" / "ttgir" / "index.tsv").read_text() == before
    assert ci_prescreen.main(["--baseline", str(record), "--side", "cand", "--cand-python", base,
                              "--out", str(out)]) == 2
    assert "--side writes into a folder without them" in capsys.readouterr().err
    assert ci_prescreen.main(["--baseline", str(record), "--judge", "--out", str(out)]) == 2
    assert "earlier pre-screen's ir-diff, prescreen.json" in capsys.readouterr().err
