import pytest

from tritongate.harness import FakeClock, bench, compile_vs_run


def test_bench_skips_warmup_and_syncs():
    clock = FakeClock([10, 10, 10, 1, 1, 1, 1, 1])
    r = bench(clock.work, timer=clock, sync=clock.sync, warmup=3, repeats=5)
    assert r.summary.median == 1.0
    assert r.summary.max == 1.0
    assert r.samples == (1.0,) * 5
    assert clock.syncs == 1 + 2 * 5
    assert clock.works == 3 + 5


def test_counting_warmup_in_would_show_the_jit_cost():
    clock = FakeClock([10, 10, 10, 1])
    r = bench(clock.work, timer=clock, sync=clock.sync, warmup=0, repeats=5)
    assert r.summary.max == 10.0


def test_compile_vs_run_seed_example():
    clock = FakeClock([1.0])

    def make_fn():
        clock.advance(7.0)  # compile + autotune
        return clock.work

    r = compile_vs_run(make_fn, timer=clock, sync=clock.sync, warmup=2, repeats=5)
    assert (r.first_call, r.steady, r.one_time_cost) == (8.0, 1.0, 7.0)
    assert r.break_even_calls == 7.0


def test_fake_clock_validates_and_repeats_last_step():
    with pytest.raises(ValueError):
        FakeClock([])
    with pytest.raises(ValueError):
        FakeClock([-1])
    c = FakeClock([2, 3])
    for _ in range(4):
        c.work()
    assert c() == 2 + 3 + 3 + 3


@pytest.mark.parametrize("warmup,repeats", [(-1, 5), (3, 0)])
def test_bench_rejects_bad_counts(warmup, repeats):
    c = FakeClock([1])
    with pytest.raises(ValueError):
        bench(c.work, timer=c, sync=c.sync, warmup=warmup, repeats=repeats)


def test_bench_on_the_host_with_the_real_clock():
    import time

    from tritongate.harness import no_sync

    calls = []
    r = bench(lambda: calls.append(sum(range(1000))), timer=time.perf_counter, sync=no_sync,
              warmup=2, repeats=4)
    assert len(calls) == 6 and r.summary.n == 4 and all(s > 0 for s in r.samples)
