"""The host device: what making one does to this process."""

from __future__ import annotations

import torch

from tritongate.backends import BACKENDS, make_device
from tritongate.harness.device import HostDevice


def test_the_host_device_runs_torch_on_one_thread():
    # a reference split over threads met MKL's lazy first-call set-up half-done (see HostDevice)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        device = make_device(BACKENDS["cpu"])
        assert isinstance(device, HostDevice) and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
