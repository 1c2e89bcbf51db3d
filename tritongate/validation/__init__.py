"""Typed validation of everything read from disk (see ``core``)."""

from tritongate.validation.core import describe, format_loc, validate

__all__ = ["describe", "format_loc", "validate"]
