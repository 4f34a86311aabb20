"""Pipfile.lock: JSON with `default` and `develop` sections."""

from __future__ import annotations

import json

from reprogate.lockfiles.base import Locked, LockFileError, normalize

FORMAT = "pipenv"
PATTERNS = ["Pipfile.lock"]


def parse(text: str) -> list[Locked]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LockFileError(f"line {exc.lineno}: {exc.msg}") from None
    found = []
    for section, group in (("default", ""), ("develop", "develop")):
        for name, info in (data.get(section) or {}).items():
            version = str(info.get("version", "")).lstrip("=") or None
            found.append(Locked(normalize(name), version, frozenset(info.get("hashes", [])), group))
    return found
