import os
import sys
import textwrap

import pytest

from tritongate.autotune.tuner_cache import isolation_requested, open_tuner_cache


def test_isolated_cache_is_private_and_removed(monkeypatch):
    monkeypatch.setenv("FLAGGEMS_DB_URL", "sqlite:///shared.db")
    cache = open_tuner_cache(True)
    url = os.environ["FLAGGEMS_DB_URL"]
    assert url.startswith("sqlite:///") and url != "sqlite:///shared.db"
    folder = url[len("sqlite:///"):].rsplit("/", 1)[0]
    assert os.path.isdir(folder)
    assert cache.to_dict()["mode"] == "isolated" and cache.to_dict()["db_url"] == url
    cache.close()
    assert not os.path.exists(folder) and os.environ["FLAGGEMS_DB_URL"] == "sqlite:///shared.db"


def test_shared_cache_is_recorded_as_such(monkeypatch):
    monkeypatch.delenv("FLAGGEMS_DB_URL", raising=False)
    d = open_tuner_cache(False).to_dict()
    assert d["mode"] == "shared" and d["db_url"] is None and "persists" in d["notes"][0]


@pytest.mark.parametrize("env,flag,want", [({}, False, False), ({}, True, True),
                                           ({"ZL_ISOLATE_TUNER_CACHE": "1"}, False, True),
                                           ({"TRITONGATE_ISOLATE_TUNER_CACHE": "0"}, False, False)])
def test_isolation_switches(monkeypatch, env, flag, want):
    for k in ("ZL_ISOLATE_TUNER_CACHE", "TRITONGATE_ISOLATE_TUNER_CACHE"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert isolation_requested(flag) is want


FAKE_LIBENTRY = '''
from triton.runtime.autotuner import Autotuner


class SqlLikeCache(dict):
    """Like FlagGems' ConfigCache: entries cannot be deleted."""
    def __delitem__(self, key):
        raise NotImplementedError


class LibTuner(Autotuner):
    """Enough of FlagGems' LibTuner: its own run(), a normalised get_key(), a persistent cache."""
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.cache = SqlLikeCache()

    def get_key(self, args):  # args: name -> value, as LibTuner.run passes it
        n = args["n"]
        return (1 << (n - 1).bit_length(), str(args["x_ptr"].dtype))  # "log" strategy bucket

    def run(self, *args, **kwargs):
        self.nargs = dict(zip(self.arg_names, args))
        named = {k: v for k, v in {**self.nargs, **kwargs}.items() if k in self.arg_names}
        key = self.get_key(named)
        if key not in self.cache:
            timings = {c: self._bench(*args, config=c, **kwargs) for c in self.configs}
            self.cache[key] = min(timings, key=timings.get)
        config = self.best_config = self.cache[key]
        return self.fn.run(*args, **kwargs, **config.all_kwargs())
'''


def test_libtuner_kernels_are_recorded_and_replayed(tmp_path, monkeypatch):
    pkg = tmp_path / "flag_gems" / "utils"
    pkg.mkdir(parents=True)
    (tmp_path / "flag_gems" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "libentry.py").write_text(textwrap.dedent(FAKE_LIBENTRY))
    monkeypatch.syspath_prepend(str(tmp_path))
    for mod in [m for m in sys.modules if m.startswith("flag_gems")]:
        monkeypatch.delitem(sys.modules, mod)

    import torch
    import triton
    import triton.language as tl
    from flag_gems.utils.libentry import LibTuner

    from tritongate.autotune.records import RecordSet
    from tritongate.autotune.session import AutotuneSession, autotune_session

    @triton.jit
    def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

    times = iter([2.0, 1.0] * 10)
    tuner = LibTuner(copy_kernel, copy_kernel.arg_names,
                     [triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})], key=["n"],
                     reset_to_zero=None, restore_value=None,
                     do_bench=lambda call, quantiles=None: [next(times)] * 3)
    x = torch.arange(100, dtype=torch.float32)
    out = torch.empty_like(x)

    def launch():
        tuner.run(x, out, 100, grid=(triton.cdiv(100, 32),), warmup=False)

    record = AutotuneSession("record")
    with autotune_session(record):
        record.begin_row("copy", "100", "float32")
        launch()
        row = record.end_row()
    (rec,) = record.records()
    assert rec.tuner == "LibTuner" and rec.key == [128, "torch.float32"]
    assert rec.config["kwargs"] == {"BLOCK": 64} and row.sweep_benchmarks == 2

    tuner.cache = type(tuner.cache)()  # a fresh process
    rec.config["kwargs"] = {"BLOCK": 32}  # replay something a live sweep would not pick
    replay = AutotuneSession("replay", RecordSet(None, {"backend": "cpu"}, {rec.match_key: rec}))
    with autotune_session(replay):
        replay.begin_row("copy", "100", "float32")
        launch()
        row = replay.end_row()
    assert tuner.best_config.kwargs == {"BLOCK": 32} and row.sweep_benchmarks == 0
    assert torch.equal(out, x)
