"""Autotune plumbing: a host-timer benchmarker for the interpreter (record/replay later)."""
