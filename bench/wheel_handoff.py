"""The gate job's side of the wheel hand-off, timed: a compiler wheel a pre-screen half built
is checked (`wheel_fits.py`) and installed by the build-compiler action in mode wheel
(`build.sh build`: a venv over the runner's interpreter, tritongate's dependencies, the wheel
twice over as `install_wheel_file` does), as a PR job does it (TG_CACHE_WRITE=false: a
throwaway venv under RUNNER_TEMP, the compiler's own code without the runner's file commands).

Each run starts from empty folders (cold); a last run reuses the first run's cache as a
trusted nightly venv would be reused (TG_CACHE_WRITE=true twice). Not measured here: the
half's `pip wheel` of a source checkout (a compile), and the artifact upload and download.

    python bench/wheel_handoff.py --wheel W.whl --base-python PY [--runs 3] --out PREFIX
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUILD = REPO / ".github" / "actions" / "build-compiler" / "build.sh"
FITS = REPO / ".github" / "actions" / "build-compiler" / "wheel_fits.py"


def build(wheel: Path, base: str, root: Path, *, write: bool) -> tuple[float, dict[str, str]]:
    (root / "temp").mkdir(parents=True, exist_ok=True)
    (root / "ws").mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "TG_", "PIP_"))}
    env.update(TG_MODE="wheel", TG_REPO="triton-lang/triton", TG_REF="v3.6.0", TG_WHEEL=str(wheel),
               TG_PYTHON=base, TG_CACHE_ROOT=str(root / "cache"), RUNNER_TEMP=str(root / "temp"),
               GITHUB_WORKSPACE=str(root / "ws"), TG_CACHE_WRITE="true" if write else "false")
    t0 = time.perf_counter()
    proc = subprocess.run(["bash", str(BUILD), "build"], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"build.sh build failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    outputs = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
    return wall, outputs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--render", type=Path, metavar="JSON", help="write the .md again from a run's JSON, no run")
    ap.add_argument("--wheel", type=Path)
    ap.add_argument("--base-python", help="the runner's interpreter (with torch)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default="wheel_handoff", help="output prefix (.json and .md)")
    args = ap.parse_args()
    if args.render:
        doc = json.loads(args.render.read_text())
        args.render.with_suffix(".md").write_text("\n".join(render(doc, len(doc["pr_job_install_s"]))))
        return
    if args.wheel is None or args.base_python is None:
        ap.error("--wheel and --base-python are needed (or --render JSON)")
    wheel = args.wheel.resolve()
    t0 = time.perf_counter()
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    sha_s = time.perf_counter() - t0
    note = Path(f"{wheel}.build-host")
    if not note.exists():  # what build.sh writes beside the wheel a source build made (this host's C library)
        note.write_text((os.confstr("CS_GNU_LIBC_VERSION") or "") + "\n")
    t0 = time.perf_counter()
    fits = subprocess.run([args.base_python, "-I", str(FITS), str(wheel)], capture_output=True, text=True)
    fits_s = time.perf_counter() - t0
    cold: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            wall, outputs = build(wheel, args.base_python, Path(tmp) / f"cold-{i}", write=False)
            cold.append(wall)
        trusted, _ = build(wheel, args.base_python, Path(tmp) / "nightly", write=True)
        reuse, reused = build(wheel, args.base_python, Path(tmp) / "nightly", write=False)
    missing = subprocess.run([args.base_python, "-c", "import importlib.util as u; print(' '.join(m for m in "
                              "('numpy', 'yaml', 'pandas', 'scipy', 'jinja2', 'rich', 'pydantic', 'matplotlib') "
                              "if u.find_spec(m) is None))"], capture_output=True, text=True).stdout.split()
    version = subprocess.run([args.base_python, "-c", "import torch, sys; print(sys.version.split()[0], torch.__version__)"],
                             capture_output=True, text=True).stdout.strip()
    doc = {"date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": platform.node(),
           "cpus": os.cpu_count(), "base_python": args.base_python, "base_python_and_torch": version,
           "wheel": wheel.name, "wheel_bytes": wheel.stat().st_size, "wheel_sha256": digest, "sha256_s": sha_s,
           "wheel_fits_rc": fits.returncode, "wheel_fits_s": fits_s, "wheel_fits_says": fits.stdout.strip(),
           "pr_job_install_s": cold, "trusted_install_s": trusted, "pr_job_reuse_s": reuse,
           "deps_missing_from_base": missing, "outputs": outputs, "reuse_outputs": reused}
    Path(f"{args.out}.json").write_text(json.dumps(doc, indent=1))
    lines = render(doc, args.runs)
    Path(f"{args.out}.md").write_text("\n".join(lines))
    print("\n".join(lines))


def render(doc: dict, runs: int) -> list[str]:
    """The report, from the JSON alone (``--render`` writes it again without a run)."""
    cold, mb = doc["pr_job_install_s"], doc["wheel_bytes"] / 2**20
    return [
        "# The gate job's side of the wheel hand-off (CPU host)", "",
        f"{doc['date_utc']} · {doc['cpus']} cores · runner interpreter {doc['base_python']} (Python, torch: "
        f"{doc['base_python_and_torch']}) · written by `python bench/wheel_handoff.py --wheel {doc['wheel']} "
        f"--base-python PY --runs {runs}`", "",
        f"Wheel: `{doc['wheel']}`, {mb:.1f} MiB, sha256 {doc['wheel_sha256'][:16]}… ({doc['sha256_s']:.2f} s to "
        f"hash); beside it `{doc['wheel']}.build-host` (this host's C library, as build.sh writes for a wheel it "
        "built).", "",
        "| step | wall |", "|---|---:|",
        f"| `wheel_fits.py` (tags and glibc against the runner's interpreter; exit {doc['wheel_fits_rc']}) | "
        f"{doc['wheel_fits_s']:.2f} s |",
        *(f"| `build.sh build`, mode wheel, PR job, empty folders (run {i + 1}) | {w:.1f} s |" for i, w in enumerate(cold)),
        f"| the same, trusted job writing the shared cache (a nightly) | {doc['trusted_install_s']:.1f} s |",
        f"| the same wheel in a PR job after that nightly: the trusted venv checked and reused | "
        f"{doc['pr_job_reuse_s']:.1f} s |", "",
        f"Median of the cold PR-job installs: {statistics.median(cold):.1f} s.", "",
        "Each install makes a venv over the runner's interpreter (`--system-site-packages`: its torch), "
        "upgrades pip, installs tritongate's runtime dependencies the runner's interpreter lacks (here: "
        f"{', '.join(doc['deps_missing_from_base']) or 'none'}, from pip's cache and this host's package index), "
        "then the wheel twice as `install_wheel_file` does (`--no-deps --force-reinstall`, then with its "
        "dependencies), then imports the venv's triton. Not measured: the pre-screen half's `pip wheel` (the "
        "compile it replaces in the GPU job), the artifact upload and download (GitHub's transfer rate), a CUDA "
        "runner.", ""]


if __name__ == "__main__":
    main()
