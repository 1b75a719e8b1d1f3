"""Errors a user can cause: each carries one clear line for the CLI and the app."""

from __future__ import annotations


class JaxCompareError(Exception):
    """Base class: a problem with the user's request, reported without a traceback."""


class BadInput(JaxCompareError):
    """A malformed or impossible request (shape, case name, precision, file)."""


class DeviceUnavailable(JaxCompareError):
    """The requested device kind is not present on this machine."""


class TooLarge(JaxCompareError):
    """The request would need more memory or elements than allowed."""


class JobFailed(JaxCompareError):
    """A measurement job failed: timed out, cancelled, or its worker died."""
