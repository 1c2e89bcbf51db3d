"""A row's key as one string, ``op/case/dtype``: how calibration.json and the planted-delay
plan name rows."""

from __future__ import annotations


def row_key(op: str, case: str, dtype: str) -> str:
    return f"{op}/{case}/{dtype}"


def split_key(key: str) -> tuple[str, str, str]:
    """``row_key``'s (op, case, dtype) back (a case never holds a slash)."""
    op, case, dtype = key.split("/")
    return op, case, dtype
