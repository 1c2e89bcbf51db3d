"""GPU-only checks of the real CUDA timer paths (run on the GPU machine: pytest -m gpu)."""

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu

from tritongate import markers  # noqa: E402
from tritongate.harness import MeasureConfig, TimerKind, measure  # noqa: E402


@pytest.fixture(scope="module")
def device():
    from tritongate.harness.device import CudaDevice
    return CudaDevice(0)


def _add_factory():
    from tritongate.ops.kernels import elementwise

    def make():
        x = torch.randn(1 << 20, device="cuda")
        y = torch.randn(1 << 20, device="cuda")
        out = torch.empty_like(x)
        return lambda: elementwise.add(x, y, out, autotuned=False)
    return make


def test_graph_timer_measures_a_triton_kernel(device):
    m = measure(_add_factory(), device=device, config=MeasureConfig(rounds=3))
    assert m.timer is TimerKind.CUDA_GRAPH and not m.markers
    assert m.launches_per_sample > 1 and len(m.samples_us) == 15
    assert 0.5 < m.summary.median < 50  # µs; an add of 1M floats on a datacenter GPU


def test_refused_capture_falls_back_and_leaves_rng_usable(device):
    def make():
        x = torch.randn(1024, device="cuda")
        return lambda: float(x.sum().item())  # a host sync: illegal while capturing
    m = measure(make, device=device, config=MeasureConfig(rounds=2))
    assert m.timer is TimerKind.CUDA_EVENTS
    (marker,) = m.markers
    assert markers.parse_marker(marker).kind == markers.NO_CUDAGRAPH
    # the throw-away RNG state kept the default generator out of the failed capture
    torch.randn(16, device="cuda")
    torch.cuda.synchronize()


def test_l2_flush_is_slower_than_warm_for_an_l2_resident_working_set(device):
    warm = measure(_add_factory(), device=device, config=MeasureConfig(rounds=2))
    cold = measure(_add_factory(), device=device, config=MeasureConfig(rounds=2, l2="flush"))
    assert cold.summary.median > warm.summary.median


def test_a_partner_takes_a_turn_before_every_capture():
    from tritongate.harness.device import CudaDevice

    device = CudaDevice(0, turns=True)  # harness.gpu_turns
    device.capture(lambda: torch.cuda._sleep(0), 4)
    first = device.gpu_turns()
    device.capture(lambda: torch.cuda._sleep(0), 4)
    after = device.gpu_turns()
    assert after["partner"] is True, after["failure"]
    assert after["turns"] == first["turns"] + 1 >= 2
