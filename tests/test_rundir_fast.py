"""``load_run`` validates results.json straight from its bytes into its one type (``ResultsDoc``
of ``Row``s, pydantic's strict JSON mode), and reads it again the slow way (parsed first, whose
errors say what is wrong) only when that refuses it: every damaged copy of a full row is
refused with one line naming the row, or read as a row that writes back to itself."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest

import tritongate.rundir as rundir
from tritongate.errors import RunDirError
from tritongate.rundir import RunWriter, load_run
from tritongate.schema import Correctness, MeasurementInfo, PairInfo, Row, Variant

from tests.gate.helpers import IDENTITY, samples


def full_row(**over: Any) -> Row:
    pairing = PairInfo(pair_id="p1", side="base", went_first=(True, False, True, False, True), target_effect=0.01,
                       detectable_effect=0.008, target_reached=True, min_rounds=5, max_rounds=20, confirm_rounds=3,
                       inputs="shared", worker_pairs=(0, 0, 1, 1, 1), stopped_by="round_cap", confirm_from=2)
    fields: dict[str, Any] = dict(
        op="softmax", case="4096x4096", dtype="float16", timer="cuda-graph", samples=samples(20.0, seed=3),
        params={"shape": [4096, 4096], "seed": 7, "scale": 0.5, "name": "x", "flag": True, "none": None},
        markers=("AUTOTUNE_REPLAY_FALLBACK reason=key_missing kernel=k",),
        measurement=MeasurementInfo(launches_per_sample=25, samples_per_round=5, warmup_calls=50, l2="warm",
                                    shift_bytes=(512, 1024, 2048, 4096, 8192), pairing=pairing),
        correctness=Correctness(ok=True, max_abs_err=-0.0, atol=1e-3, rtol=1e-3, detail="fine"),
        variants=(Variant(kernel="k", name="BLOCK=4096", source_hash="s", binary_hash="b", launches=3),),
        flops=1e9, bytes=2e6,
        autotune={"mode": "replay", "sweep_benchmarks": 2, "kernels": [
            {"kernel": "k", "config": {"kwargs": {"BLOCK": 1024}, "num_warps": 4}, "used": [1.5, None, "x"]}]})
    fields.update(over)
    return Row(**fields)


def stored(row: Row) -> dict[str, Any]:
    return json.loads(json.dumps(row.to_dict()))


def document(doc: dict[str, Any]) -> dict[str, Any]:
    return {"schema_version": 3, "status": "complete", "rows": [doc]}


def read(doc: dict[str, Any], where: Path) -> Row | str:
    """What ``load_run``'s reading of results.json makes of a row: the row, or its one-line error."""
    try:
        results = rundir._results_of(where, json.dumps(document(doc)).encode())
        return rundir.checked_rows(where, results.rows)[0]
    except RunDirError as exc:
        return str(exc)


VALUES = [None, True, False, 0, 1, -1, 2**70, 0.0, -0.0, 1.5, -1.5, 1e308, math.nan, math.inf, -math.inf, "",
          "x", "ok", "base", "x" * 1_001, "x" * 100_001, [], [1.0], [True], [0], [-1], ["a"], {}, {"a": 1.0},
          {"a": math.nan}, [[[[]]]], "NOT A MARKER", "KIND key=value"]


def paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix] if prefix else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:2]):
            out += paths(v, (*prefix, i))
    return out


def damaged(base: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for path in paths(base):
        for value in [*VALUES, "<delete>", "<extra key>"]:
            doc = copy.deepcopy(base)
            parent = doc
            for p in path[:-1]:
                parent = parent[p]
            if value == "<delete>":
                del parent[path[-1]]
            elif value == "<extra key>":
                if not isinstance(parent[path[-1]], dict):
                    continue
                parent[path[-1]]["unknown"] = 1
            else:
                parent[path[-1]] = copy.deepcopy(value)
            out.append(doc)
    return out


ROWS = {"full": stored(full_row()),
        "minimal": {"op": "a", "case": "b", "dtype": "c", "timer": "", "samples": [1.0, 2.0]},
        "skipped": stored(full_row(samples=(), skipped="identical_binary", markers=())),
        "error": stored(full_row(samples=(), status="error", error="boom", autotune=None, measurement=None))}


@pytest.mark.parametrize("kind", list(ROWS))
def test_a_row_as_tritongate_writes_it_is_read_back_as_itself(kind, tmp_path):
    row = read(ROWS[kind], tmp_path)
    assert isinstance(row, Row)
    if kind != "minimal":  # the minimal row is read with its defaults filled in
        assert stored(row) == ROWS[kind]
    assert read(stored(row), tmp_path) == row


@pytest.mark.parametrize("kind", list(ROWS))
def test_a_damaged_row_is_refused_naming_the_row_or_read_as_a_row_that_writes_back_to_itself(kind, tmp_path):
    docs = damaged(ROWS[kind])
    assert len(docs) > 200
    accepted = refused = 0
    for doc in docs:
        try:
            json.dumps(doc, allow_nan=False)
        except ValueError:
            continue  # NaN and infinities: not JSON, tritongate never writes them (a test below reads them)
        got = read(doc, tmp_path)
        if isinstance(got, str):
            assert got.startswith(f"{tmp_path / 'results.json'}: rows[0]") and "\n" not in got, (doc, got)
            refused += 1
        else:
            assert read(stored(got), tmp_path) == got, doc
            accepted += 1
    assert accepted > 20 and refused > 100  # valid variants (an extra key, an optional field dropped) are read


def test_a_value_of_the_wrong_json_type_is_refused_not_converted(tmp_path):
    base = ROWS["full"]
    for path, value in [(("samples", 0), True), (("samples", 0), "1.5"), (("measurement", "warmup_calls"), 1.0),
                        (("measurement", "pairing", "went_first", 0), 1), (("op",), 5), (("status",), "OK")]:
        doc = copy.deepcopy(base)
        parent = doc
        for p in path[:-1]:
            parent = parent[p]
        parent[path[-1]] = value
        assert isinstance(read(doc, tmp_path), str), path


def test_nan_and_infinity_in_the_file_are_refused_with_the_field_named(tmp_path: Path):
    from tritongate.errors import RunDirError

    w = RunWriter(tmp_path / "run", IDENTITY, mode="replay")
    w.extend([full_row()])
    w.finish()
    path = tmp_path / "run" / "results.json"
    path.write_text(path.read_text().replace('"flops": 1000000000.0', '"flops": NaN'))
    with pytest.raises(RunDirError, match=r"rows\[0\]\.flops"):
        load_run(tmp_path / "run")


def test_load_run_reads_the_same_run_either_way(tmp_path: Path, monkeypatch):
    w = RunWriter(tmp_path / "run", IDENTITY, mode="replay")
    w.extend([full_row(), full_row(op="add", autotune=None), full_row(op="mul", measurement=None, variants=())])
    w.finish()
    fast = load_run(tmp_path / "run")
    monkeypatch.setattr(rundir, "_results_from_bytes", lambda path: None)
    slow = load_run(tmp_path / "run")
    assert repr(fast) == repr(slow)
