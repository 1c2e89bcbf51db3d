from flag_gems.ops.add import add
from flag_gems.ops.cumsum import cumsum
from flag_gems.ops.exp import exp
from flag_gems.ops.mm import mm
from flag_gems.ops.softmax import softmax
from flag_gems.ops.sum import sum_dim

__all__ = ["add", "cumsum", "exp", "mm", "softmax", "sum_dim", "conv2d"]


def conv2d(*args, **kwargs):  # a public op with no input recipe in tritongate
    raise NotImplementedError("the stand-in has no conv2d")
