"""conda environment.yml: conda specs (name=version[=build]) and a nested pip list."""

from __future__ import annotations

import re

from reprogate.lockfiles import requirements
from reprogate.lockfiles.base import Locked, LockFileError, load_yaml, normalize, shaped

FORMAT = "conda-environment"
PATTERNS = ["environment.yml", "environment.yaml", "environment-*.yml"]
_SPEC = re.compile(r"^(?:[\w.-]+::)?(?P<name>[A-Za-z0-9_.-]+)\s*(?P<op>==|=|>=|<=|>|<|~=)?\s*(?P<version>[^=\s]*)")


def parse(text: str) -> list[Locked]:
    data = load_yaml(text, "environment.yml")
    found = []
    dependencies = data.get("dependencies") if isinstance(data, dict) else None
    for item in shaped(dependencies, list, "dependencies") if dependencies is not None else []:
        if isinstance(item, dict) and isinstance(item.get("pip"), list):
            for locked in requirements.parse("\n".join(str(x) for x in item["pip"])):
                found.append(Locked(locked.name, locked.version, locked.hashes, "pip", "pip"))
            continue
        match = _SPEC.match(str(item))
        if not match:
            raise LockFileError(f"cannot read conda spec {item!r}")
        exact = match.group("op") in ("=", "==") and match.group("version") and "*" not in match.group("version")
        found.append(Locked(normalize(match.group("name")), match.group("version") if exact else None, frozenset(), "", "conda"))
    return found
