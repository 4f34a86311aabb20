"""What is installed that no lock file pins: the packages a job installed for itself at start.

A run whose environment differs from its lock files cannot be rebuilt from them. Installed
distributions (importlib.metadata) are compared, by normalised name, with every pin in the lock
files found; a package that no file pins, or whose installed version differs from every pin, is
listed with the reason.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from typing import Any

from reprogate.core.yamlout import FlowMap
from reprogate.lockfiles import LockFileError, normalize, parse_file


def _pins(lock_files: list[Path], unreadable: list[tuple[Path, str]]) -> dict[str, set[str | None]]:
    pins: dict[str, set[str | None]] = {}
    for path in lock_files:
        try:
            for locked in parse_file(path):
                pins.setdefault(locked.name, set()).add(locked.version)
        except (LockFileError, OSError, UnicodeDecodeError) as exc:
            # an unreadable lock file pins nothing (validate/detect report it); the caller names it
            unreadable.append((path, str(exc.strerror if isinstance(exc, OSError) and exc.strerror else exc)))
    return pins


def unpinned_installs(lock_files: list[Path], unreadable: list[tuple[Path, str]] | None = None) -> list[dict[str, Any]]:
    """What is installed that no readable lock file pins; each lock file that cannot be parsed is
    appended to `unreadable` (path, why), so the caller says its pins were not counted."""
    pins = _pins(lock_files, unreadable if unreadable is not None else [])
    found: dict[str, dict[str, Any]] = {}
    for dist in metadata.distributions():
        name = dist.metadata.get("Name")  # type: ignore[attr-defined]  # typeshed's PackageMetadata omits get(), which the email Message it is has
        if not name:
            continue
        key = normalize(name)
        version = dist.version
        locked = pins.get(key)
        if locked is None:
            entry = {"name": key, "version": version, "reason": "unpinned"}
        elif None in locked or version in locked or any(v and version.split("+")[0] == v.split("+")[0] for v in locked):
            continue
        else:
            entry = {"name": key, "version": version, "reason": "version-differs", "locked": sorted(v for v in locked if v)[0]}
        direct = dist.read_text("direct_url.json")
        if direct:
            entry["source"] = "direct URL or local path"
        found.setdefault(key, entry)
    return [FlowMap(found[k]) for k in sorted(found)]
