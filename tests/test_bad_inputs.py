"""A corpus of bad inputs, one table: every bad argument, file, run directory, autotune
record and environment value is refused with the documented exit code and ONE bounded line
`error: ...` on stderr that names the input (plus `!!! PREFLIGHT_FAILED check=<name>` for a
preflight failure, exit 3); never a traceback, never a silent success.

Exit codes (README): 0 pass, 1 only "gate failed", 2 usage or input error, 3 preflight, 4 a bug.

How the cases stay fast (no row is measured):
- run directories are written with ``RunWriter`` from synthetic rows (as tests/gate/helpers.py);
- ``run`` cases whose input should be refused by an earlier check get ``--out`` pointing at a
  *file* (the "backstop"): the out_dir check is the last one before the device, so an input
  the library wrongly accepts fails there (exit 3, ``check=out_dir``) instead of measuring,
  and the case reports the wrong check rather than taking minutes.
- most cases call ``tritongate.cli.main`` in-process; the ci/*.py entry points run as
  subprocesses for a handful of cases.

What counts as "one line" (``assert_refused``): stderr holds exactly one line that is not
the preflight marker, a progress line (``measuring N rows into``, loop's ``1/2 record:``) or
the partial-run note; it starts with ``error: `` (``internal error (a bug in tritongate): ``
for the exit-4 case); argparse's own refusals (exit 2) are accepted in argparse's format, a
usage block then ``tritongate CMD: error: ...``.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest

from tritongate.autotune.records import Record, write_records
from tritongate.cli import main
from tritongate.rundir import RunWriter
from tritongate.schema import SCHEMA_VERSION, Correctness, MeasurementInfo, PairInfo, Row, Variant

from tests.gate.helpers import IDENTITY, samples

ROOT = Path(__file__).resolve().parents[1]

# -- the valid inputs every case starts from -------------------------------------------------

ADD_SUITE = "ops: {add: {dtypes: [float32]}}\nshapes: shapes.yaml\n"
ADD_SHAPES = "add: {shapes: [[16]]}\n"
ADD_KERNEL = "tritongate.ops.kernels.elementwise.add_kernel"


def rich_row(op: str, case: str, dtype: str, *, seed: int, side: str | None = None,
             median: float = 20.0) -> Row:
    """A row with every optional field filled (measurement, pairing, correctness, variants,
    autotune, params, flops, bytes), so a damaged copy can break any of them."""
    pairing = None
    if side is not None:
        pairing = PairInfo(pair_id="pair-smoke_20261129T120000Z", side=side,
                           went_first=tuple((i % 2 == 0) == (side == "base") for i in range(5)),
                           target_effect=0.01, detectable_effect=0.008, target_reached=True,
                           min_rounds=5, max_rounds=20)
    return Row(op=op, case=case, dtype=dtype, timer="cuda-graph", samples=samples(median, seed=seed),
               params={"shape": [4096, 4096], "seed": 7}, markers=(),
               measurement=MeasurementInfo(launches_per_sample=25, samples_per_round=5, warmup_calls=50,
                                           l2="warm", shift_bytes=(512, 1024, 2048, 4096, 8192),
                                           pairing=pairing),
               correctness=Correctness(ok=True, max_abs_err=0.0, atol=1e-3, rtol=1e-3, detail=""),
               variants=(Variant(kernel="tritongate.ops.kernels.reduction.softmax_kernel", name="BLOCK=4096 w8 s3",
                                 source_hash="src0", binary_hash=f"bin-{side or 'x'}-{seed}", launches=1),),
               flops=1e9, bytes=2e6,
               autotune={"mode": "replay", "sweep_benchmarks": 0, "kernels": [
                   {"kernel": "tritongate.ops.kernels.reduction.softmax_kernel", "used": "replayed"}]})


def _write(path: Path, identity: dict, rows, *, mode: str) -> Path:
    w = RunWriter(path, identity, mode=mode)
    for r in rows:
        w.add(r)
    w.finish()
    return path


@pytest.fixture(scope="module")
def corpus_runs(tmp_path_factory) -> dict[str, Path]:
    """A base and a candidate run of a paired check (gate and show read them), and a cpu record
    run with autotune records plus a replay of it (``run --replay-from`` reads those)."""
    root = tmp_path_factory.mktemp("corpus")
    keys = [("softmax", "4096x4096", "float16"), ("add", "1048576", "float32")]
    base = _write(root / "pair" / "base", {**IDENTITY, "pair": {"pair_id": "pair-smoke_20261129T120000Z",
                                                                   "side": "base", "build": {"python": "/b/python",
                                                                                             "env_overlay": {}}}},
                  [rich_row(*k, seed=i, side="base") for i, k in enumerate(keys)], mode="replay")
    cand = _write(root / "pair" / "candidate",
                  {**IDENTITY, "replay_from": str(root / "record"),
                   "pair": {"pair_id": "pair-smoke_20261129T120000Z", "side": "candidate",
                            "build": {"python": "/c/python", "env_overlay": {}}}},
                  [rich_row(*k, seed=10 + i, side="candidate") for i, k in enumerate(keys)], mode="replay")
    # the record of ``Ctx.suite()`` (suite.yaml): a paired run refuses a --suite the record disagrees with
    cpu_ident = {**IDENTITY, "backend": "cpu", "device": "host", "timer": "host-wall",
                 "suite": {"name": "suite", "digest": "feedface"}}
    add_row = Row(op="add", case="16", dtype="float32", timer="host-wall", samples=samples(5.0, seed=3, per_round=2),
                  measurement=MeasurementInfo(launches_per_sample=1, samples_per_round=2, warmup_calls=1, l2="warm"))
    record = _write(root / "record", cpu_ident, [add_row], mode="record")
    write_records(record, [Record(op="add", kernel=ADD_KERNEL, tuner="Autotuner", key=[16, "torch.float32"],
                                  config={"kwargs": {"BLOCK": 1024}, "num_warps": 4, "num_stages": 2,
                                          "num_ctas": 1, "maxnreg": None}, cases=("16/float32",))],
                  {"backend": "cpu", "device": "host", "triton": {"version": "3.x"}, "run": "record"})
    replay = _write(root / "replay", {**cpu_ident, "replay_from": str(record)}, [add_row], mode="replay")
    return {"base": base, "cand": cand, "record": record, "replay": replay}


# -- building a case's input ---------------------------------------------------------------

@dataclass
class Ctx:
    tmp: Path
    mp: pytest.MonkeyPatch
    runs: dict[str, Path]

    def file(self, name: str, content: str | bytes) -> str:
        path = self.tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        return str(path)

    def folder(self, name: str) -> str:
        path = self.tmp / name
        path.mkdir(parents=True, exist_ok=True)
        return str(path)

    @property
    def backstop(self) -> str:
        """An --out that is a file: see the module docstring."""
        return self.file("out-is-a-file", "not a directory\n")

    def suite(self, text: str = ADD_SUITE, shapes: str | bytes = ADD_SHAPES) -> str:
        self.file("shapes.yaml", shapes)
        return self.file("suite.yaml", text)

    def run_copy(self, which: str = "cand") -> Path:
        dst = self.tmp / f"copy-{which}"
        if not dst.exists():
            shutil.copytree(self.runs[which], dst)
        return dst

    def gate(self, cand: Path | str | None = None, base: Path | str | None = None, *extra: str) -> list[str]:
        return ["gate", str(base or self.runs["base"]), str(cand or self.runs["cand"]),
                "--out", str(self.tmp / "verdict"), *extra]

    def run(self, *extra: str, suite: str | None = None, out: str | None = None, backend: str = "cpu") -> list[str]:
        return ["run", "--suite", suite or self.suite(), "--backend", backend, "--out", out or self.backstop,
                *extra]


@dataclass(frozen=True)
class Case:
    id: str
    build: Callable[[Ctx], list[str]]
    code: int
    pattern: str  # re.search on the one error line
    check: str | None = None  # the preflight check the marker names (exit 3)


CASES: list[Case] = []


def add(id: str, build: Callable[[Ctx], list[str]], code: int, pattern: str, check: str | None = None) -> None:
    assert all(c.id != id for c in CASES), id
    CASES.append(Case(id, build, code, pattern, check))


# -- JSON editing helpers for run directories -------------------------------------------------

def _set(doc: Any, path: tuple, value: Any) -> None:
    for p in path[:-1]:
        doc = doc[p]
    doc[path[-1]] = value


def _del(doc: Any, path: tuple) -> None:
    for p in path[:-1]:
        doc = doc[p]
    del doc[path[-1]]


def edit(name: str, fn: Callable[[dict], Any]) -> Callable[[Path], None]:
    def damage(run: Path) -> None:
        doc = json.loads((run / name).read_text())
        fn(doc)
        (run / name).write_text(json.dumps(doc, allow_nan=True))
    return damage


def res_set(*path_and_value) -> Callable[[Path], None]:
    *path, value = path_and_value
    return edit("results.json", lambda d: _set(d, tuple(path), copy.deepcopy(value)))


def res_del(*path) -> Callable[[Path], None]:
    return edit("results.json", lambda d: _del(d, tuple(path)))


def ident_set(*path_and_value) -> Callable[[Path], None]:
    *path, value = path_and_value
    return edit("run_identity.json", lambda d: _set(d, tuple(path), copy.deepcopy(value)))


def ident_del(*path) -> Callable[[Path], None]:
    return edit("run_identity.json", lambda d: _del(d, tuple(path)))


def raw(name: str, content: str | bytes) -> Callable[[Path], None]:
    def damage(run: Path) -> None:
        p = run / name
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content)
    return damage


def truncate(name: str) -> Callable[[Path], None]:
    def damage(run: Path) -> None:
        text = (run / name).read_text()
        (run / name).write_text(text[: len(text) // 2])
    return damage


def remove(name: str) -> Callable[[Path], None]:
    return lambda run: (run / name).unlink()


def both(*fns) -> Callable[[Path], None]:
    def damage(run: Path) -> None:
        for f in fns:
            f(run)
    return damage


def _dup_row(d: dict) -> None:
    d["rows"].append(copy.deepcopy(d["rows"][0]))


def _edit_summary(d: dict) -> None:
    d["rows"][0]["summary"]["median"] *= 2


def _error_row_without_text(d: dict) -> None:
    d["rows"][0].update(status="error", samples=[], summary=None, error="")


def _other_device(d: dict) -> None:
    d["device"] = "NVIDIA A100"


def _results_dir(run: Path) -> None:
    (run / "results.json").unlink()
    (run / "results.json").mkdir()


R = r"results\.json"
IDN = r"run_identity\.json"

# (id, damage to a copy of the candidate run, the error line) -> a `show` case and a `gate` case
RUNDIR_CASES: list[tuple[str, Callable[[Path], None], str]] = [
    ("results-missing", remove("results.json"), rf"{R} is missing: .* is not a tritongate run directory; pass a run directory"),
    ("results-is-a-directory", _results_dir, rf"{R} is a folder: .* is not a tritongate run directory"),
    ("identity-missing", remove("run_identity.json"), rf"{IDN} is missing: .* is not a tritongate run directory; pass a run directory"),
    ("results-not-json", raw("results.json", "{this is not json"), rf"{R} is not valid JSON.*damaged"),
    ("results-empty-file", raw("results.json", ""), rf"{R} is not valid JSON"),
    ("results-truncated", truncate("results.json"), rf"{R} is not valid JSON.*re-run"),
    ("results-json-array", raw("results.json", "[]"), rf"{R} must hold a JSON object"),
    ("results-json-string", raw("results.json", '"complete"'), rf"{R} must hold a JSON object"),
    ("results-non-utf8", raw("results.json", b'{"schema_version": 2, "status": "\xff\xfe"}'),
     rf"{R} is not valid JSON"),
    ("results-deeply-nested", raw("results.json", "[" * 200_000 + "]" * 200_000), rf"{R} is not valid JSON"),
    ("sample-nan", res_set("rows", 0, "samples", 0, float("nan")),
     rf"{R}: rows\[0\]\.samples\[0\]: expected a finite number"),
    ("sample-infinity", res_set("rows", 0, "samples", 1, float("inf")),
     rf"{R}: rows\[0\]\.samples\[1\]: expected a finite number"),
    ("sample-minus-infinity", res_set("rows", 1, "samples", 0, float("-inf")),
     rf"{R}: rows\[1\]\.samples\[0\]: expected a"),
    ("sample-negative", res_set("rows", 0, "samples", 2, -1.5),
     rf"{R}: rows\[0\]\.samples\[2\]: expected a number > 0(\.0)?, got -1\.5"),
    ("sample-zero", res_set("rows", 0, "samples", 0, 0), rf"{R}: rows\[0\]\.samples\[0\]: expected a number > 0(\.0)?, got 0"),
    ("sample-string", res_set("rows", 0, "samples", 0, "12.5"),
     rf"{R}: rows\[0\]\.samples\[0\]: expected a number, got the text '12\.5'"),
    ("sample-bool", res_set("rows", 0, "samples", 0, True), rf"{R}: rows\[0\]\.samples\[0\]: expected a number, got true"),
    ("sample-dict", res_set("rows", 0, "samples", 0, {"us": 1.0}), rf"{R}: rows\[0\]\.samples\[0\]: expected a number"),
    ("sample-null", res_set("rows", 0, "samples", 0, None), rf"{R}: rows\[0\]\.samples\[0\]: expected a number, got null"),
    ("samples-string", res_set("rows", 0, "samples", "1.0 1.1 0.9"), rf"{R}: rows\[0\]\.samples: expected a list"),
    ("samples-missing", res_del("rows", 0, "samples"), rf"{R}: rows\[0\]\.samples: is required but missing"),
    ("samples-empty-ok-row", both(res_set("rows", 0, "samples", []), res_set("rows", 0, "summary", None)),
     rf"{R}: rows\[0\]: .*ok row needs samples"),
    ("run-status-wrong", res_set("status", "done"), rf"{R}: status: expected one of 'running', 'complete'"),
    ("row-status-wrong", res_set("rows", 0, "status", "crashed"), rf"{R}: rows\[0\]\.status: expected one of"),
    ("mode-wrong", res_set("mode", "live"), rf"{R}: mode: expected one of 'record' or 'replay', got the text 'live'"),
    ("schema-missing", res_del("schema_version"), rf"{R} has no integer schema_version"),
    ("schema-older", res_set("schema_version", 0), rf"{R} uses schema 0 .*reads schemas 1-{SCHEMA_VERSION}.*Re-record"),
    ("schema-newer", both(res_set("schema_version", 99), res_set("tool_version", "9.0.0")),
     rf"{R} uses schema 99 \(tritongate 9\.0\.0\).*upgrade tritongate"),
    ("schema-newer-by-this-version", res_set("schema_version", 99),
     rf"{R} uses schema 99 .*this version never writes it: the file was changed after it was written; re-record"),
    ("schema-older-by-this-version", res_set("schema_version", -1),
     rf"{R} uses schema -1 .*no tritongate writes that schema"),
    ("schema-bool", res_set("schema_version", True), rf"{R} has no integer schema_version"),
    ("schema-string", res_set("schema_version", "2"), rf"{R} has no integer schema_version"),
    ("schema-float", res_set("schema_version", 2.0), rf"{R} has no integer schema_version"),
    ("incomplete-running", res_set("status", "running"), r"is incomplete \(running, 2 rows\).*Re-run"),
    ("incomplete-failed", both(res_set("status", "failed"), res_set("failure", "worker died")),
     r"is incomplete \(failed, 2 rows\): worker died"),
    ("duplicate-rows", edit("results.json", _dup_row), rf"{R}: rows\[2\]: a second row for .*appears once"),
    ("edited-summary", edit("results.json", _edit_summary), rf"{R}: rows\[0\]: .*summary median .*edited"),
    ("edited-summary-q1", edit("results.json", lambda d: d["rows"][0]["summary"].__setitem__("q1", 0.001)),
     rf"{R}: rows\[0\]: .*summary q1 .*edited"),
    ("edited-summary-q3", edit("results.json", lambda d: d["rows"][0]["summary"].__setitem__("q3", 1000000.0)),
     rf"{R}: rows\[0\]: .*summary q3 .*edited"),
    ("edited-summary-min", edit("results.json", lambda d: d["rows"][0]["summary"].__setitem__("min", -1.0)),
     rf"{R}: rows\[0\]: .*summary min .*edited"),
    ("edited-summary-max", edit("results.json", lambda d: d["rows"][0]["summary"].__setitem__("max", 1000000000.0)),
     rf"{R}: rows\[0\]: .*summary max .*edited"),
    ("edited-summary-n", edit("results.json", lambda d: d["rows"][0]["summary"].__setitem__("n", 3)),
     rf"{R}: rows\[0\]: .*summary n .*edited"),
    ("edited-summary-mean", edit("results.json", lambda d: d["rows"][0]["summary"].__setitem__("mean", 123456.0)),
     rf"{R}: rows\[0\]: .*summary mean .*edited"),
    ("edited-summary-iqr", edit("results.json", lambda d: d["rows"][0]["summary"].__setitem__("iqr", 99.0)),
     rf"{R}: rows\[0\]: .*summary iqr .*edited"),
    ("summary-string", res_set("rows", 0, "summary", "fast"), rf"{R}: rows\[0\]\.summary: expected a mapping"),
    ("rows-not-a-list", res_set("rows", {"0": {}}), rf"{R}: rows: expected a list"),
    ("rows-missing", res_del("rows"), rf"{R}: rows: is required but missing"),
    ("op-empty", res_set("rows", 0, "op", ""), rf"{R}: rows\[0\]\.op: expected a non-empty string"),
    ("op-missing", res_del("rows", 0, "op"), rf"{R}: rows\[0\]\.op: is required but missing"),
    ("op-number", res_set("rows", 0, "op", 5), rf"{R}: rows\[0\]\.op: expected a string, got 5"),
    ("case-list", res_set("rows", 1, "case", ["1048576"]), rf"{R}: rows\[1\]\.case: expected a string"),
    ("error-row-without-text", edit("results.json", _error_row_without_text), rf"{R}: rows\[0\]: .*error text"),
    ("launches-zero", res_set("rows", 0, "measurement", "launches_per_sample", 0),
     rf"{R}: rows\[0\]\.measurement\.launches_per_sample: expected a number >= 1"),
    ("pairing-side-wrong", res_set("rows", 0, "measurement", "pairing", "side", "middle"),
     rf"{R}: rows\[0\]\.measurement\.pairing\.side: expected one of 'base' or 'candidate', got the text 'middle'"),
    ("pairing-target-negative", res_set("rows", 0, "measurement", "pairing", "target_effect", -0.01),
     rf"{R}: rows\[0\]\.measurement\.pairing\.target_effect: expected a number >= 0"),
    ("variant-kernel-empty", res_set("rows", 0, "variants", 0, "kernel", ""),
     rf"{R}: rows\[0\]\.variants\[0\]\.kernel: expected a non-empty string"),
    ("correctness-ok-string", res_set("rows", 0, "correctness", "ok", "yes"),
     rf"{R}: rows\[0\]\.correctness\.ok: expected true or false"),
    ("markers-number", res_set("rows", 0, "markers", [1]), rf"{R}: rows\[0\]\.markers\[0\]: expected a string"),
    ("params-list", res_set("rows", 0, "params", []), rf"{R}: rows\[0\]\.params: expected a mapping"),
    ("flops-negative", res_set("rows", 0, "flops", -1), rf"{R}: rows\[0\]\.flops: expected a number >= 0"),
    ("autotune-sweeps-string", res_set("rows", 0, "autotune", "sweep_benchmarks", "3"),
     rf"{R}: rows\[0\]\.autotune\.sweep_benchmarks: expected an integer"),
    ("skipped-with-samples", res_set("rows", 0, "skipped", "identical_binary"),
     rf"{R}: rows\[0\]: .*skipped row is ok and has no samples"),
    ("skipped-unknown", res_set("rows", 0, "skipped", "lazy"), rf"{R}: rows\[0\]\.skipped: expected one of"),
    ("identity-device-list", ident_set("device", [1]), rf"{IDN}: device: expected a string, got a list \[1\]"),
    ("identity-pair-string", ident_set("pair", "x"), rf"{IDN}: pair: expected a mapping, got the text 'x'"),
    ("identity-codegen-env-int", ident_set("codegen_env", {"A": 1}), rf"{IDN}: codegen_env\.A: expected a string"),
    ("identity-codegen-env-list", ident_set("codegen_env", ["TRITON_INTERPRET"]), rf"{IDN}: codegen_env: expected a mapping"),
    ("identity-schema-missing", ident_del("schema_version"), rf"{IDN} has no integer schema_version"),
    ("identity-schema-newer", both(ident_set("schema_version", SCHEMA_VERSION + 1), ident_set("tool_version", "9.0.0")),
     rf"{IDN} uses schema {SCHEMA_VERSION + 1} .*upgrade tritongate"),
    ("identity-json-array", raw("run_identity.json", "[1, 2]"), rf"{IDN} must hold a JSON object"),
    ("identity-not-json", raw("run_identity.json", "device: H200\n"), rf"{IDN} is not valid JSON"),
    ("identity-measure-config-int", ident_set("measure_config", 5), rf"{IDN}: measure_config: expected a mapping"),
    ("identity-driver-int", ident_set("gpu_state_before", "driver", 580), rf"{IDN}: gpu_state_before\.driver: expected a string"),
    ("identity-suite-list", ident_set("suite", ["pr"]), rf"{IDN}: suite: expected a mapping"),
    ("identity-mode-wrong", ident_set("mode", "live"), rf"{IDN}: mode: expected one of"),
    ("identity-pair-side-wrong", ident_set("pair", "side", "left"), rf"{IDN}: pair\.side: expected one of"),
    ("identity-env-overlay-int", ident_set("pair", "build", "env_overlay", {"DISABLE_MMA_V3": 1}),
     rf"{IDN}: pair\.build\.env_overlay\.DISABLE_MMA_V3: expected a string"),
    ("identity-commit-mapping", ident_set("commit", {"sha": "abc"}), rf"{IDN}: commit: expected a string"),
    # markers are `KIND key=value ... reason=<text>` (README); the gate parses them
    ("marker-free-text", res_set("rows", 0, "markers", ["not a marker"]), rf"{R}: rows\[0\]\.markers\[0\]"),
    ("marker-empty", res_set("rows", 1, "markers", [""]), rf"{R}: rows\[1\]\.markers\[0\]"),
    ("marker-field-without-value", res_set("rows", 0, "markers", ["AUTOTUNE_REPLAY_FALLBACK reason"]),
     rf"{R}: rows\[0\]\.markers\[0\]"),
]

for _id, _damage, _pattern in RUNDIR_CASES:
    def _show(x: Ctx, damage=_damage) -> list[str]:
        run = x.run_copy()
        damage(run)
        return ["show", str(run), "--color", "never"]

    def _gate(x: Ctx, damage=_damage) -> list[str]:
        run = x.run_copy()
        damage(run)
        return x.gate(cand=run)

    add(f"show-{_id}", _show, 2, _pattern)
    add(f"gate-{_id}", _gate, 2, _pattern)


def _damaged_base(x: Ctx) -> list[str]:
    run = x.run_copy("base")
    res_set("rows", 0, "samples", 0, float("nan"))(run)
    return x.gate(base=run)


add("gate-damaged-base", _damaged_base, 2, rf"base.*{R}: rows\[0\]\.samples\[0\]: expected a finite number")


# -- arguments -----------------------------------------------------------------------------

add("no-command", lambda x: [], 2, r"required: COMMAND")
add("unknown-command", lambda x: ["frobnicate"], 2, r"invalid choice: 'frobnicate'")
add("unknown-global-option", lambda x: ["--bogus", "ops"], 2, r"unrecognized arguments: --bogus")
add("run-unknown-option", lambda x: x.run("--bogus"), 2, r"unrecognized arguments: --bogus")
add("run-unknown-option-typo", lambda x: x.run("--rouns", "3"), 2, r"unrecognized arguments: --rouns")
add("run-rounds-0", lambda x: x.run("--rounds", "0"), 2, r"--rounds: expected a whole number >= 1, got '0'")
add("run-rounds-negative", lambda x: x.run("--rounds", "-1"), 2, r"--rounds: expected a whole number >= 1, got '-1'")
add("run-rounds-abc", lambda x: x.run("--rounds", "abc"), 2, r"--rounds: expected a whole number >= 1, got 'abc'")
add("run-rounds-float", lambda x: x.run("--rounds", "1.5"), 2, r"--rounds: expected a whole number >= 1, got '1\.5'")
add("run-samples-per-round-0", lambda x: x.run("--samples-per-round", "0"), 2,
    r"--samples-per-round: expected a whole number >= 1, got '0'")
add("run-l2-unknown", lambda x: x.run("--l2", "cold"), 2, r"--l2: invalid choice: 'cold'")
add("run-color-unknown", lambda x: x.run("--color", "sometimes"), 2, r"--color: invalid choice")
add("run-backend-nosuch", lambda x: x.run(backend="nosuch"), 3, r"unknown backend 'nosuch'; known: auto, cuda", "backend")
add("run-backend-empty", lambda x: x.run(backend=""), 2, r"--backend: must not be empty")
add("run-suite-missing-arg", lambda x: ["run", "--out", x.backstop], 2, r"required: --suite")
add("run-out-missing-arg", lambda x: ["run", "--suite", x.suite()], 2, r"required: --out")
add("run-suite-option-without-value", lambda x: ["run", "--out", x.backstop, "--suite"], 2,
    r"--suite: expected one argument")
add("run-suite-is-a-directory", lambda x: x.run(suite=x.folder("suites")), 3, r"suites is a directory, not a YAML file",
    "suite_file")
add("run-suite-file-missing", lambda x: x.run(suite=str(x.tmp / "nosuch.yaml")), 3,
    r"suite file .*nosuch\.yaml does not exist; pass the path of a suite YAML, or a builtin suite by its name "
    r"\(.*smoke", "suite_file")
add("run-suite-relative-path-missing", lambda x: x.run(suite="./smoke"), 3,
    r"suite file \./smoke does not exist; .* builtin suite by its name", "suite_file")
add("run-suite-name-unknown", lambda x: x.run(suite="nosuchsuite"), 3,
    r"no suite named 'nosuchsuite' in .*builtin suites: .*smoke", "suite_file")
add("run-suite-empty-file", lambda x: x.run(suite=x.file("empty.yaml", "")), 3, r"empty\.yaml lists no ops", "suite_empty")
add("run-suite-comments-only", lambda x: x.run(suite=x.file("c.yaml", "# nothing here\n")), 3, r"c\.yaml lists no ops",
    "suite_empty")
add("run-dtypes-nosuch", lambda x: x.run("--dtypes", "nosuch"), 3, r"--dtypes names \['nosuch'\], which no op supports",
    "dtype")
add("run-dtypes-nosuch-in-list", lambda x: x.run("--dtypes", "float32,float64"), 3, r"--dtypes names \['float64'\]", "dtype")
add("run-ops-nosuch", lambda x: x.run("--ops", "nosuch"), 3,
    r"--ops names unknown op\(s\) \['nosuch'\]; suite .* lists add", "unknown_op")
add("run-ops-not-in-suite", lambda x: x.run("--ops", "softmax"), 3, r"--ops asks for \['softmax'\], which suite .*does not list",
    "unknown_op")
add("run-out-is-a-file", lambda x: x.run(out=x.file("out.txt", "x")), 3, r"cannot write to output directory .*out\.txt",
    "out_dir")
add("run-out-under-a-file", lambda x: x.run(out=str(Path(x.file("f.txt", "x")) / "runs")), 3,
    r"cannot write to output directory .*f\.txt/runs", "out_dir")
add("run-out-in-proc", lambda x: x.run(out="/proc/tritongate-no-such-dir"), 3,
    r"cannot write to output directory /proc/tritongate-no-such-dir", "out_dir")
add("run-shape-file-missing", lambda x: x.run("--shape-file", str(x.tmp / "nosuch-shapes.yaml")), 3,
    r"nosuch-shapes\.yaml does not exist", "shape_file")
add("run-shape-file-is-a-directory", lambda x: x.run("--shape-file", x.folder("shapesdir")), 3,
    r"shapesdir is a directory, not a YAML file", "shape_file")
add("run-replay-from-missing", lambda x: x.run("--replay-from", str(x.tmp / "no-run")), 3,
    r"the record to replay, .*no-run, is not a directory", "replay_from")
add("run-replay-from-a-file", lambda x: x.run("--replay-from", x.file("rec.json", "{}")), 3,
    r"the record to replay, .*rec\.json, is not a directory", "replay_from")
# an empty value (CI's `--replay-from "$BASELINE"` with the variable unset) is not "no option"
add("run-replay-from-empty", lambda x: x.run("--replay-from", ""), 2, r"--replay-from: must not be empty")
add("run-shape-file-empty", lambda x: x.run("--shape-file", ""), 2, r"--shape-file: must not be empty")


def _interpret_with_gpu_backend(x: Ctx) -> list[str]:
    x.mp.setenv("TRITON_INTERPRET", "1")
    x.mp.delenv("TRITON_DISABLE_LINE_INFO", raising=False)
    return x.run(backend="cuda")


def _no_device(backend: str) -> Callable[[Ctx], list[str]]:
    def build(x: Ctx) -> list[str]:
        x.mp.delenv("TRITON_INTERPRET", raising=False)
        x.mp.delenv("TRITON_DISABLE_LINE_INFO", raising=False)
        return x.run(backend=backend, out=x.folder("out"))
    return build


add("run-interpreter-with-cuda", _interpret_with_gpu_backend, 3, r"TRITON_INTERPRET=1 is set but the backend is cuda",
    "interpreter")
add("run-musa-without-torch-musa", _no_device("musa"), 3, r"backend musa needs the torch_musa package", "device")
add("run-ascend-without-torch-npu", _no_device("npu"), 3, r"backend ascend needs the torch_npu package", "device")

add("gate-unknown-option", lambda x: x.gate(None, None, "--bogus"), 2, r"unrecognized arguments: --bogus")
add("gate-missing-candidate", lambda x: ["gate", str(x.runs["base"]), "--out", str(x.tmp / "v")], 2,
    r"required: CAND_RUN")
add("gate-missing-out", lambda x: ["gate", str(x.runs["base"]), str(x.runs["cand"])], 2, r"required: --out")
add("gate-out-is-a-run-directory", lambda x: ["gate", str(x.runs["base"]), str(x.runs["cand"]), "--out", str(x.run_copy())],
    2, r"--out \S+copy-cand is a run directory: a verdict written there would sit among the run's own files")
add("gate-extra-positional", lambda x: x.gate(None, None, str(x.runs["base"])), 2, r"unrecognized arguments")
add("gate-min-effect-negative", lambda x: x.gate(None, None, "--min-effect", "-1"), 2,
    r"--min-effect: expected a fraction: 0\.01 is 1 %, from 0 to below 1, got '-1'")
add("gate-min-effect-abc", lambda x: x.gate(None, None, "--min-effect", "abc"), 2,
    r"--min-effect: expected a fraction: 0\.01 is 1 %, got 'abc'")
add("gate-min-effect-per-cent", lambda x: x.gate(None, None, "--min-effect", "2"), 2,
    r"--min-effect: expected a fraction: 0\.01 is 1 %, got '2' \(that would be 200%\); for 2 % pass 0\.02")
add("gate-min-effect-nan", lambda x: x.gate(None, None, "--min-effect", "nan"), 2, r"min(imum)?[ _-]effect.*nan")
add("gate-min-effect-inf", lambda x: x.gate(None, None, "--min-effect", "inf"), 2, r"min(imum)?[ _-]effect.*inf")
add("gate-noise-z-negative", lambda x: x.gate(None, None, "--noise-z", "-1"), 2, r"noise_z must be a finite number >= 0, got -1")
add("gate-noise-z-nan", lambda x: x.gate(None, None, "--noise-z", "nan"), 2, r"noise[_-]z.*nan")
add("gate-min-samples-0", lambda x: x.gate(None, None, "--min-samples", "0"), 2, r"min_samples must be an integer >= 1, got 0")
add("gate-min-samples-float", lambda x: x.gate(None, None, "--min-samples", "2.5"), 2, r"--min-samples: invalid int value")
add("gate-max-missing-negative", lambda x: x.gate(None, None, "--max-missing", "-1"), 2, r"max_missing must be an integer >= 0, got -1")
add("gate-policy-missing", lambda x: x.gate(None, None, "--policy", str(x.tmp / "nosuch.yaml")), 2,
    r"policy file .*nosuch\.yaml does not exist")
add("gate-policy-is-a-directory", lambda x: x.gate(None, None, "--policy", x.folder("pol")), 2,
    r"policy file .*pol is a directory")
add("gate-policy-empty", lambda x: x.gate(None, None, "--policy", ""), 2, r"policy")
add("gate-policy-min-effect-0", lambda x: x.gate(None, None, "--policy", x.file("p0.yaml", "min_effect: 0\n")), 2,
    r"min_effect must be a finite number > 0, got 0\.0 \(from --min-effect or the policy file\)")
add("gate-policy-op-min-effect-0", lambda x: x.gate(None, None, "--policy",
                                                    x.file("p1.yaml", "ops:\n  add: {min_effect: 0.0}\n")), 2,
    r"ops\.add\.min_effect must be a finite number > 0, got 0\.0")

add("gate-same-run-twice", lambda x: x.gate(x.runs["cand"], x.runs["cand"]), 2,
    r"given as both the base and the candidate run")
add("gate-same-run-other-spelling", lambda x: x.gate(str(x.runs["cand"]) + "/.", x.runs["cand"]), 2,
    r"given as both the base and the candidate run")
add("gate-base-missing", lambda x: x.gate(None, x.tmp / "no-such-run"), 2, r"no-such-run is not a directory; pass a run directory")
add("gate-base-is-a-file", lambda x: x.gate(None, x.file("run.txt", "x")), 2, r"run\.txt is not a directory")
add("gate-out-is-a-file", lambda x: ["gate", str(x.runs["base"]), str(x.runs["cand"]), "--out", x.file("v.txt", "x")],
    2, r"v\.txt.*(exists|not a directory)")
add("gate-out-in-proc", lambda x: ["gate", str(x.runs["base"]), str(x.runs["cand"]), "--out", "/proc/tritongate-v"], 2,
    r"/proc/tritongate-v")


def _identity_mismatch(x: Ctx) -> list[str]:
    run = x.run_copy()
    edit("run_identity.json", _other_device)(run)
    return x.gate(cand=run)


add("gate-identity-mismatch", _identity_mismatch, 2,
    r"not measured alike \(GPU model: base 'NVIDIA H200', candidate 'NVIDIA A100'\).*--allow-mismatch")


def _step_summary(kind: str) -> Callable[[Ctx], list[str]]:
    def build(x: Ctx) -> list[str]:
        target = x.folder("summary-dir") if kind == "dir" else str(x.tmp / "no-such-dir" / "summary.md")
        x.mp.setenv("GITHUB_STEP_SUMMARY", target)
        return x.gate()
    return build


add("env-step-summary-is-a-directory", _step_summary("dir"), 2, r"GITHUB_STEP_SUMMARY.*summary-dir|summary-dir.*GITHUB_STEP_SUMMARY")
add("env-step-summary-missing-folder", _step_summary("missing"), 2,
    r"GITHUB_STEP_SUMMARY.*no-such-dir|no-such-dir.*GITHUB_STEP_SUMMARY")

add("show-unknown-option", lambda x: ["show", str(x.runs["cand"]), "--bogus"], 2, r"unrecognized arguments: --bogus")
add("show-missing-run", lambda x: ["show"], 2, r"required: FOLDER")
add("show-no-such-dir", lambda x: ["show", str(x.tmp / "nope")], 2, r"nope is not a directory; pass a run directory")
add("show-a-file", lambda x: ["show", x.file("r.json", "{}")], 2, r"r\.json is not a directory")
add("show-empty-dir", lambda x: ["show", x.folder("empty-run")], 2,
    r"expected a run directory: .*empty-run/results\.json is missing: .*empty-run is not a tritongate run directory; pass")
add("show-color-unknown", lambda x: ["show", str(x.runs["cand"]), "--color", "pink"], 2, r"--color: invalid choice: 'pink'")
add("ops-unknown-option", lambda x: ["ops", "--bogus"], 2, r"unrecognized arguments: --bogus")
add("ops-extra-positional", lambda x: ["ops", "add"], 2, r"unrecognized arguments: add")


def pair(x: Ctx, *extra: str, out: str | None = None) -> list[str]:
    return ["pair", str(x.runs["record"]), "--suite", x.suite(), "--backend", "cpu", "--out", out or x.backstop, *extra]


add("pair-unknown-option", lambda x: pair(x, "--bogus"), 2, r"unrecognized arguments: --bogus")
add("pair-missing-baseline", lambda x: ["pair", "--suite", "smoke", "--out", x.backstop], 2, r"required: BASELINE_RECORD")
def _record_without_suite(x: Ctx) -> list[str]:
    record = x.run_copy("record")
    path = record / "run_identity.json"
    path.write_text(json.dumps({k: v for k, v in json.loads(path.read_text()).items() if k != "suite"}))
    return ["pair", str(record), "--out", x.backstop]


add("pair-record-names-no-suite", _record_without_suite, 2, r"run_identity\.json names no suite; pass --suite")
add("pair-record-suite-gone", lambda x: ["pair", str(x.runs["record"]), "--out", x.backstop], 2,
    r"recorded with suite 'suite' \(the record does not say from which file\), and no builtin suite has that name; "
    r"pass --suite PATH")
add("pair-suite-disagrees", lambda x: ["pair", str(x.runs["record"]), "--suite", "smoke", "--out", x.backstop], 2,
    r"--suite smoke is suite 'smoke', but BASELINE_RECORD .*record was recorded with suite 'suite'")
add("pair-row-timeout-0", lambda x: pair(x, "--row-timeout", "0"), 2, r"--row-timeout must be > 0 seconds, got 0")
add("pair-row-timeout-negative", lambda x: pair(x, "--row-timeout", "-5"), 2, r"--row-timeout must be > 0")
add("pair-row-timeout-nan", lambda x: pair(x, "--row-timeout", "nan"), 2, r"--row-timeout.*nan")
add("pair-row-timeout-abc", lambda x: pair(x, "--row-timeout", "soon"), 2, r"--row-timeout: expected a number, got 'soon'")
add("pair-max-rounds-abc", lambda x: pair(x, "--max-rounds", "many"), 2, r"--max-rounds: expected a whole number")
add("pair-max-rounds-below-rounds", lambda x: pair(x, "--max-rounds", "3", out=x.folder("mr3")), 2,
    r"bad pairing schedule: --max-rounds \(3\) must be at least --rounds \(6\)")
add("pair-min-effect-0", lambda x: pair(x, "--min-effect", "0"), 2, r"--min-effect: .*above 0, got '0'.*pass 0\.005")
add("pair-inputs-unknown", lambda x: pair(x, "--inputs", "theirs"), 2, r"--inputs: invalid choice: 'theirs'")
add("pair-base-env-no-equals", lambda x: pair(x, "--base-env", "DISABLE_MMA_V3"), 2,
    r"--base-env 'DISABLE_MMA_V3': expected NAME=VALUE")
add("pair-cand-env-bad-name", lambda x: pair(x, "--cand-env", "1BAD=x"), 2, r"--cand-env '1BAD=x': expected NAME=VALUE")
add("pair-cand-env-empty-name", lambda x: pair(x, "--cand-env", "=1"), 2, r"--cand-env '=1': expected NAME=VALUE")
add("pair-base-python-missing", lambda x: pair(x, "--base-python", str(x.tmp / "venv/bin/python")), 2,
    r"--base-python .*venv/bin/python: not an executable file")
add("pair-cand-python-a-directory", lambda x: pair(x, "--cand-python", x.folder("venv")), 2,
    r"--cand-python .*venv: not an executable file")
add("pair-cand-python-not-executable", lambda x: pair(x, "--cand-python", x.file("python", "#!/bin/sh\n")), 2,
    r"--cand-python .*python: not an executable file")


def _executable(x: Ctx, name: str, content: str | bytes) -> str:
    path = x.file(name, content)
    os.chmod(path, 0o755)
    return path


for _id, _content in [("text", "this is not a program\n"), ("empty", ""), ("binary-junk", b"\x00\x01\x02\x03junk"),
                      ("python-source", "import sys\nprint(sys.version)\n")]:
    add(f"pair-cand-python-executable-{_id}", lambda x, c=_content: pair(x, "--cand-python", _executable(x, "py", c)), 2,
        r"--cand-python .*py: not a program \(neither a native executable nor a #! script; it starts with .*\), "
        r"though it has the execute bit")
add("pair-base-python-executable-text", lambda x: pair(x, "--base-python", _executable(x, "py", "hello\n")), 2,
    r"--base-python .*py: not a program")
add("prescreen-baseline-missing", lambda x: ["prescreen", "--baseline", str(x.tmp / "nope"), "--base-python",
                                             sys.executable, "--cand-python", sys.executable, "--out", x.backstop], 2,
    r"--baseline .*nope: no such folder; pass the record run")
def _indexed_record(x: Ctx) -> str:
    from tritongate.ir.index import index_text

    run = x.run_copy("record")
    (run / "ttgir").mkdir(exist_ok=True)
    (run / "ttgir" / "index.tsv").write_text(index_text([]))  # no launches: enough to reach the builds' probes
    return str(run)


add("prescreen-cand-python-not-python", lambda x: ["prescreen", "--baseline", _indexed_record(x), "--base-python",
                                                   sys.executable, "--cand-python", "/bin/ls", "--out",
                                                   str(x.tmp / "ps")], 2,
    r"/bin/ls: not a Python interpreter; pass the venv's bin/python")
add("pair-min-effect-negative", lambda x: pair(x, "--min-effect", "-0.5"), 2, r"--min-effect: expected a fraction.*got '-0\.5'")
add("pair-policy-missing", lambda x: pair(x, "--policy", str(x.tmp / "p.yaml")), 2, r"policy file .*p\.yaml does not exist")
add("pair-out-is-a-file", lambda x: pair(x), 3, r"cannot write to output directory .*out-is-a-file", "out_dir")

add("loop-unknown-option", lambda x: ["loop", "--bogus"], 2, r"unrecognized arguments: --bogus")
add("loop-min-effect-negative", lambda x: ["loop", "--out", x.backstop, "--min-effect", "-1"], 2,
    r"--min-effect: expected a fraction.*got '-1'")
add("loop-base-env-no-equals", lambda x: ["loop", "--out", x.backstop, "--base-env", "X"], 2, r"--base-env 'X': expected NAME=VALUE")
add("loop-base-python-missing", lambda x: ["loop", "--out", x.folder("loop"), "--base-python", str(x.tmp / "nopython")],
    2, r"cannot start the base build's interpreter .*nopython")
add("loop-rounds-0", lambda x: ["loop", "--suite", x.suite(), "--backend", "cpu", "--out", x.backstop, "--rounds", "0"],
    2, r"--rounds: expected a whole number >= 1, got '0'")
add("loop-suite-missing", lambda x: ["loop", "--suite", str(x.tmp / "nosuch.yaml"), "--backend", "cpu", "--out",
                                     x.backstop], 3, r"nosuch\.yaml does not exist", "suite_file")


# -- suite files -----------------------------------------------------------------------------

def _alias_bomb(top: str) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 13):
        prev = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([prev] * 9)}]")
    return top + "\n".join(lines) + "\n"


DEEP = "x: " + "[" * 200 + "]" * 200 + "\n"
HUGE = "# " + "x" * (1 << 20) + "\n"

SUITE_CASES: list[tuple[str, str | bytes, str, str]] = [  # id, suite text, check, pattern
    ("malformed", "ops: {add: [\n", "suite_file", r"suite\.yaml is not valid YAML at line \d+, column \d+"),
    ("unclosed-quote", "ops: {add: {}}\ndescription: 'oops\n", "suite_file", r"suite\.yaml is not valid YAML"),
    ("list-at-top", "- add\n- softmax\n", "suite_file", r"suite\.yaml: a suite must be a mapping .*got list"),
    ("scalar-at-top", "add softmax\n", "suite_file", r"suite\.yaml: a suite must be a mapping .*got str"),
    ("ops-list", "ops: [add, softmax]\nshapes: shapes.yaml\n", "suite_file",
     r"suite\.yaml: ops: expected a mapping, got a list \['add', 'softmax'\]"),
    ("ops-string", "ops: add\nshapes: shapes.yaml\n", "suite_file", r"suite\.yaml: ops: expected a mapping, got the text 'add'"),
    ("op-entry-number", "ops: {add: 5}\nshapes: shapes.yaml\n", "suite_file", r"suite\.yaml: ops\.add: expected a mapping, got 5"),
    ("op-entry-list", "ops: {add: [float32]}\nshapes: shapes.yaml\n", "suite_file", r"suite\.yaml: ops\.add: expected a mapping"),
    ("dtypes-string-as-list", "dtypes: float16\nops: {add: {}}\nshapes: shapes.yaml\n", "suite_file",
     r"suite\.yaml: dtypes: expected a list, got the text 'float16'"),
    ("dtypes-empty", "dtypes: []\nops: {add: {}}\nshapes: shapes.yaml\n", "suite_file", r"suite\.yaml: dtypes: expected at least 1 item"),
    ("dtype-number", "ops: {add: {dtypes: [16]}}\nshapes: shapes.yaml\n", "suite_file",
     r"suite\.yaml: ops\.add\.dtypes\[0\]: expected a string, got 16"),
    ("dtype-bool", "ops: {add: {dtypes: [yes]}}\nshapes: shapes.yaml\n", "suite_file",
     r"suite\.yaml: ops\.add\.dtypes\[0\]: expected a string, got true"),
    ("description-number", "description: 5\nops: {add: {}}\nshapes: shapes.yaml\n", "suite_file",
     r"suite\.yaml: description: expected a string, got 5"),
    ("description-too-long", "description: " + "d" * 3000 + "\nops: {add: {}}\nshapes: shapes.yaml\n", "suite_file",
     r"suite\.yaml: description: expected at most 2000 characters"),
    ("shapes-number", "ops: {add: {}}\nshapes: 5\n", "suite_file", r"suite\.yaml: shapes: expected a string, got 5"),
    ("shapes-list", "ops: {add: {}}\nshapes: [shapes.yaml]\n", "suite_file", r"suite\.yaml: shapes: expected a string, got a list"),
    ("unknown-top-key", "opps: {add: {}}\nops: {add: {}}\nshapes: shapes.yaml\n", "suite_file",
     r"suite\.yaml: opps: is not a known key \(allowed: .*ops"),
    ("unknown-op-key", "ops: {add: {dtype: [float32]}}\nshapes: shapes.yaml\n", "suite_file",
     r"suite\.yaml: ops\.add\.dtype: is not a known key \(allowed: dtypes, sample_ms, shapes\)"),
    ("op-name-int", "ops: {1: {}}\nshapes: shapes.yaml\n", "suite_file", r"suite\.yaml: ops: the key 1 must be text"),
    ("op-name-empty", "ops: {'': {}}\nshapes: shapes.yaml\n", "suite_file",
     r"suite\.yaml: ops: a key is empty; name it"),
    ("inline-bool-dim", "ops: {add: {shapes: [[true]]}}\n", "suite_file",
     r"suite\.yaml: ops\.add\.shapes\[0\]\[0\]: expected an integer, got true"),
    ("inline-negative-dim", "ops: {add: {shapes: [[-4]]}}\n", "suite_file",
     r"suite\.yaml: ops\.add\.shapes\[0\]\[0\]: expected a number >= 1, got -4"),
    ("inline-zero-dim", "ops: {add: {shapes: [[16, 0]]}}\n", "suite_file",
     r"suite\.yaml: ops\.add\.shapes\[0\]\[1\]: expected a number >= 1, got 0"),
    ("inline-float-dim", "ops: {add: {shapes: [[1.5]]}}\n", "suite_file", r"suite\.yaml: ops\.add\.shapes\[0\]\[0\]: expected an integer"),
    ("inline-string-dim", "ops: {add: {shapes: [['16']]}}\n", "suite_file",
     r"suite\.yaml: ops\.add\.shapes\[0\]\[0\]: expected an integer, got the text '16'"),
    ("inline-shapes-string", "ops: {add: {shapes: '16'}}\n", "suite_file",
     r"suite\.yaml: ops\.add\.shapes: expected a list, got the text '16'"),
    ("inline-shapes-flat", "ops: {add: {shapes: [16, 32]}}\n", "suite_file", r"suite\.yaml: ops\.add\.shapes\[0\]: expected a list, got 16"),
    ("inline-shape-empty", "ops: {add: {shapes: [[]]}}\n", "suite_file", r"suite\.yaml: ops\.add\.shapes\[0\]: expected at least 1 item"),
    ("inline-shapes-empty", "ops: {add: {shapes: []}}\n", "suite_file", r"suite\.yaml: ops\.add\.shapes: expected at least 1 item"),
    ("modules-string", "modules: mymod\nops: {add: {}}\nshapes: shapes.yaml\n", "suite_file",
     r"suite\.yaml: modules: expected a list, got the text 'mymod'"),
    ("modules-bad-name", "modules: [1bad]\nops: {add: {}}\nshapes: shapes.yaml\n", "suite_file",
     r"suite\.yaml: modules\[0\]: expected text matching"),
    ("modules-injection", "modules: ['os; rm -rf /']\nops: {add: {}}\nshapes: shapes.yaml\n", "suite_file",
     r"suite\.yaml: modules\[0\]: expected text matching"),
    ("modules-relative", "modules: [.hidden]\nops: {add: {}}\nshapes: shapes.yaml\n", "suite_file",
     r"suite\.yaml: modules\[0\]: expected text matching"),
    ("modules-path", "modules: [ops/examples/scale_shift.py]\nops: {add: {}}\nshapes: shapes.yaml\n", "suite_file",
     r"suite\.yaml: modules\[0\]: expected text matching"),
    ("modules-not-importable", "modules: [tritongate_no_such_module_xyz]\nops: {add: {}}\nshapes: shapes.yaml\n", "user_ops",
     r"tritongate_no_such_module_xyz"),
    ("alias-bomb", _alias_bomb("ops: {add: {}}\nshapes: shapes.yaml\n"), "suite_file",
     r"suite\.yaml is refused: more than 100 aliases"),
    ("deep-nesting", "ops: {add: {}}\nshapes: shapes.yaml\n" + DEEP, "suite_file",
     r"suite\.yaml is refused: nested deeper than 64 levels"),
    ("huge-file", "ops: {add: {}}\nshapes: shapes.yaml\n" + HUGE, "suite_file",
     r"suite\.yaml is refused: [\d,]+ bytes, more than the 1,048,576 allowed"),
    ("non-utf8", b"ops: {add: {}}\nshapes: shapes.yaml\ndescription: caf\xe9 \xff\n", "suite_file",
     r"suite\.yaml is not UTF-8 text: invalid .* at byte \d+"),
    ("binary-garbage", b"\x00\x01\x02\x03ops", "suite_file", r"suite\.yaml is not UTF-8 text: special characters are not allowed at byte 0"),
    ("tabs", "ops:\n\tadd: {}\nshapes: shapes.yaml\n", "suite_file", r"suite\.yaml is not valid YAML at line 2.*tab|"
     r"suite\.yaml is not valid YAML at line 2"),
    ("python-tag", "ops: !!python/object/apply:os.system ['true']\nshapes: shapes.yaml\n", "suite_file",
     r"suite\.yaml is not valid YAML.*constructor"),
    ("two-documents", "ops: {add: {}}\nshapes: shapes.yaml\n---\nops: {}\n", "suite_file",
     r"suite\.yaml is not valid YAML at line 3, column 1: but found another document"),
    ("duplicate-top-key", "ops: {add: {}}\nshapes: shapes.yaml\nops: {softmax: {}}\n", "suite_file",
     r"suite\.yaml is not valid YAML at line 3, column 1: the key 'ops' appears twice in one mapping"),
    ("duplicate-op", "ops: {add: {dtypes: [float32]}, add: {dtypes: [bfloat16]}}\nshapes: shapes.yaml\n", "suite_file",
     r"suite\.yaml is not valid YAML at line 1, column \d+: the key 'add' appears twice"),
    ("ops-empty-mapping", "ops: {}\nshapes: shapes.yaml\n", "suite_empty", r"suite\.yaml lists no ops"),
    ("null-document", "~\n", "suite_empty", r"suite\.yaml lists no ops"),
    ("no-shapes-anywhere", "ops: {add: {}}\n", "suite_file", r"suite\.yaml: 'shapes' must name a shape file.*--shape-file.*add"),
    ("shape-file-missing", "ops: {add: {}}\nshapes: nosuch.yaml\n", "shape_file", r"nosuch\.yaml does not exist"),
    ("unknown-op", "ops: {nosuchop: {}}\nshapes: shapes.yaml\n", "unknown_op", r"unknown op\(s\) \['nosuchop'\]"),
    ("unsupported-dtype", "ops: {add: {dtypes: [int8]}}\nshapes: shapes.yaml\n", "dtype",
     r"suite\.yaml: add does not support 'int8' \(supported: "),
    ("bfloat16-on-cpu", "ops: {add: {dtypes: [bfloat16]}}\nshapes: shapes.yaml\n", "dtype",
     r"suite\.yaml: backend cpu cannot run bfloat16 \(add\)"),
]

for _id, _text, _check, _pattern in SUITE_CASES:
    add(f"suite-{_id}", lambda x, t=_text: x.run(suite=x.suite(t)), 3, _pattern, _check)


# -- shape files -----------------------------------------------------------------------------

SHAPE_CASES: list[tuple[str, str | bytes, str, str]] = [  # id, shape file text, check, pattern
    ("malformed", "add: {shapes: [[16]\n", "shape_file", r"shapes\.yaml is not valid YAML at line \d+, column \d+"),
    ("list-at-top", "- [16]\n", "shape_file", r"shapes\.yaml: the top level must map op names"),
    ("scalar-at-top", "16\n", "shape_file", r"shapes\.yaml: the top level must map op names"),
    ("empty-file", "", "shape_file", r"shapes\.yaml: the top level must map op names"),
    ("entry-list", "add: [[16]]\n", "shape_file", r"shapes\.yaml: add: expected a mapping, got a list"),
    ("entry-null", "add: ~\n", "shape_file", r"shapes\.yaml: add: expected a mapping, got null"),
    ("shapes-key-missing", "add: {}\n", "shape_file", r"shapes\.yaml: add\.shapes: is required but missing"),
    ("bool-dim", "add: {shapes: [[true]]}\n", "shape_file", r"shapes\.yaml: add\.shapes\[0\]\[0\]: expected an integer, got true"),
    ("negative-dim", "add: {shapes: [[-16]]}\n", "shape_file",
     r"shapes\.yaml: add\.shapes\[0\]\[0\]: expected a number >= 1, got -16"),
    ("zero-dim", "add: {shapes: [[0]]}\n", "shape_file", r"shapes\.yaml: add\.shapes\[0\]\[0\]: expected a number >= 1"),
    ("float-dim", "add: {shapes: [[16.0]]}\n", "shape_file", r"shapes\.yaml: add\.shapes\[0\]\[0\]: expected an integer"),
    ("string-dim", "add: {shapes: [['16']]}\n", "shape_file",
     r"shapes\.yaml: add\.shapes\[0\]\[0\]: expected an integer, got the text '16'"),
    ("string-as-list", "add: {shapes: '[[16]]'}\n", "shape_file", r"shapes\.yaml: add\.shapes: expected a list, got the text"),
    ("flat-list", "add: {shapes: [16, 32]}\n", "shape_file", r"shapes\.yaml: add\.shapes\[0\]: expected a list, got 16"),
    ("empty-list", "add: {shapes: []}\n", "shape_file", r"shapes\.yaml: add\.shapes: expected at least 1 item"),
    ("unknown-key", "add: {shapes: [[16]], dtypes: [float16]}\n", "shape_file",
     r"shapes\.yaml: add\.dtypes: is not a known key .*\{shapes: \[\[d0, d1"),
    ("int-key", "1: {shapes: [[16]]}\nadd: {shapes: [[16]]}\n", "shape_file", r"shapes\.yaml: the key 1 must be text"),
    ("alias-bomb", _alias_bomb(ADD_SHAPES), "shape_file", r"shapes\.yaml is refused: more than 100 aliases"),
    ("deep-nesting", ADD_SHAPES + DEEP, "shape_file", r"shapes\.yaml is refused: nested deeper than 64 levels"),
    ("huge-file", ADD_SHAPES + HUGE, "shape_file", r"shapes\.yaml is refused: [\d,]+ bytes"),
    ("non-utf8", b"add: {shapes: [[16]]}\n# \xc3\x28 \xff\n", "shape_file", r"shapes\.yaml is not UTF-8 text: invalid .* at byte \d+"),
    ("tabs", "add:\n\tshapes: [[16]]\n", "shape_file", r"shapes\.yaml is not valid YAML at line 2"),
    ("duplicate-key", "add: {shapes: [[16]]}\nadd: {shapes: [[32]]}\n", "shape_file",
     r"shapes\.yaml is not valid YAML at line 2, column 1: the key 'add' appears twice"),
    ("duplicate-inner-key", "add: {shapes: [[16]], shapes: [[32]]}\n", "shape_file",
     r"shapes\.yaml is not valid YAML at line 1, column \d+: the key 'shapes' appears twice"),
    ("missing-op", "softmax: {shapes: [[4, 8]]}\n", "missing_shapes", r"shapes\.yaml has no shapes for 'add'; add `add: "),
    ("wrong-arity", "add: {shapes: [[4, 4, 4, 4, 4, 4, 4]]}\n", "shape_arity", r"shapes\.yaml: add takes shapes"),
]

for _id, _text, _check, _pattern in SHAPE_CASES:
    add(f"shapes-{_id}", lambda x, t=_text: x.run(suite=x.suite(shapes=t)), 3, _pattern, _check)

# the same refusals through --shape-file (a path of its own, beside a suite that names none)
for _id, _text, _check, _pattern in SHAPE_CASES[:6] + [c for c in SHAPE_CASES if c[0] in ("alias-bomb", "bool-dim")]:
    add(f"shape-file-option-{_id}",
        lambda x, t=_text: x.run("--shape-file", x.file("shapes.yaml", t), suite=x.file("s.yaml", "ops: {add: {}}\n")),
        3, _pattern, _check)


# -- gate policies ---------------------------------------------------------------------------

POLICY_HINT = r".*\(a policy holds min_effect"
POLICY_CASES: list[tuple[str, str | bytes, str]] = [  # id, policy text, pattern
    ("malformed", "min_effect: [0.01\n", r"policy\.yaml is not valid YAML at line \d+, column \d+"),
    ("list-at-top", "- 0.01\n", r"policy\.yaml: expected a mapping with min_effect .*got list"),
    ("scalar-at-top", "0.01\n", r"policy\.yaml: expected a mapping .*got float"),
    ("min-effect-string", "min_effect: '0.01'\n", r"policy\.yaml: min_effect: expected a number, got the text '0\.01'" + POLICY_HINT),
    ("min-effect-negative", "min_effect: -0.01\n", r"policy\.yaml: min_effect: expected a number >= 0(\.0)?, got -0\.01" + POLICY_HINT
),
    ("min-effect-bool", "min_effect: true\n", r"policy\.yaml: min_effect: expected a number, got true"),
    ("min-effect-nan", "min_effect: .nan\n", r"policy\.yaml: min_effect: expected a finite number"),
    ("min-effect-inf", "min_effect: .inf\n", r"policy\.yaml: min_effect: expected a finite number"),
    ("min-effect-too-large", "min_effect: 11\n", r"policy\.yaml: min_effect: expected a fraction below 1"),
    # "2" meant 2 %, as --min-effect 2 is refused with the fraction it probably meant: not a gate blind below 200 %
    ("min-effect-per-cent", "min_effect: 2\n",
     r"policy\.yaml: min_effect: expected a fraction below 1 \(0\.01 is 1 %\), got 2 \(that would be 200%\); "
     r"for 2 % write 0\.02"),
    ("op-min-effect-per-cent", "ops: {add: {min_effect: 1.5}}\n",
     r"policy\.yaml: ops\.add\.min_effect: expected a fraction below 1 .*for 1\.5 % write 0\.015"),
    ("min-effect-list", "min_effect: [0.01]\n", r"policy\.yaml: min_effect: expected a number, got a list"),
    ("noise-z-negative", "noise_z: -4\n", r"policy\.yaml: noise_z: expected a number >= 0"),
    ("noise-z-bool", "noise_z: no\n", r"policy\.yaml: noise_z: expected a number, got false"),
    ("min-samples-zero", "min_samples: 0\n", r"policy\.yaml: min_samples: expected a number >= 1"),
    ("min-samples-float", "min_samples: 1.5\n", r"policy\.yaml: min_samples: expected an integer"),
    ("min-samples-bool", "min_samples: yes\n", r"policy\.yaml: min_samples: expected an integer, got true"),
    ("max-missing-negative", "max_missing: -1\n", r"policy\.yaml: max_missing: expected a number >= 0"),
    ("strict-string", "strict: 'yes'\n", r"policy\.yaml: strict: expected true or false, got the text 'yes'"),
    ("strict-int", "strict: 1\n", r"policy\.yaml: strict: expected true or false, got 1"),
    ("unknown-key", "min_efect: 0.01\n", r"policy\.yaml: min_efect: is not a known key \(allowed: .*min_effect"),
    ("ops-list", "ops: [add]\n", r"policy\.yaml: ops: expected a mapping, got a list \['add'\]"),
    ("ops-number-entry", "ops: {add: 0.02}\n", r"policy\.yaml: ops\.add: expected a mapping, got 0\.02"),
    ("op-effect-negative", "ops: {add: {min_effect: -1}}\n", r"policy\.yaml: ops\.add\.min_effect: expected a number >= 0"),
    ("op-effect-bool", "ops: {add: {min_effect: true}}\n", r"policy\.yaml: ops\.add\.min_effect: expected a number, got true"),
    ("op-unknown-key", "ops: {add: {min_efect: 0.02}}\n", r"policy\.yaml: ops\.add\.min_efect: is not a known key \(allowed: min_effect\)"),
    ("op-key-int", "ops: {1: {min_effect: 0.02}}\n", r"policy\.yaml: ops: the key 1 must be text"),
    ("alias-bomb", _alias_bomb("min_effect: 0.01\n").replace("a0:", "x0:").replace("\na", "\nx"),
     r"policy\.yaml is refused: more than 100 aliases"),
    ("deep-nesting", "min_effect: 0.01\n" + DEEP, r"policy\.yaml is refused: nested deeper than 64 levels"),
    ("huge-file", "min_effect: 0.01\n" + HUGE, r"policy\.yaml is refused: [\d,]+ bytes"),
    ("non-utf8", b"min_effect: 0.01\n# \xff\xfe\n", r"policy\.yaml is not UTF-8 text: invalid .* at byte \d+"),
    ("tabs", "ops:\n\tadd: {min_effect: 0.02}\n", r"policy\.yaml is not valid YAML at line 2"),
    ("python-tag", "min_effect: !!python/object/apply:os.system ['true']\n", r"policy\.yaml is not valid YAML.*constructor"),
    ("duplicate-key", "min_effect: 0.01\nmin_effect: 0.5\n", r"policy\.yaml is not valid YAML at line 2, column 1: the key 'min_effect' appears twice"),
    ("duplicate-op", "ops: {add: {min_effect: 0.01}, add: {min_effect: 0.5}}\n",
     r"policy\.yaml is not valid YAML at line 1, column \d+: the key 'add' appears twice"),
]

for _id, _text, _pattern in POLICY_CASES:
    add(f"policy-{_id}", lambda x, t=_text: x.gate(None, None, "--policy", x.file("policy.yaml", t)), 2, _pattern)


# -- autotune records for run --replay-from ----------------------------------------------------

def _record_copy(x: Ctx, *damages: Callable[[Path], None], which: str = "record") -> Path:
    run = x.run_copy(which)
    for d in damages:
        d(run)
    return run


def rec_edit(name: str, fn: Callable[[dict], Any]) -> Callable[[Path], None]:
    return edit(f"autotune_records/{name}", fn)


def rec_set(name: str, *path_and_value) -> Callable[[Path], None]:
    *path, value = path_and_value
    return rec_edit(name, lambda d: _set(d, tuple(path), copy.deepcopy(value)))


def rec_del(name: str, *path) -> Callable[[Path], None]:
    return rec_edit(name, lambda d: _del(d, tuple(path)))


M = r"autotune_records/meta\.json"
A = r"autotune_records/add\.json"
RECORD_CASES: list[tuple[str, Callable[[Path], None], str, str]] = [  # id, damage, check, pattern
    ("meta-missing", remove("autotune_records/meta.json"), "replay_from",
     r"has no autotune_records/meta\.json: it is not a record run.*record a baseline"),
    ("meta-not-json", raw("autotune_records/meta.json", "{backend: cpu"), "replay_from", rf"{M} is not valid JSON"),
    ("meta-array", raw("autotune_records/meta.json", '["cpu"]'), "replay_from", rf"{M} must hold a JSON object"),
    ("meta-backend-missing", rec_del("meta.json", "backend"), "replay_from", rf"{M}: backend: is required but missing"),
    ("meta-backend-int", rec_set("meta.json", "backend", 1), "replay_from", rf"{M}: backend: expected a string, got 1"),
    ("meta-schema-missing", rec_del("meta.json", "schema_version"), "replay_from", rf"{M} has no integer schema_version"),
    ("meta-schema-newer", rec_set("meta.json", "schema_version", 7), "replay_from", rf"{M} uses schema 7 .*upgrade"),
    ("meta-other-backend", both(rec_set("meta.json", "backend", "cuda"), ident_set("backend", "cuda")), "replay_backend",
     r"was recorded on backend 'cuda', this run is 'cpu'.*record a baseline on this backend"),
    # the two files of one record disagree (either edited): damaged, whichever matches the run
    ("meta-backend-disagrees", rec_set("meta.json", "backend", "cuda"), "replay_from",
     r"is damaged: run_identity\.json says backend 'cpu', autotune_records/meta\.json says 'cuda'; record the baseline again"),
    ("identity-backend-disagrees", ident_set("backend", "cuda"), "replay_from",
     r"is damaged: run_identity\.json says backend 'cuda', autotune_records/meta\.json says 'cpu'"),
    ("config-num-warps-string", rec_set("add.json", "entries", 0, "config", "num_warps", "4"), "replay_from",
     rf"{A}: entries\[0\]\.config\.num_warps: expected an integer, got the text '4'"),
    ("config-num-warps-zero", rec_set("add.json", "entries", 0, "config", "num_warps", 0), "replay_from",
     rf"{A}: entries\[0\]\.config\.num_warps: expected a number >= 1"),
    ("config-num-stages-bool", rec_set("add.json", "entries", 0, "config", "num_stages", True), "replay_from",
     rf"{A}: entries\[0\]\.config\.num_stages: expected an integer, got true"),
    ("config-kwargs-list-value", rec_set("add.json", "entries", 0, "config", "kwargs", {"BLOCK": [1024]}), "replay_from",
     rf"{A}: entries\[0\]\.config\.kwargs\.BLOCK: expected a number, text, true/false or null, got a list"),
    ("config-kwargs-missing", rec_del("add.json", "entries", 0, "config", "kwargs"), "replay_from",
     rf"{A}: entries\[0\]\.config\.kwargs: is required but missing"),
    ("config-kwargs-list", rec_set("add.json", "entries", 0, "config", "kwargs", [1024]), "replay_from",
     rf"{A}: entries\[0\]\.config\.kwargs: expected a mapping"),
    ("config-not-a-mapping", rec_set("add.json", "entries", 0, "config", "BLOCK=1024"), "replay_from",
     rf"{A}: entries\[0\]\.config: expected a mapping, got the text"),
    ("config-extra-field-mapping", rec_set("add.json", "entries", 0, "config", "ir_override", {"x": 1}), "replay_from",
     rf"{A}: entries\[0\]\.config\.ir_override: expected a number, text, true/false or null, got a mapping"),
    ("entries-not-a-list", rec_set("add.json", "entries", {}), "replay_from", rf"{A}: entries: expected a list"),
    ("entry-kernel-missing", rec_del("add.json", "entries", 0, "kernel"), "replay_from",
     rf"{A}: entries\[0\]\.kernel: is required but missing"),
    ("entry-cases-string", rec_set("add.json", "entries", 0, "cases", "16/float32"), "replay_from",
     rf"{A}: entries\[0\]\.cases: expected a list"),
    ("record-file-array", raw("autotune_records/add.json", "[]"), "replay_from", rf"{A} must hold a JSON object"),
    ("record-file-truncated", truncate("autotune_records/add.json"), "replay_from", rf"{A} is not valid JSON"),
    ("record-file-schema-newer", rec_set("add.json", "schema_version", 9), "replay_from", rf"{A} uses schema 9"),
    ("record-results-damaged", raw("results.json", "{"), "replay_from", r"the record to replay: .*results\.json is not valid JSON"),
    ("record-incomplete", res_set("status", "running"), "replay_from", r"the record to replay: .*is incomplete \(running"),
]

for _id, _damage, _check, _pattern in RECORD_CASES:
    add(f"replay-from-{_id}", lambda x, d=_damage: x.run("--replay-from", str(_record_copy(x, d))), 3, _pattern, _check)

add("replay-from-an-ir-index-capture", lambda x: x.run("--replay-from", str(_record_copy(x, ident_set("capture_only", True)))),
    3, r"is an IR index capture \(TRITONGATE_CAPTURE_ONLY=1: nothing was executed.*never a baseline to replay or "
    r"pair against", "replay_from")
add("replay-from-an-ir-index-capture-before-the-flag", lambda x: x.run("--replay-from", str(_record_copy(
    x, ident_set("ir", {"notes": ["TRITONGATE_CAPTURE_ONLY=1: interpreted launches indexed, not executed"]}))
)), 3, r"is an IR index capture", "replay_from")
add("replay-from-a-replay-run", lambda x: x.run("--replay-from", str(x.runs["replay"])), 3,
    r"is a replay run and has no autotune records of its own; give the record it replayed instead \(.*record.*\), "
    r"to `run --replay-from` or as `pair`'s BASELINE_RECORD", "replay_from")


# -- environment variables the tool reads ------------------------------------------------------

def _env(name: str, value: str, argv: Callable[[Ctx], list[str]]) -> Callable[[Ctx], list[str]]:
    def build(x: Ctx) -> list[str]:
        x.mp.setenv(name, value.replace("{tmp}", str(x.tmp)))
        return argv(x)
    return build


def _valid_run(x: Ctx) -> list[str]:
    """A run that would measure: only for environment values refused before the first row."""
    return x.run(out=x.folder("runs"))


def _ops_dir_with(gate_yaml: str | None, as_dir: bool = False) -> Callable[[Ctx], list[str]]:
    def build(x: Ctx) -> list[str]:
        folder = Path(x.folder("opsdir"))
        if as_dir:
            (folder / "gate.yaml").mkdir()
        elif gate_yaml is not None:
            (folder / "gate.yaml").write_text(gate_yaml)
        x.mp.setenv("TRITONGATE_OPS_DIR", str(folder))
        return x.gate()
    return build


add("env-planted-work-abc", _env("TRITONGATE_PLANTED_WORK", "abc", _valid_run), 2,
    r"TRITONGATE_PLANTED_WORK='abc': expected a whole number >= 1")
add("env-planted-work-zero", _env("TRITONGATE_PLANTED_WORK", "0", _valid_run), 2,
    r"TRITONGATE_PLANTED_WORK='0': expected a whole number >= 1")
add("env-planted-work-negative", _env("TRITONGATE_PLANTED_WORK", "-2", _valid_run), 2,
    r"TRITONGATE_PLANTED_WORK='-2': expected a whole number >= 1")
add("env-ops-dir-missing", _env("TRITONGATE_OPS_DIR", "{tmp}/no-ops-dir", lambda x: x.run(suite="smoke")), 3,
    r"no suite named 'smoke' in .*no-ops-dir/suites \(set by TRITONGATE_OPS_DIR='.*no-ops-dir', which is not a "
    r"directory\)", "suite_file")
add("env-ops-dir-a-file", _env("TRITONGATE_OPS_DIR", "{tmp}/out-is-a-file", lambda x: x.run(suite="smoke")), 3,
    r"no suite named 'smoke' in .*out-is-a-file/suites \(set by TRITONGATE_OPS_DIR=.*which is not a directory",
    "suite_file")
add("env-ops-dir-without-the-suite", _env("TRITONGATE_OPS_DIR", "{tmp}", lambda x: x.run(suite="smoke")), 3,
    r"no suite named 'smoke' in .*/suites \(set by TRITONGATE_OPS_DIR='[^']+'\) \(builtin", "suite_file")
add("env-planted-work-a-billion", _env("TRITONGATE_PLANTED_WORK", "1000000000", _valid_run), 2,
    r"TRITONGATE_PLANTED_WORK='1000000000': expected a whole number >= 1 and <= 1000")
for _id, _value in [("letters", "x,y"), ("empty-item", "0,,1"), ("twice", "0,0"), ("shell", "0;rm -rf ~")]:
    add(f"env-sweep-devices-{_id}", _env("TRITONGATE_SWEEP_DEVICES", _value,
                                          lambda x: x.run("--sweep-gpus", "2", out=x.folder("runs"))), 2,
        r"TRITONGATE_SWEEP_DEVICES='.*': .*expected indices like 0,1")
add("env-ops-dir-bad-gate-yaml", _ops_dir_with("min_effect: -1\n"), 2, r"opsdir/gate\.yaml: min_effect: expected a number >= 0")
add("env-ops-dir-gate-yaml-a-directory", _ops_dir_with(None, as_dir=True), 2, r"policy file .*opsdir/gate\.yaml is a directory")
add("env-isolate-tuner-cache-garbage", _env("TRITONGATE_ISOLATE_TUNER_CACHE", "maybe", lambda x: x.run()), 2,
    r"TRITONGATE_ISOLATE_TUNER_CACHE")
add("env-zl-isolate-tuner-cache-garbage", _env("ZL_ISOLATE_TUNER_CACHE", "2", lambda x: x.run()), 2,
    r"ZL_ISOLATE_TUNER_CACHE='2' is not a yes/no value")


def _bug_with_unwritable_log_dir(x: Ctx) -> list[str]:
    import tritongate.cli.inspect as cli

    def broken(args):
        raise KeyError("a key the code expected")
    x.mp.setattr(cli, "cmd_ops", broken)
    x.mp.setenv("TRITONGATE_LOG_DIR", str(x.tmp / "no-such-log-dir"))
    return ["ops"]


add("env-log-dir-missing-on-a-bug", _bug_with_unwritable_log_dir, 4, r"KeyError: .*traceback written to nowhere: TRITONGATE_LOG_DIR='.*no-such-log-dir' cannot be "
    r"written \(No such file or directory\); point it at a writable folder")


# -- user op modules: one that ends the interpreter at import, one whose numbers are wrong ----

USER_SPEC = ("from tritongate.ops.registry import OpSpec\n"
             "def _build(shape, dtype, device, gen):\n    raise NotImplementedError\n")


def _user_module(source: str, argv: Callable[[Ctx, str], list[str]]) -> Callable[[Ctx], list[str]]:
    def build(x: Ctx) -> list[str]:
        import uuid

        name = f"tg_corpus_{uuid.uuid4().hex[:10]}"  # a module is imported once per process
        x.file(f"{name}.py", USER_SPEC + source)
        suite = x.suite(f"modules: [{name}]\nops: {{add: {{dtypes: [float32]}}}}\nshapes: shapes.yaml\n")
        return argv(x, suite)
    return build


def _op(**fields: str) -> str:
    kw = {"description": "'x'", "shape_doc": "'[n]'", "ranks": "(1,)", "dtypes": "('float32',)", "build": "_build",
          "bytes": "lambda s, e: 1.0", **fields}
    return "TRITONGATE_OPS = [OpSpec('user_op', " + ", ".join(f"{k}={v}" for k, v in kw.items()) + ")]\n"


for _id, _source, _how in [("os-exit-0", "import os\nos._exit(0)\n", "exit code 0"),
                           ("os-exit-1", "import os\nos._exit(1)\n", "exit code 1"),
                           ("sigkill", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", "signal 9")]:
    add(f"user-module-{_id}-at-import-run", _user_module(_source, lambda x, s: x.run(suite=s)), 3,
        rf"module 'tg_corpus_\w+' ended the interpreter while it was imported \({_how}", "user_ops")
add("user-module-os-exit-at-import-ops-suite", _user_module("import os\nos._exit(0)\n", lambda x, s: ["ops", "--suite", s]),
    3, r"ended the interpreter while it was imported \(exit code 0.*nothing would be measured", "user_ops")
add("user-module-sys-exit-0-at-import", _user_module("import sys\nsys.exit(0)\n", lambda x, s: x.run(suite=s)), 3,
    r"importing module 'tg_corpus_\w+' raised SystemExit: 0", "user_ops")
add("user-module-raise-systemexit-at-import", _user_module("raise SystemExit\n", lambda x, s: ["ops", "--suite", s]),
    3, r"raised SystemExit", "user_ops")
add("user-op-nan-tolerance", _user_module(_op(tolerance="{'float32': (float('nan'), 1e-4)}"),
                                          lambda x, s: x.run(suite=s)), 3,
    r"op 'user_op' of module .*tolerance\['float32'\] must be \(atol, rtol\), two finite numbers >= 0", "user_ops")
add("user-op-huge-tolerance", _user_module(_op(tolerance="{'float32': (1e30, 0)}"), lambda x, s: x.run(suite=s)), 3,
    r"tolerance\['float32'\] = \(1e\+30, 0\) is too loose for a correctness check", "user_ops")
add("user-op-tolerance-not-a-dict", _user_module(_op(tolerance="[1e-4, 1e-4]"), lambda x, s: ["ops", "--suite", s]), 3,
    r"tolerance must be a dict of dtype -> \(atol, rtol\)", "user_ops")


# `ops --suite` refuses what `run` would, with the same check (it raised KeyError, exit 4)
add("ops-suite-unknown-op", lambda x: ["ops", "--suite", x.suite("ops: {nosuch: {}, add: {}}\nshapes: shapes.yaml\n")],
    3, r"unknown op\(s\) \['nosuch'\] in \S+suite.yaml; builtin ops: add,", "unknown_op")
add("ops-suite-non-ascii-op", lambda x: ["ops", "--suite", x.suite("ops: {'ädd😀': {}}\nshapes: shapes.yaml\n")],
    3, r"unknown op\(s\) \['ädd😀'\]", "unknown_op")
add("ops-suite-unsupported-dtype", lambda x: ["ops", "--suite", x.suite("ops: {add: {dtypes: [float99]}}\nshapes: shapes.yaml\n")],
    3, r"add does not support 'float99' \(supported: float32, float16, bfloat16\)", "dtype")


add("batch-resume-a-run-directory", lambda x: ["batch", "--resume", str(x.runs["record"])], 2,
    r"record is a run directory, not a batch directory \(no batch\.json\); pass the directory that `tritongate "
    r"batch` printed")
add("batch-resume-an-empty-folder", lambda x: ["batch", "--resume", x.folder("empty")], 2,
    r"empty/batch\.json is missing: .*empty is not a batch directory; pass the directory that `tritongate batch`")
add("batch-merge-a-run-directory", lambda x: ["batch-merge", str(x.runs["record"]), "--out", x.folder("merged")], 2,
    r"record is a run directory, not a batch directory")


def _batch_with_plan(x: Ctx, edit: Callable[[dict], Any], shard: tuple[int, int] = (1, 1)) -> str:
    """A finished batch of fake ops (tests/batch/fake_ops) whose batch.json is then edited."""
    from tritongate.batch import BatchRequest, run_batch

    from tests.batch.fake_ops import fake_command, write_suite

    suite = write_suite(x.tmp / "fake.yaml", {"ok_a": ["float32"], "ok_b": ["float32"]})
    batch = run_batch(BatchRequest(suite=str(suite), out=x.tmp / f"batches{shard[0]}", shard=shard,
                                   command=fake_command(x.tmp / "state"))).path
    doc = json.loads((batch / "batch.json").read_text())
    edit(doc)
    (batch / "batch.json").write_text(json.dumps(doc))
    return str(batch)


add("batch-resume-an-edited-plan",
    lambda x: ["batch", "--resume", _batch_with_plan(x, lambda d: d["plan"]["options"].update(rounds=20))], 2,
    r"batch\.json: its plan was changed after the batch planned it \(plan sha256 \w+, recorded \w+\): edited by "
    r"hand or rewritten by another tritongate .*; put the file back as the batch wrote it, or start a new batch")
add("batch-resume-a-plan-without-its-hash",
    lambda x: ["batch", "--resume", _batch_with_plan(x, lambda d: d.pop("plan_sha256"))], 2,
    r"batch\.json records no plan_sha256 \(written by tritongate '[\d.]+' or edited\), so its plan cannot be checked")
add("batch-merge-a-shard-with-an-edited-plan",
    lambda x: ["batch-merge", _batch_with_plan(x, lambda d: None, (1, 2)),
               _batch_with_plan(x, lambda d: d["plan"]["dtypes"].append("float16"), (2, 2)),
               "--out", x.folder("merged")], 2,
    r"batches2/.*batch\.json: its plan was changed after the batch planned it")


def _run_measuring_nothing(x: Ctx) -> list[str]:
    import uuid

    name = f"tg_corpus_{uuid.uuid4().hex[:10]}"
    x.file(f"{name}.py", USER_SPEC + "def _raise(shape, dtype, device, gen):\n    raise RuntimeError('cannot run')\n"
           + _op(build="_raise"))
    x.file("shapes.yaml", "user_op: {shapes: [[16]]}\n")
    suite = x.file("suite.yaml", f"modules: [{name}]\nops: {{user_op: {{dtypes: [float32]}}}}\nshapes: shapes.yaml\n")
    return x.run(suite=suite, out=x.folder("runs"))


add("run-that-measured-no-row", _run_measuring_nothing, 2,
    r"no row of the run was measured \(1 rows, every one errored or timed out\); the run directory is .*runs/")


# A paired run that judged no row: `pair` on the scripted device in this process (tests/pair/fakes),
# every row failing on both sides; `merge` of such shards.
FAIL_EVERY_ROW = ("--base-env", "TG_ROW_ERROR=add,softmax,matmul", "--cand-env", "TG_ROW_ERROR=add,softmax,matmul")


def _scripted_pairs(x: Ctx) -> Callable:
    from dataclasses import replace

    from tritongate.pair import orchestrator

    from tests.pair.fakes import InProcessWorker, ScriptedExecutor, World

    real = orchestrator.run_pair

    def spawn(spec):
        return InProcessWorker(spec.side, lambda settings, spec=spec: ScriptedExecutor(
            settings, world=World(), env=spec.env, side=spec.side))

    def run_pair(request, progress=None, **_):
        return real(replace(request, executor="tests.pair.fakes:ScriptedExecutor"), progress, spawn=spawn)

    x.mp.setattr(orchestrator, "run_pair", run_pair)
    return run_pair


def _scripted_pair(x: Ctx, *extra: str) -> list[str]:
    _scripted_pairs(x)
    return ["pair", str(x.tmp / "no-record"), "--suite", "smoke", "--out", x.folder("pairs"), *extra]


def _merge_of_shards_judging_nothing(x: Ctx) -> list[str]:
    from tritongate.pair.build import CompilerBuild
    from tritongate.pair.orchestrator import PairRequest

    run_pair, env = _scripted_pairs(x), {"TG_ROW_ERROR": "add,softmax,matmul"}
    shards = [run_pair(PairRequest(baseline=x.tmp / "no-record", suite="smoke", out=x.tmp / "shards",
                                   base=CompilerBuild("base", env=env), cand=CompilerBuild("candidate", env=env),
                                   shard=(i, 2))).path for i in (1, 2)]
    return ["merge", *map(str, shards), "--out", str(x.tmp / "merged")]


add("pair-that-judged-no-row", lambda x: _scripted_pair(x, *FAIL_EVERY_ROW), 2,
    r"nothing was measured: none of its 3 rows was judged \(3 REJECTED; most often: error on base: .*\); the verdict "
    r"in .*pairs/pair-smoke_\w+/verdict says so; each row's reason is in verdict\.md \(Not judged\)")
add("pair-that-planned-no-row", lambda x: _scripted_pair(x, "--shard", "4/4"), 2,
    r"nothing was measured: no row was planned; the verdict in .*/verdict says so; no row of the record was "
    r"selected: widen --ops/--dtypes, use fewer shards")
add("merge-of-shards-that-judged-no-row", _merge_of_shards_judging_nothing, 2,
    r"nothing was measured: none of its 3 rows was judged .*the verdict in .*merged/verdict says so; .*run the "
    r"shards' pairs again")


# -- the checks ------------------------------------------------------------------------------

MAX_LINE = 2_300  # cli.MAX_MESSAGE (2,000) plus the prefix and the fix
ERROR_LINE = re.compile(r"^error: ")
ARGPARSE_LINE = re.compile(r"^tritongate(?: \w+)?: error: ")
INTERNAL_LINE = re.compile(r"^internal error \(a bug in tritongate\): ")
MARKER = re.compile(r"^!!! PREFLIGHT_FAILED check=(\w+)$")
# stderr lines that are not the error: progress and the partial-run note (documented output)
PROGRESS = [re.compile(p) for p in (r"^\d/2 (record|pair): ", r"^(measuring|pairing) \d+ rows? into ", r"^\[\d+/\d+\] ",
                                     r"^partial run directory \(loads as incomplete\): ")]


def assert_refused(rc: int, out: str, err: str, *, code: int, pattern: str, check: str | None) -> None:
    where = f"exit {rc}\n--- stderr ---\n{err[-3000:]}\n--- stdout ---\n{out[-1500:]}"
    assert "Traceback" not in out and "Traceback" not in err, f"a traceback\n{where}"
    if code != 0:
        assert rc != 0, f"silent success: exit 0 where {code} was due\n{where}"
    assert rc == code, f"expected exit {code}\n{where}"
    lines = err.splitlines()
    # argparse's own format: its usage block, then `tritongate CMD: error: ...`
    if any(ARGPARSE_LINE.match(ln) for ln in lines):
        first = next(i for i, ln in enumerate(lines) if ARGPARSE_LINE.match(ln))
        assert all(ln.startswith(("usage:", " ")) for ln in lines[:first]), where
        lines = lines[first:]
    markers = [m.group(1) for m in map(MARKER.match, lines) if m]
    rest = [ln for ln in lines if not MARKER.match(ln) and not any(p.match(ln) for p in PROGRESS)]
    if code == 3:
        assert len(markers) == 1, f"exit 3 needs one `!!! PREFLIGHT_FAILED check=` line\n{where}"
        if check is not None:
            assert markers[0] == check, f"expected check={check}\n{where}"
    else:
        assert not markers, where
    assert len(rest) == 1, f"expected exactly one error line on stderr, got {len(rest)}\n{where}"
    line = rest[0]
    head = INTERNAL_LINE if code == 4 else ERROR_LINE
    assert head.match(line) or (code == 2 and ARGPARSE_LINE.match(line)), f"not an `error: ` line\n{where}"
    assert len(line) <= MAX_LINE, f"unbounded message: {len(line)} characters\n{where}"
    assert re.search(pattern, line), f"the message does not match {pattern!r}\n{where}"


@pytest.fixture
def ctx(tmp_path, monkeypatch, corpus_runs):
    environ = dict(os.environ)  # restored exactly afterwards: a backend's set-up writes os.environ
    for var in ("GITHUB_STEP_SUMMARY", "TRITONGATE_ARTIFACT_URL", "TRITONGATE_VERDICT_TEMPLATE", "TRITONGATE_OPS_DIR",
                "TRITONGATE_PLANTED_WORK",
                "TRITONGATE_PLANTED_DELAY", "TRITONGATE_CALIBRATION", "TRITONGATE_SWEEP_DEVICES", "TRITONGATE_ISOLATE_TUNER_CACHE", "ZL_ISOLATE_TUNER_CACHE", "FLAGGEMS_DB_URL", "TRITONGATE_COMPILER_REF",
                "TRITONGATE_COMMIT", "GITHUB_SHA", "NO_COLOR", "TRITON_DISABLE_LINE_INFO"):
        monkeypatch.delenv(var, raising=False)
    logs = tmp_path / "logs"
    logs.mkdir()
    monkeypatch.setenv("TRITONGATE_LOG_DIR", str(logs))
    monkeypatch.chdir(tmp_path)
    yield Ctx(tmp=tmp_path, mp=monkeypatch, runs=corpus_runs)
    monkeypatch.undo()
    os.environ.clear()
    os.environ.update(environ)


def test_the_corpus_is_large_and_names_are_unique():
    assert len(CASES) >= 110
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_refused_in_one_line(case: Case, ctx: Ctx, capfd):
    argv = case.build(ctx)
    capfd.readouterr()
    rc = main(argv)
    out, err = capfd.readouterr()
    assert_refused(rc, out, err, code=case.code, pattern=case.pattern, check=case.check)


# -- an --out the user cannot write: chmod, unless root can write anyway --------------------

def _read_only_dir(tmp: Path) -> tuple[Path, bool]:
    d = tmp / "read-only"
    d.mkdir()
    d.chmod(0o500)
    return d, os.access(d, os.W_OK)


def test_run_out_unwritable_dir(ctx: Ctx, capfd):
    d, writable = _read_only_dir(ctx.tmp)
    try:
        if writable:  # root: permission bits do not stop it, so the out_dir check must pass it
            from tritongate.preflight import check_out_dir

            check_out_dir(d / "runs")
            assert (d / "runs").is_dir()
            return
        capfd.readouterr()
        rc = main(ctx.run(out=str(d / "runs")))
        out, err = capfd.readouterr()
        assert_refused(rc, out, err, code=3, pattern=r"cannot write to output directory .*read-only", check="out_dir")
    finally:
        d.chmod(0o700)


def test_gate_out_unwritable_dir(ctx: Ctx, capfd):
    d, writable = _read_only_dir(ctx.tmp)
    try:
        capfd.readouterr()
        rc = main(["gate", str(ctx.runs["base"]), str(ctx.runs["cand"]), "--out", str(d / "v")])
        out, err = capfd.readouterr()
        if writable:  # root: the verdict is written; the gate decides (0 or 1), no error line
            assert rc in (0, 1) and "error:" not in err and "Traceback" not in err, err
            assert (d / "v" / "verdict.md").is_file()
            return
        assert_refused(rc, out, err, code=2, pattern=r"read-only/v.*[Pp]ermission denied", check=None)
    finally:
        d.chmod(0o700)


# -- the ci/ entry points, as the workflows call them ---------------------------------------

def _ci(script: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {**os.environ, **(env or {})}
    full.pop("GITHUB_STEP_SUMMARY", None)
    return subprocess.run([sys.executable, str(ROOT / "ci" / script), *args], capture_output=True, text=True,
                          env=full, timeout=120)


@pytest.mark.parametrize("script", ["gate.py", "record_baseline.py", "replay_candidate.py"])
def test_ci_entry_help_works(script):
    proc = _ci(script, "--help")
    assert proc.returncode == 0, proc.stderr
    assert "exit codes" in proc.stdout and "Traceback" not in proc.stderr


CI_CASES: list[tuple[str, str, Callable[[Ctx], list[str]], int, str]] = [  # id, script, argv, exit, pattern
    ("gate-same-run", "gate.py", lambda x: [str(x.runs["cand"]), str(x.runs["cand"]), "--out", str(x.tmp / "v")], 2,
     r"given as both the base and the candidate"),
    ("gate-damaged-candidate", "gate.py",
     lambda x: [str(x.runs["base"]), str(_record_copy(x, raw("results.json", "[]"), which="cand")), "--out",
                str(x.tmp / "v")], 2, r"results\.json must hold a JSON object"),
    ("gate-bad-policy", "gate.py",
     lambda x: [str(x.runs["base"]), str(x.runs["cand"]), "--out", str(x.tmp / "v"), "--policy",
                x.file("p.yaml", "min_effect: -1\n")], 2, r"p\.yaml: min_effect: expected a number >= 0"),
    ("record-suite-missing", "record_baseline.py", lambda x: ["--suite", str(x.tmp / "no.yaml"), "--backend", "cpu",
                                                              "--out", x.backstop], 3, r"no\.yaml does not exist"),
    ("record-refuses-replay", "record_baseline.py",
     lambda x: ["--suite", "smoke", "--out", x.backstop, "--replay-from", str(x.runs["record"])], 2,
     r"record_baseline\.py: this records; use replay_candidate\.py"),
    ("record-publish-module-exits-at-import", "record_baseline.py",
     lambda x: _user_module("import os\nos._exit(0)\n", lambda x, s: ["--suite", s, "--backend", "cpu", "--out",
                                                                        x.folder("runs"), "--publish", x.folder("store"),
                                                                        "--runner-class", "cpu"])(x), 3,
     r"ended the interpreter while it was imported \(exit code 0"),
    ("replay-without-builds", "replay_candidate.py", lambda x: [str(x.runs["record"]), "--suite", "smoke", "--out",
                                                                x.backstop], 2,
     r"--base-python and --cand-python required"),
    ("replay-bad-env", "replay_candidate.py",
     lambda x: [str(x.runs["record"]), "--suite", x.suite(), "--out", x.backstop, "--base-python", sys.executable,
                "--cand-python", sys.executable, "--cand-env", "NOEQUALS"], 2, r"--cand-env 'NOEQUALS': expected NAME=VALUE"),
]


@pytest.mark.slow
@pytest.mark.parametrize("case", CI_CASES, ids=[c[0] for c in CI_CASES])
def test_ci_entry_bad_input(case, ctx: Ctx):
    _id, script, build, code, pattern = case
    proc = _ci(script, *build(ctx))
    assert_refused(proc.returncode, proc.stdout, proc.stderr, code=code, pattern=pattern,
                   check=("user_ops" if "module" in _id else "suite_file") if code == 3 else None)


# -- a build's interpreter and overlay, checked where the workers start ---------------------

@pytest.mark.parametrize("side, value", [("candidate", "0"), ("base", ""), ("candidate", "true")])
def test_an_overlay_that_the_cpu_backend_would_override_is_refused(side, value):
    from tritongate.errors import UsageError
    from tritongate.pair.build import CompilerBuild

    build = CompilerBuild(side, env={"TRITON_INTERPRET": value})
    option = "--cand-env" if side == "candidate" else "--base-env"
    with pytest.raises(UsageError, match=rf"{option} TRITON_INTERPRET={value}: the cpu backend runs every kernel "
                                         r"in Triton's interpreter .* would be overridden"):
        build.check_backend("cpu")
    build.check_backend("cuda")  # on a GPU the overlay is what the worker gets
    CompilerBuild(side, env={"TRITON_INTERPRET": "1"}).check_backend("cpu")


@pytest.mark.parametrize("row_timeout, expected", [(0.01, 60.0), (120.0, 120.0), (3600.0, 600.0)])
def test_a_workers_start_up_is_bounded_by_the_row_timeout(row_timeout, expected):
    from tritongate.pair.client import startup_timeout

    assert startup_timeout(row_timeout) == expected


def test_a_hanging_interpreter_at_start_up_is_named_as_such(tmp_path):
    from tritongate.pair.client import WorkerFailure, WorkerProcess, WorkerSpec

    worker = WorkerProcess(WorkerSpec(side="candidate", argv=[sys.executable, "-c", "import time; time.sleep(30)"],
                                      env=dict(os.environ), log_path=tmp_path / "w.log"))
    worker.start()
    try:
        with pytest.raises(WorkerFailure, match=r"hung: no answer to 'init' within 0 s \(its start-up, bounded by "
                                                r"--row-timeout \(at least 60 s, at most 600 s\)\)"):
            worker.call("init", 0.2)
    finally:
        worker.kill()


def test_the_paired_run_waits_for_start_up_as_long_as_the_row_timeout_says(monkeypatch):
    from tritongate.pair.pool import Side, WorkerPool
    from tritongate.pair.request import PairRequest

    seen = []

    class Worker:
        def start(self):
            pass

        def call(self, cmd, timeout_s, **kw):
            seen.append((cmd, timeout_s))
            return {"backend": "cpu"}

        def send(self, cmd, timeout_s, **kw):
            return self.call(cmd, timeout_s, **kw)

        def receive(self, answer):
            return answer

    pool = WorkerPool(PairRequest(baseline=Path("b"), suite="s", out=Path("o"), row_timeout_s=5.0), Path("o"),
                      spawn=lambda spec: Worker())
    monkeypatch.setattr(pool, "_settings", lambda: {})
    side = Side(name="candidate", build=None, pool=[Worker()], hellos=[{}])  # type: ignore[arg-type]
    pool.start(side)
    pool.plan(side)
    assert seen == [("init", 60.0), ("plan", 60.0)]


@pytest.mark.parametrize("fails_on", ["verdict.md", "verdict.json"])
def test_gate_out_on_a_full_disk_writes_both_verdict_files_or_neither_and_names_the_path(ctx: Ctx, capfd, fails_on):
    import errno

    import tritongate.gate.output as output

    def full(write):
        def call(path, data):
            if path.name.startswith(f".{fails_on}"):
                raise OSError(errno.ENOSPC, "No space left on device")
            return write(path, data)
        return call

    ctx.mp.setattr(output, "write_text_atomic", full(output.write_text_atomic))  # both files go through it
    capfd.readouterr()
    rc = main(ctx.gate())
    out, err = capfd.readouterr()
    assert_refused(rc, out, err, code=2, pattern=r"cannot write the verdict into .*/verdict \(.*No space left on device\);"
                                                 r" neither verdict\.json nor verdict\.md was written", check=None)
    assert not list((ctx.tmp / "verdict").glob("verdict.*")) and not list((ctx.tmp / "verdict").glob(".verdict*"))


# -- the baseline store: what an entry's date, rows or files claim ---------------------------

def test_a_store_entry_dated_in_the_future_is_ranked_after_every_past_one(tmp_path):
    import datetime as dt

    from tests.baselines.test_store import DAY, T0, lookup, make_record
    from tritongate.baselines import State, publish

    store = tmp_path / "store"
    past = publish(store, make_record(tmp_path / "a", commit="aaa"), runner_class="h200")
    future = publish(store, make_record(tmp_path / "b", started=dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc),
                                        commit="bbb"), runner_class="h200")
    found = lookup(store, now=T0 + DAY)
    assert found.state is State.OK and found.record == past.path, "the entry from 2030 was taken as the newest"
    only_future = tmp_path / "store2"
    publish(only_future, make_record(tmp_path / "c", started=dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc)),
            runner_class="h200")
    found = lookup(only_future, now=T0 + DAY)
    assert found.state is State.OK and any("in the future (clock skew?); ranked after" in n for n in found.notes)
    assert future.path.exists()


def test_a_record_whose_only_row_errored_is_not_published(tmp_path):
    from tests.baselines.test_store import make_record
    from tritongate.baselines import BaselineError, publish
    from tritongate.schema import RowStatus

    errored = Row(op="softmax", case="4096x4096", dtype="float16", timer="cuda-graph", samples=(),
                  status=RowStatus.ERROR, error="RuntimeError: out of resources")
    with pytest.raises(BaselineError, match=r"none of its 1 rows was measured \(every row errored or timed out\)"):
        publish(tmp_path / "store", make_record(tmp_path / "a", rows=[errored]), runner_class="h200")
    assert not (tmp_path / "store").exists() or not list((tmp_path / "store").rglob("manifest.json"))


def test_baseline_list_notes_an_entry_whose_files_no_longer_match(tmp_path):
    from tests.baselines.test_store import make_record
    from tritongate.baselines import list_entries, publish

    store = tmp_path / "store"
    entry = publish(store, make_record(tmp_path / "a"), runner_class="h200")
    shapes = entry.path / "shapes.yaml"
    shapes.write_text(shapes.read_text() + "# edited\n")
    entries, notes = list_entries(store)
    assert [e.path for e in entries] == [entry.path]
    assert len(notes) == 1 and re.search(r"damaged .*: .*shapes\.yaml does not match its sha256", notes[0]), notes


@pytest.mark.slow
def test_run_stopped_by_sigterm_exits_130_as_its_help_says(tmp_path):
    (tmp_path / "term_op.py").write_text(
        "import os, signal, time\nfrom tritongate.ops.registry import OpSpec\n"
        "def _build(shape, dtype, device, gen):\n    os.kill(os.getpid(), signal.SIGTERM)\n    time.sleep(60)\n"
        "TRITONGATE_OPS = [OpSpec('term_op', 'x', '[n]', (1,), ('float32',), _build, lambda s, e: 1.0)]\n")
    (tmp_path / "shapes.yaml").write_text("term_op: {shapes: [[16]]}\n")
    (tmp_path / "suite.yaml").write_text("modules: [term_op]\nops: {term_op: {dtypes: [float32]}}\nshapes: shapes.yaml\n")
    proc = subprocess.run([sys.executable, "-m", "tritongate", "run", "--suite", str(tmp_path / "suite.yaml"),
                           "--backend", "cpu", "--out", str(tmp_path / "runs")], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "TRITONGATE_LOG_DIR": str(tmp_path)})
    assert proc.returncode == 130, proc.stderr[-2000:]
    assert "interrupted" in proc.stderr and "Traceback" not in proc.stderr
    help_text = subprocess.run([sys.executable, "-m", "tritongate", "run", "--help"], capture_output=True, text=True,
                               timeout=60).stdout
    assert re.search(r"130\s+interrupted \(Ctrl-C, SIGTERM\)", help_text), help_text[-800:]


def test_ir_that_recompiled_none_of_its_variants_is_not_a_success(ctx: Ctx, capfd):
    from tests.gate.test_ir_evidence import ttgir, variant, write_ir

    run = ctx.run_copy("cand")
    write_ir(run, [(variant("tg_no_such_module.kernel_a", "m512", "w4", ("x/float16",)), ttgir("")),
                   (variant("tg_no_such_module.kernel_b", "m512", "w4", ("x/float16",)), ttgir(""))])
    capfd.readouterr()
    rc = main(["ir", "--from", str(run), "--target", "cuda:90", "--out", str(ctx.tmp / "ir")])
    out, err = capfd.readouterr()
    err = "\n".join(ln for ln in err.splitlines() if not ln.startswith(("[", "not compiled: ")))
    assert_refused(rc, out, err, code=2, check=None,
                   pattern=r"none of the 2 launched variants of .* recompiled for cuda:90 \(first failure: ")
