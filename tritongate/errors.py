"""The one error hierarchy. The CLI alone maps these to exit codes (see ``ExitCode``)."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes, documented in ``tritongate --help`` and the README."""

    OK = 0
    GATE_FAILED = 1  # a regression, or a policy violation
    USAGE = 2  # bad arguments or bad input files
    PREFLIGHT = 3  # a named preflight check failed before anything ran
    INTERNAL = 4  # a bug in tritongate: one line on stderr, the traceback in a file
    INTERRUPTED = 130  # Ctrl-C or SIGTERM


class GateError(Exception):
    """Base of every error tritongate raises on purpose. Messages name the input and the fix."""

    exit_code: ExitCode = ExitCode.USAGE


class UsageError(GateError):
    """Bad arguments or bad input (malformed file, unknown name)."""


class SchemaVersionError(GateError):
    """A results/identity file written by an older or newer tritongate."""


class IncompleteRunError(GateError):
    """A run directory whose writer died or is still running."""


class RunDirError(GateError):
    """A run directory that is missing files or holds invalid data."""


class MeasurementError(GateError):
    """A measurement could not be taken (no device, fatal device error)."""


class GpuBusyError(MeasurementError):
    """The GPU runs other work, so any timing would be meaningless."""


class PreflightError(GateError):
    """A named check failed before any work started."""

    exit_code = ExitCode.PREFLIGHT

    def __init__(self, check: str, message: str) -> None:
        super().__init__(message)
        self.check = check

    @property
    def marker(self) -> str:
        return f"!!! PREFLIGHT_FAILED check={self.check}"
