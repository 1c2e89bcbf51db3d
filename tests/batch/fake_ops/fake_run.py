"""A stand-in for ``tritongate run`` that misbehaves on purpose, chosen by the op's name.

``python fake_run.py --state DIR run --suite S --ops OP [--dtypes D,E] --out OUT [--replay-from R]``
writes a real run directory with ``tritongate.rundir.RunWriter`` (rows with deterministic
samples, autotune records in record mode, TTGIR) and prints its path as the last stdout
line, like the real command. By prefix of the op name:

  ok_       a clean run                    crash_    os.abort() after the first row, always
  segv_     SIGSEGV on its first call       hang_     ignores SIGTERM, starts a grandchild, sleeps
  flaky_    exit 1 on its first call        fail_     exit 1 on every call
  skip_     every row "not supported"       dtcrash_  os.abort() whenever float16 is asked
  nodtype_  preflight check=dtype when bfloat16 is asked
  slow_     sleeps 120 s after its first row, on its first call only

Every call appends ``{"op", "dtypes", "pid", "pgid", "device", "t"}`` to ``DIR/calls.jsonl``; a
run that finishes appends ``{"op", "device", "start", "end"}`` to ``DIR/spans.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path


def _calls(state: Path, op: str) -> int:
    path = state / "calls.jsonl"
    if not path.is_file():
        return 0
    return sum(json.loads(line)["op"] == op for line in path.read_text().splitlines() if line.strip())


def _log_call(state: Path, op: str, dtypes: list[str]) -> None:
    _append(state / "calls.jsonl", {"op": op, "dtypes": dtypes, "pid": os.getpid(), "pgid": os.getpgid(0),
                                     "device": os.environ.get("CUDA_VISIBLE_DEVICES"), "t": time.time()})


def _append(path: Path, doc: dict) -> None:
    line = json.dumps(doc) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line.encode())  # one write with O_APPEND: concurrent ops never interleave
    finally:
        os.close(fd)


def samples(op: str, case: str, dtype: str) -> list[float]:
    base = 10.0 + zlib.crc32(f"{op}|{case}|{dtype}".encode()) % 1000 / 10.0
    return [base * (1 + 0.001 * ((i * 7) % 5 - 2)) for i in range(12)]


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--state", required=True)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--suite", required=True)
    r.add_argument("--ops", required=True)
    r.add_argument("--dtypes")
    r.add_argument("--out", required=True)
    r.add_argument("--replay-from")
    args, _ = p.parse_known_args()
    state = Path(args.state)
    state.mkdir(parents=True, exist_ok=True)
    op = args.ops
    kind = op.split("_", 1)[0]
    earlier = _calls(state, op)

    from tritongate.suites import load_suite

    suite = load_suite(args.suite)
    spec = next(o for o in suite.ops if o.name == op)
    wanted = args.dtypes.split(",") if args.dtypes else None
    dtypes = [d for d in spec.dtypes if wanted is None or d in wanted]
    _log_call(state, op, dtypes)
    if not dtypes:
        print("!!! PREFLIGHT_FAILED check=suite_empty", file=sys.stderr)
        return 3
    if kind == "nodtype" and "bfloat16" in dtypes:
        print("!!! PREFLIGHT_FAILED check=dtype", file=sys.stderr)
        print("error: backend fake cannot run bfloat16", file=sys.stderr)
        return 3
    if kind == "fail":
        print("error: a deterministic failure", file=sys.stderr)
        return 1
    if kind == "flaky" and earlier == 0:
        print("error: a flake", file=sys.stderr)
        return 1
    if kind == "segv" and earlier == 0:
        os.kill(os.getpid(), signal.SIGSEGV)
    if kind == "hang":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the batch must escalate to SIGKILL
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        (state / f"{op}.pids").write_text(json.dumps({"pid": os.getpid(), "pgid": os.getpgid(0),
                                                      "child": child.pid}))
        while True:
            time.sleep(1)
    t0 = time.time()
    rc = write_run(args, suite, op, dtypes, kind, first_call=earlier == 0)
    _append(state / "spans.jsonl", {"op": op, "device": os.environ.get("CUDA_VISIBLE_DEVICES"),
                                    "start": t0, "end": time.time()})
    return rc


def write_run(args: argparse.Namespace, suite, op: str, dtypes: list[str], kind: str, *, first_call: bool) -> int:
    from tritongate.autotune.records import Record, load_records, write_records
    from tritongate.ir.capture import RowIR
    from tritongate.ir.index import CompiledVariant
    from tritongate.ir.store import IRStore
    from tritongate.rundir import RunWriter, new_run_dir
    from tritongate.schema import MeasurementInfo, Row, RowStatus

    replay = Path(args.replay_from) if args.replay_from else None
    if replay is not None:
        load_records(replay, backend="cpu")  # refuses what the real run refuses
    path = new_run_dir(Path(args.out), suite.name)
    identity = {"suite": {"name": suite.name, "path": str(suite.path), "digest": suite.digest},
                "backend": "cpu", "device": "fake-device", "timer": "host-wall",
                "measure_config": {"l2": "warm"}, "codegen_env": {"TRITON_INTERPRET": "1"},
                "compiler_ref": "fake", "replay_from": str(replay.resolve()) if replay else None,
                "started_utc": "2026-01-01T00:00:00+00:00"}
    mode = "replay" if replay else "record"
    writer = RunWriter(path, identity, mode=mode)
    store = IRStore(path)
    records = []
    kernel = f"fake_ops.{op}_kernel"
    for dtype in dtypes:
        for shape in suite.shapes[op]:
            case = "x".join(map(str, shape))
            if kind == "skip":
                row = Row(op=op, case=case, dtype=dtype, timer="host-wall", samples=(), status=RowStatus.ERROR,
                          error=f"NotImplementedError: {op} is not supported on this backend",
                          markers=(f"ROW_ERROR reason=NotImplementedError: {op} is not supported",))
            else:
                row = Row(op=op, case=case, dtype=dtype, timer="host-wall", samples=tuple(samples(op, case, dtype)),
                          params={"shape": list(shape)},
                          measurement=MeasurementInfo(launches_per_sample=1, samples_per_round=2, warmup_calls=1,
                                                      l2="warm"),
                          autotune={"mode": mode, "sweep_benchmarks": 0, "kernels": []})
            writer.add(row)
            digest = f"{zlib.crc32(f'{op}|{case}|{dtype}'.encode()):08x}"
            store.add(RowIR(variants=(CompiledVariant(
                case=case, kernel=kernel, signature={"x_ptr": f"*{dtype}"}, constexprs={"BLOCK": 128},
                specialization={}, options={"num_warps": 4}, compile_hash=digest, launches=1,
                rows=(f"{op}/{dtype}",)),), ttgir={digest: f"// fake ttgir {op} {case} {dtype}\n"}))
            records.append(Record(op=op, kernel=kernel, tuner="Autotuner", key=[*shape, dtype],
                                  config={"kwargs": {"BLOCK": 128}, "num_warps": 4}, cases=(f"{case}/{dtype}",)))
            sys.stdout.flush()
            if kind == "crash" or (kind == "dtcrash" and "float16" in dtypes):
                os.abort()
            if kind == "slow" and first_call:
                time.sleep(120)
    store.close()
    if mode == "record":
        write_records(path, records, {"backend": "cpu", "device": "fake-device", "run": path.name})
    writer.finish()
    print(f"{len(dtypes)} dtypes measured")
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
