"""Errors a user can cause: each carries one clear line for the CLI and the app."""

from __future__ import annotations

from ..i18n import N_

# Words other libraries put inside our messages (an OSError's strerror as {reason}, json's own message),
# listed so that the catalogs hold them: i18n.translate_text translates each field of a message it knows.
FOREIGN_REASONS = (
    N_("No such file or directory"), N_("Permission denied"), N_("Is a directory"), N_("Not a directory"),
    N_("No space left on device"), N_("Read-only file system"), N_("File exists"), N_("File name too long"),
    N_("Expecting value"), N_("Expecting property name enclosed in double quotes"), N_("Extra data"),
    N_("Unterminated string starting"), N_("Invalid control character"), N_("Expecting ',' delimiter"),
    N_("Expecting ':' delimiter"),
)


def json_reason(exc: ValueError) -> str:
    """json's own words for a JSONDecodeError, without its trailing "at" ("Unterminated string starting at"):
    our messages add "at line L column C" after them."""
    return str(getattr(exc, "msg", exc)).removesuffix(" at")


class JaxCompareError(Exception):
    """Base class: a problem with the user's request, reported without a traceback."""


class BadInput(JaxCompareError):
    """A malformed or impossible request (shape, case name, precision, file)."""


class Unsupported(BadInput):
    """The device lacks what the request needs at this precision (float64 LU on a TPU): the message
    says what to choose instead; ``detail`` keeps the first line of XLA's error for an operator."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return type(self), (str(self), self.detail)  # crosses from the worker whole


class DeviceUnavailable(JaxCompareError):
    """The requested device kind is not present on this machine."""

    @classmethod
    def no_kind(cls, kind: str, present: dict[str, int]) -> DeviceUnavailable:
        """'no GPU device here; present: cpu (1)' from the devices of each platform here: the worker's and
        the atlas's words alike."""
        listed = ", ".join(f"{name} ({n})" for name, n in present.items())
        return cls(N_("no {kind} device here; present: {present}").format(kind=kind.upper(), present=listed))


class TooLarge(JaxCompareError):
    """The request would need more memory or elements than allowed."""


class JobFailed(JaxCompareError):
    """A measurement job failed: timed out, cancelled, or its worker died."""


class DeadlinePassed(JobFailed):
    """A job stopped at its deadline: the work itself outlasted it (a worker lost is a JobFailed)."""


class DeviceHeld(JobFailed):
    """No worker could open the device: another program holds it (a TPU chip, one process at a time), so
    every job for it fails alike until that program lets go."""
