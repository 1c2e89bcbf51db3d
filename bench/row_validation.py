"""What reading a results.json's rows costs, by way of reading them: pydantic's strict
``model_validate_json`` of the file's bytes into ``ResultsDoc`` (its rows are ``Row``s), then
each stored summary checked against its samples (``rundir.checked_rows``, what ``load_run``
does), against parsing first and validating the document again from its re-encoded text
(the slow way, taken for a file the fast way refuses, for the message), each with the
collector paused as ``load_run`` pauses it. CPU only.

    python bench/row_validation.py --rows 10000 --out bench/results
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from scale import prepare_gate  # noqa: E402 - after the checkout is on the path
from tritongate.rundir import checked_rows  # noqa: E402
from tritongate.schema import ResultsDoc  # noqa: E402


def times(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
        finally:
            gc.enable()
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=10000)
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        prepare_gate(args.rows, Path(tmp))
        data = (Path(tmp) / "base" / "results.json").read_bytes()
    ways = {
        "json.loads alone": lambda: json.loads(data),
        "model_validate_json alone": lambda: ResultsDoc.model_validate_json(data, strict=True),
        "model_validate_json + checked_rows (load_run)":
            lambda: checked_rows(Path("x"), ResultsDoc.model_validate_json(data, strict=True).rows),
        "json.loads + json.dumps + model_validate_json + checked_rows (the slow way)":
            lambda: checked_rows(Path("x"), ResultsDoc.model_validate_json(json.dumps(json.loads(data)),
                                                                            strict=True).rows),
    }
    samples = {name: times(fn, args.repeat) for name, fn in ways.items()}
    import pydantic

    stamp = dt.datetime.now(dt.timezone.utc)
    lines = [f"# Reading {args.rows:,} rows of a results.json ({stamp:%Y-%m-%d})", "",
             f"CPU: {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
             f"pydantic {pydantic.VERSION}; {len(data):,} bytes; each way {args.repeat} times in one process "
             "(gc collected before each, paused during it); seconds.", "",
             "| way | min | median | max |", "|---|---|---|---|"]
    for name, ts in samples.items():
        s = sorted(ts)
        lines.append(f"| {name} | {s[0]:.3f} | {s[len(s) // 2]:.3f} | {s[-1]:.3f} |")
    lines += ["", "Raw samples (s):", "", "```", json.dumps(samples, indent=1), "```", ""]
    out = Path(args.out) / f"{stamp:%Y-%m-%d}_cpu_row_validation.md"
    out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines[:len(ways) + 6]))
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
