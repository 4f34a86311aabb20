"""The ways resolving an image can fail, shared by the registry client and its answers' reader."""

from __future__ import annotations

from reprogate.core.diagnostics import ExitCode
from reprogate.core.errors import CheckFailed, InfrastructureError


class ImageError(CheckFailed):
    """A reference that does not resolve (no such repository, tag or manifest; no access)."""


class RegistryUnreachable(InfrastructureError):
    """The registry could not be reached, or did not answer in time, after the allowed retries."""


class MalformedAnswer(RegistryUnreachable):
    """A registry answered, but not with what the distribution spec says it answers: for a user
    the same as one that did not answer (exit 3, nothing about the image is known)."""


class InvalidReference(ImageError):
    """Text that is no image reference at all: bad input (exit 2), not an image that is missing."""

    exit_code = ExitCode.USAGE
