"""The package as a user installs it: a wheel in a fresh virtual environment, run from
outside the checkout, finds its suites, shape files and verdict template."""

from __future__ import annotations

import pytest
import os
import site
import stat
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_wheel_works_from_any_directory(tmp_path):
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(wheels), str(ROOT)], check=True, cwd=tmp_path)
    (wheel,) = wheels.glob("tritongate-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    target = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                 capture_output=True, text=True, check=True).stdout.strip())
    # the dependencies (torch, triton, ...) come from this environment; tritongate only from the wheel
    deps = [p for p in site.getsitepackages() + [sysconfig.get_paths()["purelib"]] if Path(p).is_dir()]
    (target / "deps.pth").write_text("\n".join(sorted(set(deps))) + "\n")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
                   check=True, cwd=tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TRITONGATE_OPS_DIR")}
    where = subprocess.run([str(py), "-c", "import tritongate; print(tritongate.__file__)"], cwd=tmp_path,
                           capture_output=True, text=True, env=env, check=True).stdout.strip()
    assert where.startswith(str(target)), where  # not the checkout
    ops = subprocess.run([str(py), "-m", "tritongate", "ops"], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert ops.returncode == 0, ops.stderr
    assert "smoke" in ops.stdout and "pr" in ops.stdout
    example = target / "tritongate" / "assets" / "examples" / "user_ops.yaml"  # the user-op example ships
    ops = subprocess.run([str(py), "-m", "tritongate", "ops", "--suite", str(example)], cwd=tmp_path,
                         capture_output=True, text=True, env=env)
    assert ops.returncode == 0 and "scale_shift" in ops.stdout, ops.stderr
    out = tmp_path / "runs"
    loop = subprocess.run([str(py), "-m", "tritongate", "loop", "--suite", "smoke", "--backend", "cpu", "--ops", "add",
                           "--out", str(out), "--color", "never", "--max-rounds", "6"],
                          cwd=tmp_path, capture_output=True, text=True, env={**env, "TRITONGATE_LOG_DIR": str(tmp_path)})
    assert loop.returncode == 0, loop.stderr[-2000:]
    verdict = next(line.split(":", 1)[1].strip() for line in loop.stdout.splitlines() if line.startswith("verdict:"))
    assert Path(verdict).read_text().startswith("<!-- tritongate-verdict -->")
    # files are written with the user's umask, not a temp file's 0600
    mode = stat.S_IMODE(Path(verdict).stat().st_mode)
    umask = os.umask(0)
    os.umask(umask)
    assert mode == 0o666 & ~umask


def test_the_repository_holds_only_its_own_top_level_entries():
    """Committed files sit under the layout the README draws; a run's output folder committed
    by mistake (a baseline store entry at the top, say) is caught here."""
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    assert files, "not a git checkout"
    top = {f.split("/", 1)[0] for f in files}
    assert top <= {".ci", ".github", ".gitignore", "README.md", "baselines", "bench", "ci", "docs", "examples", "ops",
                   "pyproject.toml", "requirements-cpu.txt", "scripts", "tests", "tritongate"}, sorted(top)
