"""Like FlagGems' ``flag_gems.runtime``: ``torch_device_fn`` is ``torch.cuda``, and the device
is asked for its name and count at import (FlagGems' ``LibCache`` names its tuning DB after
the device; ``LibEntry`` keeps one kernel cache per device). Under the interpreter the real
package cannot import at all; the stand-in skips the query there, so the interpreter tests
can still use it."""

import os

import torch

torch_device_fn = torch.cuda
INTERPRETED = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")
device_name = None if INTERPRETED else torch_device_fn.get_device_name().replace(" ", "_")
DEVICE_COUNT = 1 if INTERPRETED else torch_device_fn.device_count()
