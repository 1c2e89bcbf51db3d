import subprocess

import pytest

from tritongate.errors import GpuBusyError
from tritongate.harness.gpu_state import check_idle, parse_apps, read_gpu_state

LINE = "0, GPU-abc, NVIDIA H200, 580.159.04, 1980, 3201, 1980, 41, 120.5, 0"


def fake_smi(apps="", reasons="0x0000000000000004", reason_field_ok=True):
    calls = []

    def run(args):
        calls.append(list(args))
        q = next((a for a in args if a.startswith("--query")), "")
        if q.startswith("--query-gpu=index"):
            return LINE + "\n"
        if q == "--query-gpu=clocks_event_reasons.active":
            if not reason_field_ok:
                raise subprocess.CalledProcessError(2, "nvidia-smi")
            return reasons + "\n"
        if q == "--query-gpu=clocks_throttle_reasons.active":
            return reasons + "\n"
        if q.startswith("--query-compute-apps"):
            return apps
        raise AssertionError(args)
    run.calls = calls
    return run


def test_reads_state_and_ignores_own_pid():
    apps = "GPU-abc, 100, 500\nGPU-abc, 200, 10\nGPU-other, 300, 5\n"
    s = read_gpu_state(0, run=fake_smi(apps), own_pids={100})
    assert (s.name, s.driver, s.sm_clock_mhz, s.temperature_c) == ("NVIDIA H200", "580.159.04", 1980, 41)
    assert s.other_pids == (200,)
    assert s.throttle_reasons == ["sw_power_cap"] and not s.throttled
    assert s.to_dict()["busy_reasons"] == ["other processes on the GPU: pids 200"]


def test_older_driver_reason_field_and_thermal_throttle():
    s = read_gpu_state(0, run=fake_smi(reasons="0x40", reason_field_ok=False), own_pids=set())
    assert s.throttled and s.throttle_reasons == ["hw_thermal"]


def test_busy_gpu_is_an_error_unless_allowed():
    s = read_gpu_state(0, run=fake_smi("GPU-abc, 7, 1\n"), own_pids=set())
    with pytest.raises(GpuBusyError, match="pids 7.*--allow-busy-gpu"):
        check_idle(s)
    assert check_idle(s, allow_busy=True) == ["other processes on the GPU: pids 7"]


def test_idle_gpu_passes():
    s = read_gpu_state(0, run=fake_smi(), own_pids=set())
    assert check_idle(s) == []


def test_parse_apps_tolerates_noise():
    assert parse_apps("No running processes found\n", "GPU-abc", set()) == ()


def _utilization_then(values):
    """nvidia-smi whose utilization reads ``values`` in turn (then the last one)."""
    seen = []

    def run(args):
        q = next((a for a in args if a.startswith("--query")), "")
        if q.startswith("--query-gpu=index"):
            util = values[min(len(seen), len(values) - 1)]
            seen.append(util)
            return LINE.rsplit(",", 1)[0] + f", {util}\n"
        if q.startswith("--query-gpu=clocks"):
            return "0x0\n"
        return ""
    run.seen = seen
    return run


def test_idle_check_looks_again_while_recent_work_still_shows():
    from tritongate.harness.gpu_state import read_idle_state

    smi, pauses = _utilization_then([95, 60, 0]), []
    state = read_idle_state(0, run=smi, own_pids=set(), sleep=pauses.append)
    assert state.utilization_pct == 0 and smi.seen == [95, 60, 0] and len(pauses) == 2
    with pytest.raises(GpuBusyError, match="utilization 95%"):
        read_idle_state(0, run=_utilization_then([95]), own_pids=set(), retries=3, sleep=lambda s: None)
    busy = read_idle_state(0, run=_utilization_then([95]), own_pids=set(), allow_busy=True, sleep=lambda s: None)
    assert busy.busy_reasons


def test_state_markers_name_a_busy_or_throttled_start():
    from tritongate.harness.gpu_state import state_markers

    assert state_markers(None) == () and state_markers({"busy_reasons": [], "throttled": False}) == ()
    busy, hot = state_markers({"busy_reasons": ["pids 7", "utilization 90%"], "throttled": True,
                               "throttle_reasons": ["hw_thermal"]})
    assert busy == "GPU_BUSY reason=pids 7; utilization 90%" and hot == "GPU_THROTTLED reason=hw_thermal"
