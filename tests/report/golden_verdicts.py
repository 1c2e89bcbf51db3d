"""The golden verdicts: one real gate result per kind a reviewer meets, from synthetic runs
(seeded samples, fixed identities), as the verdict.json documents ``tritongate gate`` writes.

``TRITONGATE_UPDATE_GOLDEN=1 pytest tests/report/test_verdict_markdown.py`` rewrites the
committed ``golden/<kind>.verdict.json`` and ``golden/<kind>.md``; review the diff.

``blame``'s IR diff and pass blame are real (``golden/blame/``: ``tritongate ir-diff --blame`` on
both builds of a real Triton change, see ``blame_fixture.py``); its timings are synthetic.
"""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any, Callable

from tritongate.gate.ir_blame import read_blame
from tritongate.gate.ir_evidence import IR_DIFF_DIR, IREvidence, RowIR, _rows
from tritongate.gate.output import verdict_document
from tritongate.gate.policy import GatePolicy
from tritongate.gate.verdict import run_gate
from tritongate.pair.orchestrator import default_schedule
from tritongate.pair.schedule import PairSchedule
from tritongate.ir.diff import STATUSES, VariantDiff
from tritongate.schema import Row, SkipReason

from tests.gate.helpers import binary, calibration_summary, pair, paired_run, row, write_run

GOLDEN = Path(__file__).parent / "golden"
CREATED = "2026-12-01T12:00:00+00:00"


def untimed(op: str, case: str, dtype: str = "float16", h: str = "abc") -> Row:
    return replace(row(op=op, case=case, dtype=dtype, variants=[binary(h)]), samples=(),
                   skipped=SkipReason.IDENTICAL_BINARY)


def _pair_identity(overlay: dict[str, str], python: str = "/opt/venv/bin/python") -> dict[str, Any]:
    return {"pair": {"pair_id": "pair-1", "build": {"side": "x", "python": python, "env_overlay": overlay}}}


def _normalise(doc: dict[str, Any], tmp: Path) -> dict[str, Any]:
    """The document without what differs from one test run to the next (time, temp paths)."""
    doc["created_utc"] = CREATED
    for side in ("base", "candidate"):
        for key in ("path", "replay_from"):
            if isinstance(doc[side].get(key), str):
                doc[side][key] = doc[side][key].replace(str(tmp), "runs")
    doc["notes"] = [n.replace(str(tmp), "runs") for n in doc["notes"]]
    return doc


def measured(op: str, case: str, base_median: float, cand_median: float, *, seed: int, dtype: str = "float16",
             cand_markers=(), schedule: PairSchedule | None = None, policy: GatePolicy | None = None,
             per_pair_s: float = 0.1, **noise) -> tuple[Row, Row]:
    """One row as ``tritongate pair`` measures it (``paired_run``: the default GPU schedule,
    fresh worker pairs, a call confirmed on fresh worker pairs)."""
    rounds = noise.pop("rounds", 100)
    base = row(op=op, case=case, dtype=dtype, median=base_median, seed=seed, rounds=rounds, **noise)
    cand = row(op=op, case=case, dtype=dtype, median=cand_median, seed=seed + 10, rounds=rounds,
               markers=cand_markers, **noise)
    return paired_run(base, cand, schedule=schedule, policy=policy, per_pair_s=per_pair_s)


def _sides(rows: list[tuple[Row, Row]]) -> tuple[list[Row], list[Row]]:
    return [b for b, _ in rows], [c for _, c in rows]


def passing(tmp: Path) -> dict[str, Any]:
    """Every row timed and paired on three worker pairs, every target reached, nothing changed."""
    ops = [("softmax", "4096x4096", 18.0), ("matmul", "4096x4096x4096", 220.0), ("add", "1048576", 2.5),
           ("rmsnorm", "4096x4096", 19.0), ("attention", "4x16x1024x64", 51.0)]
    base, cand = _sides([measured(o, c, m, m, seed=i) for i, (o, c, m) in enumerate(ops)])
    b, c = pair(tmp, base, cand, cand_identity=_pair_identity({}, "/opt/pr/bin/python"))
    result = run_gate(b, c, GatePolicy())
    return verdict_document(result, calibration=calibration_summary())


def blind(tmp: Path) -> dict[str, Any]:
    """No regression found, but three rows could not resolve 1 %: one whose rounds move 2 %
    ran to the round cap (80 rounds), a slow one was stopped by the row budget, one by a run
    budget that earlier rows had spent."""
    gpu = default_schedule("cuda", 5)
    base, cand = _sides([
        measured("softmax", "4096x4096", 20.0, 20.0, seed=1),
        measured("add", "4096", 1.1, 1.1, seed=2, dtype="float32", round_sd=0.02),
        measured("silu_mul", "16x14336", 1.4, 1.4, seed=3, round_sd=0.008, per_pair_s=1.0),
        measured("rmsnorm", "1x4096", 3.1, 3.1, seed=4, round_sd=0.006,
                 schedule=replace(gpu, run_budget_s=2.0))])
    b, c = pair(tmp, base, cand, cand_identity=_pair_identity({}, "/opt/pr/bin/python"))
    return verdict_document(run_gate(b, c, GatePolicy()))


def failing(tmp: Path) -> dict[str, Any]:
    """Two regressions and an improvement, each called and confirmed on fresh worker pairs,
    IR diffs beside them, a rejected row, a row whose IR changed while its time did not."""
    fallback = ["AUTOTUNE_REPLAY_FALLBACK reason=key_missing kernel=tritongate.ops.kernels.reduction.rmsnorm_kernel"]
    base, cand = _sides([
        measured("matmul", "4096x4096x4096", 220, 365, seed=1),
        measured("attention", "4x16x1024x64", 51, 82, seed=2),
        measured("softmax", "4096x4096", 18, 17.1, seed=3),
        measured("rmsnorm", "16x8192", 2.0, 2.0, seed=4, cand_markers=fallback),
        measured("add", "1048576", 2.5, 2.5, seed=5, dtype="float32"),
        measured("silu_mul", "4096x4096", 25.4, 25.4, seed=6)])
    b, c = pair(tmp, base, cand, cand_identity=_pair_identity({"DISABLE_MMA_V3": "1"}))
    result = run_gate(b, c, GatePolicy())
    head = ("@@ -12,7 +12,7 @@\n   %c = arith.constant dense<0.000000e+00>\n"
            "-    %0 = ttng.warp_group_dot %a, %b, %c : f16 -> f32\n+    %0 = tt.dot %a, %b, %c : f16 -> f32\n")
    ir = IREvidence(rows={
        ("matmul", "4096x4096x4096", "float16"): RowIR(2, 1, "ir-diff/matmul_4096x4096x4096/matmul_kernel/B128.diff",
                                                       head, False),
        ("attention", "4x16x1024x64", "float16"): RowIR(1, 1, "ir-diff/attention_4x16x1024x64/attn_fwd/B64.diff",
                                                        head, True),
        ("silu_mul", "4096x4096", "float16"): RowIR(1, 1, "ir-diff/silu_mul_4096x4096/silu_mul_kernel/B1024.diff",
                                                    "@@ -3,1 +3,1 @@\n-  num_warps = 4\n+  num_warps = 8\n"),
        ("softmax", "4096x4096", "float16"): RowIR(1, 0), ("add", "1048576", "float32"): RowIR(1, 0),
        ("rmsnorm", "16x8192", "float16"): RowIR(1, 0)},
        counts={"identical": 3, "changed": 3}, folder="ir-diff")
    return verdict_document(result, ir, artifact_url="https://github.com/o/r/actions/runs/1/artifacts/2")


def identical(tmp: Path) -> dict[str, Any]:
    """Every launched kernel byte-identical on both sides: nothing timed, nothing to fear."""
    keys = [("softmax", "4096x4096"), ("matmul", "4096x4096x4096"), ("add", "1048576"), ("rmsnorm", "16x8192")]
    base = [untimed(o, c, h=f"h{i}") for i, (o, c) in enumerate(keys)]
    cand = [untimed(o, c, h=f"h{i}") for i, (o, c) in enumerate(keys)]
    b, c = pair(tmp, base, cand, cand_identity=_pair_identity({}, "/opt/pr/bin/python"))
    return verdict_document(run_gate(b, c, GatePolicy()))


def planted(tmp: Path) -> dict[str, Any]:
    """The try-out's planted run on the cpu backend: the candidate's builtin kernels slowed by
    a planted spin, and a codegen overlay that does nothing under the interpreter."""
    cpu = {"device": "cpu", "backend": "cpu", "timer": "host-wall",
           "codegen_env": {"TRITON_DISABLE_LINE_INFO": "1", "TRITON_DEFAULT_FP_FUSION": "1",
                           "TRITON_INTERPRET": "1"}}
    policy = GatePolicy(min_effect=0.05)
    interp = default_schedule("cpu", 5)
    base, cand = _sides([measured(op, case, 900 if op == "add" else 2400, m, seed=seed, dtype="float32",
                                  timer="host-wall", round_sd=0.01, schedule=interp, policy=policy)
                         for op, case, m, seed in (("add", "4096", 1150, 1), ("softmax", "256x256", 2400, 2))])
    b = write_run(tmp / "smoke_20261201T120000Z", base, identity={**cpu, **_pair_identity({})})
    c = write_run(tmp / "smoke_20261201T120500Z", cand, mode="replay", replay_from=b.path, identity={
        **cpu, **_pair_identity({"TRITONGATE_PLANTED_DELAY": "runs/plan.json", "DISABLE_MMA_V3": "1"}),
        "planted_delay": {"file": "runs/plan.json", "fraction": 0.25, "rows": 1}})
    return verdict_document(run_gate(b, c, policy))


BLAME_FIXTURE = GOLDEN / "blame"


def fixture_diffs(folder: Path = BLAME_FIXTURE) -> tuple[list[VariantDiff], dict[int, PurePosixPath]]:
    """The real ir-diff's variants (from its index.tsv, without the diff texts) and their diff paths."""
    with open(folder / "index.tsv", encoding="utf-8", newline="") as f:
        records = list(csv.DictReader(f, delimiter="\t"))
    diffs = [VariantDiff(case=r["case"], kernel=r["kernel"], name=r["name"], status=r["status"],
                         added=int(r["added"]), removed=int(r["removed"]), rows=tuple(filter(None, r["rows"].split(","))),
                         reason=r["reason"]) for r in records]
    return diffs, {i: PurePosixPath(r["diff"]) for i, r in enumerate(records) if r["diff"]}


def blamed(tmp: Path) -> dict[str, Any]:
    """A real Triton change (the NVIDIA backend drops ``tritongpu-coalesce``): every kernel's TTGIR
    changed, the first four variants blamed (``ir-diff --blame 4``), the rest said to be not
    blamed; the memory-bound rows regress (synthetic timings, as an uncoalesced load would)."""
    base, cand = _sides([
        measured("softmax", "1024x1024", 9.0, 13.5, seed=21),
        measured("add", "1048576", 8.1, 12.9, seed=22, dtype="bfloat16"),
        measured("add", "16777216", 101.0, 160.0, seed=23, dtype="float32"),
        measured("silu_mul", "4096x4096", 60.0, 60.0, seed=24),
        measured("matmul", "512x512x512", 14.0, 14.0, seed=25),
        measured("rmsnorm", "16x8192", 3.2, 3.2, seed=26, dtype="bfloat16")])
    b, c = pair(tmp, base, cand, cand_identity=_pair_identity({}, "/opt/pr/bin/python"))
    diffs, paths = fixture_diffs()
    counts = {st: n for st in STATUSES if (n := sum(d.status == st for d in diffs))}
    ir = IREvidence(rows=_rows(diffs, paths), counts=counts, folder=IR_DIFF_DIR,
                    blame=read_blame(BLAME_FIXTURE, diffs, IR_DIFF_DIR))
    return verdict_document(run_gate(b, c, GatePolicy()), ir)


KINDS: dict[str, Callable[[Path], dict[str, Any]]] = {
    "pass": passing, "pass_blind": blind, "fail_regressions_ir": failing, "identical_only": identical,
    "planted": planted, "blame": blamed}


def build(kind: str, tmp: Path) -> dict[str, Any]:
    tmp.mkdir(parents=True, exist_ok=True)
    return _normalise(KINDS[kind](tmp), tmp)
