"""Record/replay with the real Triton Autotuner under the interpreter.

The autotuner's ``do_bench`` is scripted, so the live winner is known in advance and every
benchmark call is counted.
"""

import pytest
import torch
import triton
import triton.language as tl
from triton.runtime.errors import OutOfResources

from tritongate import markers
from tritongate.autotune.configs import config_to_dict
from tritongate.autotune.records import Record, RecordSet
from tritongate.autotune.session import AutotuneSession, autotune_key, autotune_session
from tritongate.ir.variants import record_launches


class ScriptedBench:
    """Config i of the sweep takes script[i] ms: the winner is the smallest."""

    def __init__(self, script):
        self.script, self.calls = list(script), 0

    def __call__(self, kernel_call, quantiles=None, **kw):
        kernel_call()
        t = self.script[self.calls % len(self.script)]
        self.calls += 1
        return [t] * len(quantiles) if quantiles else t


BENCH = ScriptedBench([3.0, 1.0, 2.0])  # BLOCK=64 wins a live sweep
HOOK_CALLS = []
FAIL_BLOCK = {"value": None}


def hook(nargs):
    HOOK_CALLS.append(nargs["BLOCK"])
    if nargs["BLOCK"] == FAIL_BLOCK["value"]:
        raise OutOfResources(300000, 232448, "shared memory")  # "no longer fits" under the new build


CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w, pre_hook=hook) for b, w in ((32, 1), (64, 2), (128, 4))]


@triton.autotune(configs=CONFIGS, key=["n"], do_bench=BENCH)
@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def launch(n=1000):
    x = torch.arange(n, dtype=torch.float32)
    out = torch.empty_like(x)
    scale_kernel[lambda m: (triton.cdiv(n, m["BLOCK"]),)](x, out, n)
    assert torch.equal(out, x * 2)  # every path must still compute the right answer
    return out


@pytest.fixture(autouse=True)
def fresh_tuner():
    """Each test starts as a fresh process would: nothing tuned, nothing counted."""
    scale_kernel.cache.clear()
    BENCH.calls = 0
    HOOK_CALLS.clear()
    FAIL_BLOCK["value"] = None
    yield


KID = "tests.autotune.test_session.scale_kernel"
KEY = [1000, "torch.float32", "torch.float32"]


def record_set(block, key=KEY, backend="cpu"):
    cfg = next(c for c in CONFIGS if c.kwargs["BLOCK"] == block)
    rec = Record(op="scale", kernel=KID, tuner="Autotuner", key=key, config=config_to_dict(cfg))
    return RecordSet(run_dir=None, meta={"backend": backend}, records={rec.match_key: rec})


def run_row(session, calls=3):
    with autotune_session(session):
        session.begin_row("scale", "1000", "float32")
        with record_launches() as launches:
            for _ in range(calls):
                launch()
        return session.end_row(), launches.variants()


def test_key_matches_the_autotuners_own_cache_key():
    launch()
    (cached,) = scale_kernel.cache
    x = torch.zeros(1000)
    assert autotune_key(scale_kernel, (x, x, 1000), {}) == cached


def test_record_saves_the_winner_read_back_from_the_cache():
    session = AutotuneSession("record")
    row, _ = run_row(session)
    (rec,) = session.records()
    assert rec.kernel == KID and rec.key == KEY
    assert rec.config == {"kwargs": {"BLOCK": 64}, "num_warps": 2, "num_stages": 3, "num_ctas": 1,
                          "maxnreg": None, "ir_override": None}
    assert rec.cases == ("1000/float32",)
    assert row.sweep_benchmarks == 3 and BENCH.calls == 3 and not row.markers


def test_an_index_capture_keeps_the_first_config_whatever_the_sweep_reads(monkeypatch):
    """A capture executes no kernel, so its sweep timings are noise and two captures chose
    different winners; every config now reads the same there and the tuner keeps its first."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("TRITONGATE_CAPTURE_ONLY", "1")
    session = AutotuneSession("record")
    row, _ = run_row(session)
    (rec,) = session.records()
    assert rec.config["kwargs"] == {"BLOCK": 32}  # the scripted bench would have made BLOCK=64 win
    assert row.sweep_benchmarks == 3 and BENCH.calls == 3  # each config still launched (indexed)


def test_record_of_a_warm_cache_still_records_the_winner():
    launch()  # tuned before the session: the key is not new when the session sees it
    session = AutotuneSession("record")
    row, _ = run_row(session)
    assert session.records()[0].config["kwargs"] == {"BLOCK": 64}
    assert row.sweep_benchmarks == 0


def test_replay_launches_the_recorded_config_with_zero_benchmarks():
    session = AutotuneSession("replay", record_set(128))  # not what a live sweep would pick
    row, variants = run_row(session)
    assert BENCH.calls == 0 and row.sweep_benchmarks == 0
    assert scale_kernel.best_config.kwargs == {"BLOCK": 128}
    assert [v.name for v in variants] == ["BLOCK=128 c1 s3 w4"]
    assert row.kernels[(KID, '[1000,"torch.float32","torch.float32"]')]["source"] == "replayed"
    assert not session.records()  # replay runs write no records
    assert not row.markers


def test_replay_overrides_a_live_winner_already_cached():
    launch()  # live sweep caches BLOCK=64
    row, variants = run_row(AutotuneSession("replay", record_set(32)))
    assert [v.name for v in variants] == ["BLOCK=32 c1 s3 w1"]


def test_pre_hook_survives_replay():
    run_row(AutotuneSession("replay", record_set(128)))
    assert HOOK_CALLS == [128, 128, 128]  # the record holds no hook; the kernel's own config does


def test_key_missing_tunes_live_and_marks_the_row():
    session = AutotuneSession("replay", record_set(128, key=[999, "torch.float32", "torch.float32"]))
    row, variants = run_row(session)
    assert row.markers == [f"AUTOTUNE_REPLAY_FALLBACK reason=key_missing kernel={KID}"]
    assert BENCH.calls == 3 and scale_kernel.best_config.kwargs == {"BLOCK": 64}
    parsed = markers.parse_marker(row.markers[0])
    assert parsed.fields == {"reason": "key_missing", "kernel": KID}


def test_compile_failed_drops_the_config_tunes_live_and_marks():
    FAIL_BLOCK["value"] = 128  # the recorded config no longer fits under "the new compiler"
    session = AutotuneSession("replay", record_set(128))
    row, variants = run_row(session)
    assert row.markers == [f"AUTOTUNE_REPLAY_FALLBACK reason=compile_failed kernel={KID}"]
    # one live sweep of the three configs (the failing one scores inf without being timed)
    assert row.sweep_benchmarks == 3 and BENCH.calls == 2
    assert scale_kernel.best_config.kwargs == {"BLOCK": 64}
    launched = {v.name: v.launches for v in variants}
    assert launched["BLOCK=64 c1 s3 w2"] >= 3


def test_config_not_in_space_tunes_live():
    rs = record_set(128)
    rec = next(iter(rs.records.values()))
    rec.config["kwargs"] = {"BLOCK": 256}
    row, _ = run_row(AutotuneSession("replay", rs))
    assert "reason=config_not_in_space" in row.markers[0]


class NoEvictCache(dict):
    def __delitem__(self, key):
        raise NotImplementedError("persistent cache")


def test_no_evict_marker_is_recorded_before_the_retry(monkeypatch):
    FAIL_BLOCK["value"] = 128
    scale_kernel.cache = NoEvictCache()
    seen = []
    session = AutotuneSession("replay", record_set(128))
    monkeypatch.setattr(session, "_mark", lambda reason, kid: seen.append(reason))
    try:
        with pytest.raises(OutOfResources):
            run_row(session, calls=1)
    finally:
        scale_kernel.cache = {}
    assert seen == ["compile_failed_no_evict"]


def test_patches_are_removed_after_the_session():
    from triton.runtime.autotuner import Autotuner
    run, bench = Autotuner.run, Autotuner._bench
    with autotune_session(AutotuneSession("record")):
        assert Autotuner.run is not run and Autotuner._bench is not bench
    assert Autotuner.run is run and Autotuner._bench is bench


# -- FlagGems-like LibTuner: strategy-normalised keys, get_key on a name->value dict ---------

import dataclasses  # noqa: E402

from tests.autotune import fake_libtuner  # noqa: E402
from tests.autotune.fake_libtuner import (  # noqa: E402
    FakeLibTuner, KeyedByDataPtrTuner, NargsKeyedTuner, OwnBenchTuner, SuperBenchTuner, libtuner)
from tritongate.autotune import session as session_mod  # noqa: E402
from tritongate.autotune.session import AutotuneKeyError  # noqa: E402

LIB_BENCH = ScriptedBench([3.0, 1.0, 2.0])  # BLOCK=64 wins a live sweep
LIB_CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w) for b, w in ((32, 1), (64, 2), (128, 4))]
F32 = "torch.float32"


@triton.jit
def lib_scale_kernel(x_ptr, out_ptr, M, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < M
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


lib_scale = libtuner(LIB_CONFIGS, key=["M"], do_bench=LIB_BENCH)(lib_scale_kernel)
lib_ptr = libtuner(LIB_CONFIGS, key=["M"], do_bench=LIB_BENCH, cls=KeyedByDataPtrTuner)(lib_scale_kernel)
lib_nargs = libtuner(LIB_CONFIGS, key=["M"], do_bench=LIB_BENCH, cls=NargsKeyedTuner)(lib_scale_kernel)
lib_own_bench = libtuner(LIB_CONFIGS, key=["M"], do_bench=LIB_BENCH, cls=OwnBenchTuner)(lib_scale_kernel)
lib_super_bench = libtuner(LIB_CONFIGS, key=["M"], do_bench=LIB_BENCH, cls=SuperBenchTuner)(lib_scale_kernel)
LIB_KID = "tests.autotune.test_session.lib_scale_kernel"


@pytest.fixture
def lib(monkeypatch):
    """Patch the fake LibTuner's ``run`` as the session patches FlagGems' real one."""
    classes = session_mod._tuner_classes
    monkeypatch.setattr(session_mod, "_tuner_classes", lambda: classes() + [FakeLibTuner])
    for tuner in (lib_scale, lib_ptr, lib_nargs, lib_own_bench, lib_super_bench):
        tuner.cache.clear()
    LIB_BENCH.calls = 0
    yield


def lib_launch(tuner, m):
    x = torch.arange(m, dtype=torch.float32)
    out = torch.empty_like(x)
    tuner[lambda meta: (triton.cdiv(m, meta["BLOCK"]),)](x, out, m)
    assert torch.equal(out, x * 2)


def lib_row(session, tuner, sizes=(17, 40), calls=2):
    with autotune_session(session):
        session.begin_row("libscale", "+".join(map(str, sizes)), "float32")
        for _ in range(calls):
            for m in sizes:
                lib_launch(tuner, m)
        return session.end_row()


def lib_records(keys, block=128):
    """Records of ``block`` (not what a live sweep picks) under each key."""
    cfg = next(c for c in LIB_CONFIGS if c.kwargs["BLOCK"] == block)
    recs = [Record(op="libscale", kernel=LIB_KID, tuner="FakeLibTuner", key=list(k), config=config_to_dict(cfg))
            for k in keys]
    return RecordSet(run_dir=None, meta={"backend": "cpu"}, records={r.match_key: r for r in recs})


def test_libtuner_key_is_its_own_get_key_of_the_named_arguments():
    x = torch.zeros(40)
    assert autotune_key(lib_scale, (x, x, 17), {}) == (32, F32, F32)
    assert autotune_key(lib_scale, (x, x), {"M": 40}) == (64, F32, F32)  # kwargs merged, as run does
    assert autotune_key(lib_ptr, (x, x, 40), {}) == (64, F32, F32, True)


@pytest.mark.parametrize("tuner,extra", [(lib_scale, ()), (lib_ptr, (True,))], ids=["align32", "args_lookup"])
def test_libtuner_record_then_replay_injects_under_the_bucketed_key(lib, tuner, extra):
    record = AutotuneSession("record")
    row = lib_row(record, tuner)
    recs = {tuple(r.key): r for r in record.records()}
    keys = {(32, F32, F32) + extra, (64, F32, F32) + extra}  # M=17 -> 32, M=40 -> 64
    assert set(recs) == keys and set(tuner.cache) == keys
    assert all(r.config["kwargs"] == {"BLOCK": 64} and r.tuner == type(tuner).__name__ for r in recs.values())
    assert row.sweep_benchmarks == 6 and not row.markers  # one sweep of three configs per bucket
    assert all(e["source"] == "tuned" and "key_found" not in e for e in row.kernels.values())

    tuner.cache.clear()  # a fresh process
    LIB_BENCH.calls = 0
    # the recorded key and config, the config swapped for one a live sweep would not pick
    cfg = config_to_dict(LIB_CONFIGS[2])
    replayed = RecordSet(None, {"backend": "cpu"},
                         {r.match_key: dataclasses.replace(r, config=cfg) for r in recs.values()})
    row = lib_row(AutotuneSession("replay", replayed), tuner)
    assert row.sweep_benchmarks == 0 and LIB_BENCH.calls == 0 and not row.markers
    assert set(tuner.cache) == keys and tuner.best_config.kwargs == {"BLOCK": 128}
    assert sorted(e["source"] for e in row.kernels.values()) == ["replayed", "replayed"]
    assert {tuple(e["key"]) for e in row.kernels.values()} == keys


def test_replay_under_a_key_the_tuner_never_looks_up_is_marked_swept(lib, monkeypatch):
    # the old behaviour: Triton's recipe (raw M=17) instead of the tuner's get_key (bucket 32)
    monkeypatch.setattr(session_mod, "_has_own_get_key", lambda tuner: False)
    session = AutotuneSession("replay", lib_records([(17, F32, F32)]))
    row = lib_row(session, lib_scale, sizes=(17,))
    assert row.markers == [f"AUTOTUNE_REPLAY_FALLBACK reason=swept kernel={LIB_KID}"]
    assert row.sweep_benchmarks == 3 and LIB_BENCH.calls == 3  # swept once; its winner cached after
    (entry,) = row.kernels.values()
    assert entry["source"] == "fallback" and entry["reason"] == "swept" and entry["sweep_benchmarks"] == 3
    assert entry["config"]["kwargs"] == {"BLOCK": 64}  # what ran, not what was injected
    assert entry["injected"]["kwargs"] == {"BLOCK": 128}
    assert lib_scale.best_config.kwargs == {"BLOCK": 64}


def test_replay_that_launches_another_cached_winner_is_marked_key_mismatch(lib, monkeypatch):
    lib_launch(lib_scale, 17)  # a warm cache: BLOCK=64 under the tuner's own key (32, ...)
    LIB_BENCH.calls = 0
    monkeypatch.setattr(session_mod, "_has_own_get_key", lambda tuner: False)
    row = lib_row(AutotuneSession("replay", lib_records([(17, F32, F32)])), lib_scale, sizes=(17,))
    assert row.markers == [f"AUTOTUNE_REPLAY_FALLBACK reason=key_mismatch kernel={LIB_KID}"]
    assert row.sweep_benchmarks == 0
    (entry,) = row.kernels.values()
    assert entry["source"] == "fallback" and entry["config"]["kwargs"] == {"BLOCK": 64}


def test_get_key_that_raises_is_key_unknown_not_another_recipe(lib):
    x = torch.zeros(17)
    with pytest.raises(AutotuneKeyError, match="NargsKeyedTuner.get_key: "):
        autotune_key(lib_nargs, (x, x, 17), {})
    row = lib_row(AutotuneSession("replay", lib_records([(32, F32, F32)])), lib_nargs, sizes=(17,))
    assert row.markers == [f"AUTOTUNE_REPLAY_FALLBACK reason=key_unknown kernel={LIB_KID}"]
    assert row.sweep_benchmarks == 3  # tuned live, and the sweep is reported
    (entry,) = row.kernels.values()
    assert entry["source"] == "fallback" and entry["key"] is None and "get_key" in entry["key_error"]


def test_record_of_an_unknown_key_is_noted_not_recorded(lib):
    record = AutotuneSession("record")
    row = lib_row(record, lib_nargs, sizes=(17,))
    assert not record.records() and not row.markers
    (entry,) = row.kernels.values()
    assert entry["source"] == "tuned" and entry["key"] is None and entry["config"]["kwargs"] == {"BLOCK": 64}


def test_record_says_when_its_key_is_not_in_the_tuners_cache(lib, monkeypatch):
    monkeypatch.setattr(session_mod, "_has_own_get_key", lambda tuner: False)
    record = AutotuneSession("record")
    row = lib_row(record, lib_scale, sizes=(17,))
    (entry,) = row.kernels.values()
    assert entry["key_found"] is False and entry["config"]["kwargs"] == {"BLOCK": 64}


@pytest.mark.parametrize("tuner", [lib_own_bench, lib_super_bench], ids=["own_bench", "super_bench"])
def test_sweeps_through_a_tuners_own_bench_are_counted_once(lib, tuner):
    from triton.runtime.autotuner import Autotuner
    benches = type(tuner)._bench, Autotuner._bench
    row = lib_row(AutotuneSession("record"), tuner, sizes=(17,))
    assert row.sweep_benchmarks == 3 and LIB_BENCH.calls == 3  # counted, and once per benchmark
    assert (type(tuner)._bench, Autotuner._bench) == benches and "_bench" not in vars(FakeLibTuner)


def test_fake_libtuner_strategy_is_align32():
    assert [fake_libtuner.align32(m) for m in (1, 17, 32, 33, 40, 4096)] == [1, 32, 32, 64, 64, 4096]
