"""``baseline publish`` reads the run once: one ``load_run``, the copy checked by its bytes."""

from __future__ import annotations

import pytest

import tritongate.rundir as rundir
from tritongate.baselines import BaselineError, publish
from tritongate.baselines import publishing as store_module
from tritongate.rundir import RESULTS, load_run

from tests.baselines.test_store import T0, make_record


def _count_results_reads(monkeypatch) -> list[str]:
    """Every read of a results.json, by whoever reads it (every reader of a run's files reads
    their bytes through here)."""
    reads: list[str] = []
    real = rundir._read_bytes

    def counting(path, error):
        if path.name == RESULTS:
            reads.append(str(path))
        return real(path, error)

    monkeypatch.setattr(rundir, "_read_bytes", counting)
    return reads


def test_publish_parses_the_run_once_and_the_entry_still_loads(tmp_path, monkeypatch):
    run = make_record(tmp_path / "r")
    reads = _count_results_reads(monkeypatch)
    entry = publish(tmp_path / "store", run, runner_class="h200", now=T0)
    assert reads == [str(run / RESULTS)]
    copied = load_run(entry.path)
    assert copied.rows == load_run(run).rows and copied.mode == "record"


def test_a_run_rewritten_while_it_is_published_is_refused(tmp_path, monkeypatch):
    run = make_record(tmp_path / "r")
    real = store_module._load_publishable

    def then_rewritten(run_dir):
        loaded = real(run_dir)
        (run_dir / RESULTS).write_text((run_dir / RESULTS).read_text() + " ")  # after the load, before the copy
        return loaded

    monkeypatch.setattr(store_module, "_load_publishable", then_rewritten)
    with pytest.raises(BaselineError, match=r"results\.json changed while it was published"):
        publish(tmp_path / "store", run, runner_class="h200", now=T0)
    assert not list((tmp_path / "store").rglob("manifest.json"))
