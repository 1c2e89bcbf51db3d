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
from tritongate.variants import record_launches


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
