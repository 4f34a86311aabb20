"""Pipfile.lock: JSON with `default` and `develop` sections."""

from __future__ import annotations

import json

from reprogate.lockfiles.base import Locked, LockFileError, member, normalize, shaped, strings

FORMAT = "pipenv"
PATTERNS = ["Pipfile.lock"]


def parse(text: str) -> list[Locked]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LockFileError(f"line {exc.lineno}: {exc.msg}") from None
    except RecursionError:
        raise LockFileError("JSON nested too deeply") from None
    data = shaped(data, dict, "the document")
    found = []
    for section, group in (("default", ""), ("develop", "develop")):
        for name, info in (member(data, section, dict, "", {}) if data.get(section) is not None else {}).items():
            where = f"{section}.{name}"
            info = shaped(info, dict, where)
            version = info.get("version", "")
            if not isinstance(version, str):
                raise LockFileError(f"{where}.version: expected a string, found {type(version).__name__}")
            hashes = strings(info["hashes"], f"{where}.hashes") if "hashes" in info else []
            found.append(Locked(normalize(name), version.lstrip("=") or None, frozenset(hashes), group))
    return found
