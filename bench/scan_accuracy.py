"""How far flag_gems.cumsum and torch.cumsum are from the exact prefix sum, per dtype.

The FlagGems provider's cumsum reference and tolerance come from this: inputs as the
provider draws them (uniform [0, 0.1) made in float32, then cast), the exact sum in float64
of the cast values, relative error of each implementation's output.

    python bench/scan_accuracy.py > bench/results/<date>_<gpu>_scan_accuracy.txt
"""

import torch

import flag_gems


def stats(out: torch.Tensor, exact: torch.Tensor) -> str:
    rel = (out - exact).abs() / exact.abs().clamp_min(1e-6)
    p99 = rel.flatten().kthvalue(int(rel.numel() * 0.99)).values.item()
    return f"maxrel={rel.max().item():.2e} p99rel={p99:.2e} maxabs={(out - exact).abs().max().item():.3g}"


def main() -> None:
    torch.manual_seed(0)
    for shape in [(64, 16384), (4096, 4096), (1024, 1024)]:
        x32 = torch.rand(shape, device="cuda") * 0.1
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            x = x32.to(dtype)
            exact = torch.cumsum(x.double(), -1)
            gems = flag_gems.cumsum(x, -1)
            print(shape, dtype, "flag_gems", stats(gems.double(), exact), "| torch",
                  stats(torch.cumsum(x, -1).double(), exact), "| out dtype", gems.dtype)


if __name__ == "__main__":
    main()
