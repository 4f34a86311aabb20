"""conda-lock.yml: a `package` list with name, version, manager, platform and hashes."""

from __future__ import annotations

from reprogate.lockfiles.base import Locked, load_yaml, normalize

FORMAT = "conda-lock"
PATTERNS = ["conda-lock.yml", "conda-lock.yaml", "*.conda-lock.yml"]


def parse(text: str) -> list[Locked]:
    data = load_yaml(text, "conda-lock.yml")
    found = []
    for package in (data or {}).get("package", []) if isinstance(data, dict) else []:
        hashes = frozenset(f"{k}:{v}" for k, v in (package.get("hash") or {}).items())
        group = package.get("category", "main")
        platform = package.get("platform", "")
        found.append(
            Locked(
                normalize(str(package["name"])),
                str(package.get("version")),
                hashes,
                "" if group == "main" else group,
                f"{package.get('manager', 'conda')}@{platform}" if platform else package.get("manager", "conda"),
            )
        )
    return found
