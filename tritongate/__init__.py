"""tritongate: a performance-regression gate for Triton compiler changes."""

__version__ = "0.1.0"
