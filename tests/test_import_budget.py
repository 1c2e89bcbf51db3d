"""What the gate path imports: the heavy libraries it does not need stay out of it.

A fresh process (``sys.modules`` there is the gate's own): importing the gate and building
the command line must not import any of them; running a whole ``tritongate gate`` may import
``scipy.special`` (the rule's t quantile and agreement test) but not ``scipy.stats`` (0.6 CPU s
to import, for wrappers of the same functions) and none of the others. Which modules, not how long: a timing
would depend on the machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.gate.helpers import pair, row

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pandas", "scipy", "torch", "triton", "matplotlib", "ruptures")
AT_RUN = tuple(m for m in HEAVY if m != "scipy")

PROBE = """
import contextlib, io, json, sys
heavy = json.loads(sys.argv[1])
def loaded():
    return sorted({m.split(".")[0] for m in sys.modules} & set(heavy))
import tritongate.gate.output, tritongate.gate.verdict, tritongate.cli.folders
from tritongate.cli import build_parser, main
build_parser().parse_args(["gate", "a", "b", "--out", "c"])
at_import = loaded()
with contextlib.redirect_stdout(io.StringIO()):
    code = main(["gate", sys.argv[2], sys.argv[3], "--out", sys.argv[4]])
print(json.dumps({"import": at_import, "run": loaded(), "code": code, "stats": "scipy.stats" in sys.modules}))
"""


def test_the_gate_path_does_not_import_heavy_libraries(tmp_path: Path):
    base, cand = pair(tmp_path, [row(), row(op="add", median=5.0)], [row(seed=1), row(op="add", median=5.5, seed=2)])
    out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(HEAVY), str(base.path), str(cand.path),
                          str(tmp_path / "verdict")], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))})
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["code"] in (0, 1) and (tmp_path / "verdict" / "verdict.json").is_file()  # the gate did run
    assert got["import"] == []
    assert not set(got["run"]) & set(AT_RUN), got["run"]
    assert got["stats"] is False  # the quantiles come from scipy.special (tritongate/gate/quantiles.py)
