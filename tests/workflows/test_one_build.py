"""One build per compiler per PR (issue #37, item 4): each pre-screen half builds its own
compiler once, from source, as a wheel it installs and uploads; the GPU job installs those
wheels and builds nothing, unless a side has none that fits its runner.

- build.sh, mode source, with stand-in interpreters (the runner's, and the venv's, which logs
  what it is asked): one `pip wheel` of the checkout, that wheel installed, the `wheel` output
  and the glibc note beside it; no wheel for a reused venv or mode installed.
- wheel_fits.py and `gate_steps.sh handed-wheel`: a wheel another runner built is used only
  when its tags and glibc fit this runner's interpreter, and only a plain file with a wheel's
  name is looked at.
- The pr-gate action, walked stage by stage (each step's `if:` and env evaluated over the
  outputs a scenario gives): the halves upload their own source build under a name keyed by
  side, key and commit; the gate downloads exactly those names and installs them in mode wheel
  without checking a compiler out; it builds as before where no wheel came, and never looks
  for one where there is nothing to hand on (installed, wheel, an overlay's PR side, a build
  this runner's trusted cache holds).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.workflows.build_fixtures import git
from tests.workflows.payloads import github_context
from tests.workflows.replay import Evaluator, condition, interpolate, load_yaml, parse_github_output

REPO = Path(__file__).resolve().parents[2]
BUILD_DIR = REPO / ".github" / "actions" / "build-compiler"
ACTION = REPO / ".github" / "actions" / "pr-gate" / "action.yml"
GATE_STEPS = REPO / "ci" / "gate_steps.sh"
# The runner's interpreter only keys the venv and checks the wheel here: one without torch is quick.
REAL = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
KEY, BASE, CAND = "acme-h200-pr", "b" * 40, "c" * 40

RUNNER_PY = f"""#!/bin/bash
# the runner's interpreter: `-m venv DIR` makes a venv of stand-ins, the rest is a real python
if [[ "$1" == -m && "$2" == venv ]]; then
  dir="${{@: -1}}"
  mkdir -p "$dir/bin"
  cp "$FAKE_VENV_PY" "$dir/bin/python"
  exit 0
fi
exec {REAL} "$@"
"""

VENV_PY = """#!/bin/bash
# the build venv's interpreter: logs every call; `pip wheel -w DIR` leaves one wheel in DIR
echo "$*" >> "$FAKE_LOG"
if [[ "$1" == -m && "$2" == pip && "$3" == wheel ]]; then
  args=("$@")
  for i in "${!args[@]}"; do
    if [[ "${args[$i]}" == -w ]]; then touch "${args[$((i + 1))]}/triton-3.6.0-cp312-cp312-linux_x86_64.whl"; fi
  done
fi
if [[ "$1" == - ]]; then cat > /dev/null; echo "triton 3.6.0 from $2/lib/triton/__init__.py"; fi
exit 0
"""


def _stand_ins(tmp: Path) -> dict:
    """The two stand-in interpreters (made once per test folder) and the log the venv's writes."""
    tools = tmp / "tools"
    if not tools.exists():
        tools.mkdir()
        (tools / "python").write_text(RUNNER_PY)
        (tools / "venv-python").write_text(VENV_PY)
        for f in tools.iterdir():
            f.chmod(0o755)
    return {"TG_PYTHON": str(tools / "python"), "FAKE_VENV_PY": str(tools / "venv-python"),
            "FAKE_LOG": str(tmp / "venv-calls.log")}


def _checkout(workspace: Path) -> str:
    src = workspace / ".tritongate-src" / "acme__triton-1"
    src.mkdir(parents=True)
    (src / "setup.py").write_text("# the compiler's build\n")
    git("init", "-q", "-b", "main", cwd=src)
    git("add", "-A", cwd=src)
    git("commit", "-q", "-m", "main", cwd=src)
    return git("rev-parse", "HEAD", cwd=src)


def _build(tmp: Path, **extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp / "output"
    out.unlink(missing_ok=True)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp / "home"), "RUNNER_TEMP": str(tmp / "temp"),
           "GITHUB_WORKSPACE": str(tmp / "ws"), "GITHUB_OUTPUT": str(out), "TG_CACHE_ROOT": str(tmp / "shared"),
           "TG_MODE": "source", "TG_REPO": "acme/triton", "TG_REF": "main", "TG_SRC": ".tritongate-src/acme__triton-1",
           **_stand_ins(tmp), **extra}
    proc = subprocess.run(["bash", str(BUILD_DIR / "build.sh"), "build"], env=env, capture_output=True, text=True,
                          timeout=120)
    return proc, parse_github_output(out) if out.exists() else {}


def _pip_calls(tmp: Path) -> list[str]:
    return [line for line in (tmp / "venv-calls.log").read_text().splitlines()
            if line.startswith("-m pip ") and "--upgrade pip" not in line and "numpy" not in line]


@pytest.mark.parametrize("cache_write", ["false", "true"])
def test_a_source_build_compiles_one_wheel_installs_it_and_names_it(tmp_path: Path, cache_write: str) -> None:
    (tmp_path / "home").mkdir()
    commit = _checkout(tmp_path / "ws")
    proc, outputs = _build(tmp_path, TG_CACHE_WRITE=cache_write)
    assert proc.returncode == 0, proc.stderr
    assert outputs["built"] == "source" and outputs["commit"] == commit, outputs
    wheel = Path(outputs["wheel"])
    assert wheel.is_file() and wheel.name == "triton-3.6.0-cp312-cp312-linux_x86_64.whl", outputs
    assert wheel.parent.parent == tmp_path / "temp" / "tritongate-pr" / "wheels"  # the job's temp: removed with it
    assert re.fullmatch(r"glibc \d+\.\d+", Path(f"{wheel}.build-host").read_text().strip())
    src = tmp_path / "ws" / ".tritongate-src" / "acme__triton-1"
    calls = _pip_calls(tmp_path)
    # one compile (the wheel), then that wheel installed: over a same-version triton, then its deps
    assert calls == [f"-m pip wheel --disable-pip-version-check --no-deps -w {wheel.parent} {src}",
                     f"-m pip install --disable-pip-version-check --no-deps --force-reinstall {wheel}",
                     f"-m pip install --disable-pip-version-check {wheel}"], calls
    # the venv's key is what it was: the same commit and build key, whatever the wheel
    where = subprocess.run(["bash", str(BUILD_DIR / "build.sh"), "where"], capture_output=True, text=True, env={
        "PATH": os.environ["PATH"], "HOME": str(tmp_path / "home"), "TG_CACHE_ROOT": str(tmp_path / "shared"),
        "RUNNER_TEMP": str(tmp_path / "temp"), "TG_MODE": "source", "TG_REPO": "acme/triton", "TG_REF": "main",
        "TG_PLAN_COMMIT": commit, "TG_CACHE_WRITE": cache_write, **_stand_ins(tmp_path)}, check=True).stdout.strip()
    assert outputs["python"] == f"{where}/bin/python"


def test_a_reused_build_and_mode_installed_hand_on_no_wheel(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    _checkout(tmp_path / "ws")
    first, _ = _build(tmp_path, TG_CACHE_WRITE="true")  # the nightly's build, into the shared cache
    assert first.returncode == 0, first.stderr
    (tmp_path / "venv-calls.log").unlink()
    again, outputs = _build(tmp_path, TG_CACHE_WRITE="false")
    assert again.returncode == 0 and "reusing" in again.stderr, again.stderr
    assert outputs["built"] == "source" and outputs["wheel"] == "", outputs
    assert not (tmp_path / "venv-calls.log").exists() or not _pip_calls(tmp_path)
    installed, outputs = _build(tmp_path, TG_MODE="installed")
    assert installed.returncode == 0 and outputs["built"] == "installed" and outputs["wheel"] == "", outputs


# --- a wheel from another runner: does it fit this one? -------------------------------------

def _here_tag() -> str:
    probe = ("try:\n from packaging.tags import sys_tags\nexcept ImportError:\n"
             " from pip._vendor.packaging.tags import sys_tags\nt = next(iter(sys_tags()))\n"
             "print(f'{t.interpreter}-{t.abi}-{t.platform}')")
    return subprocess.run([REAL, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()


def _libc() -> tuple[int, int]:
    text = subprocess.run([REAL, "-c", "import os; print(os.confstr('CS_GNU_LIBC_VERSION'))"], capture_output=True,
                          text=True, check=True).stdout
    major, minor = re.search(r"(\d+)\.(\d+)", text).groups()
    return int(major), int(minor)


def _wheel(folder: Path, tag: str, libc: str | None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    whl = folder / f"triton-3.6.0-{tag}.whl"
    whl.write_bytes(b"PK")
    if libc is not None:
        Path(f"{whl}.build-host").write_text(f"{libc}\n")
    return whl


def _fits(whl: Path) -> subprocess.CompletedProcess:
    return subprocess.run([REAL, "-I", str(BUILD_DIR / "wheel_fits.py"), str(whl)], capture_output=True, text=True)


def test_a_wheel_fits_only_with_this_interpreters_tags_and_no_newer_glibc(tmp_path: Path) -> None:
    major, minor = _libc()
    tag = _here_tag()
    assert _fits(_wheel(tmp_path / "same", tag, f"glibc {major}.{minor}")).returncode == 0
    assert _fits(_wheel(tmp_path / "older", tag, f"glibc {major}.{max(minor - 1, 0)}")).returncode == 0
    newer = _fits(_wheel(tmp_path / "newer", tag, f"glibc {major}.{minor + 1}"))
    assert newer.returncode == 1 and f"glibc {major}.{minor + 1}, newer than this runner's" in newer.stdout
    other = _fits(_wheel(tmp_path / "py27", "cp27-cp27mu-linux_x86_64", f"glibc {major}.{minor}"))
    assert other.returncode == 1 and "cannot install" in other.stdout, other.stdout
    unknown = _fits(_wheel(tmp_path / "no-note", tag, None))
    assert unknown.returncode == 1 and "build-host" in unknown.stdout
    hostile = _fits(_wheel(tmp_path / "hostile", tag, "glibc 2.17; rm -rf ~"))
    assert hostile.returncode == 1


def _handed(tmp: Path, folder: Path) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp / "handed-output"
    out.unlink(missing_ok=True)
    env = {"PATH": os.environ["PATH"], "RUNNER_TEMP": str(tmp / "temp"), "GITHUB_OUTPUT": str(out),
           "TG_SIDE": "cand", "TG_DIR": str(folder), "TG_PYTHON": REAL}
    proc = subprocess.run(["bash", str(GATE_STEPS), "handed-wheel"], env=env, capture_output=True, text=True)
    return proc, parse_github_output(out)


def test_the_gate_takes_a_fitting_wheel_and_otherwise_builds(tmp_path: Path) -> None:
    major, minor = _libc()
    good = _wheel(tmp_path / "good", _here_tag(), f"glibc {major}.{minor}")
    proc, outputs = _handed(tmp_path, good.parent)
    assert proc.returncode == 0 and outputs == {"wheel": str(good)}, (proc.stdout, proc.stderr)
    assert "installed here (no compiler build)" in proc.stdout
    # nothing downloaded (no pre-screen, a cached build there, an overlay, a failed upload)
    proc, outputs = _handed(tmp_path, tmp_path / "absent")
    assert proc.returncode == 0 and outputs == {"wheel": ""} and "building it here" in proc.stdout
    # one that does not fit: built here, saying why
    newer = _wheel(tmp_path / "newer", _here_tag(), f"glibc {major}.{minor + 1}")
    proc, outputs = _handed(tmp_path, newer.parent)
    assert outputs == {"wheel": ""} and "does not fit this runner" in proc.stdout and "newer" in proc.stdout
    # untrusted data: a link is not a wheel, nor is a name a wheel cannot have, nor two wheels
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / good.name).symlink_to(good)
    odd = _wheel(tmp_path / "odd", _here_tag(), f"glibc {major}.{minor}")
    odd.rename(odd.with_name("triton 3.6.0;x.whl"))
    two = _wheel(tmp_path / "two", _here_tag(), f"glibc {major}.{minor}")
    shutil.copy(two, two.with_name("triton-3.5.0-" + two.name.split("-", 2)[2]))
    for folder in (linked, odd.parent, two.parent):
        proc, outputs = _handed(tmp_path, folder)
        assert proc.returncode == 0 and outputs == {"wheel": ""}, (folder, proc.stdout, proc.stderr)


def test_the_gate_step_never_runs_the_wheel() -> None:
    script = GATE_STEPS.read_text(encoding="utf-8")
    start = script.index("\nhanded_wheel() {")
    body = script[start:script.index("\n}\n", start)]
    assert "pip" not in body and "contained" not in body and "BASE_PY" not in body
    assert '"$py" -I "$root/.github/actions/build-compiler/wheel_fits.py"' in body  # the runner's interpreter
    assert "-type f" in body  # a link is no wheel
    # the build step passes `wheel` on (its other outputs stay as they were)
    assert 'contained "$(own_output)" "python commit built patch-sha256 wheel"' in script


# --- the pr-gate action, stage by stage ---------------------------------------------------

def _walk(stage: str, mode: str, outputs: dict[str, dict] | None = None,
          runner: dict | None = None) -> tuple[list[dict], dict]:
    """The steps of the pr-gate action that run at ``stage`` in ``mode`` (a pull_request), each
    step that runs leaving ``outputs[id]`` (default: nothing), with its env and `with:`
    evaluated as the runner would."""
    action = load_yaml(ACTION)
    inputs = {name: spec.get("default", "") for name, spec in action["inputs"].items()}
    inputs.update({"stage": stage, "compiler-mode": mode, "python": "/opt/torch/bin/python"})
    given = {"refs": {"base": BASE, "cand": CAND, "key": KEY}, "baseline": {"state": "ok"}, **(outputs or {})}
    steps: dict[str, dict] = {}
    ctx = {"github": github_context("pull_request", "pull_request.synchronize"), "inputs": inputs,
           "steps": steps, "runner": {"temp": "/rt", **(runner or {})}, "vars": {}}
    ran = []
    for step in action["runs"]["steps"]:
        ev = Evaluator(ctx, lambda: "success")
        runs = condition(step.get("if"), ev)
        if runs:
            ran.append({**step, "env": {k: str(interpolate(v, ev)) for k, v in (step.get("env") or {}).items()},
                        "with": {k: interpolate(v, ev) for k, v in (step.get("with") or {}).items()}})
        if "id" in step:
            steps[step["id"]] = ({"outcome": "success", "conclusion": "success", "outputs": given.get(step["id"], {})}
                                 if runs else {"outcome": "skipped", "conclusion": "skipped", "outputs": {}})
    return ran, {s["id"]: s for s in ran if "id" in s}


def _downloads(ran: list[dict]) -> list[dict]:
    return [s for s in ran if s.get("uses", "").startswith("actions/download-artifact@")]


def _uploads(ran: list[dict], prefix: str = "tritongate-wheel-") -> list[dict]:
    return [s for s in ran if s.get("uses", "").startswith("actions/upload-artifact@")
            and str(s["with"].get("name", "")).startswith(prefix)]


def _compiler_checkouts(ran: list[dict]) -> list[str]:
    return [s["name"] for s in ran if s.get("uses", "").startswith("actions/checkout@")
            and str(s["with"].get("path", "")).startswith(".tritongate-src")]


PLANNED = {"base-plan": {"src": ".tritongate-src/b", "cached": "false"},
           "cand-plan": {"src": ".tritongate-src/c", "cached": "false"}}
HANDED = {"base-handed": {"wheel": "/rt/tritongate-pr/handed/base/triton-b.whl"},
          "cand-handed": {"wheel": "/rt/tritongate-pr/handed/cand/triton-c.whl"}}


def test_the_gate_installs_both_halves_wheels_and_builds_nothing() -> None:
    """The usual path: compiler-mode source, both halves built from source and handed on."""
    ran, by_id = _walk("gate", "source", {**PLANNED, **HANDED})
    patterns = [s["with"]["pattern"] for s in _downloads(ran)]
    assert patterns == [f"tritongate-wheel-base-{KEY}-{BASE}", f"tritongate-wheel-cand-{KEY}-{CAND}"], patterns
    for s in _downloads(ran):  # into the job's throwaway folder, removed with its PR builds
        assert s["with"]["path"].startswith("/rt/tritongate-pr/handed/") and "name" not in s["with"]
    assert _compiler_checkouts(ran) == [], "no compiler checkout: nothing is built here"
    for side in ("base", "cand"):
        env = by_id[side]["env"]
        assert env["TG_MODE"] == "wheel" and env["TG_WHEEL"] == HANDED[f"{side}-handed"]["wheel"], env
        assert env["TG_REF"] == {"base": BASE, "cand": CAND}[side]  # the commit the run identity names
        assert by_id[side]["run"].strip().endswith('gate_steps.sh" build')  # installed contained, as a build is
        assert by_id[f"{side}-handed"]["run"].strip().endswith('gate_steps.sh" handed-wheel')
        assert by_id[f"{side}-handed"]["env"]["TG_PYTHON"] == "/opt/torch/bin/python"  # the runner's, no build's
    assert _uploads(ran) == [], "the gate hands nothing on"


@pytest.mark.parametrize("mode", ["source", "auto"])
def test_a_side_without_a_fitting_wheel_is_built_here_as_before(mode: str) -> None:
    ran, by_id = _walk("gate", mode, {**PLANNED, "base-handed": {"wheel": ""}, "cand-handed": {"wheel": ""}})
    assert len(_downloads(ran)) == 2
    assert _compiler_checkouts(ran) == ["Check out the base compiler", "Check out the PR compiler"]
    assert by_id["base"]["env"]["TG_MODE"] == "source" and by_id["base"]["env"]["TG_WHEEL"] == ""
    assert by_id["cand"]["env"]["TG_MODE"] == mode and by_id["cand"]["env"]["TG_PATCH_FROM"] == (
        "pr" if mode == "auto" else "")
    # one side handed on, the other not
    ran, by_id = _walk("gate", mode, {**PLANNED, "base-handed": HANDED["base-handed"], "cand-handed": {"wheel": ""}})
    assert _compiler_checkouts(ran) == ["Check out the PR compiler"]
    assert by_id["base"]["env"]["TG_MODE"] == "wheel" and by_id["cand"]["env"]["TG_MODE"] == mode


def test_a_build_this_runners_trusted_cache_holds_is_reused_not_downloaded() -> None:
    cached = {"base-plan": {"src": "", "cached": "true", "commit": BASE},
              "cand-plan": {"src": "", "cached": "true", "commit": CAND}}
    ran, by_id = _walk("gate", "source", cached)
    assert _downloads(ran) == [] and _compiler_checkouts(ran) == []
    assert by_id["base"]["env"]["TG_MODE"] == "source" and by_id["cand"]["env"]["TG_MODE"] == "source"


@pytest.mark.parametrize(("mode", "looked_for"), [("installed", []), ("wheel", []), ("overlay", ["base"]),
                                                  ("auto", ["base", "cand"]), ("source", ["base", "cand"])])
def test_the_gate_looks_for_a_wheel_only_where_a_half_can_hand_one_on(mode: str, looked_for: list[str]) -> None:
    ran, _ = _walk("gate", mode, PLANNED)
    sides = [s["with"]["pattern"].split("-")[2] for s in _downloads(ran)]
    assert sides == looked_for, (mode, sides)


@pytest.mark.parametrize("mode", ["source", "wheel", "installed", "overlay", "auto"])
def test_the_judge_handles_no_wheel(mode: str) -> None:
    ran, _ = _walk("judge", mode, {**PLANNED, **HANDED})
    names = [str(s["with"].get("name", s["with"].get("pattern", ""))) for s in ran
             if "artifact@" in s.get("uses", "")]
    assert not [n for n in names if "wheel" in n], names
    assert not [s for s in ran if "handed" in s.get("id", "")]


def _built(side: str, built: str, wheel: str) -> dict:
    commit = {"base": BASE, "cand": CAND}[side]
    return {side: {"built": built, "commit": commit, "wheel": wheel, "python": f"/venv-{side}/bin/python"}}


@pytest.mark.parametrize("side", ["base", "cand"])
def test_a_half_uploads_its_own_source_build_under_the_name_the_gate_downloads(side: str) -> None:
    other = "cand" if side == "base" else "base"
    wheel = f"/rt/tritongate-pr/wheels/acme__triton-1/triton-{side}.whl"
    # mode auto, a PR that changes C++: each half builds its own compiler from source and
    # hands on only that one
    outputs = {**_built(side, "source", wheel), **_built(other, "source", f"/elsewhere/triton-{other}.whl")}
    ran, _ = _walk(f"prescreen-{side}", "auto", outputs)
    (upload,) = _uploads(ran)
    commit = {"base": BASE, "cand": CAND}[side]
    assert upload["with"]["name"] == f"tritongate-wheel-{side}-{KEY}-{commit}"
    assert upload["with"]["path"].split() == [wheel, f"{wheel}.build-host"]
    assert upload["with"]["retention-days"] == 3 and upload["with"]["overwrite"] is True
    assert upload.get("continue-on-error") is True, "a failed hand-off makes the GPU job build, not the half fail"
    assert upload["uses"].split("@")[1].split()[0] == "bbbca2ddaa5d8feaa63e36b76fdaad77386f024f"
    # the gate, in the same run, downloads that name
    gate, _ = _walk("gate", "auto", PLANNED)
    assert upload["with"]["name"] in [s["with"]["pattern"] for s in _downloads(gate)]


@pytest.mark.parametrize(("mode", "built", "wheel"), [("overlay", "overlay", ""), ("auto", "overlay", ""),
                                                      ("wheel", "wheel", "/given/triton.whl"),
                                                      ("source", "source", "")])
def test_a_half_with_no_build_of_its_own_uploads_none(mode: str, built: str, wheel: str) -> None:
    """An overlay (the base patched), a given wheel (the gate has it too), a reused venv."""
    ran, _ = _walk("prescreen-cand", mode, {**_built("base", "source", "/w/base.whl"), **_built("cand", built, wheel)})
    assert _uploads(ran) == []


def test_the_wheel_artifacts_are_named_by_side_key_and_commit() -> None:
    """Two runner classes or suites in one run, a base that moved, a re-run: never another's wheel."""
    text = ACTION.read_text(encoding="utf-8")
    action = load_yaml(ACTION)
    for step in action["runs"]["steps"]:
        with_ = step.get("with") or {}
        named = str(with_.get("name", "")) + str(with_.get("pattern", ""))
        if "tritongate-wheel-" in named:
            assert "steps.refs.outputs.key" in named and re.search(r"(base|cand)", named), named
            assert re.search(r"outputs\.(commit|base|cand) }}$", named.strip()), named
    assert text.count("tritongate-wheel-") >= 3


@pytest.mark.parametrize("mode", ["source", "wheel", "installed", "overlay", "auto"])
@pytest.mark.parametrize("stage", ["gate", "prescreen-base", "prescreen-cand", "judge"])
def test_a_handed_wheel_is_read_only_by_the_gate_and_installed_only_contained(stage: str, mode: str) -> None:
    """The wheels are a PR-code job's output: only stage gate downloads them, out of the
    workspace, and only its contained build steps install one; the steps that write the
    verdict and the pre-screen's results never see them."""
    ran, _ = _walk(stage, mode, {**PLANNED, **HANDED, **_built("base", "source", "/w/b.whl"),
                                 **_built("cand", "source", "/w/c.whl")})
    for step in ran:
        with_ = step["with"]
        if step.get("uses", "").startswith("actions/download-artifact@") and "tritongate-wheel-" in str(
                with_.get("pattern", "")) + str(with_.get("name", "")):
            assert stage == "gate" and str(with_["path"]).startswith("/rt/"), (stage, step["name"])
        if step.get("uses", "").startswith("actions/upload-artifact@") and "tritongate-wheel-" in str(with_["name"]):
            assert stage.startswith("prescreen-"), (stage, step["name"])
    action = load_yaml(ACTION)
    for step in action["runs"]["steps"]:
        refs = re.findall(r"steps\.([\w-]+)-handed\.outputs\.wheel", str(step.get("env") or {}))
        if refs:
            assert step.get("id") in ("base", "cand") and step["run"].strip().endswith('gate_steps.sh" build'), step
        handed_dir = "tritongate-pr/handed/" in str(step.get("env") or {}) + str(step.get("with") or {})
        if handed_dir:
            assert step.get("id", "").endswith(("-dl", "-handed")), step["name"]
    judge_ids = {"judge", "pair", "side"}
    for step in action["runs"]["steps"]:
        if step.get("id") in judge_ids:
            assert "handed" not in str(step) and "wheel" not in str(step.get("env") or {}), step["name"]
