"""A stand-in for the flag_gems package, for tests (see ../README.md). Not FlagGems."""

import os

from flag_gems import ops, runtime, utils
from flag_gems.ops import add, conv2d, cumsum, exp, mm, softmax, sum_dim

__all__ = ["add", "conv2d", "cumsum", "exp", "mm", "ops", "runtime", "softmax", "sum_dim", "utils"]
__version__ = "0.0+stand-in"
# flag_gems picks its vendor from GEMS_VENDOR when it is imported: the tests read it back.
vendor_name = os.environ.get("GEMS_VENDOR")
device = "cpu"
