"""Which release's defaults a record was written under, and what those defaults are.

A record's `apiVersion` names its format; its `semantics` (a release, `major.minor`) names the
rules it was written under. A release that changes what an unstated field means lists the change
in `DEFAULT_CHANGES`: a record that states an older semantics keeps the older default, one that
states none is read under today's and `validate` warns wherever a listed change applies to it
(saying what to add), and one written for a newer release than this one is refused, since this
release cannot know what that one's defaults were.

Today one default has changed: the realizer of a record that pins lock files and no container
(0.1: the interpreter reprogate runs in; since 0.2: a venv made from the first lock file).
"""

from __future__ import annotations

from dataclasses import dataclass

from reprogate import __version__
from reprogate.core.record import RunRecord

Release = tuple[int, int]


def release_of(version: str) -> Release:
    """(major, minor) of a version string such as 0.4.0 or 0.4."""
    major, minor = version.split("+")[0].split(".")[:2]
    return int(major), int(minor)


CURRENT: Release = release_of(__version__)
CURRENT_TEXT = f"{CURRENT[0]}.{CURRENT[1]}"


@dataclass(frozen=True)
class DefaultChange:
    """One default that changed: the field, the release that changed it, and both meanings."""

    since: Release
    field: str  # dotted path of the field whose absence means something else now
    before: str
    after: str
    code: str  # the validate warning for a record that states no semantics


DEFAULT_CHANGES = (DefaultChange((0, 2), "job.environment.realizer", "current", "venv", "realizer-implicit"),)
REALIZER_CHANGE = DEFAULT_CHANGES[0]


class SemanticsError(ValueError):
    """A `semantics` value that is not a release, or one newer than this reprogate."""


def stated(value: str | None) -> Release | None:
    """The release a record's `semantics` states it was written under; None when it states none."""
    if value is None:
        return None
    try:
        found = release_of(str(value))
    except ValueError:
        raise SemanticsError(f"semantics is {value!r}; write a release as major.minor, e.g. {CURRENT_TEXT!r}") from None
    if found > CURRENT:
        raise SemanticsError(
            f"the record was written under reprogate {found[0]}.{found[1]}'s rules; this is reprogate {__version__}, which cannot know "
            "that release's defaults: upgrade reprogate"
        )
    return found


def ran_in_container(record: RunRecord) -> bool:
    return record.container is not None and record.container.used


@dataclass(frozen=True)
class ImpliedRealizer:
    """The realizer a record that names none gets, and why (the claim repeats it)."""

    name: str
    reason: str
    unstated: bool  # no semantics to say which default was meant: validate warns


def implied_realizer(record: RunRecord) -> ImpliedRealizer | None:
    """The realizer of a record without `job.environment.realizer`; None when nothing implies one
    (no container, no lock file). Raises SemanticsError for a `semantics` this release cannot read."""
    if ran_in_container(record):
        return ImpliedRealizer("container", "the reference ran in a container", False)
    if record.source is None or not record.source.lock_files:
        return None
    release = stated(record.semantics)
    change = REALIZER_CHANGE
    if release is not None and release < change.since:
        said = f"the record states semantics {release[0]}.{release[1]}, whose rebuilds ran a record with lock files in reprogate's interpreter"
        return ImpliedRealizer(change.before, said, False)
    return ImpliedRealizer(change.after, "the record pins lock files and no container", release is None)


__all__ = [
    "CURRENT",
    "REALIZER_CHANGE",
    "CURRENT_TEXT",
    "DEFAULT_CHANGES",
    "DefaultChange",
    "ImpliedRealizer",
    "Release",
    "SemanticsError",
    "implied_realizer",
    "ran_in_container",
    "release_of",
    "stated",
]
