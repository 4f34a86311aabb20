"""Earlier versions of a file, found in the repository's history by what the record pins.

A record pins a configuration by its canonical hash and a lock file by its checksum; when the
working tree no longer matches, the version the record meant is usually a few commits back. Finding
it lets a diagnosis say *which keys* of a configuration changed, and lets the reference
environment be realized from the pinned lock file after a pull request changed it. Bounded: at
most LIMIT commits are read, and a shallow clone simply finds nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from reprogate.core.canonical import CanonicalError, canonical_digest
from reprogate.core.documents import DocumentError, load_text
from reprogate.core.git import GitError, run_git

LIMIT = 200


def _git(repo: Path, *args: str) -> bytes | None:
    """stdout, or None when git cannot say (no repository, a shallow clone, no git): a diagnosis
    without history is still a diagnosis."""
    try:
        return run_git(repo, *args, timeout=60).stdout
    except GitError:
        return None


def find_version(repo: Path, path: str, matches: Callable[[bytes], bool], limit: int = LIMIT) -> tuple[str, bytes] | None:
    """(commit, content) of the newest version of `path` for which `matches(content)` holds."""
    listing = _git(repo, "log", f"-n{limit}", "--format=%H", "--", path)
    if not listing:
        return None
    seen: set[bytes] = set()
    for commit in listing.decode().split():
        content = _git(repo, "show", f"{commit}:{path}")
        if content is None or content in seen:
            continue
        seen.add(content)
        if matches(content):
            return commit, content
    return None


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """{"train.lr": 0.01, "model.layers[2]": ...}: every leaf of a document by its path."""
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(data, list):
        out = {}
        for i, value in enumerate(data):
            out.update(flatten(value, f"{prefix}[{i}]"))
        return out
    return {prefix: data}


def key_changes(before: Any, after: Any, limit: int = 8) -> list[str]:
    """The leaves that differ, as `key: old -> new` (added and removed keys too)."""
    old, new = flatten(before), flatten(after)
    lines = []
    for key in sorted(old.keys() | new.keys()):
        if key not in new:
            lines.append(f"{key}: removed (was {old[key]!r})")
        elif key not in old:
            lines.append(f"{key}: added ({new[key]!r})")
        elif old[key] != new[key]:
            lines.append(f"{key}: {old[key]!r} -> {new[key]!r}")
    return lines[:limit] + ([f"... {len(lines) - limit} more"] if len(lines) > limit else [])


def config_changes(repo: Path, path: str, pinned: str, current: Any) -> str:
    """Which keys of a data configuration (YAML, JSON, TOML) changed since the version whose
    canonical hash the record pins, found in the repository's history: what validate and the
    rebuild's config stage both say, so a reviewer reads `train.lr: 0.01 -> 0.011`, not two digests."""

    def matches(content: bytes) -> bool:
        try:
            return canonical_digest(load_text(content.decode("utf-8"), path).data) == pinned
        except (DocumentError, CanonicalError, UnicodeDecodeError):
            return False

    found = find_version(repo, path, matches)
    if found is None:
        return "the pinned version is not in this repository's history, so the changed keys cannot be named"
    commit, content = found
    changes = key_changes(load_text(content.decode("utf-8"), path).data, current)
    return f"{'; '.join(changes) or 'same keys, other values'} (compared with the pinned version at {commit[:12]})"
