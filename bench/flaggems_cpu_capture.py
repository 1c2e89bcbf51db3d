"""The FlagGems CPU capture against a real flag_gems, on a host without a GPU.

    PYTHONPATH=/tmp/fgenv/site:. .venv/bin/python bench/flaggems_cpu_capture.py \
        [--record RECORD] [--suite flaggems-pr] [--out bench/results/2026-12-05_cpu_flaggems_capture]

flag_gems lives in its own directory on PYTHONPATH (never the project's venv: CI has none).
Without ``--record`` (no H200 record of the suite is kept here) a record skeleton is made: the
suite's rows on an "NVIDIA H200", cuda:90, and no autotune choices, so every tuned row is
reported as needing the record's configs. Writes ``OUT.json`` and ``OUT.md``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def skeleton_record(path: Path, suite_name: str, device: str = "NVIDIA H200") -> Path:
    """A GPU record's identity and rows (no measurements' meaning, no IR, no tuner choices)."""
    from tritongate.autotune.records import write_records
    from tritongate.backends import BACKENDS
    from tritongate.ops.providers import flaggems_recipes
    from tritongate.ops.registry import Registry
    from tritongate.preflight import plan_rows
    from tritongate.rundir import RunWriter
    from tritongate.schema import MeasurementInfo, Row
    from tritongate.suites import load_suite

    suite = load_suite(suite_name)
    registry = Registry()  # specs without flag_gems: only names, dtypes and shape checks matter
    from tritongate.ops.registry import OpSpec

    for op in suite.ops:
        rec = flaggems_recipes.recipe(op.name.removeprefix("flag_gems."))
        registry.register(OpSpec(name=op.name, description="", shape_doc=rec.family.shape_doc,
                                 ranks=rec.family.ranks, dtypes=rec.all_dtypes, build=None,  # type: ignore[arg-type]
                                 bytes=rec.family.bytes))
    w = RunWriter(path, {"backend": "cuda", "device": device, "suite": {"name": suite_name}})
    info = MeasurementInfo(launches_per_sample=1, samples_per_round=1, warmup_calls=1, l2="warm")
    for p in plan_rows(suite, registry, BACKENDS["cuda"]):
        w.add(Row(op=p.op, case=p.case, dtype=p.dtype, timer="cuda-graph", samples=(1.0,), measurement=info))
    w.finish()
    write_records(path, [], {"backend": "cuda", "device": device, "run": path.name})
    return path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--record", type=Path)
    parser.add_argument("--suite", default="flaggems-pr")
    parser.add_argument("--target", default="cuda:90")
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/2026-12-05_cpu_flaggems_capture")
    args = parser.parse_args()
    from tritongate.prescreen.provider_capture import capture_rows
    from tritongate.prescreen.provider_capture import capture_document

    with tempfile.TemporaryDirectory() as tmp:
        record = args.record or skeleton_record(Path(tmp) / "record", args.suite)
        t0 = time.monotonic()
        result = capture_rows(record, args.suite, None, args.target)
        wall = time.monotonic() - t0
        doc = capture_document(result, suite=args.suite, record=record, wall_s=wall).model_dump()
    doc["date_utc"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    doc["record"] = str(args.record) if args.record else "skeleton (no H200 record here): rows only, no tuner choices"
    doc["variants"] = {"|".join(k): [{"kernel": v.kernel, "constexprs": dict(v.constexprs),
                                      "specialization": dict(v.specialization), "options": dict(v.options),
                                      "signature": dict(v.signature), "launches": v.launches}
                                     for v in ir.variants if v.launches > 0]
                       for k, ir in sorted(result.captured.items())}
    args.out.with_suffix(".json").write_text(json.dumps(doc, indent=1, default=str) + "\n", encoding="utf-8")
    reasons = Counter(why for *_, why in doc["not_capturable"])
    print(f"{len(doc['captured'])} captured, {len(doc['not_capturable'])} not capturable, {wall:.1f} s")
    for why, n in reasons.most_common():
        print(f"  {n:3d}  {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
