import pytest

from tritongate import markers
from tritongate.errors import MeasurementError
from tritongate.harness import L2Policy, MeasureConfig, RowMeasurer, TimerKind, measure
from tritongate.harness.clocks import FakeClock

from tests.conftest import FakeDevice


def _make_fn(device, built=None):
    def make():
        inputs = object()  # stands for the freshly built tensors
        if built is not None:
            built.append(inputs)

        def launch():
            assert inputs is not None
            device.launch()
        return launch
    return make


def test_graph_timer_rounds_shift_placement_and_choose_k():
    dev = FakeDevice(cost_s=2e-6)
    built = []
    m = measure(_make_fn(dev, built), device=dev, config=MeasureConfig(rounds=5, samples_per_round=5))
    assert m.timer is TimerKind.CUDA_GRAPH
    assert m.launches_per_sample == 250  # 0.5 ms target / 2 µs per launch
    assert len(m.samples_us) == 25 and m.rounds == 5
    assert m.samples_us == pytest.approx([2.0] * 25)
    assert not m.markers
    # trial graphs to settle k (10 launches, then the first guess), then one fresh graph
    # per round, each of k launches
    assert dev.captures == [10, 250] + [250] * 5
    assert dev.releases == 1 + 2 * 5  # after warm-up, and before and after every round
    # warm-up inputs + fresh inputs every round; a random block held before each round
    assert len(built) == 1 + 5
    assert len(dev.blocks) == 5 and len(set(dev.blocks)) == 5
    assert all(512 <= b <= 32 << 20 for b in dev.blocks)
    assert m.shift_bytes == tuple(dev.blocks)


def test_a_longer_sample_target_takes_more_launches_a_sample():
    # a kernel whose launches jitter independently: a sample of k launches spreads as 1/sqrt(k)
    dev = FakeDevice(cost_s=2e-6)
    m = measure(_make_fn(dev), device=dev, config=MeasureConfig(rounds=1, target_sample_s=2e-3))
    assert m.launches_per_sample == 1000


def test_k_estimate_corrects_for_the_graph_launch_overhead():
    # 15 µs to launch a graph dwarfs ten 1 µs kernels; one step would pick k = 500/2.5 = 200
    dev = FakeDevice(cost_s=1e-6, graph_overhead_s=15e-6)
    m = measure(_make_fn(dev), device=dev, config=MeasureConfig(rounds=1))
    assert dev.captures[:2] == [10, 200]
    assert m.launches_per_sample == round(500 / (1 + 15 / 200))


def test_k_passed_in_is_used_as_is_so_both_sides_match():
    dev = FakeDevice(cost_s=2e-6)
    m = measure(_make_fn(dev), device=dev, launches_per_sample=37,
                config=MeasureConfig(rounds=2, samples_per_round=3))
    assert m.launches_per_sample == 37
    assert dev.captures == [37, 37]  # no trial capture when k is given


def test_warmup_count_is_clamped_by_budget():
    small = FakeDevice(cost_s=1e-6)  # 1 s budget / 1 µs -> clamped to 200
    m = measure(_make_fn(small), device=small, config=MeasureConfig(rounds=1))
    assert m.warmup_calls == 1 + 200
    big = FakeDevice(cost_s=1.0)  # 1 s budget / 1 s -> clamped up to 5
    m = measure(_make_fn(big), device=big, config=MeasureConfig(rounds=1, samples_per_round=1))
    assert m.warmup_calls == 1 + 5


def test_graph_excludes_launch_overhead_that_events_include():
    dev = FakeDevice(cost_s=1e-6, event_overhead_s=3e-6)
    g = measure(_make_fn(dev), device=dev, config=MeasureConfig(rounds=1))
    e = measure(_make_fn(dev), device=dev, timer=TimerKind.CUDA_EVENTS, config=MeasureConfig(rounds=1))
    assert g.summary.median == pytest.approx(1.0 + 3.0 / g.launches_per_sample)
    assert e.summary.median == pytest.approx(4.0)
    assert e.launches_per_sample == 1


def test_refused_capture_falls_back_to_events_with_marker():
    dev = FakeDevice(cost_s=5e-6)
    dev.fail_capture = RuntimeError(
        "CUDA error: operation not permitted when stream is capturing\n"
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.")
    dev.fail_capture_at = 2  # both trial captures work, the first round's capture fails
    m = measure(_make_fn(dev), device=dev, config=MeasureConfig(rounds=3, samples_per_round=4))
    assert m.timer is TimerKind.CUDA_EVENTS
    assert m.launches_per_sample == 1
    assert len(m.samples_us) == 12 and m.samples_us == pytest.approx([5.0] * 12)
    (marker,) = m.markers
    parsed = markers.parse_marker(marker)
    assert parsed.kind == markers.NO_CUDAGRAPH
    assert parsed.fields["phase"] == "capture"
    assert parsed.fields["reason"] == "RuntimeError: CUDA error: operation not permitted when stream is capturing"


def test_trial_capture_failure_is_phase_warmup():
    dev = FakeDevice()
    dev.fail_capture = RuntimeError("capture not supported")
    m = measure(_make_fn(dev), device=dev, config=MeasureConfig(rounds=1))
    assert markers.parse_marker(m.markers[0]).fields["phase"] == "warmup"
    assert m.timer is TimerKind.CUDA_EVENTS


def test_replay_failure_is_phase_replay():
    dev = FakeDevice()
    dev.fail_replay = RuntimeError("replay failed")
    m = measure(_make_fn(dev), device=dev, launches_per_sample=4, config=MeasureConfig(rounds=2))
    assert markers.parse_marker(m.markers[0]).fields["phase"] == "replay"
    assert len(m.samples_us) == 10


def test_fatal_cuda_error_is_raised_not_hidden_by_fallback():
    dev = FakeDevice()
    dev.fail_capture = RuntimeError("CUDA error: an illegal memory access was encountered\n"
                                    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.")
    with pytest.raises(MeasurementError, match="illegal memory access"):
        measure(_make_fn(dev), device=dev, config=MeasureConfig(rounds=1))


def test_l2_flush_runs_before_every_sample_and_uses_one_launch():
    dev = FakeDevice()
    m = measure(_make_fn(dev), device=dev, config=MeasureConfig(rounds=2, samples_per_round=3, l2="flush"))
    assert m.launches_per_sample == 1 and m.l2 is L2Policy.FLUSH
    assert dev.flushes == 6


def test_host_wall_timer_uses_the_clock_and_syncs():
    dev = FakeDevice()
    clock = FakeClock([0.002])

    def make():
        return clock.work
    m = measure(make, device=dev, timer=TimerKind.HOST_WALL, clock=clock,
                config=MeasureConfig(rounds=2, samples_per_round=3, shift_placement=False))
    assert m.timer is TimerKind.HOST_WALL
    assert m.samples_us == pytest.approx([2000.0] * 6)
    assert dev.blocks == [] and m.shift_bytes == ()


def test_round_by_round_api_for_interleaving():
    dev = FakeDevice(cost_s=1e-6)
    side = RowMeasurer(_make_fn(dev), device=dev, launches_per_sample=8,
                       config=MeasureConfig(samples_per_round=2))
    side.warm_up()
    assert side.measure_round() == pytest.approx([1.0, 1.0])
    assert side.rounds_done == 1
    side.measure_round()
    assert side.result().rounds == 2


@pytest.mark.parametrize("kw", [dict(rounds=0), dict(samples_per_round=0), dict(warmup_min=10, warmup_max=5),
                                dict(target_sample_s=0), dict(shift_min_bytes=10, shift_max_bytes=5),
                                dict(l2="lukewarm")])
def test_config_is_validated(kw):
    with pytest.raises(ValueError):
        MeasureConfig(**kw)


def test_a_round_shows_its_fresh_inputs_before_anything_launches_on_them():
    """The hook a paired round shares or adopts inputs through: once per round, with that
    round's launch, after the placement shift and before the first launch."""
    dev = FakeDevice(cost_s=2e-6)
    m = RowMeasurer(_make_fn(dev), device=dev, config=MeasureConfig(samples_per_round=3))
    m.warm_up()
    seen = []

    def on_inputs(fn):
        seen.append((fn, dev.launches, len(dev.blocks)))

    after_warm_up = dev.launches
    m.measure_round(on_inputs)
    after_round_1 = dev.launches
    m.measure_round(on_inputs)
    m.measure_round()
    assert len(seen) == 2 and seen[0][0] is not seen[1][0]  # each round's own launch
    # nothing ran on a round's inputs before the hook saw them
    assert [s[1] for s in seen] == [after_warm_up, after_round_1] and after_round_1 > after_warm_up
    assert [s[2] for s in seen] == [1, 2]  # the round's placement block was already held

    def refuse(fn):
        raise RuntimeError("cannot adopt")

    with pytest.raises(RuntimeError, match="cannot adopt"):
        m.measure_round(refuse)
    assert m.rounds_done == 3  # the failed round adds no samples


class _TwoStateDevice(FakeDevice):
    """A fake whose launch state switches, as a CUDA process's does after its third graph:
    ``launch_state_us`` reads the level, and launches cost more after the switch."""

    def __init__(self, switch_at_capture: int) -> None:
        super().__init__(cost_s=1e-6)
        self.switch_at_capture = switch_at_capture

    def launch_state_us(self) -> float:
        return 0.8 if len(self.captures) < self.switch_at_capture else 1.0

    def launch(self) -> None:
        if not self.capturing:
            self.cost_s = 1e-6 if len(self.captures) < self.switch_at_capture else 1.2e-6
        super().launch()


def test_each_graph_round_carries_the_launch_state_its_samples_ran_in():
    dev = _TwoStateDevice(switch_at_capture=4)  # two trial graphs and round 1's, then the switch
    m = measure(_make_fn(dev), device=dev, config=MeasureConfig(rounds=4, samples_per_round=3))
    rounds = [m.samples_us[i:i + 3] for i in range(0, 12, 3)]
    assert [r[0] for r in rounds] == pytest.approx([1.0, 1.2, 1.2, 1.2])
    # read after the samples: round 2, whose capture made the switch, reads the new level
    assert m.launch_state_us == (0.8, 1.0, 1.0, 1.0)


def test_a_timer_fallback_drops_the_states_of_the_rounds_it_drops():
    dev = _TwoStateDevice(switch_at_capture=99)
    dev.fail_capture = RuntimeError("operation not permitted when stream is capturing")
    dev.fail_capture_at = 3  # round 2's capture fails: events from then on, no graph, no state
    m = measure(_make_fn(dev), device=dev, config=MeasureConfig(rounds=3, samples_per_round=3))
    assert m.timer is TimerKind.CUDA_EVENTS
    assert m.launch_state_us == ()


def test_a_device_without_a_launch_state_records_none():
    dev = FakeDevice(cost_s=1e-6)
    m = measure(_make_fn(dev), device=dev, config=MeasureConfig(rounds=2, samples_per_round=3))
    assert m.launch_state_us == ()
