"""Triton kernels and their launchers. Launchers allocate nothing: outputs are passed in,
so a timed closure launches exactly one kernel."""
