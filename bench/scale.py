"""How the gate's own machinery grows with its work, on the CPU: time and peak memory of each
path at several sizes, and the growth exponent between them.

Cases (size = what grows):

- ``ir``: ``IRStore.add`` once per row, as a run does, 2 variants a row (size: rows);
- ``merge``: ``tritongate merge`` of 12 pair shards, gate included (size: rows in all);
- ``gate``: ``tritongate gate`` of two paired run directories (size: rows), with the length
  of the verdict.md it wrote (``verdict_md_chars``: the PR comment's text; GitHub refuses one
  over 65,536 characters, the renderer keeps it under 60,000);
- ``history``: ``tritongate history --no-plots`` over a store of nightly records
  (size: nights; the rows per night are given with ``--history-rows``);
- ``batch-merge``: ``tritongate batch-merge`` of 4 replay batch shards (size: rows in all);
- ``publish``: ``tritongate baseline publish`` of one record run (size: rows), with how many
  times it read the run's ``results.json`` (``results_reads``);
- ``import``: a fresh ``python -c "import tritongate.gate.output"`` (no size);
- ``op-start``: what ``batch`` pays per op before the op's first row, on the CPU: a fresh
  process importing the run path (``tritongate.runner``, torch, triton) and parsing the
  ``run`` command line (no size; compiles and the GPU's own start-up come on top);
- ``batch-fresh`` / ``batch-worker``: ``tritongate batch`` of the first N ops of the builtin
  smoke suite on the CPU interpreter, every attempt a fresh process (the default) or
  in the lane's reused worker (``--reuse-worker``); ``per_op_overhead_s`` is what an op's attempts
  took beyond the run's own ``wall_s`` (process start, imports, parsing; size: ops).

Inputs are synthetic but valid: rows are the project's value objects (``Row``, ``PairInfo``,
``CompiledVariant``), run directories are created by ``RunWriter`` and loaded back through
``load_run`` before they are used, records are published with ``baselines.publish``. The
``results.json`` of an input is written in one go from the rows' own ``to_dict`` (the per-row
writer is what the ``merge`` case measures, and before it was made linear it could not have
prepared 10,000-row inputs at all).

Each measurement runs in a fresh process (``_measure``), after its inputs were prepared in
another (``_prepare``): ``seconds`` is the operation itself, ``process_s`` the whole process
(start-up and imports included), ``peak_mib`` the process's peak resident memory (wait4).

    python bench/scale.py --label before --out bench/results [--cases ir,merge] \
        [--sizes ir=100,200,400] [--timeout 600]
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import math
import os
import platform
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

BATCH_CASES = ("batch-fresh", "batch-worker")
CASES = ("import", "op-start", "ir", "merge", "gate", "history", "batch-merge", "publish", *BATCH_CASES)
UNSIZED = ("import", "op-start")
DEFAULT_SIZES = {"ir": [100, 300, 600, 1232], "merge": [400, 1232, 2464], "gate": [2500, 5000, 10000],
                 "history": [90, 180, 365], "batch-merge": [400, 1232, 2464], "publish": [1232, 5000, 10000],
                 "import": [1], "op-start": [1], "batch-fresh": [4, 7], "batch-worker": [4, 7]}
# the smoke suite's ops, cheapest first on the interpreter (it has 7)
SMOKE_OPS = ("add", "silu_mul", "softmax", "rmsnorm", "attention", "attention_causal", "matmul")
SHARDS = 12
BATCH_SHARDS = 4
T0 = dt.datetime(2026, 1, 1, 3, 0, tzinfo=dt.timezone.utc)
IDENT = {"device": "NVIDIA H200", "backend": "cuda", "timer": "cuda-graph", "compiler_ref": "triton 3.6.0",
         "commit": "0123456789abcdef0123456789abcdef01234567", "suite": {"name": "deep", "digest": "d1"},
         "software": {"triton": {"version": "3.6.0", "build_hash": "deafe87b"}}}


# -- synthetic rows ------------------------------------------------------------------------

def row_key(i: int) -> tuple[str, str, str]:
    """8 rows an op: 4 shapes x 2 dtypes, as a suite lays them out."""
    return f"op{i // 8:04d}", f"{256 * (1 + (i // 2) % 4)}x4096", ("float16", "bfloat16")[i % 2]


def make_row(i: int, *, side: str | None = None, rng: random.Random, level: float = 1.0, rounds: int = 5,
             per_round: int = 5, mode: str = "replay") -> Any:
    from tritongate.schema import MeasurementInfo, PairInfo, Row, Variant

    op, case, dtype = row_key(i)
    base = 5.0 + (i % 37) * 3.0
    pairing = None
    if side:
        pairing = PairInfo(pair_id="scale", side=side, went_first=tuple((r + (side == "base")) % 2 == 0
                                                                        for r in range(rounds)),
                           target_effect=0.01, min_rounds=rounds, max_rounds=rounds)
    info = MeasurementInfo(launches_per_sample=100, samples_per_round=per_round, warmup_calls=10, l2="warm",
                           shift_bytes=tuple(rng.randrange(1, 1 << 20) for _ in range(rounds)), pairing=pairing)
    samples = tuple(base * level * math.exp(rng.gauss(0.0, 0.004)) for _ in range(rounds * per_round))
    kernel = f"tritongate.ops.kernels.{op}.{op}_kernel"
    variant = Variant(kernel=kernel, name=f"BLOCK1024_w4s3__{dtype}",
                      source_hash=hashlib.sha1(kernel.encode()).hexdigest(),
                      binary_hash=hashlib.sha1(f"{i}{side}".encode()).hexdigest(), launches=100)
    autotune = {"mode": mode, "sweep_benchmarks": 0,
                "kernels": [{"kernel": kernel, "config": {"kwargs": {"BLOCK": 1024}, "num_warps": 4,
                                                           "num_stages": 3}, "source": mode}]}
    return Row(op=op, case=case, dtype=dtype, timer="cuda-graph", samples=samples, params={"n": 4096},
               measurement=info, variants=(variant,), flops=1e9, bytes=4e6, autotune=autotune)


def write_run(path: Path, identity: dict[str, Any], rows: list[Any], mode: str) -> None:
    """A complete run directory: ``RunWriter`` creates it, the rows go in one write, and it
    must load back through ``load_run``."""
    from tritongate import __version__
    from tritongate.atomicio import write_text_atomic
    from tritongate.rundir import RESULTS, RunWriter, load_run
    from tritongate.schema import SCHEMA_VERSION

    RunWriter(path, identity, mode=mode)
    doc = {"schema_version": SCHEMA_VERSION, "tool_version": __version__, "status": "complete", "mode": mode,
           "unit": "us", "started_utc": T0.isoformat(), "updated_utc": T0.isoformat()}
    text = json.dumps(doc)[:-1] + ', "rows": [\n' + ",\n".join(json.dumps(r.to_dict()) for r in rows) + "\n]}\n"
    write_text_atomic(path / RESULTS, text)
    (path / "run.log").write_text("synthetic\n")
    if len(load_run(path).rows) != len(rows):
        raise RuntimeError(f"{path} did not load back")


# -- prepare -------------------------------------------------------------------------------

def prepare_ir(n: int, work: Path) -> None:
    from tritongate.ir.index import CompiledVariant
    from tritongate.ir.capture import RowIR

    out = []
    for i in range(n):
        op, case, dtype = row_key(i)
        elt = "fp16" if dtype == "float16" else "bf16"
        variants = []
        for j, (block, warps) in enumerate(((1024, 4), (2048, 8))):
            h = hashlib.sha256(f"{i}/{j}".encode()).hexdigest()
            variants.append(CompiledVariant(
                case=case, kernel=f"tritongate.ops.kernels.{op}.{op}_kernel",
                signature={"x_ptr": f"*{elt}", "y_ptr": f"*{elt}", "n": "i32", "BLOCK": "constexpr"},
                constexprs={"BLOCK": block}, specialization={"x_ptr": [["tt.divisibility", 16]]},
                options={"num_warps": warps, "num_stages": 3, "num_ctas": 1}, compile_hash=h,
                source_hash="s" + h[:16], binary_hash="b" + h[:16], target="cuda:90", launches=100 if j == 0 else 1,
                rows=(f"{op}/{dtype}",)))
        texts = {v.compile_hash: "".join(f"  %{k} = tt.load %arg{k % 4} : tensor<{v.constexprs['BLOCK']}x{elt}>"
                                         f" // {v.compile_hash[:8]}\n" for k in range(60)) for v in variants}
        out.append(RowIR(variants=tuple(variants), ttgir=texts))
    import pickle

    (work / "rows.pickle").write_bytes(pickle.dumps(out))


def _pair_rows(n: int, seed: int) -> dict[str, list[Any]]:
    rng = random.Random(seed)
    return {side: [make_row(i, side=side, rng=rng, level=1.0 if side == "base" or i % 50 else 1.05)
                   for i in range(n)] for side in ("base", "candidate")}


def _pair_identity(side: str, shard: tuple[int, int, int] | None) -> dict[str, Any]:
    pair: dict[str, Any] = {"pair_id": "scale", "side": side}
    if shard:
        pair["shard"] = {"index": shard[0], "count": shard[1], "planned_rows": shard[2]}
    return {**IDENT, "replay_from": "/store/deep_20260101T030000Z", "pair": pair}


def prepare_merge(n: int, work: Path) -> None:
    rows = _pair_rows(n, 1)
    for k in range(1, SHARDS + 1):
        for side in ("base", "candidate"):
            write_run(work / f"shard{k:02d}" / side, _pair_identity(side, (k, SHARDS, n)),
                      rows[side][k - 1::SHARDS], "replay")


def prepare_gate(n: int, work: Path) -> None:
    rows = _pair_rows(n, 2)
    for side in ("base", "candidate"):
        write_run(work / side, _pair_identity(side, None), rows[side], "replay")


def prepare_history(nights: int, work: Path, rows_per_night: int) -> None:
    from tritongate.autotune.records import Record, write_records
    from tritongate.baselines.publishing import publish

    rng = random.Random(3)
    for night in range(nights):
        started = T0 + dt.timedelta(days=night)
        commit = hashlib.sha1(f"night {night}".encode()).hexdigest()
        # a 5 % step on every 10th row from night 2/3 on: change points to find
        rows = [make_row(i, rng=rng, level=1.05 if i % 10 == 0 and night >= 2 * nights // 3 else 1.0,
                         mode="record") for i in range(rows_per_night)]
        run = work / "runs" / f"deep_{night:04d}"
        write_run(run, {**IDENT, "commit": commit, "started_utc": started.isoformat(timespec="seconds")},
                  rows, "record")
        write_records(run, [Record(op=r.op, kernel=r.variants[0].kernel, tuner="Autotuner", key=[4096],
                                   config={"kwargs": {"BLOCK": 1024}, "num_warps": 4, "num_stages": 3},
                                   cases=(f"{r.case}/{r.dtype}",)) for r in rows],
                      {"backend": "cuda", "device": IDENT["device"], "run": run.name, "suite": "deep"})
        (run / "shapes.yaml").write_text("{}\n")
        publish(work / "store", run, runner_class="h200", compiler_repo="org/triton",
                now=started + dt.timedelta(hours=2))


def prepare_publish(n: int, work: Path) -> None:
    """A record run of ``n`` rows with its autotune records, as a nightly job publishes it."""
    from tritongate.autotune.records import Record, write_records

    rng = random.Random(5)
    rows = [make_row(i, rng=rng, mode="record") for i in range(n)]
    run = work / "run"
    write_run(run, {**IDENT, "started_utc": T0.isoformat(timespec="seconds")}, rows, "record")
    write_records(run, [Record(op=r.op, kernel=r.variants[0].kernel, tuner="Autotuner", key=[4096],
                               config={"kwargs": {"BLOCK": 1024}, "num_warps": 4, "num_stages": 3},
                               cases=(f"{r.case}/{r.dtype}",)) for r in rows],
                  {"backend": "cuda", "device": IDENT["device"], "run": run.name, "suite": "deep"})
    (run / "shapes.yaml").write_text("{}\n")


def _count_results_reads() -> list[str]:
    """Every read of a results.json from here on (every reader of a run's files reads their
    bytes through this)."""
    import tritongate.rundir as rundir

    reads: list[str] = []
    real = rundir._read_bytes

    def counting(path: Path, error: Any) -> bytes:
        if path.name == rundir.RESULTS:
            reads.append(str(path))
        return real(path, error)

    rundir._read_bytes = counting  # type: ignore[assignment]
    return reads


def prepare_batch_merge(n: int, work: Path) -> None:
    """``BATCH_SHARDS`` replay batches of one record, planned alike: each shard's manifest, op
    results and per-op runs written with the writers ``batch`` uses (``write_manifest``,
    ``write_op_result``, ``write_ops_status``)."""
    from tritongate.batch.plan import OPS_DIR, RUN_DIR, write_manifest
    from tritongate.batch.status import OPS_STATUS, OpResult, OpStatus, write_op_result, write_ops_status

    rng = random.Random(4)
    record = work / "record"
    write_run(record, {**IDENT}, [make_row(i, rng=rng, mode="record") for i in range(n)], "record")
    ops = sorted({row_key(i)[0] for i in range(n)})
    plan = {"suite": "deep", "planned_ops": ops, "dtypes": None, "options": {}, "replay_root": str(record)}
    for k in range(1, BATCH_SHARDS + 1):
        shard = work / f"shard{k}"
        mine = ops[k - 1::BATCH_SHARDS]
        results = []
        for op in mine:
            rel = f"{RUN_DIR}/{op}"
            rows = [make_row(i, rng=rng) for i in range(n) if row_key(i)[0] == op]
            write_run(shard / rel, {**IDENT, "replay_from": str(record)}, rows, "replay")
            results.append(OpResult(op, OpStatus.PASS, runs=(rel,), rows=len(rows), ok_rows=len(rows),
                                    replay_from=str(record)))
            write_op_result(shard / OPS_DIR / op, results[-1])
        write_ops_status(shard / OPS_STATUS, results)
        write_manifest(shard, {"plan": {**plan, "ops": mine, "shard": {"index": k, "count": BATCH_SHARDS}},
                               "execution": {}, "created_utc": T0.isoformat(), "finished": True,
                               "finished_utc": T0.isoformat()})


# -- measure -------------------------------------------------------------------------------

def measure(case: str, n: int, work: Path, extra: dict[str, Any]) -> dict[str, Any]:
    if case == "import":
        t0 = time.perf_counter()
        import tritongate.gate.output

        return {"seconds": time.perf_counter() - t0}
    if case == "op-start":
        t0 = time.perf_counter()
        import torch  # noqa: F401
        import triton  # noqa: F401

        import tritongate.runner  # noqa: F401
        from tritongate.cli import build_parser

        build_parser().parse_args(["run", "--suite", "pr", "--out", str(work)])
        return {"seconds": time.perf_counter() - t0}
    if case in BATCH_CASES:
        return measure_batch(n, work, fresh=case == "batch-fresh")
    if case == "ir":
        import pickle

        from tritongate.ir.store import IRStore

        rows = pickle.loads((work / "rows.pickle").read_bytes())
        t0 = time.perf_counter()
        store = IRStore(work / "run")
        for r in rows:
            store.add(r)
        store.close()
        return {"seconds": time.perf_counter() - t0, "files": len(list((work / "run" / "ttgir").rglob("*.ttgir")))}
    from tritongate.cli import main

    argv: list[str]
    if case == "merge":
        argv = ["merge", *map(str, sorted(work.glob("shard*"))), "--out", str(work / "out")]
    elif case == "gate":
        argv = ["gate", str(work / "base"), str(work / "candidate"), "--out", str(work / "out")]
    elif case == "history":
        argv = ["history", "--store", str(work / "store"), "--runner-class", "h200", "--suite", "deep",
                "--out", str(work / "out"), "--no-plots"]
    elif case == "batch-merge":
        argv = ["batch-merge", *map(str, sorted(work.glob("shard*"))), "--out", str(work / "out")]
    elif case == "publish":
        argv = ["baseline", "publish", str(work / "run"), "--runner-class", "h200", "--store", str(work / "store"),
                "--compiler-repo", "org/triton"]
    else:
        raise SystemExit(f"unknown case {case}")
    reads = _count_results_reads() if case == "publish" else None
    t0 = time.perf_counter()
    with open(work / "stdout.txt", "w") as out:
        saved, sys.stdout = sys.stdout, out
        try:
            code = main(argv)
        finally:
            sys.stdout = saved
    got = {"seconds": time.perf_counter() - t0, "exit_code": code}
    if reads is not None:
        got["results_reads"] = len(reads)
    if case == "gate" and (work / "out" / "verdict.md").is_file():
        got["verdict_md_chars"] = len((work / "out" / "verdict.md").read_text(encoding="utf-8"))
    return got


def measure_batch(n: int, work: Path, *, fresh: bool) -> dict[str, Any]:
    """A batch of the first ``n`` smoke ops on the CPU; its wall, and per op what the attempts
    took beyond the runs' own ``wall_s`` (process start, imports, parsing, the worker protocol)."""
    from tritongate.batch import BatchRequest, OpStatus, RunOptions, run_batch
    from tritongate.rundir import load_run

    ops = SMOKE_OPS[:n]
    started: list[str] = []  # the Python processes the batch started (fresh op processes or workers)
    popen_init = subprocess.Popen.__init__

    def counting(self: subprocess.Popen[Any], args: Any, *a: Any, **k: Any) -> None:
        if isinstance(args, (list, tuple)) and args and args[0] == sys.executable:
            started.append(" ".join(map(str, args[:4])))
        popen_init(self, args, *a, **k)

    subprocess.Popen.__init__ = counting  # type: ignore[method-assign]
    t0 = time.perf_counter()
    outcome = run_batch(BatchRequest(suite="smoke", out=work / "out", ops=ops, options=RunOptions(backend="cpu"),
                                     worker_attempts=0 if fresh else 32))
    seconds = time.perf_counter() - t0
    subprocess.Popen.__init__ = popen_init  # type: ignore[method-assign]
    attempts = [a for r in outcome.results for a in r.attempts]
    # per attempt (plan order): its wall beyond its run's own
    extra = [a.wall_s - (float(load_run(outcome.path / a.run, allow_incomplete=True).identity.get("wall_s") or 0.0)
                         if a.run else 0.0) for a in attempts]
    return {"seconds": seconds, "ops": len(ops), "passed": outcome.count(OpStatus.PASS), "attempts": len(attempts),
            "attempts_s": sum(a.wall_s for a in attempts), "per_op_overhead_s": sum(extra) / len(ops),
            "first_op_overhead_s": extra[0], "later_op_overhead_s": sum(extra[1:]) / max(1, len(extra) - 1),
            "per_op_s": seconds / len(ops), "workers": len(started)}


# -- driver --------------------------------------------------------------------------------

def _child(args: list[str], timeout: float) -> tuple[int, float, float, str]:
    """(exit code, wall s, peak MiB, stdout) of a fresh Python process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, __file__, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return 124, time.perf_counter() - t0, float("nan"), ""
    wall = time.perf_counter() - t0
    # communicate() reaped it; the peak comes from the children's rusage delta
    return proc.returncode, wall, float("nan"), out if proc.returncode == 0 else err[-2000:]


def _run_measured(args: list[str], timeout: float) -> tuple[int, float, float, str]:
    """Like ``_child`` but reaped with wait4, for the child's own peak RSS."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, __file__, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    out = proc.stdout.read()  # the child prints one JSON line at its end
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            os.wait4(proc.pid, 0)
            return 124, time.perf_counter() - t0, float("nan"), ""
        time.sleep(0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)
    _run_measured.cpu_s = usage.ru_utime + usage.ru_stime  # type: ignore[attr-defined]
    return proc.returncode, time.perf_counter() - t0, usage.ru_maxrss / 1024.0, out


def exponent(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of log(seconds) on log(size)."""
    pts = [(math.log(x), math.log(y)) for x, y in points if x > 0 and y > 0 and math.isfinite(y)]
    if len(pts) < 2:
        return None
    mx, my = sum(p[0] for p in pts) / len(pts), sum(p[1] for p in pts) / len(pts)
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx if sxx else None


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def drive(ns: argparse.Namespace) -> int:
    sizes = dict(DEFAULT_SIZES)
    for spec in ns.sizes:
        case, _, values = spec.partition("=")
        sizes[case] = [int(v) for v in values.split(",") if v]
    cases = [c for c in ns.cases.split(",") if c]
    work_root = Path(os.environ.get("TMPDIR", "/tmp")) / "tritongate-scale"
    results: dict[str, Any] = {}
    load_before = os.getloadavg()
    for case in cases:
        entries = []
        for n in sizes[case]:
            work = work_root / f"{case}-{n}"
            subprocess.run(["rm", "-rf", str(work)], check=True)
            work.mkdir(parents=True)
            extra = json.dumps({"history_rows": ns.history_rows})
            t0 = time.perf_counter()
            if case not in UNSIZED:
                code, _, _, msg = _child(["_prepare", case, str(n), str(work), extra], ns.timeout * 4)
                if code != 0:
                    print(f"{case} {n}: prepare failed ({code}): {msg}", file=sys.stderr)
                    entries.append({"size": n, "error": f"prepare exited {code}"})
                    continue
            prep = time.perf_counter() - t0
            runs = ns.repeat if case in UNSIZED else ns.repeat_sized
            best: dict[str, Any] | None = None
            for _ in range(runs):
                code, wall, peak, out = _run_measured(["_measure", case, str(n), str(work), extra], ns.timeout)
                if code != 0:
                    entry = {"size": n, "timed_out": code == 124, "process_s": wall, "error": f"exited {code}"}
                    break
                got = json.loads(out.strip().splitlines()[-1])
                entry = {"size": n, **got, "process_s": wall, "cpu_s": _run_measured.cpu_s,  # type: ignore[attr-defined]
                         "peak_mib": peak, "prepare_s": prep}
                if best is None or entry["seconds"] < best["seconds"]:
                    best = entry
            entry = best or entry
            print(f"{case} {n}: {json.dumps(entry)}", file=sys.stderr, flush=True)
            entries.append(entry)
            if entry.get("timed_out"):
                break  # a larger size would take longer still
            subprocess.run(["rm", "-rf", str(work)], check=True)
        results[case] = summarise(case, entries)
    return write_doc(ns, results, {"before": load_before, "after": os.getloadavg()})


def summarise(case: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
    if case in UNSIZED:
        return {"sizes": entries, "exponent_seconds": None, "exponent_cpu": None, "exponent_peak": None}
    return {"sizes": entries, "exponent_seconds": exponent([(e["size"], e["seconds"]) for e in entries if "seconds" in e]),
            "exponent_cpu": exponent([(e["size"], e["cpu_s"]) for e in entries if "cpu_s" in e]),
            "exponent_peak": exponent([(e["size"], e["peak_mib"]) for e in entries if "peak_mib" in e])}


def from_log(ns: argparse.Namespace) -> int:
    """The result of a run cut short, from the lines it logged (``CASE SIZE: {json}``)."""
    by_case: dict[str, list[dict[str, Any]]] = {}
    for line in Path(ns.from_log).read_text().splitlines():
        head, sep, body = line.partition(": ")
        parts = head.split(" ")
        if sep and len(parts) == 2 and parts[0] in CASES and body.startswith("{"):
            by_case.setdefault(parts[0], []).append(json.loads(body))
    return write_doc(ns, {case: summarise(case, entries) for case, entries in by_case.items()}, None)


def write_doc(ns: argparse.Namespace, results: dict[str, Any], load: dict[str, Any] | None) -> int:
    doc = {"date": dt.date.today().isoformat(), "machine": ns.machine, "label": ns.label,
           "cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
           "python": platform.python_version(), "commit": _git("rev-parse", "HEAD"),
           "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
           "history_rows": ns.history_rows, "shards": {"merge": SHARDS, "batch-merge": BATCH_SHARDS},
           "load_average": load, "note": ns.note,
           "results": results}
    try:
        from importlib.metadata import version

        doc["versions"] = {p: version(p) for p in ("tritongate", "numpy", "scipy", "ruptures", "pydantic", "jinja2")}
    except Exception as exc:  # noqa: BLE001 - a result without versions still says why
        doc["versions"] = {"error": str(exc)}
    out = Path(ns.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"{doc['date']}_{ns.machine}_scale_{ns.label}"
    stem.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n")
    stem.with_suffix(".md").write_text(markdown(doc))
    print(stem.with_suffix(".md"))
    return 0


def markdown(doc: dict[str, Any]) -> str:
    what = {"import": "`import tritongate.gate.output` (fresh process, best of runs)",
            "op-start": "a batch op's start on the CPU: import torch, triton, `tritongate.runner`, parse `run` "
                        "(fresh process, best of runs)",
            "ir": "`IRStore.add` per row, 2 variants a row (size: rows)",
            "merge": f"`tritongate merge` of {SHARDS} pair shards, gate included (size: rows)",
            "gate": "`tritongate gate`, paired rows (size: rows; the length of the verdict.md it wrote)",
            "history": f"`tritongate history --no-plots` (size: nights of {doc['history_rows']} rows)",
            "batch-merge": f"`tritongate batch-merge` of {BATCH_SHARDS} replay shards (size: rows)",
            "publish": "`tritongate baseline publish` of a record run (size: rows; reads: of its results.json)",
            "batch-fresh": "`tritongate batch` (a fresh process per op), smoke ops on the CPU interpreter (size: ops; per op: "
                           "the attempts' wall beyond the runs' own)",
            "batch-worker": "`tritongate batch --reuse-worker`, smoke ops on the CPU interpreter (size: ops; "
                            "per op: the attempts' wall beyond the runs' own)"}
    lines = [f"# Scale of the gate's machinery ({doc['label']})", "",
             f"{doc['date']}, {doc['machine']}: {doc['cpu']}, {doc['cores']} cores (shared), Python {doc['python']}, "
             f"commit {doc['commit'][:12]}{' (dirty)' if doc['dirty'] else ''}; "
             + ", ".join(f"{k} {v}" for k, v in doc.get("versions", {}).items()) + ".", ""]
    if doc.get("note"):
        lines += [doc["note"], ""]
    if doc.get("load_average"):
        b, a = doc["load_average"]["before"], doc["load_average"]["after"]
        lines += [f"Load average of the machine (1/5/15 min) at the start: {b[0]:.1f}/{b[1]:.1f}/{b[2]:.1f}, "
                  f"at the end: {a[0]:.1f}/{a[1]:.1f}/{a[2]:.1f} (other work shares the 2 cores).", ""]
    lines += ["`seconds`: the operation (wall); `process`: the whole fresh process (start-up, imports; wall); "
              "`CPU s`: the process's user + system CPU time (less sensitive to other load than wall time, "
              "but without the time spent waiting on the disk); `peak`: its peak resident memory. "
              "Exponents: slope of log seconds (wall, CPU) and log peak on log size.", "",
              "| case | size | seconds | process s | CPU s | peak MiB | exponent (wall) | exponent (CPU) | exponent (peak) |",
              "|---|---|---|---|---|---|---|---|---|"]
    for case, res in doc["results"].items():
        for i, e in enumerate(res["sizes"]):
            first = i == 0
            exp_t = res["exponent_seconds"]
            exp_c = res.get("exponent_cpu")
            exp_p = res["exponent_peak"]
            secs = (f"{e['seconds']:.2f}" if "seconds" in e
                    else ("timed out" if e.get("timed_out") else e.get("error", "?")))
            if "results_reads" in e:
                secs += f" ({e['results_reads']} read{'s' if e['results_reads'] != 1 else ''})"
            if "per_op_overhead_s" in e:
                secs += (f" ({e['per_op_overhead_s']:.2f} s/op overhead: first op {e['first_op_overhead_s']:.2f} s, "
                         f"later {e['later_op_overhead_s']:.2f} s; {e['workers']} process"
                         f"{'es' if e['workers'] != 1 else ''} started)")
            if "verdict_md_chars" in e:
                secs += f" (verdict.md: {e['verdict_md_chars']:,} characters)"
            lines.append(f"| {what[case] if first else ''} | {e['size']:,} | {secs} | "
                         f"{e.get('process_s', float('nan')):.2f} | {e.get('cpu_s', float('nan')):.2f} | "
                         f"{e.get('peak_mib', float('nan')):.0f} | "
                         f"{(f'{exp_t:.2f}' if exp_t is not None else '') if first else ''} | "
                         f"{(f'{exp_c:.2f}' if exp_c is not None else '') if first else ''} | "
                         f"{(f'{exp_p:.2f}' if exp_p is not None else '') if first else ''} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("_prepare", "_measure"):
        step, case, n, work, extra = argv[0], argv[1], int(argv[2]), Path(argv[3]), json.loads(argv[4])
        if step == "_prepare":
            prep: dict[str, Callable[[], None]] = {
                "ir": lambda: prepare_ir(n, work), "merge": lambda: prepare_merge(n, work),
                "gate": lambda: prepare_gate(n, work),
                "history": lambda: prepare_history(n, work, extra["history_rows"]),
                "batch-merge": lambda: prepare_batch_merge(n, work),
                "publish": lambda: prepare_publish(n, work),
                **{c: lambda: None for c in BATCH_CASES}}
            prep[case]()
            return 0
        print(json.dumps(measure(case, n, work, extra)))
        return 0
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--label", required=True, help="before|after: the result's file name")
    p.add_argument("--out", default=str(ROOT / "bench" / "results"))
    p.add_argument("--machine", default="cpu")
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--sizes", action="append", default=[], metavar="CASE=N,N,N")
    p.add_argument("--history-rows", type=int, default=1232)
    p.add_argument("--repeat", type=int, default=3, help="runs of the import case (the best is kept)")
    p.add_argument("--repeat-sized", type=int, default=1,
                   help="runs of each sized case on the same inputs (the best is kept: on a shared machine the "
                        "slowest runs measure the neighbours)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds a measurement may take")
    p.add_argument("--note", default="", help="a line for the Markdown (e.g. why sizes are small)")
    p.add_argument("--from-log", metavar="LOG", help="write the result of a run cut short from its log instead")
    ns = p.parse_args(argv)
    return from_log(ns) if ns.from_log else drive(ns)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
